"""The stop rule (depthlab.core.stopping) on hand-written sequences, and inside the trainer on real nets."""

import numpy as np
import pytest
import torch

from depthlab.core.losses.mse import MSE
from depthlab.core.mlp import init_params
from depthlab.core.optim.sgd import SGD
from depthlab.core.shapes import layer_sizes
from depthlab.core.stopping import BUDGET, DIVERGED, PLATEAU, RUNNING, TARGET, StopRule
from depthlab.core.trainer import TrainSettings, train
from depthlab.studies.mori_ueda.targets import sample_inputs, target


def run(rule: StopRule, values, reached=None, budget=None):
    """Feed one model's monitored values check by check; (reason, stopped_at) with checks numbered 1, 2, ..."""
    st = rule.start(1)
    for i, v in enumerate(values, 1):
        r = np.array([False if reached is None else reached[i - 1]])
        if rule.update(st, np.array([0]), np.array([v]), r, i)[0]:
            break
    else:
        StopRule.budget(st, np.array([0]), budget or len(values))
    return int(st.reason[0]), int(st.stopped_at[0]), bool(st.converged[0])


def test_a_plateau_stops_after_patience_checks_without_a_relative_improvement():
    # falls by 10 % per check, then flat: the first check without > 1 % improvement is 6, the third in a row is 8
    values = [1.0, 0.9, 0.81, 0.729, 0.6561, 0.6560, 0.6559, 0.6558, 0.5]
    assert run(StopRule(patience=3, rel_tol=0.01), values) == (PLATEAU, 8, True)
    # a 0.5 % fall per check is no improvement at rel_tol 1 %, but is at 0.1 %
    slow = [1.0 * 0.995**i for i in range(40)]
    assert run(StopRule(patience=3, rel_tol=0.01), slow)[0] == PLATEAU
    assert run(StopRule(patience=3, rel_tol=0.001), slow, budget=40) == (BUDGET, 40, False)


def test_noise_below_the_best_does_not_reset_the_count_but_a_new_best_does():
    # best 0.5 at check 2; then values above it, and one new best at check 5 beyond the tolerance
    values = [1.0, 0.5, 0.6, 0.55, 0.4, 0.45, 0.41, 0.42, 0.43]
    assert run(StopRule(patience=3, rel_tol=0.01), values) == (PLATEAU, 8, True)
    # an absolute tolerance: improvements of 0.001 do not count at abs_tol 0.002 (accuracy-like errors)
    acc_err = [0.3, 0.299, 0.298, 0.297, 0.296]
    assert run(StopRule(patience=4, rel_tol=0.0, abs_tol=0.002), acc_err)[:2] == (PLATEAU, 5)
    assert run(StopRule(patience=4, rel_tol=0.0, abs_tol=0.0005), acc_err, budget=5)[0] == BUDGET


def test_the_target_stops_at_once_and_counts_as_converged():
    assert run(StopRule(threshold=1e-4, patience=3), [1.0, 0.1, 0.01], reached=[False, False, True]) == (
        TARGET,
        3,
        True,
    )
    # no plateau rule: only the target or the budget end it
    assert run(StopRule(), [1.0] * 10, budget=10) == (BUDGET, 10, False)


def test_budget_does_not_overwrite_a_reason_and_bad_arguments_are_refused():
    rule = StopRule(patience=1)
    st = rule.start(2)
    rule.update(st, np.array([0, 1]), np.array([1.0, 1.0]), np.array([False, False]), 1)
    rule.update(st, np.array([0]), np.array([1.0]), np.array([False]), 2)  # model 0 plateaus
    StopRule.budget(st, np.array([0, 1]), 2)
    assert st.reason.tolist() == [PLATEAU, BUDGET] and st.converged.tolist() == [True, False]
    StopRule.diverge(st, np.array([1]), 2)
    assert st.reason[1] == DIVERGED and not st.converged[1]
    assert rule.start(3).reason.tolist() == [RUNNING] * 3
    for bad in (dict(patience=0), dict(monitor="test_loss"), dict(rel_tol=-1.0)):
        with pytest.raises(ValueError):
            StopRule(**bad)


def _net(lrs, rule, max_epochs=600):
    d, N = 5, 200
    x = sample_inputs(N, d, 0)
    y = target(x, 2, "local")
    s = TrainSettings(
        loss=MSE(), optimizer=SGD(), max_epochs=max_epochs, check_every=10, stop=rule, device="cpu", dtype="float64"
    )
    M = len(lrs)
    init = init_params(layer_sizes(d, 32, 1), np.arange(M), "glorot_uniform", torch.float64)
    return train(x, y, np.tile(np.arange(N), (M, 1)), np.asarray(lrs), init, np.arange(M), s)


def test_in_the_trainer_a_net_that_stops_improving_stops_and_one_still_improving_runs_to_the_budget():
    # lr 1e-7 barely moves (plateau after `patience` checks); lr 0.05 keeps improving by > 1 % per 30 epochs on this
    # target for the whole budget of 120 epochs, so the budget ends it: not converged
    res = _net([1e-7, 0.05], StopRule(patience=3, rel_tol=0.01), max_epochs=120)
    assert res.stop_reason.tolist() == [PLATEAU, BUDGET]
    assert res.converged.tolist() == [True, False] and res.epochs.tolist() == [40, 120]
    # the plateau is real: the recorded history of the slow net moved by less than 1 % over its last three checks
    h = res.history[0][np.isfinite(res.history[0])]
    assert abs(h[-1] - h[-4]) < 0.01 * h[-4]
    # and the fast one was still falling at the end (so "not converged" is the truth, not an artefact)
    h = res.history[1]
    assert h[-1] < 0.99 * np.min(h[:-3])


def test_a_diverged_net_keeps_its_history_up_to_the_divergence():
    d, N = 5, 200
    x = sample_inputs(N, d, 0)
    y = target(x, 2, "local")
    s = TrainSettings(
        loss=MSE(),
        optimizer=SGD(),
        max_epochs=50,
        check_every=1,
        stop=StopRule(patience=3),
        device="cpu",
        dtype="float64",
    )
    init = init_params(layer_sizes(d, 32, 1), np.arange(2), "glorot_uniform", torch.float64)
    res = train(
        x, y, np.tile(np.arange(N), (2, 1)), np.array([0.05, 0.9]), init, np.arange(2), s
    )  # lr 0.9 blows up at epoch 3
    assert res.diverged.tolist() == [False, True] and res.stop_reason[1] == DIVERGED and not res.converged[1]
    h = res.history[1]
    # the checks before the divergence keep their finite losses; the divergence is marked inf; nothing after it
    assert np.isfinite(h[:2]).all() and np.isinf(h[2]) and np.isnan(h[3:]).all() and res.epochs[1] == 3


def _slow_start(onset_at: int, n: int = 200, seed: int = 0) -> list[float]:
    """A test error at chance (0.5, noise of a 5000-example test set) until check ``onset_at``, then falling to 0.2."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0.0, 0.007, n)
    fall = np.clip((np.arange(1, n + 1) - onset_at) / 60.0, 0.0, 1.0)
    return list(0.5 - 0.3 * fall + noise)


def test_a_net_still_at_chance_is_not_stopped_before_the_onset_window_and_one_that_started_is_judged_as_before():
    plain = StopRule(patience=20, rel_tol=0.0, abs_tol=0.002)
    onset = StopRule(patience=20, rel_tol=0.0, abs_tol=0.002, onset=0.48, onset_patience=50)
    late = _slow_start(
        onset_at=40
    )  # at chance for 40 checks, then it climbs (the pdeg-12 net at 1e-5: 29 checks of 4 epochs)
    reason, at, _ = run(plain, late)
    assert reason == PLATEAU and at < 40  # the old rule stopped it before it started: "converged" at chance
    assert min(late[:at]) > 0.48  # (it really had not started)
    reason, at, conv = run(onset, late)
    assert reason == PLATEAU and conv and at > 40 + 60  # it learned, then plateaued on its own
    assert min(late[:at]) < 0.21
    # a net that never leaves chance stops once the onset window has passed and it has gone `patience` checks without
    # a new best (noise of the test set makes a new best now and then)
    reason, at, conv = run(onset, _slow_start(onset_at=10**6))
    assert reason == PLATEAU and conv and 50 <= at < 70
    # a net that started at once is judged exactly as without the onset rule
    early = _slow_start(onset_at=-60)
    assert run(onset, early) == run(plain, early) and run(onset, early)[1] < 50
    # a net that starts after the window ended is stopped at chance (the window is the rule's stated limit)
    reason, at, _ = run(onset, _slow_start(onset_at=80))
    assert reason == PLATEAU and 50 <= at < 80


def test_the_onset_rule_needs_both_values_and_a_window_no_shorter_than_the_patience():
    for bad in (
        dict(patience=5, onset=0.48),
        dict(patience=5, onset_patience=10),
        dict(patience=5, onset=0.48, onset_patience=4),
        dict(onset=0.48, onset_patience=10),
    ):
        with pytest.raises(ValueError):
            StopRule(**bad)
    assert "not before its 50th check" in StopRule(patience=20, onset=0.48, onset_patience=50).describe()


def test_in_the_trainer_a_net_from_a_small_start_sits_at_chance_then_learns_only_under_the_onset_rule():
    # XOR-like labels sign(x0 x1) in 2-D, balanced; a depth-3 ReLU net started at 0.05x its usual weights sits near a saddle:
    # test accuracy 0.51 for ~20 epochs, then it climbs.  The plain plateau rule (10 checks) calls it converged at chance.
    from depthlab.core.losses.hinge import Hinge
    from depthlab.core.optim.adam import Adam

    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, (2000, 2))
    y = np.sign(x[:, 0] * x[:, 1])
    init = [(W * 0.05, b * 0.0) for W, b in init_params(layer_sizes(2, 16, 3), np.arange(1), "truncated_normal")]

    def fit(rule):
        s = TrainSettings(
            loss=Hinge(), optimizer=Adam(), batch_size=100, check_every=1, stop=rule, max_epochs=200, device="cpu"
        )
        r = train(
            x[:1000],
            y[:1000],
            np.arange(1000)[None],
            np.array([3e-4]),
            init,
            np.arange(1),
            s,
            eval_set=(x[1000:], y[1000:]),
        )
        return r, 1.0 - r.eval_history[0][: r.epochs[0]]

    r, acc = fit(StopRule(patience=10, rel_tol=0.0, abs_tol=0.002, monitor="eval_error"))
    assert r.stop_reason[0] == PLATEAU and r.converged[0] and acc.max() < 0.52  # "converged" without having learned
    r, acc = fit(StopRule(patience=10, rel_tol=0.0, abs_tol=0.002, monitor="eval_error", onset=0.48, onset_patience=60))
    assert r.stop_reason[0] == PLATEAU and r.converged[0] and acc.max() > 0.95  # it learned, then plateaued on its own
    assert acc[:15].max() < 0.52 and r.epochs[0] < 200  # (it did sit at chance at first; and it was not the budget)


def test_the_plateau_window_grows_with_the_run_and_no_plateau_stops_before_min_checks():
    """A slow learner stopped by a fixed 10-check window at check 17 (step 425) while still falling.
    Here: falls 5 %, then stalls 10 checks (a pause a fixed window of 10 reads as a plateau), then falls again.  With the
    window at max(10, 0.5 x checks so far) the pause at checks 21-30 is shorter than the window (15 at check 30) and the
    run goes on to its second fall; min_checks holds any plateau off until then."""
    values = [0.95**i for i in range(20)] + [0.95**19] * 10 + [0.95 ** (19 + i) for i in range(1, 11)] + [0.95**29] * 40
    assert run(StopRule(patience=10, rel_tol=0.01), values) == (PLATEAU, 30, True)
    reason, at, _ = run(StopRule(patience=10, rel_tol=0.01, grow=0.5), values)
    assert (
        reason == PLATEAU and at > 40
    )  # past the second fall: stopped once 0.5 x checks exceeded the stall at the end
    assert at == 80  # the final stall starts after check 40: since = 40 >= max(10, ceil(0.5 * 80))
    assert run(StopRule(patience=3, rel_tol=0.01, min_checks=25), [1.0] * 30)[:2] == (PLATEAU, 25)
    with pytest.raises(ValueError, match="grow"):
        StopRule(patience=3, grow=1.5)
    assert "max(10, 0.5 x the checks so far)" in StopRule(patience=10, grow=0.5).describe()
