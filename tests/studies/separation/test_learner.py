"""The 3-layer mean-field learner and its reduced model against independent estimates: closed-form gradients against
autograd, the reduced model's alpha-gradient against finite differences, the symmetrisation identity by Monte Carlo
over the neurons, C_d against its known values, and the notes' alpha equation against one small step of the net."""

import math

import numpy as np
import pytest
import torch

from depthlab.studies.separation import meanfield as L


def problem(M=2, m=7, m2=5, d=4, n=30, seed=0):
    g = torch.Generator().manual_seed(seed)
    V = torch.randn(M, m, d, generator=g, dtype=torch.float64)
    w = torch.randn(M, m2, generator=g, dtype=torch.float64)
    b = torch.randn(M, m2, generator=g, dtype=torch.float64) + 0.5
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.relu(1 - X.norm(dim=1))
    return V, w, b, X, y


def test_c_d_matches_known_values_and_monte_carlo():
    assert L.c_d(2) == pytest.approx(1 / math.pi, rel=1e-12)  # E max(0, cos t), t uniform
    assert L.c_d(3) == pytest.approx(1 / 4, rel=1e-12)  # E max(0, u_1), u_1 uniform on [-1, 1]
    rng = np.random.default_rng(0)
    for d in (5, 17, 64):
        u = rng.standard_normal((400_000, d))
        mc = np.maximum(u[:, 0] / np.linalg.norm(u, axis=1), 0.0)
        assert abs(mc.mean() - L.c_d(d)) < 5 * mc.std() / math.sqrt(len(mc))


def test_net_gradients_match_autograd():
    V, w, b, X, y = problem()
    loss, gV, gw, gb = L.net_grads(V, w, b, X, y)
    P = [t.clone().requires_grad_(True) for t in (V, w, b)]
    ref = L.loss(L.second_layer(L.first_layer(P[0], X), P[1], P[2]), y)
    auto = torch.autograd.grad(ref.sum(), P)
    torch.testing.assert_close(loss, ref.detach(), rtol=1e-12, atol=1e-14)
    for mine, theirs in zip((gV, gw, gb), auto):
        torch.testing.assert_close(mine, theirs, rtol=1e-10, atol=1e-13)


def test_reduced_gradients_match_autograd_and_finite_differences():
    _, w, b, X, y = problem(m2=6, d=5)
    alpha = torch.tensor([0.7, 1.3], dtype=torch.float64)
    loss, ga, gw, gb = L.reduced_grads(alpha, w, b, X, y)
    P = [t.clone().requires_grad_(True) for t in (alpha, w, b)]
    ref = L.loss(L.second_layer(P[0].unsqueeze(1) * X.norm(dim=1), P[1], P[2]), y)
    auto = torch.autograd.grad(ref.sum(), P)
    for mine, theirs in zip((ga, gw, gb), auto):
        torch.testing.assert_close(mine, theirs, rtol=1e-10, atol=1e-13)
    # the alpha-gradient by central differences of the loss itself
    h = 1e-6
    lp = L.reduced_grads(alpha + h, w, b, X, y)[0]
    lm = L.reduced_grads(alpha - h, w, b, X, y)[0]
    torch.testing.assert_close(ga, (lp - lm) / (2 * h), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("d", [2, 5, 20])
def test_a_symmetric_first_layer_is_alpha_times_the_norm_at_large_width(d):
    """Monte Carlo over m = 200 000 neurons v ~ N(0, I / (d C_d)): F(x) = alpha |x| to the sampling error, and alpha -> 1."""
    m = 200_000
    V, _, _ = L.init(1, m, 1, d, torch.Generator().manual_seed(d), dtype=torch.float64)
    X = torch.randn(12, d, generator=torch.Generator().manual_seed(100 + d), dtype=torch.float64)
    X = (
        X * torch.linspace(0.2, 3.0, 12, dtype=torch.float64).unsqueeze(1) / X.norm(dim=1, keepdim=True)
    )  # several radii
    F = L.first_layer(V, X)[0]
    alpha = float(L.alpha_of(V)[0])
    assert alpha == pytest.approx(1.0, abs=6 * math.sqrt(2 / (d * m)))  # C_d E|v|^2 = 1, chi^2_d / d fluctuation
    # each neuron's term |v| sigma(v.x) has relative spread about sqrt(pi - 1) (a half-normal); 6 sigma of the mean
    tol = 6 * math.sqrt(math.pi) / math.sqrt(m)
    np.testing.assert_allclose((F / (alpha * X.norm(dim=1))).numpy(), 1.0, atol=tol)
    assert float(L.deviation(V, X)[0]) < tol


def test_one_small_step_of_the_net_moves_alpha_by_the_notes_equation():
    """d|v_i|^2/dt = -4 m |v_i| sum_n g_n sigma(v_i.x_n) / m, so alpha moves by -eta 4 C_d sum_n g_n F(x_n) to first order
    in eta (g = dL/dF); for F = alpha |x| this is the reduced model's -eta 4 C_d alpha dL/dalpha."""
    V, w, b, X, y = problem(M=1, m=50, m2=8, d=6, n=40)
    eta = 1e-7
    F = L.first_layer(V, X)
    Fp = F.clone().requires_grad_(True)
    g = torch.autograd.grad(L.loss(L.second_layer(Fp, w, b), y).sum(), Fp)[0]  # dL/dF_n, by autograd
    predicted = -eta * 4 * L.c_d(6) * (g * F).sum(1)
    before = L.alpha_of(V)
    L.net_step(V, w.clone(), b.clone(), X, y, eta)
    torch.testing.assert_close(L.alpha_of(V) - before, predicted, rtol=1e-5, atol=0)


def test_the_reduced_step_keeps_alpha_positive_and_follows_the_flow_at_small_rates():
    _, w, b, X, y = problem(m2=6, d=3)
    alpha = torch.tensor([0.5, 2.0], dtype=torch.float64)
    ga = L.reduced_grads(alpha, w, b, X, y)[1]
    a = alpha.clone()
    L.reduced_step(a, w.clone(), b.clone(), X, y, 1e-6, 3)
    torch.testing.assert_close(a - alpha, -1e-6 * 4 * L.c_d(3) * alpha * ga, rtol=1e-5, atol=0)
    # a rate at which |lr 4 C_d dL/dalpha| = 3: an explicit Euler step would take alpha through zero if its gradient is positive
    lr = 3 / float((4 * L.c_d(3) * ga.abs()).max())
    big = alpha.clone()
    L.reduced_step(big, w.clone(), b.clone(), X, y, lr, 3)
    assert bool((big > 0).all() and torch.isfinite(big).all())


def test_mean_field_steps_move_each_neuron_by_an_amount_independent_of_width():
    """lr x width x gradient: the per-neuron step does not shrink as the layer widens."""
    steps = []
    for m in (40, 4000):
        V, w, b = L.init(1, m, 16, 5, torch.Generator().manual_seed(1), dtype=torch.float64)
        X = torch.randn(200, 5, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
        y = torch.relu(1 - X.norm(dim=1) / 2)
        V0 = V.clone()
        L.net_step(V, w, b, X, y, 0.1)
        steps.append(float((V - V0).norm(dim=2).mean()))
    assert steps[1] == pytest.approx(steps[0], rel=0.5) and steps[0] > 1e-4


def test_the_learners_sums_over_points_in_row_blocks_equal_the_whole_batch(monkeypatch):
    """The paper's m = 8192, d = 128 learner planned 82.6 GiB with every point at once.  Its first layer and
    closed-form gradients are sums over the points, so row blocks give the same values (to rounding), the blocked
    gradient against torch.autograd of the loss as the independent estimate."""
    import torch

    from depthlab.studies.separation import meanfield as L

    g = torch.Generator().manual_seed(0)
    V, w, b = L.init(3, 16, 4, 5, g, dtype=torch.float64)
    X = torch.randn(37, 5, generator=g, dtype=torch.float64)
    y = torch.relu(1 - X.norm(dim=1))
    whole = L.net_grads(V, w, b, X, y)
    F_whole = L.first_layer(V, X)
    monkeypatch.setattr(L, "BLOCK_ELEMENTS", 3 * 16 * 5)  # blocks of 5 rows: 8 blocks
    assert len(L.row_blocks(37, 3, 16)) == 8
    blocked = L.net_grads(V, w, b, X, y)
    for a_, b_ in zip(whole, blocked):
        torch.testing.assert_close(a_, b_, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(L.first_layer(V, X), F_whole, rtol=1e-12, atol=1e-14)
    Vg, wg, bg = (t.clone().requires_grad_(True) for t in (V, w, b))
    loss = L.loss(L.second_layer(L.first_layer(Vg, X), wg, bg), y).sum()
    loss.backward()
    torch.testing.assert_close(blocked[1], Vg.grad, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(blocked[2], wg.grad, rtol=1e-9, atol=1e-12)
