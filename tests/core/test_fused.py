"""The fused CPU kernels against numpy's arctan and the torch recursion they replace."""

import math

import numpy as np
import pytest
import torch

from depthlab.core import fused
from depthlab.core import kernel_regression as KR
from depthlab.core import kernels as K
from depthlab.studies.mori_ueda.targets import sample_inputs


def test_atan_is_within_one_ulp_over_the_real_line():
    x = np.concatenate(
        [
            np.linspace(-60, 60, 100001),
            np.logspace(-300, 300, 20001),
            -np.logspace(-300, 300, 20001),
            [0.0, -0.0, np.inf, -np.inf, 0.66, 0.6600000000000001, 2.41421356237309504880, 1.0, -1.0],
        ]
    )
    ref = np.arctan(x)
    ulps = np.abs(fused.atan_array(x) - ref) / np.spacing(np.abs(ref) + 1e-320)
    assert ulps.max() <= 1.0
    assert fused.atan_array(np.array([np.inf]))[0] == pytest.approx(math.pi / 2, abs=0)


def test_atan_of_a_ratio_is_within_one_ulp_of_arctan2():
    """The layer step's arctan(s / sqrt det) without the division: ratios over the whole real line, at scales
    from 1e-150 to 1e150, across the reduction's boundaries, and the x = 0 limit."""
    rng = np.random.default_rng(0)
    r = np.concatenate(
        [
            np.linspace(-60, 60, 20001),
            np.logspace(-300, 300, 4001),
            -np.logspace(-300, 300, 4001),
            [0.0, 0.66, 0.6600000000000001, 2.41421356237309504880, 1.0, -1.0],
        ]
    )
    x = 10.0 ** rng.uniform(-150, 150, r.size)
    with np.errstate(over="ignore"):
        y = r * x
    ok = np.isfinite(y)  # products past 1e308 dropped
    y, x = y[ok], x[ok]
    ref = np.arctan2(y, x)
    ulps = np.abs(fused.atan_ratio_array(y, x) - ref) / np.spacing(np.abs(ref) + 1e-320)
    assert ulps.max() <= 1.0
    np.testing.assert_array_equal(
        fused.atan_ratio_array(np.array([2.0, -3e-200, 0.0]), np.array([0.0, 0.0, 5.0])),
        [math.pi / 2, -math.pi / 2, 0.0],
    )


@pytest.mark.parametrize("beta", [0.0, 0.1, 0.5])
def test_recursion_and_row_predictions_match_the_torch_recursion(beta):
    x1 = sample_inputs(37, 11, seed=1)
    x2 = sample_inputs(53, 11, seed=2)
    d, b2 = 11, beta * beta
    sig0 = x1 @ x2.T / d + b2
    q1, q2 = (x1 * x1).sum(1) / d, (x2 * x2).sum(1) / d
    depths = [1, 2, 7]
    want = np.zeros(8, dtype=bool)
    want[depths] = True
    out_s, out_t = np.empty((3, 37, 53)), np.empty((3, 37, 53))
    fused.recursion(sig0, q1, q2, b2, want, out_s, out_t)
    ref = {L: (s.numpy(), t.numpy()) for L, s, t in K.appendix_a(torch.as_tensor(x1), torch.as_tensor(x2), 7, beta)}
    alpha = np.random.default_rng(0).standard_normal((3, 53))
    ps, pt = np.empty((3, 37)), np.empty((3, 37))
    fused.predict_rows(sig0, q1, q2, b2, want, alpha, alpha, ps, pt)
    for k, L in enumerate(depths):
        np.testing.assert_allclose(out_s[k], ref[L][0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(out_t[k], ref[L][1], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(ps[k], ref[L][0] @ alpha[k], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(pt[k], ref[L][1] @ alpha[k], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 128, 150])
def test_packed_advance_keeps_sigma_below_and_theta_above_the_diagonal(n):
    """Tiles of 64: sizes around the tile edge exercise the partial and diagonal blocks."""
    x = sample_inputs(n, 7, seed=n)
    d, beta = 7, 0.1
    A = x @ x.T / d + beta**2
    q = (x * x).sum(1) / d
    ref = list(K.appendix_a(torch.as_tensor(x), torch.as_tensor(x), 4, beta))
    il = np.tril_indices(n, -1)
    for ell in range(1, 5):
        fused.advance(A, q, beta**2, ell)
        _, s, t = ref[ell - 1]
        np.testing.assert_allclose(A[il], s.numpy()[il], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(A.T[il], t.numpy()[il], rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(np.diag(A), np.diag(x @ x.T / d + beta**2))  # the diagonal is not stored


def test_cpu_regression_equals_the_torch_path():
    x = sample_inputs(300, 9, seed=3)
    y = np.sin(x[:, 0]) + x[:, 1] * x[:, 2]
    xt = sample_inputs(70, 9, seed=4)
    a = KR.kernel_regression(x, y, xt, [1, 3, 4], beta=0.1, block=7, device="cpu", kinds=("ntk", "nngp"))
    b = KR._regression_torch(x, y, xt, [1, 3, 4], 0.1, 7, torch.device("cpu"), ("ntk", "nngp"))
    np.testing.assert_allclose(a.prediction, b.prediction, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.train_prediction, b.train_prediction, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(a.jitter, b.jitter)


@pytest.mark.parametrize("chunk", [1, 7, 53, 512])
def test_predictions_chunked_over_training_points_match_the_whole_rows(chunk):
    """Cutting each row into chunks (partial last chunk included) changes only the summation order; a kind not
    needed is left at zero."""
    x1, x2 = sample_inputs(9, 5, seed=3), sample_inputs(53, 5, seed=4)
    d, b2 = 5, 0.01
    sig0 = x1 @ x2.T / d + b2
    q1, q2 = (x1 * x1).sum(1) / d, (x2 * x2).sum(1) / d
    want = np.zeros(6, dtype=bool)
    want[[2, 5]] = True
    out_s, out_t = np.empty((2, 9, 53)), np.empty((2, 9, 53))
    fused.recursion(sig0, q1, q2, b2, want, out_s, out_t)
    rng = np.random.default_rng(1)
    a_s, a_t = rng.standard_normal((2, 53)), rng.standard_normal((2, 53))
    ps, pt = np.full((2, 9), np.nan), np.full((2, 9), np.nan)
    fused.predict_rows(sig0, q1, q2, b2, want, a_s, a_t, ps, pt, True, True, chunk)
    np.testing.assert_allclose(ps, np.einsum("kij,kj->ki", out_s, a_s), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(pt, np.einsum("kij,kj->ki", out_t, a_t), rtol=1e-12, atol=1e-12)
    ps2, pt2 = np.full((2, 9), np.nan), np.full((2, 9), np.nan)
    fused.predict_rows(sig0, q1, q2, b2, want, a_s, a_t, ps2, pt2, False, True, chunk)
    assert np.all(ps2 == 0.0)
    np.testing.assert_array_equal(pt2, pt)
    # handed the raw x.x' with divide = d and shift = beta^2, it forms Sigma^(0) as it reads it: the same bits as
    # the block prepared by numpy (x.x' computed once, so both sides start from the same product)
    raw = x1 @ x2.T
    prepared = raw / d + b2
    ps3, pt3, ps4, pt4 = (np.full((2, 9), np.nan) for _ in range(4))
    fused.predict_rows(prepared, q1, q2, b2, want, a_s, a_t, ps3, pt3, True, True, chunk)
    fused.predict_rows(raw, q1, q2, b2, want, a_s, a_t, ps4, pt4, True, True, chunk, float(d), b2)
    np.testing.assert_array_equal(ps4, ps3)
    np.testing.assert_array_equal(pt4, pt3)
    fused.divide_shift(raw, float(d), b2)  # the training side's one pass: the same bits as numpy's two
    np.testing.assert_array_equal(raw, prepared)


def test_the_threaded_kernels_give_the_same_bits_on_one_thread_and_on_two():
    """The Gram recursion, the copies and the test-row predictions run on numba's threads; each
    element is computed by one thread with the same operations, so with the BLAS held at one thread the regression's
    bits do not depend on numba's threads (1 against 2).  (The BLAS's own Cholesky changes its last bits with its
    thread count, which is why a job pins it to its threads.)  kernel_regression gives the job's (torch's) thread
    count to numba for the call and restores the caller's after it."""
    import numba
    from threadpoolctl import threadpool_limits

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread on this machine")
    x = sample_inputs(333, 7, seed=5)  # 333 = 5 tiles of 64 + a partial one: the balanced tile order covers them all
    y = np.cos(x[:, 0]) - x[:, 1] * x[:, 3]
    xt = sample_inputs(101, 7, seed=6)  # 12 blocks of 8 rows + a partial one
    fits = []
    before = numba.get_num_threads()
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            for threads in (1, 2):
                numba.set_num_threads(threads)
                fits.append(KR._regression_cpu_threads(x, y, xt, [1, 2, 5], 0.1, 2048, ("ntk", "nngp")))
        numba.set_num_threads(1)
        KR.kernel_regression(x, y, xt, [1], beta=0.1, device="cpu")
        assert numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(before)
    for field in ("prediction", "train_prediction", "jitter"):
        np.testing.assert_array_equal(getattr(fits[0], field), getattr(fits[1], field))


def test_the_gram_carried_from_depth_to_depth_equals_the_one_built_from_layer_one():
    """The CUDA path, run here on the CPU: gram_states advances one layer per depth and must give, at
    every depth, the kernels that appendix_a builds from Sigma^(0) on the same row tiles (the old per-depth build), to
    the bit, with any tile size; gram() puts the closed-form diagonal in."""
    x = torch.as_tensor(sample_inputs(50, 6, seed=7))
    for block in (7, 50, 64):
        tiles = [
            list(K.appendix_a(x[s : s + block], x, 4, 0.1)) for s in range(0, 50, block)
        ]  # the old build, per tile
        for L, S, Th in KR.gram_states(x, 4, 0.1, block):
            torch.testing.assert_close(S, torch.cat([t[L - 1][1] for t in tiles]), rtol=0, atol=0)
            torch.testing.assert_close(Th, torch.cat([t[L - 1][2] for t in tiles]), rtol=0, atol=0)
        G = KR.gram(Th, x, 4, 0.1, "ntk")
        torch.testing.assert_close(G.diagonal(), K.kernel_diagonal(x, 4, 0.1, "ntk"), rtol=0, atol=0)
