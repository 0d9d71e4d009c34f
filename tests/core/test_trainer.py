"""The batched trainer against plain one-model torch.optim loops (SGD and Adam), and its stop rules."""

from pathlib import Path

import numpy as np
import pytest
import torch

from depthlab.core.losses.hinge import Hinge
from depthlab.core.losses.logistic import Logistic
from depthlab.core.losses.mse import MSE
from depthlab.core.metrics import sign_labels
from depthlab.core.mlp import init_params, predict, select
from depthlab.core.optim.adam import Adam
from depthlab.core.optim.sgd import SGD
from depthlab.core.shapes import layer_sizes
from depthlab.core.stopping import StopRule
from depthlab.core.trainer import TrainSettings, epoch_order, train
from depthlab.studies.mori_ueda.targets import sample_inputs, target

ROOT = Path(__file__).resolve().parents[2]
LOSSES = {"mse": MSE(), "logistic": Logistic(), "hinge": Hinge()}
OPTIMIZERS = {"sgd": SGD(), "adam": Adam()}


def sequential(p):
    """nn.Sequential holding the numbers of one stacked model p (M = 1)."""
    layers = []
    for i, (W, b) in enumerate(p):
        lin = torch.nn.Linear(W.shape[1], W.shape[2]).to(W.dtype)
        with torch.no_grad():
            lin.weight.copy_(W[0].T)
            lin.bias.copy_(b[0, 0])
        layers += [lin] + ([torch.nn.ReLU()] if i < len(p) - 1 else [])
    return torch.nn.Sequential(*layers)


REFERENCE_LOSS = {
    "mse": lambda out, y: torch.mean((out - y) ** 2),
    "logistic": lambda out, y: torch.nn.functional.soft_margin_loss(out, y),  # mean log(1 + exp(-y f))
    "hinge": lambda out, y: torch.mean(torch.relu(1 - y * out)),
}


def plain_loop(x, y, rows, lr, p, order_seed, epochs, loss, optimizer, B):
    """One model: nn.Sequential + torch.optim + autograd, same init numbers and data order."""
    net = sequential(p)
    opt = (torch.optim.SGD if optimizer == "sgd" else torch.optim.Adam)(net.parameters(), lr=lr)
    X, Y = torch.as_tensor(x), torch.as_tensor(y)
    for epoch in range(1, epochs + 1):
        order = rows[epoch_order(order_seed, epoch, len(rows))]
        for s in range(0, len(order), B):
            j = torch.as_tensor(order[s : s + B])
            L = REFERENCE_LOSS[loss](net(X[j]).squeeze(-1), Y[j])
            opt.zero_grad()
            L.backward()
            opt.step()
    return net


@pytest.mark.parametrize("loss,optimizer", [("mse", "sgd"), ("logistic", "sgd"), ("hinge", "adam"), ("mse", "adam")])
@pytest.mark.parametrize("depth", [1, 3])
def test_batched_matches_plain_loop(loss, optimizer, depth):
    d, N, width, M, epochs, B = 6, 230, 16, 4, 3, 50  # 230 rows: the last batch of each epoch is partial
    x = sample_inputs(N, d, 0)
    y = target(x, 2, "local")
    if LOSSES[loss].task == "classification":
        y = sign_labels(y)
    rng = np.random.default_rng(1)
    idx = np.stack([np.sort(rng.choice(N, 180, replace=False)) for _ in range(M)])  # each model its own rows
    lr = np.array([0.01, 0.05, 0.1, 0.02]) if optimizer == "sgd" else np.array([1e-3, 5e-3, 2e-2, 3e-3])
    scheme = "glorot_uniform" if optimizer == "sgd" else "truncated_normal"
    init = init_params(layer_sizes(d, width, depth), np.arange(M) + 3, scheme, torch.float64)
    orders = np.arange(M) + 40
    s = TrainSettings(
        batch_size=B,
        max_epochs=epochs,
        check_every=1,
        loss=LOSSES[loss],
        optimizer=OPTIMIZERS[optimizer],
        dtype="float64",
        device="cpu",
        stop=StopRule(),
    )
    res = train(x, y, idx, lr, init, orders, s)
    xt = sample_inputs(50, d, 2)
    batched = predict(res.params, xt)
    for m in range(M):
        net = plain_loop(x, y, idx[m], lr[m], select(init, [m]), orders[m], epochs, loss, optimizer, B)
        with torch.no_grad():
            ref = net(torch.as_tensor(xt)).squeeze(-1).numpy()
        np.testing.assert_allclose(batched[m], ref, rtol=1e-9, atol=1e-10)
        assert res.epochs[m] == epochs


def test_reference_check_can_fail():
    """The plain-loop comparison notices a wrong step: Adam with another beta2 drifts far beyond the tolerance."""
    d, N, width = 6, 200, 16
    x = sample_inputs(N, d, 0)
    y = sign_labels(target(x, 2, "local"))
    init = init_params(layer_sizes(d, width, 2), np.array([3]), "truncated_normal", torch.float64)
    s = TrainSettings(
        max_epochs=3, check_every=1, loss=Hinge(), optimizer=Adam(), dtype="float64", device="cpu", stop=StopRule()
    )
    ours = predict(train(x, y, np.arange(N)[None], np.array([5e-3]), init, np.array([7]), s).params, x[:20])[0]
    net = sequential(init)
    opt = torch.optim.Adam(net.parameters(), lr=5e-3, betas=(0.9, 0.99))
    X, Y = torch.as_tensor(x), torch.as_tensor(y)
    for epoch in range(1, 4):
        order = epoch_order(7, epoch, N)
        for a in range(0, N, 50):
            j = torch.as_tensor(order[a : a + 50])
            L = REFERENCE_LOSS["hinge"](net(X[j]).squeeze(-1), Y[j])
            opt.zero_grad()
            L.backward()
            opt.step()
    with torch.no_grad():
        other = net(torch.as_tensor(x[:20])).squeeze(-1).numpy()
    assert np.max(np.abs(ours - other)) > 1e-6


def test_one_diverging_model_leaves_the_others_untouched():
    d, N, width = 8, 300, 32
    x = sample_inputs(N, d, 0)
    y = target(x, 2, "local")
    idx = np.tile(np.arange(N), (3, 1))
    s = TrainSettings(
        loss=MSE(),
        optimizer=SGD(),
        max_epochs=20,
        check_every=5,
        stop=StopRule(threshold=0.0),
        dtype="float64",
        device="cpu",
    )
    init = init_params(layer_sizes(d, width, 2), np.array([1, 2, 3]), "glorot_uniform", torch.float64)
    together = train(x, y, idx, np.array([0.01, 1e3, 0.02]), init, np.array([1, 2, 3]), s)
    assert together.diverged.tolist() == [False, True, False]
    assert np.isinf(together.train_loss[1]) and together.epochs[1] < 20
    alone = train(x, y, idx[[0, 2]], np.array([0.01, 0.02]), select(init, [0, 2]), np.array([1, 3]), s)
    for a, b in zip(together.params, alone.params):
        np.testing.assert_array_equal(a[0][[0, 2]].numpy(), b[0].numpy())
    np.testing.assert_array_equal(together.history[[0, 2]], alone.history)


def test_stop_rule_threshold_and_max_epochs():
    d, N, width = 5, 200, 64
    x = sample_inputs(N, d, 0)
    y = target(x, 1, "local")  # linear target: reached quickly
    idx = np.tile(np.arange(N), (2, 1))
    s = TrainSettings(
        loss=MSE(),
        optimizer=SGD(),
        max_epochs=400,
        check_every=10,
        stop=StopRule(threshold=1e-3),
        device="cpu",
        dtype="float64",
    )
    init = init_params(layer_sizes(d, width, 1), np.array([0, 1]), "glorot_uniform", torch.float64)
    res = train(x, y, idx, np.array([0.05, 1e-6]), init, np.array([0, 1]), s)
    # fast model: stops at the first check below threshold, which is a multiple of check_every
    assert res.converged[0] and res.epochs[0] % 10 == 0 and res.train_loss[0] < 1e-3
    first_below = res.check_epochs[np.flatnonzero(res.history[0] < 1e-3)[0]]
    assert res.epochs[0] == first_below
    assert np.all(res.history[0][res.check_epochs < first_below] >= 1e-3)
    # the recomputed full loss of the returned params equals the recorded one
    out = predict(select(res.params, [0]), x)[0]
    np.testing.assert_allclose(np.mean((out - y) ** 2), res.train_loss[0], rtol=1e-10)
    # tiny lr: runs to max_epochs, not converged, not diverged
    assert res.epochs[1] == 400 and not res.converged[1] and not res.diverged[1]
    assert np.isnan(res.history[0][-1]) and np.isfinite(res.history[1]).all()


def test_classification_stops_at_full_training_accuracy():
    d, N = 4, 200
    x = sample_inputs(N, d, 0)
    y = sign_labels(target(x, 1, "local"))  # linearly separable
    s = TrainSettings(loss=Logistic(), optimizer=SGD(), max_epochs=500, check_every=5, device="cpu")
    init = init_params(layer_sizes(d, 32, 2), np.array([0]))
    res = train(x, y, np.arange(N)[None], np.array([0.5]), init, np.array([0]), s)
    assert res.converged[0] and res.train_accuracy[0] == 1.0 and res.epochs[0] < 500
    out = predict(res.params, x)[0]
    assert np.all(sign_labels(out) == y)
    assert res.epochs[0] % 5 == 0  # it stopped at a check


def test_no_threshold_runs_to_the_cap_and_scores_the_eval_set_at_every_check():
    d, N = 3, 300
    x = sample_inputs(N, d, 0)
    y = sign_labels(target(x, 1, "local"))
    xe = sample_inputs(400, d, 1)
    ye = sign_labels(target(xe, 1, "local"))
    s = TrainSettings(
        max_epochs=30,
        check_every=10,
        loss=Hinge(),
        optimizer=Adam(),
        stop=StopRule(),
        device="cpu",
        batch_size=100,
        dtype="float64",
    )
    init = init_params(layer_sizes(d, 16, 2), np.array([0, 1]), "truncated_normal", torch.float64)
    res = train(
        x, y, np.tile(np.arange(N), (2, 1)), np.array([5e-3, 1e-2]), init, np.array([0, 1]), s, eval_set=(xe, ye)
    )
    assert (res.epochs == 30).all() and not res.converged.any()
    assert res.eval_history.shape == (2, 3) and np.isfinite(res.eval_history).all()
    # the last check's eval error is the misclassification rate of the returned nets, recomputed independently
    pred = predict(res.params, xe)
    np.testing.assert_allclose(res.eval_history[:, -1], np.mean(np.sign(pred) != ye, axis=1))


def test_init_schemes():
    p = init_params([30, 70, 70, 1], np.array([0, 1]), "glorot_uniform", torch.float64)
    a = np.sqrt(6 / (30 + 70))
    assert p[0][0].abs().max() <= a and p[0][0].abs().max() > 0.9 * a
    assert abs(p[0][0].var().item() - a * a / 3) < 0.05 * a * a
    assert all((b == 0).all() for _, b in p)
    assert not torch.equal(p[0][0][0], p[0][0][1])  # each model has its own init
    t = init_params([400, 300, 1], np.array([5]), "truncated_normal", torch.float64)
    W = t[0][0][0]
    std = 1 / np.sqrt(400)
    assert W.abs().max() <= 2 * std  # truncated at 2 std
    # variance of a normal truncated at +-2 std: std^2 (1 - 2 * 2 phi(2) / (2 Phi(2) - 1)) = 0.774 std^2
    assert abs(W.var().item() / std**2 - 0.774) < 0.02
    assert all((b == 0.1).all() for _, b in t)
    u = init_params([1, 50, 1], np.array([2]), "torch_default", torch.float64)
    assert u[0][1].abs().max() <= 1.0 and u[0][1].std() > 0.3  # random first-layer biases spread the kinks


@pytest.mark.parametrize("loss,optimizer", [("mse", "sgd"), ("hinge", "adam")])
def test_stepping_models_in_groups_gives_the_same_bits_as_all_at_once(loss, optimizer, monkeypatch):
    """At the paper's shapes the CPU step runs a few models at a time (trainer.models_per_step); each model's arithmetic
    is unchanged, so parameters, histories and stops equal those of one step over all models, to the bit (float32, as
    the studies train).  Adam's shared step counter must advance once per step, not once per group."""
    import depthlab.core.trainer as trainer

    d, N, width, M = 6, 230, 16, 5
    x = sample_inputs(N, d, 0)
    y = target(x, 2, "local")
    if LOSSES[loss].task == "classification":
        y = sign_labels(y)
    idx = np.tile(np.arange(N), (M, 1))
    lr = np.array([1e-2, 3e-2, 1e-3, 5e-3, 2e-2]) if optimizer == "sgd" else np.array([1e-3, 5e-3, 2e-2, 3e-3, 1e-2])
    init = init_params(layer_sizes(d, width, 3), np.arange(M) + 3, "truncated_normal")
    s = TrainSettings(
        batch_size=50,
        max_epochs=4,
        check_every=2,
        loss=LOSSES[loss],
        optimizer=OPTIMIZERS[optimizer],
        device="cpu",
        stop=StopRule(),
    )
    p = init_params(layer_sizes(d, width, 3), np.arange(M), "truncated_normal")
    state = OPTIMIZERS[optimizer].init_state(p)
    runs = {}
    for budget in (1 << 40, 1):  # all five at once; groups of two (the smallest group), the last of three
        monkeypatch.setattr(trainer, "STEP_CHUNK_BYTES", budget)
        monkeypatch.setattr(trainer, "ALL_AT_ONCE_BYTES", min(budget, trainer.ALL_AT_ONCE_BYTES))
        runs[budget] = (trainer.models_per_step(p, state), train(x, y, idx, lr, init, np.arange(M) + 40, s))
    assert sorted(v[0] for v in runs.values()) == [2, M]
    ref = runs[1 << 40][1]
    res = runs[1][1]
    for (W, b), (Wr, br) in zip(res.params, ref.params):
        assert torch.equal(W, Wr) and torch.equal(b, br)
    np.testing.assert_array_equal(res.history, ref.history)
    assert not torch.equal(ref.params[0][0], init[0][0])  # the nets did train


def _adam_steps(opt, sizes, M, lr, steps, dtype=torch.float32, seed=1):
    """``steps`` steps of Adam + hinge on M stacked nets (truncated-normal init, uniform inputs, random labels)."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(M, steps * 32, sizes[0], generator=g, dtype=torch.float64) * 2 - 1).to(dtype)
    y = torch.sign(torch.rand(M, steps * 32, generator=g, dtype=torch.float64) - 0.5).to(dtype)
    p = [(W.to(dtype), b.to(dtype)) for W, b in init_params(sizes, np.arange(M), "truncated_normal")]
    state = opt.init_state(p)
    with torch.no_grad():
        for s in range(steps):
            opt.step(p, state, x[:, s * 32 : (s + 1) * 32], y[:, s * 32 : (s + 1) * 32], lr.to(dtype), Hinge())
    return p, state


@pytest.mark.parametrize("sizes", [[2, 10, 1], [2, 20, 20, 20, 1], [5, 64, 64, 1]])
@pytest.mark.parametrize("lrs", [[1e-3], [1e-3, 5e-3], [1e-3, 1e-3, 5e-3, 5e-3], [5e-3, 1e-3, 1e-3]])
def test_the_fused_adam_step_is_torch_optim_adams_step_on_each_net(sizes, lrs):
    """Each net of the stack, whatever rates its neighbours have, takes torch.optim.Adam(fused=True)'s step to the bit
    (float32, CPU, as the studies train): at each of 40 steps each net's own parameters are handed the gradient the
    stack's backward pass computes, and PyTorch's own optimiser steps them; the stack's parameters must stay equal to
    the nets'.  The stack's rates come in runs (rate-major, as the trainer stacks them): one of several models, one alone,
    and a run that ends the stack.  The check can fail: with another eps the stack leaves the nets."""
    M, steps = len(lrs), 40
    g = torch.Generator().manual_seed(1)
    x = torch.rand(M, steps * 32, sizes[0], generator=g) * 2 - 1
    y = torch.sign(torch.rand(M, steps * 32, generator=g) - 0.5)
    lr = torch.tensor(lrs)
    for opt, same in ((Adam(), True), (Adam(eps=1e-7), False)):
        p = init_params(sizes, np.arange(M), "truncated_normal")
        state = opt.init_state(p)
        # each net's own parameters, in the stack's layout (W [in, out]: the kernel's vector loop and scalar tail split
        # a tensor by position, so a transposed copy would round other elements in the tail)
        nets = [[t[m].clone() for layer in p for t in layer] for m in range(M)]
        # the trainer holds the rates in the nets' dtype, so the kernel is handed float32's rate
        torch_opts = [torch.optim.Adam(n, lr=float(lr[m]), fused=True) for m, n in enumerate(nets)]
        equal = True
        for s in range(steps):
            xb, yb = x[:, s * 32 : (s + 1) * 32], y[:, s * 32 : (s + 1) * 32]
            grads = [torch.empty_like(t) for layer in p for t in layer]
            with torch.no_grad():
                opt.gradients(p, xb, yb, Hinge(), grads)
                opt.step(p, state, xb, yb, lr, Hinge())
            for m, (net, o) in enumerate(zip(nets, torch_opts)):
                for t, gr in zip(net, grads):
                    t.grad = gr[m].clone()
                o.step()
                equal &= all(torch.equal(a[m], b) for a, b in zip((t for layer in p for t in layer), net))
        assert equal == same
    assert int(state["step"]) == steps


def test_the_fused_adam_step_follows_a_float64_adam_over_many_steps():
    """Against an independent Adam written out in float64 (the paper's update: m, v, bias corrections, eps outside the
    root) on the same nets and batches: after 300 steps the float32 fused step's parameters agree with it to float32
    rounding amplified by training (relative 1e-3), and a step without bias correction is far off (so the comparison
    can fail)."""
    sizes, lrs = [2, 16, 16, 1], [1e-3, 1e-3, 5e-3]
    M, steps = len(lrs), 300
    lr = torch.tensor(lrs, dtype=torch.float64)
    fused, _ = _adam_steps(Adam(), sizes, M, lr, steps)

    def reference(bias_correction: bool):
        g = torch.Generator().manual_seed(1)
        x = (torch.rand(M, steps * 32, sizes[0], generator=g, dtype=torch.float64) * 2 - 1).float().double()
        y = torch.sign(torch.rand(M, steps * 32, generator=g, dtype=torch.float64) - 0.5)
        p = [
            (W.double().clone().requires_grad_(), b.double().clone().requires_grad_())
            for W, b in init_params(sizes, np.arange(M), "truncated_normal")
        ]
        flat = [t for layer in p for t in layer]
        m = [torch.zeros_like(t) for t in flat]
        v = [torch.zeros_like(t) for t in flat]
        for s in range(steps):
            a = x[:, s * 32 : (s + 1) * 32]
            for W, b in p[:-1]:
                a = torch.relu(a @ W + b)
            out = (a @ p[-1][0] + p[-1][1]).squeeze(-1)
            L = torch.relu(1 - y[:, s * 32 : (s + 1) * 32] * out).mean(1).sum()
            grads = torch.autograd.grad(L, flat)
            t = s + 1
            with torch.no_grad():
                for i, (q, gr) in enumerate(zip(flat, grads)):
                    m[i] = 0.9 * m[i] + 0.1 * gr
                    v[i] = 0.999 * v[i] + 0.001 * gr * gr
                    c1, c2 = (1 - 0.9**t, 1 - 0.999**t) if bias_correction else (1.0, 1.0)
                    q -= lr.view(-1, 1, 1) * (m[i] / c1) / ((v[i] / c2).sqrt() + 1e-8)
        return [t.detach() for t in flat]

    ours = [t.double() for layer in fused for t in layer]
    for want, far in ((reference(True), False), (reference(False), True)):
        rel = max(float((a - b).abs().max() / b.abs().max()) for a, b in zip(ours, want))
        assert (rel > 1e-2) if far else (rel < 1e-3), rel


@pytest.mark.parametrize("opt, lrs", [("sgd", [1e-3, 3e-2, 0.3, 1.0, 5.0]), ("adam", [1e-3, 3e-2, 1e-2, 0.3, 5.0])])
def test_a_stack_paused_in_two_parts_and_joined_goes_on_to_the_bits_of_one_uninterrupted_stack(opt, lrs):
    """``train(pause_at=)`` stops at a check with the models still training; ``merge_states`` joins two paused parts
    (dropping a model); ``train(start=)`` goes on.  Every joined model ends where the same model trained in one stack
    from the start ends: parameters, epochs, histories and stop reasons to the bit.  SGD: two models diverge before the
    pause (epochs 1 and 2); Adam: its step counter is shared by the stack, and two models converge after the pause."""
    from depthlab.core.trainer import merge_states

    rng = np.random.default_rng(0)
    x = rng.standard_normal((60, 4))
    y = np.sin(x[:, 0])
    s = TrainSettings(
        loss=MSE(),
        optimizer=OPTIMIZERS[opt],
        max_epochs=30,
        check_every=5,
        batch_size=10,
        stop=StopRule(threshold=1e-2),
        device="cpu",
    )
    lrs = np.asarray(lrs)
    M = len(lrs)
    init = init_params([4, 16, 1], np.arange(M))
    rows = np.stack([rng.permutation(60)[:48] for _ in range(M)])
    whole = train(x, y, rows, lrs, init, np.arange(M), s)
    # two parts, model 0 in both; the joined stack holds models 1, 4 (of part a: its model 0 left out) and 2, 3, 0.  No
    # part is ever down to one model: torch steps a stack of one through another kernel, whose last bits differ
    a, b = [0, 1, 4], [2, 3, 0]

    def part(ids, **kw):
        return train(x, y, rows[ids], lrs[ids], [(W[ids], bb[ids]) for W, bb in init], np.asarray(ids), s, **kw)

    pa, pb = part(a, pause_at=10), part(b, pause_at=10)
    assert pa.state is not None and int(pa.state["epoch"]) == 10
    joined = [1, 4, 2, 3, 0]
    start = merge_states([(pa.state, np.array([-1, 0, 1])), (pb.state, np.array([2, 3, 4]))], 5)
    on = part(joined, start=start)
    for i, m in enumerate(joined):
        assert on.epochs[i] == whole.epochs[m] and on.stop_reason[i] == whole.stop_reason[m]
        np.testing.assert_array_equal(on.history[i], whole.history[m])
        for (W1, b1), (W2, b2) in zip(on.params, whole.params):
            torch.testing.assert_close(W1[i], W2[m], rtol=0, atol=0, equal_nan=True)
            torch.testing.assert_close(b1[i], b2[m], rtol=0, atol=0, equal_nan=True)
    if opt == "sgd":
        assert whole.diverged[[3, 4]].all() and (whole.epochs[[3, 4]] < 10).all()
    else:
        assert (whole.converged & (whole.epochs > 10)).sum() >= 2
