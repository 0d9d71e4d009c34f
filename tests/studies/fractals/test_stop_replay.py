"""benchmarks/fractal_stop_replay.py: the stop rule replayed on a store's recorded accuracy curves."""

import sys

import numpy as np
import pytest

from depthlab.core.stopping import StopRule


@pytest.fixture(scope="module")
def replay_mod(root):
    sys.path.insert(0, str(root / "benchmarks"))
    import fractal_stop_replay

    return fractal_stop_replay


def test_replayed_with_the_runs_own_rule_every_smoke_net_stops_where_it_stopped(smoke_run, replay_mod):
    """Independent of the trainer's bookkeeping: feeding each recorded curve back through the study's own rule (its
    growing window, its onset rule) stops every net at the epoch its store records, or at the budget."""
    from depthlab import storage
    from depthlab.studies import get_study
    from depthlab.studies.fractals.accuracy import stop_rule

    study = get_study("fractals")
    stores = [
        p
        for p in (smoke_run.results / "fractals").rglob("*.zarr")
        if p.name != "data.zarr" and "realdata" not in p.parts
    ]
    nets = 0
    for path in stores:
        spec = study.spec_from_dict(storage.read_record(path)["spec"])
        ds = storage.read_store(path)
        for i in range(ds.sizes["lr"]):
            for s in range(ds.sizes["seed"]):
                rec = int(ds.stopped_epoch.values[i, s])
                e, best, known = replay_mod.replay(
                    ds.accuracy.values[i, s],
                    ds.check_epoch.values,
                    stop_rule(spec.training),
                    spec.training.max_epochs,
                    rec,
                )
                if bool(ds.diverged.values[i, s]):
                    continue
                assert (e, known) == (rec, True), (path, i, s)
                assert best == pytest.approx(float(ds.best_accuracy.values[i, s]))
                nets += 1
    assert nets >= 4


def test_a_shorter_window_stops_a_slow_climber_early_and_the_record_bounds_a_longer_one(replay_mod):
    epochs = np.arange(4, 401, 4)
    acc = 0.5 + 0.3 * (1 - np.exp(-epochs / 150.0))  # still rising by ~0.2 % per check near the end
    acc = np.round(acc, 3)

    def rule(g: float) -> StopRule:
        return StopRule(patience=3, rel_tol=0.0, abs_tol=0.002, monitor="eval_error", grow=g)

    e_fixed, b_fixed, _ = replay_mod.replay(acc, epochs, rule(0.0), 400, 400)
    e_grow, b_grow, known = replay_mod.replay(acc, epochs, rule(0.5), 400, 400)
    assert e_fixed < e_grow and b_fixed < b_grow and known
    cut = np.where(epochs <= 200, acc, np.nan)  # the record ends at 200 (the run stopped it): a longer rule is unknown
    e, b, known = replay_mod.replay(
        cut, epochs, StopRule(patience=90, rel_tol=0.0, abs_tol=0.002, monitor="eval_error"), 400, 200
    )
    assert (e, known) == (200, False) and b == pytest.approx(np.nanmax(cut))
