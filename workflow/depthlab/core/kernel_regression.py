"""Kernel regression with the NTK Theta^(L) and the NNGP kernel Sigma^(L) of Appendix A (Mori & Ueda Eq. 10).

f(x) = K(x, X) K(X, X)^{-1} y, solved by Cholesky in float64 with the smallest jitter that makes
it succeed (recorded).  On the CPU the fused numba kernels of :mod:`depthlab.core.fused` do the
recursion; on CUDA the same recursion runs as torch tile operations (:func:`_regression_torch`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from .device import resolve_device
from .linalg import cholesky_with_jitter
from .kernels import appendix_a, kernel_diagonal, relu_layer_

log = logging.getLogger("depthlab")
KINDS = ("ntk", "nngp")  # Theta^(L) and Sigma^(L)


@dataclass
class KernelFit:
    """Kernel regression results for several kinds and depths."""

    kinds: tuple[str, ...]  # [K] ntk and/or nngp
    depths: np.ndarray  # [D]
    prediction: np.ndarray  # [K, D, n_test]
    train_prediction: np.ndarray  # [K, D, n_train] Gram @ alpha, ~ y_train
    jitter: np.ndarray  # [K, D] ridge added to the Gram diagonal for a stable Cholesky (0 if none)


def gram_states(x: torch.Tensor, max_depth: int, beta: float, block: int):
    """Yield (L, Sigma^(L), Theta^(L)) [n, n] of the training inputs for L = 1..max_depth, each depth carried forward
    from the one before: one layer pass per depth (max_depth passes in all, where rebuilding every depth from layer 1
    takes the sum of the depths).  The yielded tensors are updated in place by the next step, and their diagonals are
    the recursion's (see :func:`gram`).  Row tiles of ``block`` rows, the same operations as :func:`appendix_a` on each
    element."""
    n, d = x.shape
    b2 = beta * beta
    q = (x * x).sum(1) / d  # |x|^2/d
    S = torch.empty(n, n, dtype=torch.float64, device=x.device)
    for s in range(0, n, block):  # Sigma^(0), Eq. 13, tile by tile as appendix_a forms it
        S[s : s + block] = torch.addmm(
            torch.full((), b2, dtype=x.dtype, device=x.device), x[s : s + block], x.T, alpha=1.0 / d
        )
    Th = S.clone()
    rows = min(block, n)
    buf = torch.empty(rows, n, dtype=torch.float64, device=x.device)
    dot = torch.empty_like(buf)
    for ell in range(1, max_depth + 1):
        q2 = q.unsqueeze(0) + ell * b2  # Sigma^(ell-1)(x', x')
        for s in range(0, n, block):
            m = min(block, n - s)
            sig = S[s : s + m]
            relu_layer_(sig, q[s : s + m].unsqueeze(1) + ell * b2, q2, b2, buf[:m], dot[:m])
            Th[s : s + m].mul_(dot[:m]).add_(sig)  # Theta_ell = Theta_{ell-1} Sigmadot^(ell) + Sigma^(ell), Eq. 15
        yield ell, S, Th


def gram(state: torch.Tensor, x: torch.Tensor, L: int, beta: float, kind: str) -> torch.Tensor:
    """A copy of one kernel's Gram from :func:`gram_states` with the exact diagonal: there det Lambda = 0 exactly, but
    rounding leaves ~1e-16 that sqrt() lifts to ~1e-8, so the closed form (kernel_diagonal) is written instead."""
    G = state.clone()
    G.diagonal().copy_(kernel_diagonal(x, L, beta, kind))
    return G


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
        return _regression_cpu(
            np.asarray(x_train, np.float64),
            np.asarray(y_train, np.float64),
            np.asarray(x_test, np.float64),
            depths,
            beta,
            block,
            kinds,
        )
    return _regression_torch(x_train, y_train, x_test, depths, beta, block, dev, kinds)


def _touched(shape: tuple[int, int], order: str = "C") -> np.ndarray:
    """An array whose pages have all been faulted in, in order (np.empty, then a sequential fill)."""
    a = np.empty(shape, order=order)
    a.fill(0.0)
    return a


def _regression_cpu(
    X: np.ndarray, y: np.ndarray, T: np.ndarray, depths: list[int], beta: float, block: int, kinds: tuple[str, ...]
) -> KernelFit:
    """The fused CPU path on the job's threads: torch's thread count (``depthlab stage --threads``, 1 by default) is
    given to numba's loops and to the BLAS (the Choleskys) for the call, and restored after it."""
    import contextlib

    import numba
    from threadpoolctl import threadpool_info, threadpool_limits

    threads = max(1, torch.get_num_threads())
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    # Only where a BLAS pool has another count: switching OpenBLAS's threads at run time (threadpoolctl over numpy's and
    # scipy's two libraries) crashed scipy's dpotrf at N = 20 000.  A `depthlab stage` process has its
    # pools set by the environment before they load (depthlab._launch.pin_pools), so nothing is switched there.
    differ = any(p.get("num_threads") != threads for p in threadpool_info() if p.get("user_api") == "blas")
    try:
        with threadpool_limits(limits=threads, user_api="blas") if differ else contextlib.nullcontext():
            return _regression_cpu_threads(X, y, T, depths, beta, block, kinds)
    finally:
        numba.set_num_threads(before)


ONE_THREAD_CHOLESKY_N = 4096  # from this size scipy's dpotrf runs on one BLAS thread (see _potrf)


def _potrf(F: np.ndarray, lower: bool):
    """scipy's ``dpotrf`` of F in place, on one OpenBLAS thread from ``ONE_THREAD_CHOLESKY_N`` rows on.

    scipy's bundled OpenBLAS (0.3.30) segfaults in ``dpotrf`` at N = 20 000 with 2 threads (upstream
    OpenMathLib/OpenBLAS#2562, dpotrf crashing at exactly 2 threads for large N, and #2821, in ``dsyrk_thread`` under
    ``dpotrf_parallel``), and it is fine on one.  A ``depthlab stage`` process runs on one thread anyway; a notebook or a
    benchmark calling :func:`kernel_regression` on more gets the factorisation on one and everything else (the fused
    recursion, the test rows) on its threads.  Only scipy's LAPACK library is limited (threadpoolctl by its file), and
    only when its pool has more than one thread, so a one-thread process switches nothing.  The cost: the Cholesky is
    n^3 / 3 flops, about 53 s at N = 20 000 on one core (against the recursion's minutes)."""
    from scipy.linalg import lapack

    if F.shape[0] < ONE_THREAD_CHOLESKY_N:
        return lapack.dpotrf(F, lower=lower, clean=0, overwrite_a=1)
    from threadpoolctl import ThreadpoolController

    ctl = ThreadpoolController()  # scipy.linalg is imported above, so its OpenBLAS is loaded and found
    mine = ctl.select(user_api="blas").lib_controllers
    scipy_libs = [c for c in mine if "scipy_openblas" in str(c.filepath) and "numpy" not in str(c.filepath)]
    many = [c for c in (scipy_libs or mine) if (c.num_threads or 1) > 1]
    if not many:
        return lapack.dpotrf(F, lower=lower, clean=0, overwrite_a=1)
    before = [c.num_threads for c in many]
    for c in many:
        c.set_num_threads(1)
    try:
        return lapack.dpotrf(F, lower=lower, clean=0, overwrite_a=1)
    finally:
        for c, n in zip(many, before):
            c.set_num_threads(n)


def _regression_cpu_threads(
    X: np.ndarray, y: np.ndarray, T: np.ndarray, depths: list[int], beta: float, block: int, kinds: tuple[str, ...]
) -> KernelFit:
    from scipy.linalg import blas, lapack

    from . import fused

    n, d = X.shape
    b2 = beta * beta
    q, qt = (X * X).sum(1) / d, (T * T).sum(1) / d
    # Big buffers are first touched by a sequential fill: left to the GEMM's or fill_factor's write pattern, faulting
    # the pages in cost 6.8 s instead of 1.4 s for the 3.2 GB Gram at N = 20 000 on the dev machine
    A = _touched((n, n))
    np.matmul(X, X.T, out=A)  # Sigma^(0) = Theta^(0) = x.x'/d + beta^2 in both triangles, Eq. 13
    fused.divide_shift(A, float(d), b2)
    F = _touched((n, n), order="F")  # the LAPACK buffer, factorised in place
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
                c, info = _potrf(F, lower)
                if info == 0:
                    break
            else:
                raise np.linalg.LinAlgError(
                    f"{kind} Gram matrix at depth {L} is not positive definite even with jitter 1e-2 * mean diag"
                )
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
    # test rows per Sigma^(0) block: ~4M entries (32 MB), so the block's GEMM runs at BLAS speed (13-row blocks at
    # N = 20 000 ran at 23 GFLOP/s, 209-row ones at ~50); predict_rows streams each row once, in chunks
    rows = max(1, min(block, (1 << 22) // n))
    buf = _touched((min(rows, len(T)), n))  # one Sigma^(0) buffer for every block: no page faults per block
    for s in range(0, len(T), rows):
        sig0 = buf[: len(T[s : s + rows])]
        np.matmul(T[s : s + rows], X.T, out=sig0)  # x.x'; predict_rows forms Sigma^(0) = x.x'/d + beta^2 as it reads it
        fused.predict_rows(
            sig0,
            qt[s : s + rows],
            q,
            b2,
            want,
            a_sig,
            a_th,
            out_s[:, s : s + rows],
            out_t[:, s : s + rows],
            "nngp" in kinds,
            "ntk" in kinds,
            divide=float(d),
            shift=b2,
        )
    pred = np.stack([out_t if k == "ntk" else out_s for k in kinds])
    return KernelFit(
        kinds=kinds, depths=np.asarray(depths), prediction=pred, train_prediction=train_pred, jitter=jitter
    )


def _regression_torch(
    x_train, y_train, x_test, depths: list[int], beta: float, block: int, dev: torch.device, kinds: tuple[str, ...]
) -> KernelFit:
    """The same regression as torch tile operations of ``block`` rows (the CUDA path; on the CPU the fused one is faster).
    The training Grams are carried from depth to depth (:func:`gram_states`), so all depths cost max(depths) layer
    passes; the peak is about 4 N^2 float64 (Sigma, Theta, one Gram and its factor)."""
    X = torch.as_tensor(x_train, dtype=torch.float64, device=dev)
    Y = torch.as_tensor(y_train, dtype=torch.float64, device=dev)
    T = torch.as_tensor(x_test, dtype=torch.float64, device=dev)
    D, K = len(depths), len(kinds)
    alphas = torch.empty(K, D, X.shape[0], dtype=torch.float64, device=dev)
    train_pred = np.empty((K, D, X.shape[0]))
    jitter = np.zeros((K, D))
    col = {L: j for j, L in enumerate(depths)}
    for L, S, Th in gram_states(X, depths[-1], beta, block):  # each depth's Grams carried forward from the last
        if L not in col:
            continue
        j = col[L]
        for i, kind in enumerate(kinds):
            G = gram(Th if kind == "ntk" else S, X, L, beta, kind)
            C, jitter[i, j] = cholesky_with_jitter(G)
            alphas[i, j] = torch.cholesky_solve(Y.unsqueeze(1), C).squeeze(1)  # K^{-1} y, [n]
            del C
            train_pred[i, j] = (G @ alphas[i, j]).cpu().numpy()
            del G
            log.info("%s depth %d: Gram factorised (jitter %.3g)", kind, L, jitter[i, j])
    del S, Th
    pred = np.empty((K, D, T.shape[0]))
    for s in range(0, T.shape[0], block):
        for ell, sig, th in appendix_a(T[s : s + block], X, depths[-1], beta, copy=False):
            if ell in col:
                for i, kind in enumerate(kinds):
                    pred[i, col[ell], s : s + block] = (
                        ((th if kind == "ntk" else sig) @ alphas[i, col[ell]]).cpu().numpy()
                    )
    return KernelFit(
        kinds=kinds, depths=np.asarray(depths), prediction=pred, train_prediction=train_pred, jitter=jitter
    )
