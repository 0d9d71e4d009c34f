"""The empirical tangent kernel of a finite net (the network actually trained) and its linearised model."""

from __future__ import annotations

import numpy as np
import torch

from .linalg import cholesky_with_jitter


def _features(
    params_m: list[tuple[torch.Tensor, torch.Tensor]], x: torch.Tensor
) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """Per layer l: the layer's input a_{l-1} [n, n_{l-1}] and the output's gradient w.r.t. its pre-activation
    delta_l [n, n_l], for one model (W [in, out], b [out]); and the output f [n]."""
    acts, masks = [x], []
    for W, b in params_m[:-1]:
        pre = acts[-1] @ W + b
        masks.append(pre > 0)
        acts.append(torch.relu(pre))
    W, b = params_m[-1]
    f = (acts[-1] @ W + b)[:, 0]
    deltas = [torch.ones(x.shape[0], 1, dtype=x.dtype, device=x.device)]  # d f / d(output pre-activation)
    for ell in range(len(params_m) - 1, 0, -1):
        deltas.append((deltas[-1] @ params_m[ell][0].T) * masks[ell - 1])
    return acts, deltas[::-1], f


def empirical_ntk(
    params: list[tuple[torch.Tensor, torch.Tensor]], x1: np.ndarray, x2: np.ndarray, m: int = 0, block: int = 4096
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tangent kernel J(x1) J(x2)^T of model m of a stack, over all its parameters, in float64.

    For a ReLU MLP, d f / d W_l = a_{l-1} delta_l^T and d f / d b_l = delta_l, so
    Theta_hat(x, x') = sum_l (a_{l-1}(x) . a_{l-1}(x') + 1) (delta_l(x) . delta_l(x')):
    two matmuls per layer, no Jacobian materialised.  Computed in row blocks of x1.
    Returns (Theta_hat [n1, n2], f(x1) [n1], f(x2) [n2]).
    """
    p = [(W[m].double(), b[m, 0].double()) for W, b in params]
    X2 = torch.as_tensor(x2, dtype=torch.float64)
    A2, D2, f2 = _features(p, X2)
    X1 = torch.as_tensor(x1, dtype=torch.float64)
    out = np.empty((X1.shape[0], X2.shape[0]))
    f1 = np.empty(X1.shape[0])
    for s in range(0, X1.shape[0], block):
        A1, D1, f1b = _features(p, X1[s : s + block])
        K = torch.zeros(A1[0].shape[0], X2.shape[0], dtype=torch.float64)
        for a1, d1, a2, d2 in zip(A1, D1, A2, D2):
            K.add_((a1 @ a2.T).add_(1.0).mul_(d1 @ d2.T))
        out[s : s + block] = K.numpy()
        f1[s : s + block] = f1b.numpy()
    return out, f1, f2.numpy()


def empirical_ntk_apply(
    params: list[tuple[torch.Tensor, torch.Tensor]],
    x1: np.ndarray,
    x2: np.ndarray,
    v: np.ndarray,
    m: int = 0,
    block: int = 4096,
) -> tuple[np.ndarray, np.ndarray]:
    """(Theta_hat(x1, x2) @ v [n1], f(x1) [n1]) of model m, in row blocks of x1: the n1 x n2 kernel is never held whole
    (at the paper's 1e5 test points and N = 2e4, 16 GB).  The same sums as :func:`empirical_ntk`, per block."""
    p = [(W[m].double(), b[m, 0].double()) for W, b in params]
    A2, D2, _ = _features(p, torch.as_tensor(x2, dtype=torch.float64))
    X1 = torch.as_tensor(x1, dtype=torch.float64)
    vt = torch.as_tensor(v, dtype=torch.float64)
    out, f1 = np.empty(X1.shape[0]), np.empty(X1.shape[0])
    for s in range(0, X1.shape[0], block):
        A1, D1, f1b = _features(p, X1[s : s + block])
        K = torch.zeros(A1[0].shape[0], A2[0].shape[0], dtype=torch.float64)
        for a1, d1, a2, d2 in zip(A1, D1, A2, D2):
            K.add_((a1 @ a2.T).add_(1.0).mul_(d1 @ d2.T))
        out[s : s + block] = (K @ vt).numpy()
        f1[s : s + block] = f1b.numpy()
    return out, f1


def linearized_prediction(
    params: list[tuple[torch.Tensor, torch.Tensor]],
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    m: int = 0,
    block: int = 4096,
) -> tuple[np.ndarray, float]:
    """The lazy limit of training model m to zero MSE: f0(x) + Theta_hat(x, X) Theta_hat(X, X)^{-1} (y - f0(X)).

    (Gradient flow on the model linearised at init converges to this interpolant.)  Returns the
    prediction on x_test and the Cholesky jitter used.  The test rows go through in blocks of ``block``
    (:func:`empirical_ntk_apply`): only the n x n training kernel and its factor are held whole.
    """
    K, f0_train, _ = empirical_ntk(params, x_train, x_train, m, block=block)
    C, jit = cholesky_with_jitter(torch.as_tensor(K))
    del K
    alpha = torch.cholesky_solve(torch.as_tensor(y_train - f0_train).unsqueeze(1), C).squeeze(1).numpy()
    del C
    kt_alpha, f0_test = empirical_ntk_apply(params, x_test, x_train, alpha, m, block=block)
    return f0_test + kt_alpha, jit


def kernel_change(
    init: list[tuple[torch.Tensor, torch.Tensor]],
    final: list[tuple[torch.Tensor, torch.Tensor]],
    x: np.ndarray,
    seeds: int,
) -> np.ndarray:
    """How far each trained net's tangent kernel moved from its init: |Theta_hat_T - Theta_hat_0|_F / |Theta_hat_0|_F on
    the points ``x`` [n, d], for every model m of the ``final`` stack [M, ...] (CPU), whose init is model m % ``seeds`` of
    ``init`` (the grid's order: model m = (lr m // S, seed m % S)).  Small in the lazy regime (Chizat, Oyallon & Bach),
    of order one once the net learns features.  NaN for a model whose parameters are not finite (diverged).  [M]"""
    base = {}
    M = final[0][0].shape[0]
    out = np.full(M, np.nan)
    for m in range(M):
        if not all(bool(torch.isfinite(W[m]).all() and torch.isfinite(b[m]).all()) for W, b in final):
            continue
        s = m % seeds
        if s not in base:
            base[s] = empirical_ntk(init, x, x, s)[0]
        k0 = base[s]
        kt = empirical_ntk(final, x, x, m)[0]
        out[m] = float(np.linalg.norm(kt - k0) / np.linalg.norm(k0))
    return out
