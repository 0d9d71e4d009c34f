"""The acceleration study's math against independent estimates: autograd, finite differences, torch.optim, gradient flow."""

import numpy as np
import pytest
import torch

from depthlab.studies.acceleration import linear, optimizers


def problem(m=60, d=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(m, d, generator=g, dtype=torch.float64)
    y = X @ torch.randn(d, generator=g, dtype=torch.float64) + 0.3 * torch.randn(m, generator=g, dtype=torch.float64)
    return X, y


@pytest.mark.parametrize("p", [2, 4])
def test_lp_loss_and_gradient_against_finite_differences(p):
    X, y = problem()
    w = torch.randn(3, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    loss, g = linear.lp_grad(X, y, w, p)
    np.testing.assert_allclose(loss, ((w @ X.T - y).abs() ** p).mean(1) / p, rtol=1e-14)
    h = 1e-6
    for j in range(7):
        e = torch.zeros_like(w)
        e[:, j] = h
        fd = (linear.lp_loss(X, y, w + e, p) - linear.lp_loss(X, y, w - e, p)) / (2 * h)
        np.testing.assert_allclose(g[:, j], fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("N", [1, 2, 3, 4])
@pytest.mark.parametrize("p", [2, 4])
def test_the_factors_gradients_are_autograds_on_the_product(N, p):
    X, y = problem()
    gen = torch.Generator().manual_seed(N)
    Ws = linear.gaussian_init(2, 7, 5, N, 0.4, gen)
    leaves = [W.clone().requires_grad_(True) for W in Ws]
    linear.lp_loss(X, y, linear.end_to_end(leaves), p).sum().backward()
    lr = torch.tensor([0.1, 0.3], dtype=torch.float64)
    before = [W.clone() for W in Ws]
    _, g = linear.lp_grad(X, y, linear.end_to_end(Ws), p)
    linear.net_step(Ws, g, lr, 0.0)
    for W0, W1, leaf in zip(before, Ws, leaves):
        np.testing.assert_allclose((W0 - W1) / lr.view(-1, 1, 1), leaf.grad, rtol=1e-10, atol=1e-12)


def test_the_end_to_end_product_and_weight_decay():
    gen = torch.Generator().manual_seed(3)
    Ws = linear.gaussian_init(1, 4, 3, 3, 1.0, gen)
    np.testing.assert_allclose(linear.end_to_end(Ws)[0], (Ws[2][0] @ Ws[1][0] @ Ws[0][0])[0], rtol=1e-14)
    X, y = problem(d=4)
    before = [W.clone() for W in Ws]
    _, g = linear.lp_grad(X, y, linear.end_to_end(Ws), 2)
    linear.net_step(Ws, torch.zeros_like(g), torch.tensor([0.1], dtype=torch.float64), 0.5)  # decay only: W (1 - 0.05)
    for a, b in zip(before, Ws):
        np.testing.assert_allclose(b, 0.95 * a, rtol=1e-14)


def test_a_balanced_start_is_balanced_and_gradient_flow_keeps_it_so():
    """Gradient flow conserves W_{j+1}^T W_{j+1} - W_j W_j^T; gradient descent adds O(eta^2) per step, so at a fixed time
    eta T the imbalance gained halves when eta halves (it vanishes in the flow)."""
    X, y = problem()
    gained = []
    for eta, T in ((1e-3, 3000), (5e-4, 6000)):
        Ws = linear.balanced_init(2, 7, 5, 3, 1e-2, torch.Generator().manual_seed(0))
        assert float(linear.balancedness(Ws).max()) < 1e-12
        np.testing.assert_allclose(linear.end_to_end(Ws).norm(dim=1), 1e-2, rtol=1e-12)
        for _ in range(T):
            _, g = linear.lp_grad(X, y, linear.end_to_end(Ws), 4)
            linear.net_step(Ws, g, torch.full((2,), eta, dtype=torch.float64), 0.0)
        assert float(linear.end_to_end(Ws).norm(dim=1).min()) > 0.1, "it moved far from the start"
        gained.append(float(linear.balancedness(Ws).max()))
    assert gained[0] < 5e-3 and 1.6 < gained[0] / gained[1] < 2.4, gained
    # and the check can fail: a Gaussian start is not balanced
    assert (
        float(linear.balancedness(linear.gaussian_init(2, 7, 5, 3, 0.3, torch.Generator().manual_seed(0))).min()) > 0.1
    )


@pytest.mark.parametrize("N", [2, pytest.param(3, marks=pytest.mark.slow)])  # depth 3 in the slow set
def test_at_small_rates_the_end_to_end_rule_tracks_the_net(N):
    X, y = problem()
    Ws = linear.balanced_init(1, 7, 5, N, 1e-2, torch.Generator().manual_seed(1))
    w = linear.end_to_end(Ws).clone()
    lr = torch.tensor([2e-4], dtype=torch.float64)
    worst = 0.0
    for _ in range(20000):
        _, g = linear.lp_grad(X, y, linear.end_to_end(Ws), 4)
        linear.net_step(Ws, g, lr, 0.0)
        _, g = linear.lp_grad(X, y, w, 4)
        linear.rule_step(w, g, lr, N, 0.0)
        worst = max(worst, float((linear.end_to_end(Ws) - w).norm() / w.norm()))
    assert float(w.norm()) > 0.5, "the trajectories left the start"
    assert worst < 0.02, worst


def test_the_rule_at_depth_1_is_plain_gradient_descent():
    X, y = problem()
    w = torch.randn(3, 7, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    lr = torch.tensor([0.1, 0.01, 0.5], dtype=torch.float64)
    _, g = linear.lp_grad(X, y, w, 4)
    want = w - lr.view(-1, 1) * g
    linear.rule_step(w, g, lr, 1, 0.0)
    np.testing.assert_allclose(w, want, rtol=1e-15)


@pytest.mark.parametrize(
    "method,cls,kw",
    [
        ("adagrad", torch.optim.Adagrad, {}),
        ("adadelta", torch.optim.Adadelta, {}),
        ("adam", torch.optim.Adam, {}),
        ("momentum", torch.optim.SGD, {"momentum": 0.9}),
    ],
)
def test_the_baselines_follow_torch_optim(method, cls, kw):
    X, y = problem()
    w0 = torch.randn(2, 7, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    lrs = [0.05, 0.3]
    ours = w0.clone()
    state = optimizers.init_state(method, ours)
    for t in range(1, 40):
        _, g = linear.lp_grad(X, y, ours, 4)
        optimizers.step(method, ours, g, torch.tensor(lrs, dtype=torch.float64), state, t)
    for m, lr in enumerate(lrs):
        p = w0[m].clone().requires_grad_(True)
        opt = cls([p], lr=lr, **kw)
        for _ in range(1, 40):
            opt.zero_grad()
            linear.lp_loss(X, y, p.unsqueeze(0), 4).sum().backward()
            opt.step()
        np.testing.assert_allclose(ours[m], p.detach(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("N", [1, 2, 3, 4])
def test_every_start_has_the_same_norm_of_w_e(N):
    """A Gaussian start of any depth begins as far from zero as the balanced one (the depth-1 comparison is fair)."""
    g = torch.Generator().manual_seed(N)
    for Ws in (linear.gaussian_init(3, 7, 5, N, 1e-3, g), linear.balanced_init(3, 7, 5, N, 1e-3, g)):
        np.testing.assert_allclose(linear.end_to_end(Ws).norm(dim=1), 1e-3, rtol=1e-10)


@pytest.mark.parametrize("p", [2, 4])
def test_the_problem_gives_the_direct_loss_and_gradient(p):
    """The p = 2 quadratic form (X^T X precomputed) against the residuals computed directly."""
    X, y = problem(m=300, d=9)
    w = torch.randn(4, 9, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    L, g = linear.Problem(X, y, p).grad(w)
    L0, g0 = linear.lp_grad(X, y, w, p)
    np.testing.assert_allclose(L, L0, rtol=1e-12)
    np.testing.assert_allclose(g, g0, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(linear.Problem(X, y, p).loss(w), L0, rtol=1e-12)
