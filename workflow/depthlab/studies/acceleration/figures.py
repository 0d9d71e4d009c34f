"""Stage ``figure``: tidy tables from the acceleration stores, and their plots.

Every method and depth is compared at its own best rate: the one with the fewest iterations to the target loss (mean
over seeds; a seed that never reaches it counts as never), diverged runs excluded (:func:`best_rates`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.study import StoreInput

from . import plots

if TYPE_CHECKING:
    from .specs import FigureSpec

GROUP = ["dataset", "p", "init", "depth", "method"]


def iterations_table(inputs: list[StoreInput]) -> pd.DataFrame:
    """One row per (dataset, p, start, depth, method, lr, seed): iterations to the target (-1: not reached), divergence,
    and for the nets the end-to-end rule's iterations and the largest net-rule distance before the net reached the target."""
    rows = []
    for inp in sorted(inputs, key=lambda i: (i.stage, *i.job.values().values())):
        ds, a = inp.data, inp.data.attrs
        net = inp.stage == "train"
        for i, lr in enumerate(ds.lr.values):
            for s, sd in enumerate(ds.seed.values):
                it = int(ds.to_target.values[i, s])
                row = {"dataset": a["dataset"], "p": int(a["p"]), "init": a["init"] if net else "balanced",
                       "depth": int(a["depth"]) if net else 1, "method": "gd" if net else a["method"], "lr": float(lr), "seed": int(sd),
                       "to_target": it, "diverged": bool(ds.diverged_at.values[i, s] >= 0),
                       "final_loss": float(ds.loss.values[i, s, -1]), "optimum_loss": float(a["optimum_loss"]),
                       "target_loss": float(a["target_loss"])}
                if net:
                    upto = np.searchsorted(ds.step.values, it if it >= 0 else ds.step.values[-1], side="right")
                    dist = ds.distance.values[i, s, :upto]
                    row.update(rule_to_target=int(ds.rule_to_target.values[i, s]),
                               max_distance=float(np.nanmax(dist)) if np.isfinite(dist).any() else np.nan)
                rows.append(row)
    return pd.DataFrame(rows)


def best_rates(table: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, p, start, depth, method): the rate with the fewest mean iterations to the target (a seed that
    never reaches it counts as never; a rate where any seed diverged is out); NaN iterations where no rate reaches it."""
    t = table.assign(iters=np.where(table.to_target >= 0, table.to_target, np.inf))
    per = t.groupby(GROUP + ["lr"]).agg(iters=("iters", "mean"), diverged=("diverged", "any")).reset_index()
    per = per[~per.diverged]
    out = []
    for key, g in per.groupby(GROUP):
        g = g.sort_values(["iters", "lr"])
        r = g.iloc[0]
        out.append({**dict(zip(GROUP, key)), "lr": float(r.lr) if np.isfinite(r.iters) else np.nan,
                    "iterations": float(r.iters) if np.isfinite(r.iters) else np.nan})
    return pd.DataFrame(out)


def curves_table(inputs: list[StoreInput], best: pd.DataFrame) -> pd.DataFrame:
    """The nets' (and their rules') loss and distance along the run at each depth's best rate (seed-mean), by step."""
    rows = []
    for inp in inputs:
        if inp.stage != "train":
            continue
        ds, a = inp.data, inp.data.attrs
        b = best[(best.dataset == a["dataset"]) & (best.p == a["p"]) & (best.init == a["init"]) & (best.depth == a["depth"])
                 & (best.method == "gd")]
        if b.empty or not np.isfinite(b.lr.iloc[0]):
            continue
        i = int(np.argmin(np.abs(ds.lr.values - b.lr.iloc[0])))
        for k, step in enumerate(ds.step.values):
            rows.append({"dataset": a["dataset"], "p": int(a["p"]), "init": a["init"], "depth": int(a["depth"]),
                         "lr": float(ds.lr.values[i]), "step": int(step), "loss": float(np.nanmean(ds.loss.values[i, :, k])),
                         "rule_loss": float(np.nanmean(ds.rule_loss.values[i, :, k])),
                         "distance": float(np.nanmean(ds.distance.values[i, :, k])),
                         "optimum_loss": float(a["optimum_loss"]), "target_loss": float(a["target_loss"])})
    return pd.DataFrame(rows)


def make_table(spec: "FigureSpec", inputs: list[StoreInput]) -> pd.DataFrame:
    """The figure's table from its input stores (what the CSV holds; the audit re-derives it with this)."""
    table = iterations_table(inputs)
    if spec.job.figure == "iterations":
        return table
    return curves_table(inputs, best_rates(table))


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
