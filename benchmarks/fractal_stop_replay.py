"""What a shorter plateau window or epoch budget would have cost and given the fractal nets of a finished run.

Each fractal store records every net's test accuracy at every check until it stopped.  A stop rule that stops no
later than the run's own (a smaller ``plateau_growth``, a smaller ``max_epochs``) sees exactly the same curve up to
its stop, so it can be replayed on the record without training anything: where each net would have stopped, and the
best test accuracy it would have reported.  A rule that would run longer than the record cannot be replayed: such a
net is counted at its recorded stop and marked.

Per store and setting it prints the epochs trained summed over the nets (the stage's cost is about proportional: a
stacked step trains only the nets still running) and the best accuracy of each rate, next to the run's own.  The
rates a grid grew in the run are replayed too, as if the shorter rule had grown the same ones.

    python benchmarks/fractal_stop_replay.py results/default [--growth 0.25 0.1 0 --budget 1500 750]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from depthlab import storage  # noqa: E402
from depthlab.core.stopping import StopRule  # noqa: E402
from depthlab.studies import get_study  # noqa: E402
from depthlab.studies.fractals.accuracy import CHANCE  # noqa: E402


def replay(acc: np.ndarray, epochs: np.ndarray, rule: StopRule, budget: int, recorded: int) -> tuple[int, float, bool]:
    """One net's curve ``acc`` [checks] (NaN after its stop) at check epochs ``epochs``: (the epoch the rule stops it,
    the best accuracy up to there, whether that stop is known: False when the record ended first)."""
    state = rule.start(1)
    best = -np.inf
    for a, e in zip(acc, epochs):
        if e > budget:
            return budget, best, True
        if not np.isfinite(a):  # the record ends: the run's own rule stopped it here
            return recorded, best, recorded >= budget
        best = max(best, float(a))
        if rule.update(state, np.array([0]), np.array([1.0 - a]), np.array([False]), int(e))[0]:
            return int(e), best, True
    return min(recorded, budget), best, True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="a finished run's results folder (its fractals/ stores are read)")
    ap.add_argument("--growth", type=float, nargs="+", default=[0.25, 0.15, 0.1, 0.05, 0.0])
    ap.add_argument("--budget", type=int, nargs="+", default=None, help="epoch budgets (default: the run's)")
    args = ap.parse_args(argv)
    study = get_study("fractals")
    stores = sorted(
        p
        for p in (Path(args.results) / "fractals").rglob("*.zarr")
        if p.name != "data.zarr" and "realdata" not in p.parts
    )
    totals: dict[tuple[float, int], list[float]] = {}
    for path in stores:
        rec = storage.read_record(path)
        if rec.get("stage") != "train":
            continue
        try:
            spec = study.spec_from_dict(rec["spec"])
        except Exception as e:  # a store of older code (e.g. before plateau_growth): its settings are not today's
            print(f"{path.relative_to(args.results)}: skipped, its spec is not this code's ({e})")
            continue
        t = spec.training
        ds = storage.read_store(path)
        acc, ep = ds.accuracy.values, ds.check_epoch.values
        run_epochs = float(ds.stopped_epoch.values.sum())
        run_best = np.nanmax(np.where(np.isfinite(acc), acc, np.nan), axis=-1)  # [lr, seed]
        print(
            f"{path.relative_to(args.results)}: {acc.shape[0]} rates x {acc.shape[1]} seeds, {run_epochs:.0f} epochs "
            f"in the run; best accuracy per rate {', '.join(f'{v:.4f}' for v in np.nanmean(run_best, 1))}"
        )
        for budget in args.budget or [t.max_epochs]:
            for g in args.growth:
                rule = StopRule(
                    patience=t.patience,
                    rel_tol=0.0,
                    abs_tol=t.abs_tol,
                    monitor="eval_error",
                    grow=g,
                    onset=None if t.onset_checks is None else 1.0 - CHANCE - t.onset_margin,
                    onset_patience=t.onset_checks,
                )
                stops, bests, unknown = [], [], 0
                for i in range(acc.shape[0]):
                    row = []
                    for s in range(acc.shape[1]):
                        e, b, known = replay(acc[i, s], ep, rule, budget, int(ds.stopped_epoch.values[i, s]))
                        stops.append(e)
                        row.append(b)
                        unknown += not known
                    bests.append(np.mean(row))
                total = float(np.sum(stops))
                acc_t = totals.setdefault((g, budget), [0.0, 0.0, 0.0])
                acc_t[0] += total
                acc_t[1] += run_epochs
                k = int(np.nanargmax(bests))
                loss = float(np.nanmax(np.nanmean(run_best, 1)) - bests[k])
                acc_t[2] = max(acc_t[2], loss)
                print(
                    f"  growth {g:<5g} budget {budget:<5d}: {total:7.0f} epochs ({total / run_epochs:5.2f} of the run's), "
                    f"best rate {ds.lr.values[k]:g} at {bests[k]:.4f} ({loss:+.4f} below the run's best)"
                    + (f"; {unknown} net(s) would run past the record" if unknown else "")
                )
    print("\nall fractal nets:")
    for (g, budget), (tot, run, worst) in sorted(totals.items(), key=lambda kv: (-kv[0][1], -kv[0][0])):
        print(
            f"  growth {g:<5g} budget {budget:<5d}: {tot / run:5.2f} of the run's epochs; the largest drop of a store's "
            f"best accuracy {worst:.4f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
