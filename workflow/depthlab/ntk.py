"""Analytic NTK of a deep ReLU net with biases (Mori & Ueda, Appendix A, Eqs. 13-17) and kernel regression (Eq. 10).

Everything is float64 torch, so it runs on CUDA when present.  ``depth`` counts
hidden layers L as in the paper.  One pass of the recursion yields every depth:

    Sigma^(0)      = x.x'/d + beta^2                                        (13)
    Sigma^(l)      = sqrt(det Lambda)/pi + Sigma^(l-1)/pi [pi/2 + atan(Sigma^(l-1)/sqrt(det Lambda))] + beta^2   (16)
    Sigmadot^(l)   = 1/2 [1 + (2/pi) atan(Sigma^(l-1)/sqrt(det Lambda))]   (17)
    det Lambda^(l) = Sigma^(l-1)(x,x) Sigma^(l-1)(x',x') - Sigma^(l-1)(x,x')^2
    Sigma^(l)(x,x) = |x|^2/d + (l+1) beta^2                                 (below 17)
    Theta^(L)      = sum_{l=1}^{L+1} Sigma^(l-1) prod_{l'=l}^{L+1} Sigmadot^(l'),  Sigmadot^(L+1) = 1   (15)

(15) is accumulated as Theta_0 = Sigma^(0), Theta_l = Theta_{l-1} Sigmadot^(l) + Sigma^(l),
so Theta^(L) = Theta_L for every L on the way.
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


def _as64(x: np.ndarray | torch.Tensor, dev: torch.device) -> torch.Tensor:
    return torch.as_tensor(x, dtype=torch.float64, device=dev)


def kernels(
    x1: torch.Tensor, x2: torch.Tensor, max_depth: int, beta: float = 0.1, copy: bool = True
) -> Iterator[tuple[int, torch.Tensor]]:
    """Yield (L, Theta^(L)(x1, x2)) for L = 1..max_depth in one pass.  x1: [n1, d], x2: [n2, d] float64.

    With ``copy=False`` the yielded [n1, n2] tensor is updated in place by the next
    step (use it before advancing the iterator).  Keep n1 * n2 near :data:`TILE`
    for speed: the recursion is a chain of elementwise passes, cache-bound.
    """
    d = x1.shape[1]
    b2 = beta * beta
    n1 = (x1 * x1).sum(1) / d  # |x|^2/d, [n1]
    n2 = (x2 * x2).sum(1) / d
    sig = torch.addmm(torch.full((), b2, dtype=x1.dtype, device=x1.device), x1, x2.T, alpha=1.0 / d)  # Sigma^(0), [n1, n2]
    theta = sig.clone()
    buf = torch.empty_like(sig)
    for ell in range(1, max_depth + 1):
        # diagonal entries of Lambda^(ell): Sigma^(ell-1)(x, x) = |x|^2/d + ell beta^2
        sqrt_det = torch.outer(n1 + ell * b2, n2 + ell * b2).addcmul_(sig, sig, value=-1.0).clamp_(min=0.0).sqrt_()
        # atan(c / 0) = pi/2 for c > 0: the x = x' limit comes out exactly (Sigmadot = 1)
        phase = torch.div(sig, sqrt_det, out=buf).atan_()
        theta.mul_(phase.mul(1.0 / math.pi).add_(0.5))  # Theta *= Sigmadot^(ell), Eq. (17)
        # Sigma^(ell) = [sqrt(det) + Sigma^(ell-1) (pi/2 + phase)] / pi + beta^2, Eq. (16)
        sig.mul_(phase.add_(math.pi / 2)).add_(sqrt_det).div_(math.pi).add_(b2)
        theta.add_(sig)
        yield ell, (theta.clone() if copy else theta)


TILE = 1 << 16  # elements per kernel tile: 512 KiB of float64, cache-resident temporaries


def _rows(block: int, n_other: int) -> int:
    """Rows per tile: at most ``block`` (the memory knob), at least 1, about TILE elements."""
    return max(1, min(block, TILE // max(n_other, 1)))


def kernel(x1: np.ndarray, x2: np.ndarray, depth: int, beta: float = 0.1) -> np.ndarray:
    """Theta^(L) of Eq. (15) as a float64 numpy array [n1, n2].  x1: [n1, d], x2: [n2, d]."""
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    dev = torch.device("cpu")
    for ell, th in kernels(_as64(x1, dev), _as64(x2, dev), depth, beta):
        if ell == depth:
            return th.numpy()
    raise AssertionError("unreachable")


def kernel_diagonal(x: np.ndarray | torch.Tensor, depth: int, beta: float = 0.1) -> np.ndarray | torch.Tensor:
    """Closed form of Theta^(L)(x, x): Sigmadot = 1 on the diagonal, so Theta = sum_{l=0}^{L} Sigma^(l)(x,x).

    = sum_l (|x|^2/d + (l+1) beta^2) = (L+1)|x|^2/d + beta^2 (L+1)(L+2)/2.  x: [n, d] -> [n] (numpy or torch, as given).
    """
    q = (x * x).sum(1) / x.shape[1]
    return (depth + 1) * q + beta**2 * (depth + 1) * (depth + 2) / 2


@dataclass
class KernelFit:
    """Kernel regression result for several depths."""

    depths: np.ndarray  # [D]
    prediction: np.ndarray  # [D, n_test]
    train_prediction: np.ndarray  # [D, n_train] Theta(train, train) alpha, ~ y_train
    jitter: np.ndarray  # [D] ridge added to the Gram diagonal for a stable Cholesky (0 if none)


def _cholesky_with_jitter(K: torch.Tensor) -> tuple[torch.Tensor, float]:
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
    raise np.linalg.LinAlgError("NTK Gram matrix is not positive definite even with jitter 1e-2 * mean diag")


def _gram(x: torch.Tensor, depths: Sequence[int], beta: float, block: int) -> Iterator[tuple[int, torch.Tensor]]:
    """Yield (L, Theta^(L)(x, x)) [n, n] for each L in depths, built in row blocks of size ``block``.

    Holds one n x n matrix at a time: each depth replays the recursion per block
    (the recursion is elementwise and cheap next to the O(n^3) Cholesky).
    """
    n = x.shape[0]
    for L in depths:
        K = torch.empty(n, n, dtype=torch.float64, device=x.device)
        rows = _rows(block, n) if x.device.type == "cpu" else block
        for s in range(0, n, rows):
            for ell, th in kernels(x[s : s + rows], x, L, beta, copy=False):
                if ell == L:
                    K[s : s + rows] = th
        # On the diagonal det Lambda = 0 exactly, but rounding leaves ~1e-16 that sqrt()
        # lifts to ~1e-8; write the exact closed form there instead (kernel_diagonal).
        K.diagonal().copy_(kernel_diagonal(x, L, beta))
        yield L, K


def kernel_regression(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    depths: Sequence[int],
    beta: float = 0.1,
    block: int = 2048,
    device: str = "auto",
) -> KernelFit:
    """NTK regression, Eq. (10): f(x) = Theta(x, X) K^{-1} y with K = Theta(X, X), for every L in depths.

    Solved by Cholesky in float64 (jitter recorded).  Test points are processed
    in blocks of ``block`` rows; one pass of the recursion per block serves all
    depths.  Peak memory ~ n_train^2 * 8 bytes * 2 + block * n_train * 8 bytes * ~6.
    """
    depths = sorted(int(L) for L in depths)
    dev = resolve_device(device)
    X = _as64(x_train, dev)
    Y = _as64(y_train, dev)
    T = _as64(x_test, dev)
    alphas: dict[int, torch.Tensor] = {}
    train_pred: dict[int, np.ndarray] = {}
    jitters: dict[int, float] = {}
    for L, K in _gram(X, depths, beta, block):
        C, jit = _cholesky_with_jitter(K)
        alpha = torch.cholesky_solve(Y.unsqueeze(1), C).squeeze(1)  # K^{-1} y, [n]
        del C
        train_pred[L] = (K @ alpha).cpu().numpy()
        del K
        alphas[L], jitters[L] = alpha, jit
        log.info("NTK depth %d: Gram factorised (jitter %.3g)", L, jit)
    want = set(depths)
    pred = np.empty((len(depths), T.shape[0]))
    row = {L: i for i, L in enumerate(depths)}
    rows = _rows(block, X.shape[0]) if dev.type == "cpu" else block
    A = torch.stack([alphas[L] for L in depths], 1)  # [n, D]
    for s in range(0, T.shape[0], rows):
        for ell, th in kernels(T[s : s + rows], X, depths[-1], beta, copy=False):
            if ell in want:
                pred[row[ell], s : s + rows] = (th @ A[:, row[ell]]).cpu().numpy()
    return KernelFit(
        depths=np.asarray(depths),
        prediction=pred,
        train_prediction=np.stack([train_pred[L] for L in depths]),
        jitter=np.asarray([jitters[L] for L in depths]),
    )
