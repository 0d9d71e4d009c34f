"""Infinite-width kernels of deep ReLU nets: the arc-cosine layer step, Mori & Ueda's Appendix A, dot-product forms.

One ReLU layer maps the covariance of pre-activations Sigma^(l-1) to the next
(He scaling, weight variance 2, bias variance beta^2), Eqs. (16)-(17):

    sqrt det Lambda = sqrt(Sigma(x,x) Sigma(x',x') - Sigma(x,x')^2)
    Sigma^(l)       = [sqrt det Lambda + Sigma^(l-1) (pi/2 + atan(Sigma^(l-1)/sqrt det Lambda))] / pi + beta^2
    Sigmadot^(l)    = 1/2 + atan(Sigma^(l-1)/sqrt det Lambda) / pi

Written with u = Sigma(x,x')/sqrt(Sigma(x,x)Sigma(x',x')) = cos(angle) this is
Sigma^(l) = sqrt(Sigma(x,x)Sigma(x',x')) kappa_1(u) + beta^2 and Sigmadot^(l) = kappa_0(u), the
arc-cosine kernels of Cho & Saul that Bietti & Bach use.  :func:`relu_layer_` is
that step, once; everything else in this module calls it:

* Appendix A (:func:`appendix_a`): Sigma^(0) = x.x'/d + beta^2 (13), the step per hidden layer,
  Theta accumulated as Theta_0 = Sigma^(0), Theta_l = Theta_{l-1} Sigmadot^(l) + Sigma^(l), so
  Theta^(L) = Theta_L (15).  Sigma^(L) is the NNGP (random-features) kernel of the output.
* Dot-product forms on the sphere (:func:`kappa0`, :func:`kappa1`, :func:`rf`, :func:`ntk`), with
  Bietti & Bach's L counting *layers* (L - 1 hidden): kappa_RF^L = kappa_1^(L-1),
  kappa_NTK^L = kappa_NTK^(L-1) kappa_0(kappa_RF^(L-1)) + kappa_RF^L, kappa_NTK^1(u) = u.
  With beta = 0 and |x|^2 = d, Appendix A's Sigma^(L), Theta^(L) are kappa_RF^(L+1), kappa_NTK^(L+1).

Everything is float64 torch, so it runs on CUDA when present.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

from .device import resolve_device

log = logging.getLogger("depthlab")
KINDS = ("ntk", "nngp")  # Theta^(L) and Sigma^(L)


def relu_layer_(sig: torch.Tensor, q1: torch.Tensor, q2: torch.Tensor, beta2: float,
                buf: torch.Tensor, dot: torch.Tensor) -> torch.Tensor:
    """One ReLU layer, Eqs. (16)-(17), in place: ``sig`` <- Sigma^(l); returns ``dot`` filled with Sigmadot^(l).

    sig: Sigma^(l-1)(x, x') [n1, n2]; q1 [n1, 1] and q2 [1, n2]: Sigma^(l-1)(x, x) and
    Sigma^(l-1)(x', x'); buf, dot: scratch tensors shaped like sig.  Elementwise, so
    any broadcastable shapes work (the dot-product forms pass q1 = q2 = 1).
    """
    if torch.broadcast_shapes(q1.shape, q2.shape) == sig.shape:
        torch.mul(q1, q2, out=buf)
    else:
        buf.copy_(torch.mul(q1, q2).expand_as(sig))
    sqrt_det = buf.addcmul_(sig, sig, value=-1.0).clamp_(min=0.0).sqrt_()
    # atan(c / 0) = pi/2 for c > 0: the x = x' limit comes out exactly (Sigmadot = 1)
    phase = torch.div(sig, sqrt_det, out=dot).atan_()
    # Sigma^(l) = [sqrt_det + Sigma^(l-1) (pi/2 + phase)] / pi + beta^2
    sqrt_det.addcmul_(sig, phase).add_(sig, alpha=math.pi / 2)
    torch.div(sqrt_det, math.pi, out=sig).add_(beta2)
    return phase.mul_(1.0 / math.pi).add_(0.5)


# ---- dot-product kernels on the sphere (Bietti & Bach) -------------------------------------


def _dot_forms(u: np.ndarray | float, layers: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Yield (L, kappa_RF^L(u), kappa_NTK^L(u)) for L = 1..layers (float64 numpy, same shape as u)."""
    sig = torch.as_tensor(np.array(u, dtype=np.float64, copy=True))
    theta = sig.clone()
    one = torch.ones((), dtype=torch.float64)
    buf, dot = torch.empty_like(sig), torch.empty_like(sig)
    yield 1, sig.numpy().copy(), theta.numpy().copy()
    for L in range(2, layers + 1):
        d = relu_layer_(sig, one, one, 0.0, buf, dot)
        theta.mul_(d).add_(sig)
        yield L, sig.numpy().copy(), theta.numpy().copy()


def appendix_a_sphere(u: np.ndarray, max_depth: int, beta: float) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Appendix A on inputs with |x|^2 = d, as dot-product kernels of u = x.x'/d in [-1, 1].

    Yields (L, Sigma^(L)(u), Theta^(L)(u)) for L = 1..max_depth: the same recursion as
    :func:`appendix_a` with the diagonal Sigma^(l-1)(x, x) = 1 + l beta^2 a constant.
    With beta = 0 these are kappa_RF^(L+1) and kappa_NTK^(L+1).
    """
    b2 = beta * beta
    sig = torch.as_tensor(np.array(u, dtype=np.float64, copy=True)).add_(b2)  # Sigma^(0) = u + beta^2
    theta = sig.clone()
    buf, dot = torch.empty_like(sig), torch.empty_like(sig)
    for ell in range(1, max_depth + 1):
        q = torch.tensor(1.0 + ell * b2, dtype=torch.float64)
        relu_layer_(sig, q, q, b2, buf, dot)
        theta.mul_(dot).add_(sig)
        yield ell, sig.numpy().copy(), theta.numpy().copy()


def kappa0(u: np.ndarray) -> np.ndarray:
    """kappa_0(u) = 1 - arccos(u)/pi (step-activation arc-cosine kernel)."""
    sig = torch.as_tensor(np.array(u, dtype=np.float64, copy=True))
    one = torch.ones((), dtype=torch.float64)
    return relu_layer_(sig, one, one, 0.0, torch.empty_like(sig), torch.empty_like(sig)).numpy()


def kappa1(u: np.ndarray) -> np.ndarray:
    """kappa_1(u) = (sqrt(1 - u^2) + u (pi - arccos u)) / pi (ReLU arc-cosine kernel)."""
    return next(v for L, v, _ in _dot_forms(u, 2) if L == 2)


def rf(u: np.ndarray, layers: int) -> np.ndarray:
    """kappa_RF^L(u) = kappa_1 applied L - 1 times (L = layers >= 1)."""
    return [v for L, v, _ in _dot_forms(u, layers)][-1]


def ntk(u: np.ndarray, layers: int) -> np.ndarray:
    """kappa_NTK^L(u): kappa_NTK^1 = u, kappa_NTK^L = kappa_NTK^(L-1) kappa_0(kappa_RF^(L-1)) + kappa_RF^L."""
    return [t for L, _, t in _dot_forms(u, layers)][-1]


# ---- Appendix A: Sigma^(L) and Theta^(L) on inputs in R^d ---------------------------------


def appendix_a(x1: torch.Tensor, x2: torch.Tensor, max_depth: int, beta: float = 0.1,
               copy: bool = True) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """Yield (L, Sigma^(L), Theta^(L)) of (x1, x2) for L = 1..max_depth in one pass.  x1: [n1, d], x2: [n2, d] float64.

    With ``copy=False`` the yielded [n1, n2] tensors are updated in place by the next
    step (use them before advancing).  Keep n1 * n2 near :data:`TILE` for speed: the
    recursion is a chain of elementwise passes, cache-bound.
    """
    d = x1.shape[1]
    b2 = beta * beta
    q1 = ((x1 * x1).sum(1) / d).unsqueeze(1)  # |x|^2/d, [n1, 1]
    q2 = ((x2 * x2).sum(1) / d).unsqueeze(0)  # [1, n2]
    sig = torch.addmm(torch.full((), b2, dtype=x1.dtype, device=x1.device), x1, x2.T, alpha=1.0 / d)  # Sigma^(0), Eq. 13
    theta = sig.clone()
    buf, dot = torch.empty_like(sig), torch.empty_like(sig)
    for ell in range(1, max_depth + 1):
        # Sigma^(ell-1)(x, x) = |x|^2/d + ell beta^2 (the step maps the diagonal to itself + beta^2)
        relu_layer_(sig, q1 + ell * b2, q2 + ell * b2, b2, buf, dot)
        theta.mul_(dot).add_(sig)  # Theta_ell = Theta_{ell-1} Sigmadot^(ell) + Sigma^(ell), Eq. 15
        yield (ell, sig.clone(), theta.clone()) if copy else (ell, sig, theta)


TILE = 1 << 16  # elements per kernel tile: 512 KiB of float64, cache-resident temporaries


def _rows(block: int, n_other: int) -> int:
    """Rows per tile: at most ``block`` (the memory knob), at least 1, about TILE elements."""
    return max(1, min(block, TILE // max(n_other, 1)))


def kernel(x1: np.ndarray, x2: np.ndarray, depth: int, beta: float = 0.1, kind: str = "ntk") -> np.ndarray:
    """Theta^(L) (kind 'ntk', Eq. 15) or Sigma^(L) (kind 'nngp') as float64 numpy [n1, n2].  x1: [n1, d], x2: [n2, d]."""
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    dev = torch.device("cpu")
    t1 = torch.as_tensor(x1, dtype=torch.float64, device=dev)
    t2 = torch.as_tensor(x2, dtype=torch.float64, device=dev)
    for ell, sig, th in appendix_a(t1, t2, depth, beta):
        if ell == depth:
            return (th if kind == "ntk" else sig).numpy()
    raise AssertionError("unreachable")


def kernel_diagonal(x: np.ndarray | torch.Tensor, depth: int, beta: float = 0.1, kind: str = "ntk") -> np.ndarray | torch.Tensor:
    """Closed forms on the diagonal (Sigmadot = 1 there).  x: [n, d] -> [n] (numpy or torch, as given).

    nngp: Sigma^(L)(x, x) = |x|^2/d + (L+1) beta^2;
    ntk:  Theta^(L)(x, x) = sum_{l=0}^{L} Sigma^(l)(x, x) = (L+1)|x|^2/d + beta^2 (L+1)(L+2)/2.
    """
    q = (x * x).sum(1) / x.shape[1]
    if kind == "nngp":
        return q + (depth + 1) * beta**2
    return (depth + 1) * q + beta**2 * (depth + 1) * (depth + 2) / 2


@dataclass
class KernelFit:
    """Kernel regression results for several kinds and depths."""

    kinds: tuple[str, ...]  # [K] ntk and/or nngp
    depths: np.ndarray  # [D]
    prediction: np.ndarray  # [K, D, n_test]
    train_prediction: np.ndarray  # [K, D, n_train] Gram @ alpha, ~ y_train
    jitter: np.ndarray  # [K, D] ridge added to the Gram diagonal for a stable Cholesky (0 if none)


def cholesky_with_jitter(K: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Cholesky of K, adding the smallest jitter 10^j * mean(diag) (j = -12, -11, ...) that succeeds."""
    L, info = torch.linalg.cholesky_ex(K)
    if int(info) == 0:
        return L, 0.0
    scale = float(K.diagonal().mean())
    for j in range(-12, -1):
        jit = scale * 10.0**j
        L, info = torch.linalg.cholesky_ex(K + jit * torch.eye(K.shape[0], dtype=K.dtype, device=K.device))
        if int(info) == 0:
            return L, jit
    raise np.linalg.LinAlgError("kernel Gram matrix is not positive definite even with jitter 1e-2 * mean diag")


def _grams(x: torch.Tensor, L: int, beta: float, block: int, kinds: Sequence[str]) -> dict[str, torch.Tensor]:
    """Gram matrices {kind: [n, n]} at depth L, built in row tiles (one recursion pass serves both kinds)."""
    n = x.shape[0]
    out = {k: torch.empty(n, n, dtype=torch.float64, device=x.device) for k in kinds}
    rows = _rows(block, n) if x.device.type == "cpu" else block
    for s in range(0, n, rows):
        for ell, sig, th in appendix_a(x[s : s + rows], x, L, beta, copy=False):
            if ell == L:
                for k in kinds:
                    out[k][s : s + rows] = th if k == "ntk" else sig
    # On the diagonal det Lambda = 0 exactly, but rounding leaves ~1e-16 that sqrt()
    # lifts to ~1e-8; write the exact closed form there instead (kernel_diagonal).
    for k in kinds:
        out[k].diagonal().copy_(kernel_diagonal(x, L, beta, k))
    return out


def kernel_regression(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    depths: Sequence[int],
    beta: float = 0.1,
    block: int = 2048,
    device: str = "auto",
    kinds: Sequence[str] = ("ntk",),
) -> KernelFit:
    """Kernel regression, Eq. (10): f(x) = K(x, X) K(X, X)^{-1} y, for every kind in kinds and L in depths.

    Solved by Cholesky in float64 (the smallest jitter that makes it succeed is recorded).
    On the CPU the fused kernels of :mod:`depthlab.core.fused` do the recursion: one n x n
    matrix holds Sigma^(L) and Theta^(L) (lower and upper triangles), advanced one layer per
    depth, and a second one is factorised in place by LAPACK, so the peak is about 2 n^2 float64
    whatever the number of depths; test rows are advanced and dotted with the solutions in
    cache-sized tiles.  On CUDA the same recursion runs as torch tile operations.
    """
    kinds = tuple(kinds)
    if not kinds or any(k not in KINDS for k in kinds):
        raise ValueError(f"kinds must be a non-empty subset of {KINDS}, got {kinds}")
    depths = sorted({int(L) for L in depths})
    if depths[0] < 1:
        raise ValueError(f"depths must be >= 1, got {depths}")
    dev = resolve_device(device)
    if dev.type == "cpu":
        return _regression_cpu(np.asarray(x_train, np.float64), np.asarray(y_train, np.float64),
                               np.asarray(x_test, np.float64), depths, beta, block, kinds)
    return _regression_torch(x_train, y_train, x_test, depths, beta, block, dev, kinds)


def _regression_cpu(X: np.ndarray, y: np.ndarray, T: np.ndarray, depths: list[int], beta: float, block: int,
                    kinds: tuple[str, ...]) -> KernelFit:
    from scipy.linalg import blas, lapack

    from . import fused

    n, d = X.shape
    b2 = beta * beta
    q, qt = (X * X).sum(1) / d, (T * T).sum(1) / d
    A = X @ X.T  # Sigma^(0) = Theta^(0) = x.x'/d + beta^2 in both triangles, Eq. 13
    A /= d
    A += b2
    F = np.empty((n, n), order="F")  # the LAPACK buffer, factorised in place
    D, Kn = len(depths), len(kinds)
    alphas = np.zeros((Kn, D, n))
    train_pred = np.empty((Kn, D, n))
    jitter = np.zeros((Kn, D))
    col = {L: i for i, L in enumerate(depths)}
    for L in range(1, depths[-1] + 1):
        fused.advance(A, q, b2, L)
        if L not in col:
            continue
        for i, kind in enumerate(kinds):
            diag = kernel_diagonal(X, L, beta, kind)
            lower = kind == "ntk"  # Theta lives in A's upper triangle: copied to F's lower; Sigma the other way
            for j in [None, *range(-12, -1)]:
                jitter[i, col[L]] = 0.0 if j is None else float(diag.mean()) * 10.0**j
                fused.fill_factor(F, A, diag, lower, jitter[i, col[L]])
                c, info = lapack.dpotrf(F, lower=lower, clean=0, overwrite_a=1)
                if info == 0:
                    break
            else:
                raise np.linalg.LinAlgError(f"{kind} Gram matrix at depth {L} is not positive definite even with jitter 1e-2 * mean diag")
            alphas[i, col[L]], _ = lapack.dpotrs(c, y, lower=lower)
            A.flat[:: n + 1] = diag  # A.T's lower (lower=True) or upper triangle is this kernel, with its diagonal
            train_pred[i, col[L]] = blas.dsymv(1.0, A.T, alphas[i, col[L]], lower=lower)
            log.info("%s depth %d: Gram factorised (jitter %.3g)", kind, L, jitter[i, col[L]])
    del F
    want = np.zeros(depths[-1] + 1, dtype=np.bool_)
    want[depths] = True
    a_sig = alphas[kinds.index("nngp")] if "nngp" in kinds else np.zeros((D, n))
    a_th = alphas[kinds.index("ntk")] if "ntk" in kinds else np.zeros((D, n))
    out_s, out_t = np.empty((D, len(T))), np.empty((D, len(T)))
    rows = max(1, min(block, (1 << 18) // n))
    for s in range(0, len(T), rows):
        sig0 = T[s : s + rows] @ X.T
        sig0 /= d
        sig0 += b2
        fused.predict_rows(sig0, qt[s : s + rows], q, b2, want, a_sig, a_th, out_s[:, s : s + rows], out_t[:, s : s + rows])
    pred = np.stack([out_t if k == "ntk" else out_s for k in kinds])
    return KernelFit(kinds=kinds, depths=np.asarray(depths), prediction=pred, train_prediction=train_pred, jitter=jitter)


def _regression_torch(x_train, y_train, x_test, depths: list[int], beta: float, block: int, dev: torch.device,
                      kinds: tuple[str, ...]) -> KernelFit:
    """The same regression as torch tile operations (the CUDA path; on the CPU the fused one is faster)."""
    X = torch.as_tensor(x_train, dtype=torch.float64, device=dev)
    Y = torch.as_tensor(y_train, dtype=torch.float64, device=dev)
    T = torch.as_tensor(x_test, dtype=torch.float64, device=dev)
    D, K = len(depths), len(kinds)
    alphas = torch.empty(K, D, X.shape[0], dtype=torch.float64, device=dev)
    train_pred = np.empty((K, D, X.shape[0]))
    jitter = np.zeros((K, D))
    for j, L in enumerate(depths):
        grams = _grams(X, L, beta, block, kinds)
        for i, kind in enumerate(kinds):
            G = grams.pop(kind)
            C, jitter[i, j] = cholesky_with_jitter(G)
            alphas[i, j] = torch.cholesky_solve(Y.unsqueeze(1), C).squeeze(1)  # K^{-1} y, [n]
            del C
            train_pred[i, j] = (G @ alphas[i, j]).cpu().numpy()
            del G
            log.info("%s depth %d: Gram factorised (jitter %.3g)", kind, L, jitter[i, j])
    pred = np.empty((K, D, T.shape[0]))
    col = {L: j for j, L in enumerate(depths)}
    rows = _rows(block, X.shape[0]) if dev.type == "cpu" else block
    for s in range(0, T.shape[0], rows):
        for ell, sig, th in appendix_a(T[s : s + rows], X, depths[-1], beta, copy=False):
            if ell in col:
                for i, kind in enumerate(kinds):
                    pred[i, col[ell], s : s + rows] = ((th if kind == "ntk" else sig) @ alphas[i, col[ell]]).cpu().numpy()
    return KernelFit(kinds=kinds, depths=np.asarray(depths), prediction=pred, train_prediction=train_pred, jitter=jitter)


# ---- the empirical tangent kernel of a finite net (the network actually trained) ---------------------


def _features(params_m: list[tuple[torch.Tensor, torch.Tensor]], x: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
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


def empirical_ntk(params: list[tuple[torch.Tensor, torch.Tensor]], x1: np.ndarray, x2: np.ndarray, m: int = 0,
                  block: int = 4096) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def linearized_prediction(params: list[tuple[torch.Tensor, torch.Tensor]], x_train: np.ndarray, y_train: np.ndarray,
                          x_test: np.ndarray, m: int = 0) -> tuple[np.ndarray, float]:
    """The lazy limit of training model m to zero MSE: f0(x) + Theta_hat(x, X) Theta_hat(X, X)^{-1} (y - f0(X)).

    (Gradient flow on the model linearised at init converges to this interpolant.)  Returns the
    prediction on x_test and the Cholesky jitter used.
    """
    K, f0_train, _ = empirical_ntk(params, x_train, x_train, m)
    Kt, f0_test, _ = empirical_ntk(params, x_test, x_train, m)
    C, jit = cholesky_with_jitter(torch.as_tensor(K))
    alpha = torch.cholesky_solve(torch.as_tensor(y_train - f0_train).unsqueeze(1), C).squeeze(1).numpy()
    return f0_test + Kt @ alpha, jit
