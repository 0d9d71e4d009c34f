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


SETTINGS = TrainSettings(
    loss=MSE(), optimizer=SGD(), max_epochs=40, check_every=10, stop=StopRule(threshold=1e-4), device="cpu"
)
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
    low = SearchSettings(
        folds=3,
        log10_lr_bounds=(-4.0, -3.0),
        init_points=2,
        rounds=0,
        candidates_per_round=2,
        seed=0,
        grow_rounds=6,
        log10_lr_limits=(-4.0, 1.5),
    )
    grown = search_lr(*problem, SIZES, "glorot_uniform", low, SETTINGS)
    assert grown.round.max() > 1 and grown.edge == "" and not grown.flagged
    assert np.log10(grown.best_lr) > -3.0 + 1e-9, "the chosen rate lies beyond the first box"
    # the rates it found agree with the full search's choice (the same problem, a wide box) within half a decade
    assert abs(np.log10(grown.best_lr) - np.log10(result.best_lr)) < 0.5
    # without room to grow, the same box flags its choice
    stuck = search_lr(
        *problem,
        SIZES,
        "glorot_uniform",
        SearchSettings(
            folds=3,
            log10_lr_bounds=(-4.0, -3.0),
            init_points=2,
            rounds=0,
            candidates_per_round=2,
            seed=0,
            grow_rounds=6,
            log10_lr_limits=(-4.0, -3.0),
        ),
        SETTINGS,
    )
    assert stuck.edge == "upper" and stuck.flagged and stuck.round.max() == 0
    # the full search chose inside what it evaluated
    assert result.edge == "" and not result.flagged


def test_rung_epochs_are_check_epochs_below_the_budget():
    from depthlab.core.lrsearch import rung_epochs

    assert rung_epochs(300, 50, 3, 2) == (50, 100)  # 300/9 = 33 -> 50, 300/3 = 100
    assert rung_epochs(2500, 50, 3, 2) == (300, 850)
    assert rung_epochs(300, 50, 0, 2) == rung_epochs(300, 50, 1, 2) == ()
    assert rung_epochs(40, 10, 3, 3) == (10, 20)  # 40/27 and 40/9 both round up to the first check


def test_pruned_models_stop_at_their_rung_with_the_bits_of_a_run_to_that_rung(problem):
    """The trainer's prune hook against an independent run: a model cut at epoch 10 holds exactly the parameters of the
    same model trained to a budget of 10 epochs (no other model's presence changes its arithmetic), its reason is
    'pruned' (neither converged nor diverged), and the models kept train on as if nothing happened."""
    import torch

    from depthlab.core.stopping import PRUNED

    x, y = problem
    M = 4
    lrs = np.array([0.01, 0.03, 0.1, 0.3])
    init = init_params(SIZES, np.zeros(M, dtype=int))
    rows = np.tile(np.arange(N), (M, 1))

    class CutOdd:
        epochs = (10,)

        def __call__(self, epoch, active, params, final, reason):
            return np.flatnonzero(np.asarray(active) % 2 == 1)

    cut = train(x, y, rows, lrs, init, np.arange(M), SETTINGS, prune=CutOdd())
    short = train(x, y, rows, lrs, init, np.arange(M), TrainSettings(**{**SETTINGS.__dict__, "max_epochs": 10}))
    whole = train(x, y, rows, lrs, init, np.arange(M), SETTINGS)
    assert list(cut.stop_reason[[1, 3]]) == [PRUNED, PRUNED] and not cut.converged[[1, 3]].any()
    assert list(cut.epochs[[1, 3]]) == [10, 10]
    for (W, b), (Ws, bs), (Ww, bw) in zip(cut.params, short.params, whole.params):
        assert torch.equal(W[[1, 3]], Ws[[1, 3]]) and torch.equal(b[[1, 3]], bs[[1, 3]])
        assert torch.equal(W[[0, 2]], Ww[[0, 2]]) and torch.equal(b[[0, 2]], bw[[0, 2]])


def test_successive_halving_chooses_among_fully_trained_candidates_and_trains_fewer_epochs(problem, result):
    """The same search with eta = 3 over 2 rungs (at epochs 10 and 20 of 40): every round's worse
    candidates stop at a rung, recorded as pruned with their error there; the choice is a candidate trained to its end,
    near the full search's (on this toy, 40 epochs with rungs at 10 and 20, the optimiser's later proposals differ; the
    default config's table of both searches checks that); fewer epochs in all."""
    import dataclasses

    halving = dataclasses.replace(SEARCH, halving_eta=3, halving_rungs=2)
    res = search_lr(*problem, SIZES, "glorot_uniform", halving, SETTINGS)
    assert res.pruned is not None and res.pruned.any() and result.pruned is None
    chosen = int(np.argmin(np.abs(res.lr - res.best_lr)))
    assert not res.pruned[chosen].any()
    assert (res.epochs[res.pruned] <= 20).all()
    assert res.epochs.sum() < result.epochs.sum()
    full = int(np.argmin(np.abs(result.lr - result.best_lr)))
    assert res.val_error[chosen].mean() <= 1.5 * result.val_error[full].mean()
    assert 0.5 < res.best_lr / result.best_lr < 2.0
    # round 0: 4 candidates -> 2 kept at epoch 10 -> 1 at epoch 20; a candidate whose folds all stopped on their own
    # before a rung (diverged, or met the target) is not cut there.  Every other candidate trained to the budget.
    r0 = np.flatnonzero(res.round == 0)
    cut = res.pruned[r0].any(1)
    assert 1 <= cut.sum() <= 3
    for i in r0[~cut]:
        assert (res.diverged[i] | res.converged[i] | (res.epochs[i] == SETTINGS.max_epochs)).all()


def test_a_grid_in_parts_gives_the_bits_of_one_stack(problem):
    """An lr sweep that outgrows a node trains in parts of whole rates (all their seeds); each model's
    arithmetic never depends on the others', so the parts give one stack's result to the bit."""
    import torch

    from depthlab.core.grid import train_grid

    x, y = problem
    lrs = np.array([0.01, 0.03, 0.1, 0.3, 1.0])
    init = init_params(SIZES, np.array([0, 1]))
    one = train_grid(x, y, lrs, init, np.array([5, 6]), SETTINGS).result
    parts = train_grid(x, y, lrs, init, np.array([5, 6]), SETTINGS, stack_lrs=2).result
    for f in ("train_loss", "epochs", "converged", "diverged", "stop_reason", "history"):
        np.testing.assert_array_equal(getattr(parts, f), getattr(one, f))
    for (W, b), (Wo, bo) in zip(parts.params, one.params):  # a diverged model's NaNs compare equal too
        torch.testing.assert_close(W, Wo, rtol=0, atol=0, equal_nan=True)
        torch.testing.assert_close(b, bo, rtol=0, atol=0, equal_nan=True)


def test_a_round_in_parts_is_halved_part_by_part(problem):
    """A round with more candidates than a stack holds trains in parts; without halving the result is the
    one stack's to the bit (each candidate's folds share its stack)."""
    import dataclasses

    whole = search_lr(*problem, SIZES, "glorot_uniform", dataclasses.replace(SEARCH, rounds=0), SETTINGS)
    split = search_lr(
        *problem, SIZES, "glorot_uniform", dataclasses.replace(SEARCH, rounds=0, max_candidates=3), SETTINGS
    )
    np.testing.assert_array_equal(split.val_error, whole.val_error)
    assert split.best_lr == whole.best_lr


def test_a_first_rung_on_one_fold_screens_every_candidate_and_retrains_the_kept_ones_on_every_fold(problem, result):
    """With ``first_rung_folds = 1`` each round's candidates train on fold 0 only to the first rung (epoch 10
    of 40); the best ceil(n / 3) by that error go on on every fold (halved at epoch 20); a cut candidate has its fold-0
    error and NaN on the other folds, pruned on all of them.  A fold starts from the same init and data order in any
    stack, so fold 0 at the rung is the same model in the screen and in an every-fold stack.
    Fewer epochs than the every-fold halving; the choice is a candidate trained on every fold."""
    import dataclasses

    from depthlab.core import lrsearch

    every = search_lr(
        *problem, SIZES, "glorot_uniform", dataclasses.replace(SEARCH, halving_eta=3, halving_rungs=2), SETTINGS
    )
    one = search_lr(
        *problem,
        SIZES,
        "glorot_uniform",
        dataclasses.replace(SEARCH, halving_eta=3, halving_rungs=2, first_rung_folds=1),
        SETTINGS,
    )
    cut = np.isnan(one.val_error[:, 1:]).all(1)
    assert cut.any() and (~cut).any()
    assert np.isfinite(one.val_error[:, 0]).all()
    assert (one.pruned[cut].all(1) | one.diverged[cut][:, 0]).all() and (one.epochs[cut][:, 1:] == 0).all()
    assert (one.epochs[cut][:, 0] <= 10).all()
    chosen = int(np.argmin(np.abs(one.lr - one.best_lr)))
    assert not cut[chosen] and np.isfinite(one.val_error[chosen]).all() and not one.pruned[chosen].any()
    assert one.epochs.sum() < every.epochs.sum()
    # per round: ceil(n / 3) kept (round 0: 4 candidates -> 2)
    assert (~cut[one.round == 0]).sum() == 2
    # round 0 screened to epoch 10, then the kept candidates on every fold; fold 0 of a kept one at
    # epoch 10 is the screen's model (same init and order), checked on a direct screen of the same rates
    tr, va, _ = fold_indices(N, SEARCH.folds, SEARCH.seed)
    lrs = one.lr[one.round == 0]
    screen = lrsearch.validation_errors(
        *problem,
        lrs,
        SIZES,
        "glorot_uniform",
        tr[:1],
        va[:1],
        dataclasses.replace(SETTINGS, max_epochs=10),
        SEARCH.seed,
        10.0,
        None,
    )
    full10 = lrsearch.validation_errors(
        *problem,
        lrs,
        SIZES,
        "glorot_uniform",
        tr,
        va,
        dataclasses.replace(SETTINGS, max_epochs=10),
        SEARCH.seed,
        10.0,
        None,
    )
    np.testing.assert_allclose(screen["val_error"][:, 0], full10["val_error"][:, 0], rtol=1e-5)
    # the cost model counts the screen at 1/folds of a candidate-epoch
    s = SearchSettings(
        folds=3,
        log10_lr_bounds=(-2.0, 0.0),
        init_points=4,
        rounds=1,
        candidates_per_round=3,
        seed=0,
        grow_rounds=0,
        log10_lr_limits=(-3.0, 1.0),
        halving_eta=3,
        halving_rungs=2,
        first_rung_folds=1,
    )
    # 4 candidates x 10 epochs on 1 of 3 folds, the 2 kept ones' other 2 folds to 10, those 2 on to 20, 1 on to 40
    assert s.trained_epochs(40, 10, 4) == pytest.approx(4 * 10 / 3 + 2 * 10 * 2 / 3 + 2 * 10 + 1 * 20)


def test_a_file_checkpoint_takes_a_round_in_parts_and_a_one_fold_first_rung_and_a_rerun_resumes_to_the_same_choice(
    problem, tmp_path
):
    """The children a search asks of its checkpoint (``part<i>`` for a round in parts, ``screen`` and ``kept`` for a
    one-fold first rung) are names a FileCheckpoint takes (they raised ValueError before); a second run restores every
    round from it and gives the same result."""
    import dataclasses

    from depthlab.checkpoint import FileCheckpoint

    s = dataclasses.replace(SEARCH, rounds=1, halving_eta=3, halving_rungs=2, first_rung_folds=1, max_candidates=2)
    ck = FileCheckpoint(tmp_path / "search")
    a = search_lr(*problem, SIZES, "glorot_uniform", s, SETTINGS, checkpoint=ck)
    said = []
    b = search_lr(
        *problem,
        SIZES,
        "glorot_uniform",
        s,
        SETTINGS,
        progress=said.append,
        checkpoint=FileCheckpoint(tmp_path / "search"),
    )
    assert any("restored from checkpoint" in m for m in said)
    assert a.best_lr == b.best_lr
    np.testing.assert_array_equal(a.epochs, b.epochs)


def test_a_one_fold_first_rung_cuts_the_kept_candidates_only_at_the_rungs_after_it(problem):
    """With 3 rungs of a 40-epoch budget checked every 10 epochs the rungs are (10, 20): the lowest two merge at 10.
    After a one-fold screen to epoch 10, the kept candidates may be cut at epoch 20 only, not at 10 again (the rungs
    the cost model, ``Search.trained_epochs``, counts)."""
    import dataclasses

    from depthlab.core.lrsearch import rung_epochs

    assert rung_epochs(40, 10, 3, 3) == (10, 20)
    one = search_lr(
        *problem,
        SIZES,
        "glorot_uniform",
        dataclasses.replace(SEARCH, halving_eta=3, halving_rungs=3, first_rung_folds=1),
        SETTINGS,
    )
    kept = ~np.isnan(one.val_error[:, 1:]).all(1)
    assert kept.any()
    assert (one.epochs[kept][one.pruned[kept]] == 20).all()


def test_a_one_fold_first_rung_trains_no_epoch_twice_and_its_kept_candidates_are_the_every_fold_runs(
    problem, monkeypatch
):
    """The kept candidates' first folds go on from their screen (paused at the rung) instead of training again from
    their start (they did until 2026-11-29, and that work went unrecorded).  Counted by the trainer's per-model data
    order (one call per model per epoch trained): the epochs the search trains are the epochs it records.  And the
    kept candidates' errors and epochs are, to the bit, those of the same rates trained from their start on every fold
    in one stack and cut at the later rungs (the independent path: core.grid's stack, no pause, no join)."""
    import dataclasses

    from depthlab.core import lrsearch, trainer

    calls = []
    real = trainer.epoch_order
    monkeypatch.setattr(trainer, "epoch_order", lambda *a: calls.append(1) or real(*a))
    s = dataclasses.replace(SEARCH, halving_eta=3, halving_rungs=2, first_rung_folds=1, grow_rounds=0)
    one = search_lr(*problem, SIZES, "glorot_uniform", s, SETTINGS)
    assert len(calls) == one.epochs.sum()
    monkeypatch.setattr(trainer, "epoch_order", real)
    tr, va, _ = fold_indices(N, SEARCH.folds, SEARCH.seed)
    first = lrsearch.rung_epochs(SETTINGS.max_epochs, SETTINGS.check_every, 3, 2)
    for r in np.unique(one.round):
        here = one.round == r
        kept = here & ~np.isnan(one.val_error[:, 1:]).all(1)
        assert kept.sum() == int(np.ceil(here.sum() / 3))
        again = lrsearch.validation_errors(
            *problem,
            one.lr[kept],
            SIZES,
            "glorot_uniform",
            tr,
            va,
            SETTINGS,
            SEARCH.seed,
            10.0,
            None,
            halving=(3, 2),
            rungs=first[1:],
        )
        np.testing.assert_array_equal(
            np.where(one.diverged[kept], 10.0, one.val_error[kept]),
            np.where(again["diverged"], 10.0, again["val_error"]),
        )
        np.testing.assert_array_equal(one.epochs[kept], again["epochs"])
        np.testing.assert_array_equal(one.pruned[kept], again["pruned"])


def test_the_screen_keeps_the_best_third_and_every_candidate_a_paired_t_test_cannot_tell_from_its_best():
    """``first_rung_se = z`` keeps, beyond the best ceil(C / eta), each candidate whose point-by-point
    errors on the screened rows exceed the best's by a mean of at most z paired SEs.  Checked against scipy's paired
    t statistic (``ttest_rel``, an independent implementation of mean(d) / (sd(d) / sqrt(n))) on 0/1 errors."""
    from scipy.stats import ttest_rel

    from depthlab.core.lrsearch import screen_keep

    gen = np.random.default_rng(0)
    n = 1333
    best = (gen.random(n) < 0.188).astype(float)
    near = best.copy()  # differs from best on 30 points: 17 worse, 13 better (net 4 points, 0.003)
    near[np.flatnonzero(best == 0)[-17:]] = 1.0
    near[np.flatnonzero(best == 1)[-13:]] = 0.0
    worse = best.copy()  # every point best gets right but 13: always worse, a tiny SE
    worse[np.flatnonzero(best == 0)[:13]] = 1.0
    far = (gen.random(n) < 0.5).astype(float)
    points = np.stack([far, near, best, worse])
    err = points.mean(1)
    diverged = np.zeros(4, bool)
    t = {c: ttest_rel(points[c], points[2]).statistic for c in (0, 1, 3)}
    assert t[1] <= 1.0 < t[3] and t[0] > 1.0  # the test's premise: near is within 1 SE, worse and far are not
    # z = 0: the best ceil(4 / 3) = 2 by error (best, then near or worse, whichever is lower)
    keep, added = screen_keep(err, diverged, 3)
    assert added == 0 and list(keep) == sorted(np.argsort(err, kind="stable")[:2])
    keep, added = screen_keep(err, diverged, 3, points, 1.0)
    expect = set(np.argsort(err, kind="stable")[:2]) | {c for c in (0, 1, 3) if t[c] <= 1.0}
    assert set(keep) == expect and added == len(expect) - 2
    assert 1 in keep and 0 not in keep
    # eta 4: one kept by rank; near is added, worse (paired: 13 points, every one of them worse) is not, though an
    # unpaired SE of the two error rates (about 0.015) is far larger than their gap (0.0098)
    keep, added = screen_keep(err, diverged, 4, points, 1.0)
    assert list(keep) == [1, 2] and added == 1
    assert err[3] - err[2] < np.hypot(*(np.sqrt(e * (1 - e) / n) for e in (err[2], err[3])))
    # a diverged candidate is never added; a diverged best adds nothing
    keep, added = screen_keep(err, np.array([False, True, False, False]), 4, points, 1.0)
    assert list(keep) == [2] and added == 0
    keep, added = screen_keep(
        np.array([0.1, 0.5, 0.5]), np.array([True, False, False]), 3, np.stack([best, best, best]), 10.0
    )
    assert list(keep) == [0] and added == 0


def test_a_one_fold_screen_that_keeps_by_se_trains_no_epoch_twice_and_keeps_at_least_the_best_third(
    problem, monkeypatch
):
    """With ``first_rung_se`` set the screen keeps a superset of the rank-only screen's candidates; every epoch trained
    is recorded (counted by the trainer's per-model data-order calls), and the choice is a candidate trained on every
    fold."""
    import dataclasses

    from depthlab.core import trainer

    s = dataclasses.replace(SEARCH, halving_eta=3, halving_rungs=2, first_rung_folds=1, grow_rounds=0)
    plain = search_lr(*problem, SIZES, "glorot_uniform", s, SETTINGS)
    calls = []
    real = trainer.epoch_order
    monkeypatch.setattr(trainer, "epoch_order", lambda *a: calls.append(1) or real(*a))
    said = []
    wide = search_lr(
        *problem, SIZES, "glorot_uniform", dataclasses.replace(s, first_rung_se=10.0), SETTINGS, progress=said.append
    )
    assert len(calls) == wide.epochs.sum()
    r0 = wide.round == 0
    np.testing.assert_array_equal(wide.lr[r0], plain.lr[r0])
    kept_plain = ~np.isnan(plain.val_error[r0][:, 1:]).all(1)
    kept_wide = ~np.isnan(wide.val_error[r0][:, 1:]).all(1)
    assert (kept_wide >= kept_plain).all() and kept_wide.sum() > kept_plain.sum()  # 3 of 4 here, not 2
    chosen = int(np.argmin(np.abs(wide.lr - wide.best_lr)))
    assert np.isfinite(wide.val_error[chosen]).all() and not wide.pruned[chosen].any()
    assert any(
        "successive halving: epoch 10 on 1 of 3 folds: kept 3 of 4" in m and "1 more within 10 SE" in m for m in said
    )
