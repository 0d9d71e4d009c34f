"""The analytic NTK (Appendix A) against independent estimates."""

import numpy as np
import pytest
import torch

import depthlab as dl


def empirical_ntk(x: np.ndarray, depth: int, width: int, beta: float, seed: int, first_scale: float = 1.0) -> np.ndarray:
    """Gram of parameter gradients, sum_p df(x)/dp df(x')/dp, of one finite net at init.

    Parameterisation that Eqs. (13)-(17) describe: f = w~_{L+1} sqrt(2/h) z_L + beta b~_{L+1},
    pre-activations w~_l sqrt(c_l/n_{l-1}) z_{l-1} + beta b~_l with w~, b~ ~ N(0, 1), where c_1 = 1
    (so that Sigma^(0) = x.x'/d + beta^2, Eq. 13) and c_l = 2 for l >= 2.
    """
    g = torch.Generator().manual_seed(seed)
    d = x.shape[1]
    sizes = [d] + [width] * depth + [1]
    ws = [torch.randn(a, b, generator=g, dtype=torch.float64, requires_grad=True) for a, b in zip(sizes[:-1], sizes[1:])]
    bs = [torch.randn(b, generator=g, dtype=torch.float64, requires_grad=True) for b in sizes[1:]]
    scales = [(first_scale / d) ** 0.5] + [(2.0 / width) ** 0.5] * depth
    rows = []
    for xi in torch.as_tensor(x):
        a = xi[None]
        for ell, (w, b, c) in enumerate(zip(ws, bs, scales)):
            a = a @ w * c + beta * b
            if ell < depth:
                a = torch.relu(a)
        grads = torch.autograd.grad(a.sum(), ws + bs)
        rows.append(torch.cat([t.reshape(-1) for t in grads]))
    J = torch.stack(rows)  # [n, n_params]
    return (J @ J.T).numpy()


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_analytic_matches_empirical_wide_net(depth):
    x = dl.sample_inputs(6, 5, seed=0)
    emp = np.mean([empirical_ntk(x, depth, 2048, 0.1, seed) for seed in range(6)], axis=0)
    assert rel(emp, dl.kernel(x, x, depth, beta=0.1)) < 0.06


def test_empirical_check_can_fail():
    # scaling the first layer by sqrt(2/d) (the other reading of Appendix A) doubles x.x'/d: the check must notice
    x = dl.sample_inputs(6, 5, seed=0)
    emp = np.mean([empirical_ntk(x, 2, 1024, 0.1, seed, first_scale=2.0) for seed in range(3)], axis=0)
    assert rel(emp, dl.kernel(x, x, 2, beta=0.1)) > 0.2


def footnote4_ntk(x1: np.ndarray, x2: np.ndarray, depth: int) -> np.ndarray:
    """beta = 0 closed form (footnote 4): angle recursion, written independently of Eq. (16)."""
    d = x1.shape[1]
    r = np.outer(np.linalg.norm(x1, axis=1), np.linalg.norm(x2, axis=1)) / d
    cos0 = np.clip(x1 @ x2.T / d / r, -1, 1)
    thetas = [np.arccos(cos0)]
    for _ in range(depth):
        t = thetas[-1]
        thetas.append(np.arccos(np.clip((np.sin(t) + (np.pi - t) * np.cos(t)) / np.pi, -1, 1)))
    sig = [r * np.cos(t) for t in thetas]  # Sigma^(l), l = 0..L
    sdot = [None] + [1 - thetas[ell - 1] / np.pi for ell in range(1, depth + 1)] + [np.ones_like(r)]
    out = np.zeros_like(r)
    for ell in range(1, depth + 2):  # Eq. (15), literally
        prod = np.ones_like(r)
        for lp in range(ell, depth + 2):
            prod = prod * sdot[lp]
        out += sig[ell - 1] * prod
    return out


@pytest.mark.parametrize("depth", [1, 2, 5, 10])
def test_beta_zero_matches_angle_recursion(depth):
    x1 = dl.sample_inputs(7, 4, seed=1)
    x2 = dl.sample_inputs(5, 4, seed=2)
    np.testing.assert_allclose(dl.kernel(x1, x2, depth, beta=0.0), footnote4_ntk(x1, x2, depth), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("depth", [1, 3, 10])
@pytest.mark.parametrize("beta", [0.0, 0.1, 0.5])
def test_diagonal_closed_form(depth, beta):
    x = dl.sample_inputs(9, 6, seed=4)
    # det Lambda = 0 on the diagonal; float64 rounding of ~1e-16 there becomes ~1e-8 after sqrt()
    np.testing.assert_allclose(np.diag(dl.kernel(x, x, depth, beta)), dl.kernel_diagonal(x, depth, beta), rtol=1e-7)


def test_one_pass_equals_per_depth_and_is_float64():
    x = dl.sample_inputs(8, 3, seed=5)
    xt = torch.as_tensor(x)
    for ell, th in dl.ntk.kernels(xt, xt, 6, 0.1):
        k = dl.kernel(x, x, ell, 0.1)
        assert k.dtype == np.float64
        np.testing.assert_array_equal(th.numpy(), k)


def test_kernel_regression_interpolates_and_matches_direct_solve():
    x = dl.sample_inputs(300, 10, seed=6)
    y = dl.target(x, 2, "local")
    xt = dl.sample_inputs(50, 10, seed=7)
    fit = dl.kernel_regression(x, y, xt, depths=[1, 3], beta=0.1, block=64, device="cpu")
    for i, L in enumerate([1, 3]):
        assert fit.jitter[i] == 0.0
        np.testing.assert_allclose(fit.train_prediction[i], y, atol=1e-6)
        K = dl.kernel(x, x, L)
        direct = dl.kernel(xt, x, L) @ np.linalg.solve(K, y)
        np.testing.assert_allclose(fit.prediction[i], direct, rtol=1e-6, atol=1e-8)


def test_jitter_is_recorded_when_gram_is_singular():
    from depthlab.ntk import _cholesky_with_jitter

    K = torch.ones(6, 6, dtype=torch.float64)  # rank 1
    C, jit = _cholesky_with_jitter(K)
    assert jit > 0
    np.testing.assert_allclose((C @ C.T).numpy(), K.numpy() + jit * np.eye(6), atol=1e-12)
    x = dl.sample_inputs(30, 4, seed=8)
    x = np.concatenate([x] * 4)  # every point four times: 90 zero eigenvalues up to rounding
    y = np.tile(np.arange(30.0), 4)
    fit = dl.kernel_regression(x, y, x[:5], depths=[2], device="cpu")
    assert fit.jitter[0] > 0
    np.testing.assert_allclose(fit.prediction[0], y[:5], atol=1e-3)  # still interpolates (consistent duplicates)
