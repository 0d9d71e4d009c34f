"""Cross-validated Bayesian learning-rate search."""

import numpy as np
import pytest

from depthlab.core.losses.mse import MSE
from depthlab.core.lrsearch import SearchSettings, fold_indices, search_lr
from depthlab.core.mlp import init_params
from depthlab.core.optim.sgd import SGD
from depthlab.core.shapes import layer_sizes
from depthlab.core.stopping import StopRule
from depthlab.core.trainer import TrainSettings, train
from depthlab.studies.mori_ueda.targets import sample_inputs, target

D, N, WIDTH, DEPTH = 5, 200, 32, 2
SIZES = layer_sizes(D, WIDTH, DEPTH)


@pytest.fixture(scope="module")
def problem():
    x = sample_inputs(N, D, 0)
    return x, target(x, 2, "local")


SETTINGS = TrainSettings(loss=MSE(), optimizer=SGD(), max_epochs=40, check_every=10, stop=StopRule(threshold=1e-4), device="cpu")
SEARCH = SearchSettings(folds=3, log10_lr_bounds=(-4.0, 1.5), init_points=4, rounds=2, candidates_per_round=3, seed=0)


@pytest.fixture(scope="module")
def result(problem):
    return search_lr(*problem, SIZES, "glorot_uniform", SEARCH, SETTINGS)


def test_chosen_rate_lies_between_too_slow_and_divergent(problem, result):
    x, y = problem
    # independent scan: full-data training at a grid of rates within the same epoch budget
    grid = 10.0 ** np.linspace(-4, 1.5, 23)
    M = len(grid)
    init = init_params(SIZES, np.zeros(M, dtype=int))
    scan = train(x, y, np.tile(np.arange(N), (M, 1)), grid, init, np.arange(M), SETTINGS)
    lowest_divergent = grid[scan.diverged].min()
    assert scan.diverged[-1] and not scan.diverged[0]
    # too small: the full training loss barely moves from its start within the budget
    too_slow = grid[scan.train_loss > 0.5 * np.mean(y**2)].min()
    assert too_slow < lowest_divergent
    assert too_slow < result.best_lr < lowest_divergent
    # the search itself saw divergence and scored it finitely
    assert result.diverged.any() and np.isfinite(result.score).all()
    assert np.isfinite(result.val_error).all()


def test_shapes_and_bookkeeping(result):
    E = SEARCH.init_points + SEARCH.rounds * SEARCH.candidates_per_round
    assert result.lr.shape == (E,) and result.val_error.shape == (E, SEARCH.folds)
    assert result.best_lr == result.lr[np.argmax(result.score)]
    assert set(result.round.tolist()) == {0, 1, 2}
    lo, hi = SEARCH.log10_lr_bounds
    assert np.all((np.log10(result.lr) >= lo - 1e-9) & (np.log10(result.lr) <= hi + 1e-9))
    np.testing.assert_allclose(result.score, -np.log10(result.val_error.mean(1)))
    assert len(np.unique(np.round(np.log10(result.lr), 6))) == E, "no rate is evaluated twice"


def test_reproducible_for_a_seed(problem, result):
    again = search_lr(*problem, SIZES, "glorot_uniform", SEARCH, SETTINGS)
    np.testing.assert_array_equal(again.lr, result.lr)
    np.testing.assert_array_equal(again.val_error, result.val_error)


def test_single_validation_split(problem):
    one = SearchSettings(folds=5, use_folds=1, log10_lr_bounds=(-3.0, 0.0), init_points=3, rounds=0, seed=1)
    res = search_lr(*problem, SIZES, "glorot_uniform", one, SETTINGS)
    assert res.val_error.shape == (3, 1)
    assert (res.fold_of == 0).sum() == N // 5


def test_folds_partition_rows():
    tr, va, fold_of = fold_indices(103, 10, 1)
    assert tr.shape == (10, 93) and va.shape == (10, 10)
    for k in range(10):
        assert not set(tr[k]) & set(va[k])
        assert len(set(tr[k]) | set(va[k])) == 103
    assert np.sort(va.ravel()).tolist() == np.flatnonzero(fold_of >= 0).tolist()
    with pytest.raises(ValueError, match="folds"):
        fold_indices(5, 1, 0)


def test_a_choice_at_the_edge_of_what_was_evaluated_grows_the_search_a_decade_at_a_time(problem, result):
    # the box [-4, -3] holds only rates far too small: its best is its top, and growth walks up a decade per round
    low = SearchSettings(folds=3, log10_lr_bounds=(-4.0, -3.0), init_points=2, rounds=0, candidates_per_round=2, seed=0,
                         grow_rounds=6, log10_lr_limits=(-4.0, 1.5))
    grown = search_lr(*problem, SIZES, "glorot_uniform", low, SETTINGS)
    assert grown.round.max() > 1 and grown.edge == "" and not grown.flagged
    assert np.log10(grown.best_lr) > -3.0 + 1e-9, "the chosen rate lies beyond the first box"
    # the rates it found agree with the full search's choice (the same problem, a wide box) within half a decade
    assert abs(np.log10(grown.best_lr) - np.log10(result.best_lr)) < 0.5
    # without room to grow, the same box flags its choice
    stuck = search_lr(*problem, SIZES, "glorot_uniform",
                      SearchSettings(folds=3, log10_lr_bounds=(-4.0, -3.0), init_points=2, rounds=0, candidates_per_round=2,
                                     seed=0, grow_rounds=6, log10_lr_limits=(-4.0, -3.0)), SETTINGS)
    assert stuck.edge == "upper" and stuck.flagged and stuck.round.max() == 0
    # the full search chose inside what it evaluated
    assert result.edge == "" and not result.flagged
