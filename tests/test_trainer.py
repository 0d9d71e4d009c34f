"""The batched trainer against a plain one-model torch.optim.SGD loop, and its stop rules."""

import numpy as np
import pytest
import torch

import depthlab as dl
from depthlab.trainer import epoch_order


def plain_loop(x, y, rows, lr, depth, width, init_seed, order_seed, epochs, loss, B=50):
    """One model: nn.Sequential + torch.optim.SGD + autograd, same init numbers and data order."""
    p = dl.glorot_init(depth, x.shape[1], width, np.array([init_seed]), torch.float64)
    layers = []
    for i, (W, b) in enumerate(p):
        lin = torch.nn.Linear(W.shape[1], W.shape[2]).double()
        with torch.no_grad():
            lin.weight.copy_(W[0].T)
            lin.bias.copy_(b[0, 0])
        layers += [lin] + ([torch.nn.ReLU()] if i < len(p) - 1 else [])
    net = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    X, Y = torch.as_tensor(x), torch.as_tensor(y)
    for epoch in range(1, epochs + 1):
        order = rows[epoch_order(order_seed, epoch, len(rows))]
        for s in range(0, len(order), B):
            j = torch.as_tensor(order[s : s + B])
            out = net(X[j]).squeeze(-1)
            if loss == "mse":
                L = torch.mean((out - Y[j]) ** 2)
            else:
                L = torch.nn.functional.soft_margin_loss(out, Y[j])
            opt.zero_grad()
            L.backward()
            opt.step()
    return net


@pytest.mark.parametrize("loss", ["mse", "cross_entropy"])
@pytest.mark.parametrize("depth", [1, 3])
def test_batched_matches_plain_loop(loss, depth):
    d, N, width, M, epochs = 6, 230, 16, 4, 3  # 230 rows: the last batch of each epoch is partial
    x = dl.sample_inputs(N, d, 0)
    y = dl.target(x, 2, "local")
    if loss == "cross_entropy":
        y = dl.sign_labels(y)
    rng = np.random.default_rng(1)
    idx = np.stack([np.sort(rng.choice(N, 180, replace=False)) for _ in range(M)])  # each model its own rows
    lr = np.array([0.01, 0.05, 0.1, 0.02])
    seeds, orders = np.arange(M) + 3, np.arange(M) + 40
    s = dl.TrainSettings(max_epochs=epochs, check_every=1, loss=loss, dtype="float64", device="cpu", loss_threshold=0.0)
    res = dl.train(x, y, idx, lr, depth, width, seeds, orders, s)
    xt = dl.sample_inputs(50, d, 2)
    batched = dl.predict(res.params, xt)
    for m in range(M):
        net = plain_loop(x, y, idx[m], lr[m], depth, width, seeds[m], orders[m], epochs, loss)
        with torch.no_grad():
            ref = net(torch.as_tensor(xt)).squeeze(-1).numpy()
        np.testing.assert_allclose(batched[m], ref, rtol=1e-9, atol=1e-10)
        assert res.epochs[m] == epochs


def test_one_diverging_model_leaves_the_others_untouched():
    d, N, width = 8, 300, 32
    x = dl.sample_inputs(N, d, 0)
    y = dl.target(x, 2, "local")
    idx = np.tile(np.arange(N), (3, 1))
    s = dl.TrainSettings(max_epochs=20, check_every=5, loss_threshold=0.0, dtype="float64", device="cpu")
    seeds = np.array([1, 2, 3])
    together = dl.train(x, y, idx, np.array([0.01, 1e3, 0.02]), 2, width, seeds, seeds, s)
    assert together.diverged.tolist() == [False, True, False]
    assert np.isinf(together.train_loss[1]) and together.epochs[1] < 20
    alone = dl.train(x, y, idx[[0, 2]], np.array([0.01, 0.02]), 2, width, seeds[[0, 2]], seeds[[0, 2]], s)
    for a, b in zip(together.params, alone.params):
        np.testing.assert_array_equal(a[0][[0, 2]].numpy(), b[0].numpy())
    np.testing.assert_array_equal(together.history[[0, 2]], alone.history)


def test_stop_rule_threshold_and_max_epochs():
    d, N, width = 5, 200, 64
    x = dl.sample_inputs(N, d, 0)
    y = dl.target(x, 1, "local")  # linear target: reached quickly
    idx = np.tile(np.arange(N), (2, 1))
    s = dl.TrainSettings(max_epochs=400, check_every=10, loss_threshold=1e-3, device="cpu", dtype="float64")
    res = dl.train(x, y, idx, np.array([0.05, 1e-6]), 1, width, np.array([0, 1]), np.array([0, 1]), s)
    # fast model: stops at the first check below threshold, which is a multiple of check_every
    assert res.converged[0] and res.epochs[0] % 10 == 0 and res.train_loss[0] < 1e-3
    first_below = res.check_epochs[np.flatnonzero(res.history[0] < 1e-3)[0]]
    assert res.epochs[0] == first_below
    assert np.all(res.history[0][res.check_epochs < first_below] >= 1e-3)
    # the recomputed full loss of the returned params equals the recorded one
    out = dl.predict([(W[:1], b[:1]) for W, b in res.params], x)[0]
    np.testing.assert_allclose(np.mean((out - y) ** 2), res.train_loss[0], rtol=1e-10)
    # tiny lr: runs to max_epochs, not converged, not diverged
    assert res.epochs[1] == 400 and not res.converged[1] and not res.diverged[1]
    assert np.isnan(res.history[0][-1]) and np.isfinite(res.history[1]).all()


def test_classification_stops_at_full_training_accuracy():
    d, N = 4, 200
    x = dl.sample_inputs(N, d, 0)
    y = dl.sign_labels(dl.target(x, 1, "local"))  # linearly separable
    s = dl.TrainSettings(max_epochs=500, check_every=5, loss="cross_entropy", device="cpu")
    res = dl.train(x, y, np.arange(N)[None], np.array([0.5]), 2, 32, np.array([0]), np.array([0]), s)
    assert res.converged[0] and res.train_accuracy[0] == 1.0 and res.epochs[0] < 500
    out = dl.predict(res.params, x)[0]
    assert np.all(np.sign(out) == y)
    # and it did not stop at a check where accuracy was below 100 %
    assert res.epochs[0] % 5 == 0


def test_glorot_bounds_and_zero_biases():
    p = dl.glorot_init(2, 30, 70, np.array([0, 1]), torch.float64)
    a = np.sqrt(6 / (30 + 70))
    assert p[0][0].abs().max() <= a and p[0][0].abs().max() > 0.9 * a
    assert abs(p[0][0].var().item() - a * a / 3) < 0.05 * a * a
    assert all((b == 0).all() for _, b in p)
    assert not torch.equal(p[0][0][0], p[0][0][1])  # each model has its own init
