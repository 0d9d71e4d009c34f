"""The arc-cosine layer step of depthlab.core.kernels, fused into one compiled loop for the CPU.

Why: the recursion (Eqs. 16-17) is a chain of elementwise operations.  Written with torch
ops it is a dozen passes over memory per layer, about 10 ns per element and layer on one
core; a fused loop keeps every intermediate in registers and makes one pass per layer.

Why numba: it compiles this Python source with LLVM at first use (cached on disk next to
this file, so later processes load machine code), vectorises the inner loop, and needs no
C++ toolchain or build step at job time.  torch.compile would need a C++ compiler and tens
of seconds per process and shape on a 2-core machine; a C++ extension, a build per machine.

Why a hand-written atan: numba lowers ``math.atan`` to the scalar libm call, which blocks
vectorisation.  :func:`atan` is the Cephes ``atan`` (range reduction to |x| <= 0.66 and a
P(z)/Q(z) rational approximation in z = x^2, accurate to ~1 ulp), written without branches so
the loop vectorises.  It is tested against numpy's arctan over the whole real line.

Threads: the loops over rows (``advance``'s tile rows, ``predict_rows``' test rows, the copies) are numba
``prange`` loops, run on numba's threads: as many as the caller set with ``numba.set_num_threads`` (the NTK
regression sets the job's threads).  Every element is computed by one thread with the same operations whatever
the number of threads, so the bits do not depend on it.

The recursion is the one of :func:`depthlab.core.kernels.relu_layer_`, element by element:

    sqrt_det = sqrt(max(q1 q2 - s^2, 0));  ph = atan(s / sqrt_det)
    s' = (sqrt_det + s (pi/2 + ph)) / pi + beta^2;  Sigmadot = 1/2 + ph / pi;  th' = th Sigmadot + s'
"""

from __future__ import annotations

import math

import numba
import numpy as np

_PI_2 = math.pi / 2
_PI_4 = math.pi / 4
_INV_PI = 1.0 / math.pi
_MOREBITS = 6.123233995736765886130e-17  # pi/2 - float(pi/2)
_T3P8 = 2.41421356237309504880  # tan(3 pi / 8)
_P = (
    -8.750608600031904122785e-1,
    -1.615753718733365076637e1,
    -7.500855792314704667340e1,
    -1.228866684490136173410e2,
    -6.485021904942025371773e1,
)
_Q = (
    2.485846490142306297962e1,
    1.650270098316988542046e2,
    4.328810604912902668951e2,
    4.853903996359136964868e2,
    1.945506571482613964425e2,
)

_JIT = dict(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
_PAR = dict(_JIT, parallel=True)


@numba.njit(inline="always", **_JIT)
def atan_ratio(y: float, x: float) -> float:
    """arctan(y / x) for x >= 0 without forming y / x: Cephes' atan (range reduction to |x| <= 0.66 and a P(z)/Q(z)
    rational approximation in z = x^2) written on the ratio's terms (-x / |y|, (|y| - x) / (|y| + x) or |y| / x), so
    one division instead of three; atan_ratio(y, 0) = +-pi/2."""
    a = abs(y)
    big = a > _T3P8 * x
    mid = a > 0.66 * x
    num = -x if big else (a - x if mid else a)
    den = a if big else (a + x if mid else x)
    xr = num / den
    y0 = _PI_2 if big else (_PI_4 if mid else 0.0)
    corr = _MOREBITS if big else (0.5 * _MOREBITS if mid else 0.0)
    z = xr * xr
    p = (((_P[0] * z + _P[1]) * z + _P[2]) * z + _P[3]) * z + _P[4]
    q = ((((z + _Q[0]) * z + _Q[1]) * z + _Q[2]) * z + _Q[3]) * z + _Q[4]
    r = y0 + (xr * (z * p / q) + xr + corr)
    return -r if y < 0 else r


@numba.njit(inline="always", **_JIT)
def atan(x: float) -> float:
    """arctan(x), branch-free Cephes; atan(+-inf) = +-pi/2.  The ratio x / 1: its reduced argument -1 / |x|,
    (|x| - 1) / (|x| + 1) or |x| / 1 is exactly the one of Cephes' atan."""
    return atan_ratio(x, 1.0)


@numba.njit(**_JIT)
def atan_ratio_array(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    out = np.empty_like(y)
    for i in range(y.size):
        out.flat[i] = atan_ratio(y.flat[i], x.flat[i])
    return out


@numba.njit(**_JIT)
def atan_array(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.size):
        out.flat[i] = atan(x.flat[i])
    return out


@numba.njit(inline="always", **_JIT)
def step_row(s: np.ndarray, th: np.ndarray, q2: np.ndarray, qa: float, b: float, beta2: float) -> None:
    """One layer for one row of pairs, in place: s <- Sigma^(l), th <- Theta^(l); Sigma^(l-1)(x, x) = qa, (x', x') = q2 + b."""
    for j in range(s.shape[0]):
        sj = s[j]
        det = qa * (q2[j] + b) - sj * sj
        sd = math.sqrt(det if det > 0.0 else 0.0)
        ph = atan_ratio(sj, sd)
        snew = (sd + sj * (_PI_2 + ph)) * _INV_PI + beta2
        th[j] = th[j] * (0.5 + ph * _INV_PI) + snew
        s[j] = snew


@numba.njit(**_JIT)
def recursion(
    sig0: np.ndarray,
    q1: np.ndarray,
    q2: np.ndarray,
    beta2: float,
    want: np.ndarray,
    out_sigma: np.ndarray,
    out_theta: np.ndarray,
) -> None:
    """Sigma^(L), Theta^(L) of every pair, for each L with want[L], from Sigma^(0) [n1, n2].

    q1 [n1], q2 [n2]: |x|^2 / d of the rows and columns (Sigma^(l-1)(x, x) = q + l beta^2);
    want [max_depth + 1] bool; out_sigma, out_theta [sum(want), n1, n2], filled in order of L.
    """
    n1, n2 = sig0.shape
    max_depth = want.shape[0] - 1
    s = np.empty(n2)
    th = np.empty(n2)
    for i in range(n1):
        for j in range(n2):
            s[j] = sig0[i, j]
            th[j] = sig0[i, j]
        k = 0
        for ell in range(1, max_depth + 1):
            step_row(s, th, q2, q1[i] + ell * beta2, ell * beta2, beta2)
            if want[ell]:
                for j in range(n2):
                    out_sigma[k, i, j] = s[j]
                    out_theta[k, i, j] = th[j]
                k += 1


@numba.njit(**_PAR)
def advance(A: np.ndarray, q: np.ndarray, beta2: float, ell: int, tile: int = 64) -> None:
    """One layer of the recursion on a symmetric pair of kernels packed into one square matrix, in place.

    A holds Sigma^(l-1)(x_i, x_j) at A[i, j] and Theta^(l-1)(x_i, x_j) at A[j, i] for i > j (the
    diagonals have closed forms and are not stored); afterwards it holds Sigma^(l), Theta^(l).
    q [n]: |x|^2 / d, so Sigma^(l-1)(x, x) = q + l beta^2 with l = ``ell``.  Works on tile x tile
    blocks: off the diagonal, each row of the Sigma block is advanced where it lies, and the Theta
    block goes through one contiguous transposed buffer (so the inner loop vectorises); a diagonal
    block is copied whole, computes its upper half too, and writes back its strict triangles only.
    Copying the Sigma blocks in and out as well cost 10 ns per pair instead of 2.7 (n = 6000, one
    core of the dev machine), against 1.3 ns for the arithmetic.
    """
    n = A.shape[0]
    b = ell * beta2
    nb = (n + tile - 1) // tile
    for p in numba.prange(nb):
        r0 = tile * (p // 2 if p % 2 == 0 else nb - 1 - p // 2)  # 0, nb - 1, 1, nb - 2, ...: every index once
        sb = np.empty((tile, tile))
        tb = np.empty((tile, tile))
        r1 = min(r0 + tile, n)
        nr = r1 - r0
        for c0 in range(0, r0, tile):  # off the diagonal: c0 + tile <= r0
            c1 = c0 + tile
            for jj in range(tile):
                row = A[c0 + jj]
                for ii in range(nr):
                    tb[ii, jj] = row[r0 + ii]
            qc = q[c0:c1]
            for ii in range(nr):
                step_row(A[r0 + ii][c0:c1], tb[ii], qc, q[r0 + ii] + b, b, beta2)
            for jj in range(tile):
                row = A[c0 + jj]
                for ii in range(nr):
                    row[r0 + ii] = tb[ii, jj]
        for ii in range(nr):  # the diagonal block
            for jj in range(nr):
                sb[ii, jj] = A[r0 + ii, r0 + jj]
                tb[ii, jj] = A[r0 + jj, r0 + ii]
        for ii in range(nr):
            step_row(sb[ii][:nr], tb[ii][:nr], q[r0:r1], q[r0 + ii] + b, b, beta2)
        for ii in range(nr):
            for jj in range(ii):
                A[r0 + ii, r0 + jj] = sb[ii, jj]
                A[r0 + jj, r0 + ii] = tb[ii, jj]


@numba.njit(**_PAR)
def predict_rows(
    sig0: np.ndarray,
    q1: np.ndarray,
    q2: np.ndarray,
    beta2: float,
    want: np.ndarray,
    alpha_sigma: np.ndarray,
    alpha_theta: np.ndarray,
    out_sigma: np.ndarray,
    out_theta: np.ndarray,
    need_sigma: bool = True,
    need_theta: bool = True,
    chunk: int = 512,
    divide: float = 1.0,
    shift: float = 0.0,
) -> None:
    """Kernel-regression predictions of test rows: out[k, i] = sum_j K^(L_k)(x_i, x_j) alpha[k, j].

    sig0 [n1, n2]: Sigma^(0) between the test rows and the training points, as ``sig0 / divide + shift``
    (so the caller can hand over the raw x.x' and skip two passes over the block; the same operations
    as numpy's ``sig0 /= divide; sig0 += shift``, so the same bits); alpha_* [D, n2]
    (D = sum(want)); out_* [D, n1] (a kind not needed is left at 0 and its dot products skipped).
    The kernels never leave the cache: each row is cut into chunks of ``chunk`` training points,
    and a chunk is advanced through every layer and dotted with the matching pieces of alpha
    before the next is read, so its state stays in L1 (a whole row at N = 20 000 is 480 KB of
    state per layer, and the alphas of ten depths 3.2 MB).  The rows are shared out over numba's threads in blocks
    of ``rows_per_block``, each block with its own scratch; a row's sums run in the same order on any thread.
    """
    n1, n2 = sig0.shape
    max_depth = want.shape[0] - 1
    D = out_sigma.shape[0]
    rows_per_block = 8
    nblocks = (n1 + rows_per_block - 1) // rows_per_block
    for blk in numba.prange(nblocks):
        s = np.empty(chunk)
        th = np.empty(chunk)
        acc_s = np.zeros(D)
        acc_t = np.zeros(D)
        for i in range(blk * rows_per_block, min(n1, (blk + 1) * rows_per_block)):
            _predict_row(
                i,
                sig0,
                q1,
                q2,
                beta2,
                want,
                alpha_sigma,
                alpha_theta,
                out_sigma,
                out_theta,
                need_sigma,
                need_theta,
                chunk,
                divide,
                shift,
                max_depth,
                D,
                s,
                th,
                acc_s,
                acc_t,
            )


@numba.njit(inline="always", **_JIT)
def _predict_row(
    i,
    sig0,
    q1,
    q2,
    beta2,
    want,
    alpha_sigma,
    alpha_theta,
    out_sigma,
    out_theta,
    need_sigma,
    need_theta,
    chunk,
    divide,
    shift,
    max_depth,
    D,
    s,
    th,
    acc_s,
    acc_t,
) -> None:
    """Row i of :func:`predict_rows`, with the caller's scratch s, th [chunk] and acc_s, acc_t [D]."""
    n2 = sig0.shape[1]
    acc_s[:] = 0.0
    acc_t[:] = 0.0
    for c0 in range(0, n2, chunk):
        c1 = min(c0 + chunk, n2)
        m = c1 - c0
        for j in range(m):
            v = sig0[i, c0 + j] / divide + shift
            s[j] = v
            th[j] = v
        k = 0
        for ell in range(1, max_depth + 1):
            step_row(s[:m], th[:m], q2[c0:c1], q1[i] + ell * beta2, ell * beta2, beta2)
            if want[ell]:
                if need_sigma:
                    acc_s[k] += np.dot(s[:m], alpha_sigma[k, c0:c1])
                if need_theta:
                    acc_t[k] += np.dot(th[:m], alpha_theta[k, c0:c1])
                k += 1
    for k in range(D):
        out_sigma[k, i] = acc_s[k]
        out_theta[k, i] = acc_t[k]


@numba.njit(**_PAR)
def fill_factor(F: np.ndarray, A: np.ndarray, diag: np.ndarray, theta: bool, jitter: float) -> None:
    """Copy one kernel out of the packed matrix A into the Fortran-ordered LAPACK buffer F, diagonal + jitter.

    theta: Theta (A's upper triangle, row j from j + 1 on) into F's lower triangle, column j;
    else Sigma (A's lower triangle, row j up to j - 1) into F's upper triangle, column j.
    Both copies read and write contiguous runs.
    """
    n = A.shape[0]
    for j in numba.prange(n):
        F[j, j] = diag[j] + jitter
        if theta:
            for i in range(j + 1, n):
                F[i, j] = A[j, i]
        else:
            for i in range(j):
                F[i, j] = A[j, i]


@numba.njit(**_PAR)
def divide_shift(A: np.ndarray, divide: float, shift: float) -> None:
    """A = A / divide + shift in one pass over A (numpy's ``A /= divide; A += shift`` is two; the same bits)."""
    for i in numba.prange(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] = A[i, j] / divide + shift
