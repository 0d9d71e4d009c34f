"""Arora, Cohen & Hazan's claims (SPEC §5), checked against the iterations table (every method and depth at its own best
rate: the fewest mean iterations to the target loss, no seed diverged; depthlab/studies/acceleration/figures.py).

Criteria (fixed here, printed in the report), per data set (and start, for the nets):

* A1 (p = 4): every depth >= 2 reaches the target in fewer iterations than depth-1 gradient descent.
* A2 (p = 2): the gain is small or absent: no depth >= 2 is more than ``small_gain`` times faster than depth 1.
* A3, per depth >= 2 (balanced start, as the rule assumes): the end-to-end rule (a) tracks the net, the relative
  distance |w_e - w| / |w| staying <= ``tracking`` until the net reaches the target, at the net's best rate (the
  largest rate that does track is printed beside), and (b) accelerates the same, its iterations to the target within
  a factor ``same_speed`` of the net's at that rate.
* A4 (p = 4): the fastest depth >= 2 beats AdaGrad and AdaDelta, each at its own best rate (Adam and momentum are
  printed beside, not judged: the paper's claim names AdaGrad and AdaDelta).
A depth or method that never reaches the target within the budget counts as infinitely slow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.claims import Verdict

from .figures import best_rates

if TYPE_CHECKING:
    from .specs import ClaimsSpec

NOTES = ["Criteria: see the docstring of `depthlab/studies/acceleration/claims.py`.",
         "Depth N counts the factors of w_e = W_N ... W_1 (N = 1: the plain linear model)."]


def _it(v: float) -> str:
    return f"{int(v)}" if np.isfinite(v) else "never"


def _speed(b: pd.DataFrame) -> str:
    return ", ".join(f"depth {int(r.depth)}: {_it(r.iterations)} (lr {r.lr:.3g})" for r in b.sort_values("depth").itertuples())


def depth_claims(best: pd.DataFrame, small_gain: float) -> list[Verdict]:
    out = []
    nets = best[best.method == "gd"]
    for (d, p, init), g in nets.groupby(["dataset", "p", "init"]):
        one = g[g.depth == 1].iterations
        if one.empty or len(g) < 2:
            continue
        base = float(one.iloc[0]) if np.isfinite(one.iloc[0]) else np.inf
        deep = g[g.depth > 1]
        iters = deep.iterations.fillna(np.inf)
        subject = f"{d}, {init} start"
        if p == 4:
            out.append(Verdict("A1", "l_4 regression: every depth >= 2 reaches the target in fewer iterations than depth 1",
                               "iterations", subject, bool((iters < base).all()), f"iterations to the target: {_speed(g)}"))
        if p == 2:
            gain = base / iters.min() if np.isfinite(iters.min()) and iters.min() > 0 else (np.inf if np.isfinite(base) else np.nan)
            holds = bool(gain <= small_gain) if np.isfinite(gain) or np.isinf(gain) else None
            out.append(Verdict("A2", f"l_2 regression: the gain from depth is small or absent (<= x{small_gain:g})", "iterations",
                               subject, holds, f"iterations to the target: {_speed(g)}; best depth >= 2 is x{gain:.2f} faster than depth 1"))
    return out


def rule_claims(table: pd.DataFrame, best: pd.DataFrame, tracking: float, same_speed: float) -> list[Verdict]:
    out = []
    nets = table[(table.method == "gd") & (table.init == "balanced") & (table.depth > 1)]
    for (d, p, N), g in nets.groupby(["dataset", "p", "depth"]):
        b = best[(best.dataset == d) & (best.p == p) & (best.init == "balanced") & (best.depth == N) & (best.method == "gd")]
        subject = f"{d}, l_{p}, depth {N}"
        if b.empty or not np.isfinite(b.lr.iloc[0]):
            out.append(Verdict("A3", "the end-to-end rule tracks the depth-N net", "distance", subject, None,
                               "the net never reaches the target: no best rate"))
            continue
        at = g[np.isclose(g.lr, b.lr.iloc[0])]
        dist = float(at.max_distance.max())
        per_rate = g.groupby("lr").agg(dist=("max_distance", "max"), reached=("to_target", "min"))
        tracks = per_rate[(per_rate.dist <= tracking) & (per_rate.reached >= 0)]
        largest = f"{tracks.index.max():.3g}" if len(tracks) else "none that reaches the target"
        out.append(Verdict("A3", f"the end-to-end rule tracks the depth-N net (distance <= {tracking:g} while the loss falls)", "distance",
                           subject, bool(dist <= tracking),
                           f"at the net's best rate {b.lr.iloc[0]:.3g}: max |w_e - w| / |w| before the target {dist:.3g}; the largest "
                           f"rate that tracks within {tracking:g} and reaches the target: {largest}"))
        net_it = at.to_target.where(at.to_target >= 0, np.inf).mean()
        rule_it = at.rule_to_target.where(at.rule_to_target >= 0, np.inf).mean()
        ratio = rule_it / net_it if np.isfinite(net_it) and np.isfinite(rule_it) else np.inf
        out.append(Verdict("A3", f"the end-to-end rule accelerates as the net does (iterations within x{same_speed:g})", "iterations",
                           subject, bool(1 / same_speed <= ratio <= same_speed),
                           f"at lr {b.lr.iloc[0]:.3g}: net {net_it:.1f}, rule {rule_it:.1f} iterations to the target (ratio {ratio:.3f})"))
    return out


def baseline_claims(best: pd.DataFrame) -> list[Verdict]:
    out = []
    for (d, p), g in best[best.p == 4].groupby(["dataset", "p"]):
        deep = g[(g.method == "gd") & (g.depth > 1) & (g.init == "balanced")]
        if deep.empty:
            continue
        fastest = deep.iterations.fillna(np.inf).min()
        rows = {m: g[g.method == m] for m in ("adagrad", "adadelta", "adam", "momentum")}
        judged = {m: float(r.iterations.fillna(np.inf).iloc[0]) for m, r in rows.items() if len(r) and m in ("adagrad", "adadelta")}
        if not judged:
            continue
        ev = (f"fastest depth >= 2 (balanced): {_it(fastest)} iterations; " + ", ".join(
            f"{m}: {_it(float(r.iterations.fillna(np.inf).iloc[0]))} (lr {float(r.lr.iloc[0]):.3g})" for m, r in rows.items() if len(r)))
        out.append(Verdict("A4", "l_4 regression: depth beats AdaGrad and AdaDelta at their best rates", "iterations", d,
                           bool(all(fastest < v for v in judged.values())), ev))
    return out


def check(spec: "ClaimsSpec", tables: dict[str, pd.DataFrame]) -> tuple[list[Verdict], list[str]]:
    table = tables["iterations"]
    best = best_rates(table)
    verdicts = depth_claims(best, spec.small_gain) + rule_claims(table, best, spec.tracking, spec.same_speed) + baseline_claims(best)
    return verdicts, [spec.scale_note, *NOTES]
