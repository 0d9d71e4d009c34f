"""Stage ``figure``: tidy tables from the acceleration stores, and their plots.

Every method and depth is compared at its own best rate per target: the one with the fewest mean iterations to that
target over seeds (a seed that never reaches it counts as never), no seed diverged (:func:`best_rates`).  Beside it, the
gradient-flow criterion of A3 per rate (:func:`flow_difference`): how far the rate's curve of excess loss against flow
time eta t lies from the next smaller rate's."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.core.edges import choose
from depthlab.study import StoreInput

from . import plots

if TYPE_CHECKING:
    from .specs import FigureSpec

GROUP = ["dataset", "p", "init", "depth", "method"]


def seed_mean(a: np.ndarray, axis: int = 0) -> np.ndarray:
    """The mean over seeds of the finite values (NaN where none is: a step after every seed stopped), without numpy's
    empty-slice warning."""
    ok = np.isfinite(a)
    n = ok.sum(axis)
    return np.where(n > 0, np.where(ok, a, 0.0).sum(axis) / np.maximum(n, 1), np.nan)


def flow_difference(ds, i: int) -> float:
    """max over flow time of |e_i - e_{i-1}| / e_{i-1}: rate i's mean excess loss e_i(eta_i t) = mean_seeds L - L* against
    the next smaller rate's, interpolated (log-linearly) at rate i's flow times, over the flow time both runs recorded
    (until either stopped or diverged, and while rate i's excess is above 1e-12 of its start).  NaN for the smallest rate,
    a rate where a seed diverged, or fewer than three common points."""
    if i == 0:
        return float("nan")
    lrs, steps = ds.lr.values, ds.step.values.astype(np.float64)
    opt = float(ds.attrs["optimum_loss"])
    curves = []
    for j in (i, i - 1):
        if (ds.diverged_at.values[j] >= 0).any():
            return float("nan")
        e = seed_mean(ds.loss.values[j]) - opt  # [step]; NaN after the batch stopped
        ok = np.isfinite(e) & (e > 0)
        curves.append((lrs[j] * steps[ok], e[ok]))
    (ta, ea), (tb, eb) = curves
    if len(ta) < 3 or len(tb) < 3:
        return float("nan")
    keep = (ta > 0) & (ta <= tb.max()) & (ea > 1e-12 * ea[0])
    if keep.sum() < 3:
        return float("nan")
    eb_at = np.exp(np.interp(ta[keep], tb, np.log(eb)))
    return float(np.max(np.abs(ea[keep] - eb_at) / eb_at))


FALLEN = 0.5  # A3's distance is measured once the excess loss has fallen by this fraction of its start


def _fallen(loss: np.ndarray, optimum: float) -> np.ndarray:
    """The recorded steps at which the excess loss L - L* has fallen by FALLEN of its start (after the escape from the
    near-zero start, where a relative distance measures a timing lag of a tiny w, not a different trajectory)."""
    e = loss - optimum
    return np.isfinite(e) & (e <= (1 - FALLEN) * e[0]) if len(e) and np.isfinite(e[0]) else np.zeros(len(e), bool)


def iterations_table(inputs: list[StoreInput]) -> pd.DataFrame:
    """One row per (dataset, p, start, depth, method, lr, seed, target fraction): iterations to that target (-1: not
    reached before the batch stopped at ``stopped_at``), divergence; for the nets the end-to-end rule's iterations, the
    largest net-rule distance before the net reached the target (or stopped), the same once its excess loss had fallen by
    FALLEN of its start (``late_distance``: A3's), and the rate's flow difference."""
    rows = []
    for inp in sorted(inputs, key=lambda i: (i.stage, *i.job.values().values())):
        ds, a = inp.data, inp.data.attrs
        net = inp.stage == "train"
        fracs = ds.fraction.values
        for i, lr in enumerate(ds.lr.values):
            flow = flow_difference(ds, i) if net else np.nan
            for s, sd in enumerate(ds.seed.values):
                final = ds.loss.values[i, s]
                final = final[np.isfinite(final)]
                for k, f in enumerate(fracs):
                    it = int(ds.to_target.values[i, s, k])
                    row = {
                        "dataset": a["dataset"],
                        "p": int(a["p"]),
                        "init": a["init"] if net else "balanced",
                        "depth": int(a["depth"]) if net else 1,
                        "method": "gd" if net else a["method"],
                        "lr": float(lr),
                        "seed": int(sd),
                        "fraction": float(f),
                        "to_target": it,
                        "stopped_at": int(a["stopped_at"]),
                        "diverged": bool(ds.diverged_at.values[i, s] >= 0),
                        "final_loss": float(final[-1]) if len(final) else np.nan,
                        "optimum_loss": float(a["optimum_loss"]),
                        "target_loss": float(ds.target_loss.values[k]),
                    }
                    if net:
                        upto = np.searchsorted(ds.step.values, it if it >= 0 else ds.step.values[-1], side="right")
                        dist = ds.distance.values[i, s, :upto]
                        late = dist[_fallen(ds.loss.values[i, s, :upto], float(a["optimum_loss"]))]
                        row.update(
                            rule_to_target=int(ds.rule_to_target.values[i, s, k]),
                            max_distance=float(np.nanmax(dist)) if np.isfinite(dist).any() else np.nan,
                            late_distance=float(np.nanmax(late)) if np.isfinite(late).any() else np.nan,
                            flow_difference=flow,
                        )
                    rows.append(row)
    return pd.DataFrame(rows)


def best_rates(table: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, p, start, depth, method, target fraction): the rate with the fewest mean iterations to the target (a
    seed that never reaches it counts as never; a rate where any seed diverged is out), its iterations (NaN where no rate
    reaches it), where that rate lies in the grid (``lr_edge``: a larger rate that diverged makes the largest stable one no
    edge), and ``reached_below``: where nothing reached it, the iterations every run went on without reaching it (a lower
    bound on the iterations it needs)."""
    t = table.assign(iters=np.where(table.to_target >= 0, table.to_target, np.inf))
    per = (
        t.groupby(GROUP + ["fraction", "lr"])
        .agg(iters=("iters", "mean"), diverged=("diverged", "any"), stopped=("stopped_at", "max"))
        .reset_index()
    )
    out = []
    for key, g in per.groupby(GROUP + ["fraction"]):
        g = g.sort_values("lr")
        c = choose(g.lr.values, g.iters.where(np.isfinite(g.iters), np.nan).values, g.diverged.values)
        row = {
            **dict(zip(GROUP + ["fraction"], key)),
            "lr": np.nan,
            "iterations": np.nan,
            "lr_edge": "",
            "reached_below": float(g.stopped.max()),
        }
        if c.index >= 0:
            row.update(
                lr=float(g.lr.iloc[c.index]),
                iterations=float(g.iters.iloc[c.index]),
                lr_edge=c.edge,
                reached_below=np.nan,
            )
        out.append(row)
    return pd.DataFrame(out)


def flow_rates(table: pd.DataFrame, tol: float) -> pd.DataFrame:
    """Per net (dataset, p, start, depth >= 2): the largest rate in the gradient-flow regime (its flow difference below
    ``tol``), NaN if none."""
    nets = table[(table.method == "gd") & (table.depth > 1)]
    per = nets.groupby(["dataset", "p", "init", "depth", "lr"]).flow_difference.first().reset_index()
    out = []
    for key, g in per.groupby(["dataset", "p", "init", "depth"]):
        ok = g[g.flow_difference < tol]
        out.append(
            {**dict(zip(["dataset", "p", "init", "depth"], key)), "flow_lr": float(ok.lr.max()) if len(ok) else np.nan}
        )
    return pd.DataFrame(out)


def curves_table(inputs: list[StoreInput], best: pd.DataFrame, flow: pd.DataFrame) -> pd.DataFrame:
    """The nets' (and their rules') loss and distance along the run (seed mean), by step: at each depth's best rate for the
    tightest target it reaches (``which`` = best) and at its flow rate (``which`` = flow, depths >= 2)."""
    rows = []
    for inp in inputs:
        if inp.stage != "train":
            continue
        ds, a = inp.data, inp.data.attrs
        key = (
            (best.dataset == a["dataset"])
            & (best.p == a["p"])
            & (best.init == a["init"])
            & (best.depth == a["depth"])
            & (best.method == "gd")
        )
        b = best[key & np.isfinite(best.lr)].sort_values("fraction")
        chosen = [("best", float(b.lr.iloc[0]))] if len(b) else []
        f = flow[
            (flow.dataset == a["dataset"]) & (flow.p == a["p"]) & (flow.init == a["init"]) & (flow.depth == a["depth"])
        ]
        if len(f) and np.isfinite(f.flow_lr.iloc[0]):
            chosen.append(("flow", float(f.flow_lr.iloc[0])))
        for which, lr in chosen:
            i = int(np.argmin(np.abs(ds.lr.values - lr)))
            for k, step in enumerate(ds.step.values):
                loss = ds.loss.values[i, :, k]
                if not np.isfinite(loss).any():
                    continue
                rows.append(
                    {
                        "dataset": a["dataset"],
                        "p": int(a["p"]),
                        "init": a["init"],
                        "depth": int(a["depth"]),
                        "which": which,
                        "lr": float(ds.lr.values[i]),
                        "step": int(step),
                        "loss": float(seed_mean(loss)),
                        "rule_loss": float(seed_mean(ds.rule_loss.values[i, :, k])),
                        "distance": float(seed_mean(ds.distance.values[i, :, k])),
                        "optimum_loss": float(a["optimum_loss"]),
                        "target_loss": float(ds.target_loss.values[-1]),
                    }
                )
    return pd.DataFrame(rows)


def make_table(spec: "FigureSpec", inputs: list[StoreInput]) -> pd.DataFrame:
    """The figure's table from its input stores (what the CSV holds; the audit re-derives it with this)."""
    table = iterations_table(inputs)
    if spec.job.figure == "iterations":
        return table
    return curves_table(inputs, best_rates(table), flow_rates(table, spec.flow_tolerance))


def draw(spec: "FigureSpec", tab: pd.DataFrame):
    name = spec.job.figure
    if name == "iterations":
        return plots.iterations_figure(tab, best_rates(tab))
    if name == "loss_curves":
        return plots.loss_figure(tab)
    return plots.distance_figure(tab)


def make_figure(spec: "FigureSpec", inputs: list[StoreInput]):
    tab = make_table(spec, inputs)
    return draw(spec, tab), tab
