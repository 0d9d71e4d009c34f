"""The sawtooth: the exact construction, exact piece counts against independent estimates, the piece-count bound."""

import numpy as np
import pytest
import torch

from depthlab.core.mlp import init_params, predict
from depthlab.core.shapes import layer_sizes
from depthlab.studies.separation.telgarsky import (
    construction,
    crossing_bound,
    l1_bound,
    mse_bound,
    pieces,
    sawtooth,
    triangle,
    window_bound,
)


@pytest.mark.parametrize("level", range(1, 9))
def test_construction_equals_the_sawtooth_exactly(level):
    x = np.linspace(0, 1, 2**14 + 1)
    p = construction(level)
    np.testing.assert_allclose(predict(p, x[:, None])[0], sawtooth(x, level), rtol=0, atol=1e-12)
    n, breaks = pieces(p)
    assert n == 2**level
    np.testing.assert_allclose(breaks, np.arange(1, 2**level) / 2**level, atol=1e-12)  # kinks at j / 2^L


def test_sawtooth_hand_values():
    np.testing.assert_array_equal(triangle(np.array([0, 0.25, 0.5, 0.75, 1])), [0, 0.5, 1, 0.5, 0])
    np.testing.assert_allclose(sawtooth(np.array([0.125, 0.25, 0.375]), 2), [0.5, 1.0, 0.5])


def grid_pieces(params, m=0, n=2**18):
    """Independent estimate: count slope changes of the net on a fine grid (misses kinks closer than the grid)."""
    x = np.linspace(0, 1, n + 1)
    y = predict([(W[m : m + 1].double(), b[m : m + 1].double()) for W, b in params], x[:, None])[0]
    s = np.diff(y) / np.diff(x)
    change = np.flatnonzero(np.abs(np.diff(s)) > 1e-6 * (np.abs(s).max() + 1))
    # a kink strictly between grid points shows as two adjacent slope changes: count runs, not changes
    return 1 + int(np.sum(np.diff(change) > 1)) + (len(change) > 0)


@pytest.mark.parametrize("depth,width", [(1, 7), (2, 5), (3, 4), (5, 3)])
def test_piece_count_matches_a_fine_grid_on_random_nets(depth, width):
    params = init_params(layer_sizes(1, width, depth), np.arange(6), "torch_default", torch.float64)
    checked = 0
    for m in range(6):
        n, breaks = pieces(params, m)
        gap = np.min(np.diff(np.concatenate([[0.0], breaks, [1.0]]))) if len(breaks) else 1.0
        if gap > 1e-4:  # the grid resolves every kink
            assert n == grid_pieces(params, m), (m, n)
            checked += 1 + (n > 1)
    assert checked >= 6, "too few models had kinks the grid resolves: the check compared (almost) nothing"


def test_one_hidden_layer_pieces_are_its_kinks_in_the_interval():
    params = init_params([1, 9, 1], np.array([4]), "torch_default", torch.float64)
    W1, b1, W2 = params[0][0][0, 0].numpy(), params[0][1][0, 0].numpy(), params[1][0][0, :, 0].numpy()
    kinks = -b1 / W1
    want = 1 + int(np.sum((kinks > 0) & (kinks < 1) & (W2 != 0)))
    assert pieces(params)[0] == want <= 9 + 1


def test_a_kink_cancelled_downstream_is_not_a_piece():
    # relu(x - 0.3) - relu(x - 0.3) + x : two units with the same kink whose output weights cancel
    W1 = torch.tensor([[[1.0, 1.0, 1.0]]], dtype=torch.float64)
    b1 = torch.tensor([[[-0.3, -0.3, 0.0]]], dtype=torch.float64)
    W2 = torch.tensor([[[1.0], [-1.0], [1.0]]], dtype=torch.float64)
    b2 = torch.zeros(1, 1, 1, dtype=torch.float64)
    assert pieces([(W1, b1), (W2, b2)])[0] == 1
    W2b = torch.tensor([[[2.0], [-1.0], [1.0]]], dtype=torch.float64)
    assert pieces([(W1, b1), (W2b, b2)])[0] == 2


@pytest.mark.parametrize("level", [2, 4, 6])
def test_piece_bound_holds_for_shallow_nets_and_is_attained(level):
    x = np.linspace(0, 1, 2**16 + 1)
    y = sawtooth(x, level)
    # the constant 1/2 (one piece) attains MSE 1/12 = the bound at p = 1, and MAE 1/4
    assert abs(np.mean((0.5 - y) ** 2) - mse_bound(1, level)) < 1e-5  # (grid mean vs the integral)
    assert abs(np.mean(np.abs(0.5 - y)) - l1_bound(1, level)) < 1e-5
    # the exact net (2^L pieces) has error 0, where the bound is 0 too
    assert mse_bound(2**level, level) == 0
    # random one-hidden-layer nets with w + 1 < 2^L pieces never beat the bound (least-squares output layer: the best they can do)
    for seed in range(5):
        w = 2 ** (level - 1) - 1
        p = init_params([1, w, 1], np.array([seed]), "torch_default", torch.float64)
        h = np.maximum(0, x[:, None] * p[0][0][0].numpy() + p[0][1][0].numpy())  # [n, w]
        A = np.hstack([h, np.ones((len(x), 1))])
        fit = A @ np.linalg.lstsq(A, y, rcond=None)[0]
        assert np.mean((fit - y) ** 2) >= mse_bound(w + 1, level) - 1e-9


def test_the_window_bound_is_positive_up_to_2_to_the_L_pieces_and_holds_for_shallow_nets():
    """The issue's cells: crossing bound 0, window bound (1 - p/2^L)/48 > 0 (L = 3, w = 6; L = 4, w = 8; L = 6, w = 37)."""
    for L, w, want in [(3, 6, 0.0026), (4, 8, 0.0091), (6, 37, 0.0085)]:
        assert crossing_bound(w + 1, L) == 0 and window_bound(w + 1, L) == pytest.approx(want, abs=5e-5)
        assert mse_bound(w + 1, L) == window_bound(w + 1, L)
    assert mse_bound(2**5, 5) == 0 and mse_bound(2**5 - 1, 5) > 0  # one condition: fewer pieces than Delta^L
    # least-squares output layers on random first layers with 2^(L-1) <= w + 1 < 2^L pieces never beat it
    x = np.linspace(0, 1, 2**15 + 1)
    for L in (3, 4):
        y = sawtooth(x, L)
        for w in range(2 ** (L - 1), 2**L - 1):
            for seed in range(3):
                p = init_params([1, w, 1], np.array([seed]), "torch_default", torch.float64)
                h = np.maximum(0, x[:, None] * p[0][0][0].numpy() + p[0][1][0].numpy())
                A = np.hstack([h, np.ones((len(x), 1))])
                fit = A @ np.linalg.lstsq(A, y, rcond=None)[0]
                assert np.mean((fit - y) ** 2) >= window_bound(w + 1, L) - 1e-9
