"""Arora, Cohen & Hazan's claims (SPEC §5), checked against the iterations table: every method and depth at its own best
rate per target (the fewest mean iterations to it, no seed diverged; depthlab/studies/acceleration/figures.py).

Targets are L* + f (L(0) - L*) for every configured f.  A loose target measures the easy, well-conditioned phase (plain
gradient descent at p = 4 reaches f = 10^-2 on diabetes in a handful of iterations), so A1, A2 and A4 are judged at the
*tightest* target that every method they compare reaches within its budget; the iterations at the other targets are
printed beside.  Criteria (fixed here, printed in the report), per data set (and start, for the nets):

* A1 (p = 4): every depth >= 2 reaches the target in fewer iterations than depth 1 from the same kind of start (every
  start has the same |w_e(0)|).
* A2 (p = 2): the gain is small or absent: no depth >= 2 is more than ``small_gain`` times faster than depth 1.
* A3, per depth >= 2 (balanced start, as the rule assumes), judged where the rule is derived, in the gradient-flow
  regime: at the largest rate whose curve of excess loss against flow time (eta t) lies within ``flow_tolerance`` of the
  next smaller rate's (depthlab/studies/acceleration/figures.py: flow_difference), (a) the end-to-end rule tracks the
  net: |w_e - w| / |w| <= ``tracking`` until the net reaches the tightest target both reach there; (b) it accelerates the
  same: its iterations to that target within a factor ``same_speed`` of the net's.  The distance at the net's best rate
  is printed beside, not judged (the discrete step has left the flow there).
* A4 (p = 4): the fastest depth >= 2 (balanced start) beats AdaGrad and AdaDelta, each at its own best rate (Adam and
  momentum are printed beside, not judged: the paper's claim names AdaGrad and AdaDelta).

Inconclusive, with the reason: no target is reached by every method compared within the budget ("budget"); a best rate
sits at the edge of the rate grid (the grid does not grow here: widen log10_lr_range); for A3, no rate lies in the flow
regime, or the net and its rule reach no target there within the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.claims import Verdict, judge

from .figures import best_rates, flow_rates

if TYPE_CHECKING:
    from .specs import ClaimsSpec

NOTES = ["Criteria: see the docstring of `depthlab/studies/acceleration/claims.py`.",
         "Depth N counts the factors of w_e = W_N ... W_1 (N = 1: the plain linear model)."]


def _it(v: float, below: float = np.nan) -> str:
    return f"{int(v)}" if np.isfinite(v) else (f"not reached in {int(below)}" if np.isfinite(below) else "not reached")


def _name(r) -> str:
    return f"depth {int(r.depth)}" if r.method == "gd" else r.method


def _judged(rows: pd.DataFrame) -> tuple[float | None, str]:
    """The tightest target fraction that every method of ``rows`` (best-rate rows, several fractions) reaches, and the
    iterations per method and target for the evidence."""
    reached = [f for f, g in rows.groupby("fraction") if g.iterations.notna().all()]
    shown = "; ".join(f"f = {f:g}: " + ", ".join(f"{_name(r)} {_it(r.iterations, r.reached_below)} (lr {r.lr:.3g})"
                                                  for r in rows[rows.fraction == f].sort_values(["method", "depth"]).itertuples())
                      for f in sorted(rows.fraction.unique(), reverse=True))
    return (min(reached) if reached else None), shown


def _edges(rows: pd.DataFrame) -> str:
    at = rows[rows.lr_edge != ""]
    if not len(at):
        return ""
    return ("the best rate of " + ", ".join(f"{_name(r)} ({r.lr:.3g}, {r.lr_edge} end)" for r in at.itertuples())
            + " sits at the edge of the rate grid, which does not grow here")


def _budget(rows: pd.DataFrame) -> str:
    return ("budget: no target is reached by every method compared within its budget (the runs went on for "
            + ", ".join(f"{_name(r)} {int(r.reached_below)}" for r in rows[rows.iterations.isna()].drop_duplicates(["method", "depth"]).itertuples())
            + " iterations without reaching the tightest)")


def depth_claims(best: pd.DataFrame, small_gain: float) -> list[Verdict]:
    out = []
    nets = best[best.method == "gd"]
    for (d, p, init), g in nets.groupby(["dataset", "p", "init"]):
        if 1 not in set(g.depth) or g.depth.nunique() < 2:
            continue
        f, shown = _judged(g)
        subject = f"{d}, {init} start"
        if p == 4:
            statement = "l_4 regression: every depth >= 2 reaches the target in fewer iterations than depth 1"
            claim = "A1"
        elif p == 2:
            statement = f"l_2 regression: the gain from depth is small or absent (<= x{small_gain:g})"
            claim = "A2"
        else:
            continue
        if f is None:
            out.append(judge(claim, statement, "iterations", subject, None, f"iterations to the targets: {shown}", why_none=_budget(g)))
            continue
        at = g[g.fraction == f]
        base = float(at[at.depth == 1].iterations.iloc[0])
        deep = at[at.depth > 1].iterations
        if claim == "A1":
            holds = bool((deep < base).all())
            verdict = f"judged at f = {f:g}: depth 1 {int(base)}, depths >= 2 " + ", ".join(f"{int(v)}" for v in deep)
        else:
            gain = base / float(deep.min())
            holds = bool(gain <= small_gain)
            verdict = f"judged at f = {f:g}: the best depth >= 2 is x{gain:.2f} faster than depth 1"
        out.append(judge(claim, statement, "iterations", subject, holds, f"{verdict}; iterations to the targets: {shown}", [_edges(at)]))
    return out


def rule_claims(table: pd.DataFrame, best: pd.DataFrame, tracking: float, same_speed: float, tol: float) -> list[Verdict]:
    out = []
    flow = flow_rates(table, tol)
    nets = table[(table.method == "gd") & (table.init == "balanced") & (table.depth > 1)]
    for (d, p, N), g in nets.groupby(["dataset", "p", "depth"]):
        subject = f"{d}, l_{p}, depth {N}"
        f_row = flow[(flow.dataset == d) & (flow.p == p) & (flow.init == "balanced") & (flow.depth == N)]
        flow_lr = float(f_row.flow_lr.iloc[0]) if len(f_row) else np.nan
        b = best[(best.dataset == d) & (best.p == p) & (best.init == "balanced") & (best.depth == N) & (best.method == "gd")
                 & np.isfinite(best.lr)].sort_values("fraction")
        beside = ""
        if len(b):
            at_best = g[np.isclose(g.lr, b.lr.iloc[0]) & np.isclose(g.fraction, b.fraction.iloc[0])]
            beside = (f"; beside, not judged: at the best rate {b.lr.iloc[0]:.3g} (f = {b.fraction.iloc[0]:g}) the distance reaches "
                      f"{at_best.max_distance.max():.3g}")
        per_rate = g.groupby("lr").flow_difference.first()
        flows = ", ".join(f"{lr:.3g}: {v:.3g}" for lr, v in per_rate.items() if np.isfinite(v))
        statement_a = f"the end-to-end rule tracks the depth-N net in the flow regime (distance <= {tracking:g} while the loss falls)"
        statement_b = f"the end-to-end rule accelerates as the net does in the flow regime (iterations within x{same_speed:g})"
        if not np.isfinite(flow_lr):
            why = f"no rate lies in the gradient-flow regime (flow difference < {tol:g}; per rate: {flows or 'none computable'})"
            out += [judge("A3", s, fig, subject, None, "", why_none=why) for s, fig in ((statement_a, "distance"), (statement_b, "iterations"))]
            continue
        at = g[np.isclose(g.lr, flow_lr)]
        both = at.groupby("fraction").agg(net=("to_target", "min"), rule=("rule_to_target", "min"))
        both = both[(both.net >= 0) & (both.rule >= 0)]
        if both.empty:
            why = (f"budget: at the flow rate {flow_lr:.3g} neither the net nor its rule reaches a target before the batch stopped "
                   f"(iteration {int(at.stopped_at.max())})")
            out += [judge("A3", s, fig, subject, None, "", why_none=why) for s, fig in ((statement_a, "distance"), (statement_b, "iterations"))]
            continue
        f = float(both.index.min())
        rows = at[np.isclose(at.fraction, f)]
        dist = float(rows.max_distance.max())
        net_it = rows.to_target.where(rows.to_target >= 0, np.inf).mean()
        rule_it = rows.rule_to_target.where(rows.rule_to_target >= 0, np.inf).mean()
        ratio = rule_it / net_it if np.isfinite(net_it) and np.isfinite(rule_it) else np.nan
        where = (f"at the largest rate in the flow regime, {flow_lr:.3g} (its curve within {tol:g} of the next smaller rate's; per "
                 f"rate: {flows}), judged at f = {f:g}")
        out.append(judge("A3", statement_a, "distance", subject, bool(dist <= tracking),
                         f"{where}: max |w_e - w| / |w| before the target {dist:.3g}{beside}"))
        out.append(judge("A3", statement_b, "iterations", subject, bool(1 / same_speed <= ratio <= same_speed) if np.isfinite(ratio) else None,
                         f"{where}: net {net_it:.1f}, rule {rule_it:.1f} iterations (ratio {ratio:.3f})",
                         why_none="a seed of the net or its rule did not reach the target"))
    return out


def baseline_claims(best: pd.DataFrame) -> list[Verdict]:
    out = []
    for (d, p), g in best[best.p == 4].groupby(["dataset", "p"]):
        deep = g[(g.method == "gd") & (g.depth > 1) & (g.init == "balanced")]
        judged = g[g.method.isin(["adagrad", "adadelta"])]
        if deep.empty or judged.empty:
            continue
        compared = pd.concat([deep, judged])
        f, shown = _judged(compared)
        _, beside = _judged(g[g.method.isin(["adam", "momentum"])]) if g.method.isin(["adam", "momentum"]).any() else (None, "")
        statement = "l_4 regression: depth beats AdaGrad and AdaDelta at their best rates"
        ev = f"iterations to the targets: {shown}" + (f"; beside, not judged: {beside}" if beside else "")
        if f is None:
            out.append(judge("A4", statement, "iterations", d, None, ev, why_none=_budget(compared)))
            continue
        at = compared[compared.fraction == f]
        fastest = float(at[at.method == "gd"].iterations.min())
        others = at[at.method != "gd"]
        holds = bool((fastest < others.iterations).all())
        out.append(judge("A4", statement, "iterations", d, holds,
                         f"judged at f = {f:g}: fastest depth >= 2 (balanced) {int(fastest)}, " + ", ".join(
                             f"{r.method} {int(r.iterations)}" for r in others.itertuples()) + f"; {ev}", [_edges(at)]))
    return out


def check(spec: "ClaimsSpec", tables: dict[str, pd.DataFrame]) -> tuple[list[Verdict], list[str]]:
    table = tables["iterations"]
    best = best_rates(table)
    verdicts = (depth_claims(best, spec.small_gain) + rule_claims(table, best, spec.tracking, spec.same_speed, spec.flow_tolerance)
                + baseline_claims(best))
    return verdicts, [spec.scale_note, *NOTES]
