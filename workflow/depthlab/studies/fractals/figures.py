"""Stage ``figure``: tidy tables from the fractal stores, and their plots."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.core import stats
from depthlab.study import StoreInput

from . import plots

if TYPE_CHECKING:
    from .specs import FigureSpec


def _stores(inputs: list[StoreInput]) -> list:
    return [i.data for i in sorted(inputs, key=lambda i: tuple(i.job.values().values()))]


WINDOW = 10  # the checks of a run's last window, whose check-to-check fluctuation is one net's own noise


def last_window_noise(acc: np.ndarray, checks: int = WINDOW) -> float:
    """The check-to-check fluctuation of a net's test accuracy over its last ``checks`` finite checks
    (:func:`depthlab.core.stats.window_noise`): with one seed, the part of its error bar that a slightly earlier or later
    stop would have moved its number by."""
    a = np.asarray(acc, dtype=float)
    return stats.window_noise(a[np.isfinite(a)][-checks:])


def accuracy_table(inputs: list[StoreInput]) -> pd.DataFrame:
    """One row per (fractal, n, pdeg, depth, width, lr, seed): best and final test accuracy, P(j) of the distribution,
    and the check-to-check noise of its last window (``window_noise``)."""
    rows = []
    for ds in _stores(inputs):
        a = ds.attrs
        curve = {f"P{j}": float(v) for j, v in zip(ds.j.values, ds.curve.values)}
        for i, lr in enumerate(ds.lr.values):
            for s, sd in enumerate(ds.seed.values):
                rows.append(
                    {
                        "fractal": a["fractal"],
                        "n": int(a["n"]),
                        "pdeg": int(a["pdeg"]),
                        "depth": int(a["depth"]),
                        "width": int(a["width"]),
                        "n_params": int(a["n_params"]),
                        "lr": float(lr),
                        "seed": int(sd),
                        "best_accuracy": float(ds.best_accuracy.values[i, s]),
                        "final_accuracy": float(ds.final_accuracy.values[i, s]),
                        "train_accuracy": float(ds.train_accuracy.values[i, s]),
                        "window_noise": last_window_noise(ds.accuracy.values[i, s]),
                        **_soundness(ds, i, s),
                        **curve,
                    }
                )
    return pd.DataFrame(rows)


def _soundness(ds, i: int, s: int) -> dict:
    """What a row's verdicts rest on, from its store: how the net stopped, and whether its rate is the store's choice and
    where that choice lies in the grid (read, never recomputed)."""
    return {
        "converged": bool(ds.converged.values[i, s]),
        "diverged": bool(ds.diverged.values[i, s]),
        "stop_reason": str(ds.stop_reason.values[i, s]),
        "stopped_epoch": int(ds.stopped_epoch.values[i, s]),
        "chosen": bool(np.isclose(ds.lr.values[i], float(ds.best_lr))),
        "lr_edge": str(ds.lr_edge.values),
        "lr_flagged": bool(ds.lr_flagged),
    }


def samples_table(inputs: list[StoreInput], points: int) -> pd.DataFrame:
    rows = []
    for ds in _stores(inputs):
        x = ds.x_train.values[:points]
        y = ds.y_train.values[:points]
        a = ds.attrs
        for i in range(len(y)):
            rows.append(
                {
                    "fractal": a["fractal"],
                    "n": int(a["n"]),
                    "pdeg": int(a["pdeg"]),
                    "x1": float(x[i, 0]),
                    "x2": float(x[i, 1]) if x.shape[1] > 1 else np.nan,
                    "label": int(y[i]),
                    "P_analytic": ";".join(f"{v:.4f}" for v in ds.curve.values),
                    "P_empirical": ";".join(f"{v:.4f}" for v in ds.curve_empirical.values),
                }
            )
    return pd.DataFrame(rows)


def runs_table(inputs: list[StoreInput], steps_per_epoch: int) -> pd.DataFrame:
    """One row per (net, lr, seed, check): the test accuracy along the run, at its Adam step."""
    rows = []
    for ds in _stores(inputs):
        a = ds.attrs
        for i, lr in enumerate(ds.lr.values):
            for s, sd in enumerate(ds.seed.values):
                for c, ep in enumerate(ds.check_epoch.values):
                    rows.append(
                        {
                            "fractal": a["fractal"],
                            "n": int(a["n"]),
                            "pdeg": int(a["pdeg"]),
                            "depth": int(a["depth"]),
                            "width": int(a["width"]),
                            "lr": float(lr),
                            "seed": int(sd),
                            "epoch": int(ep),
                            "step": int(ep) * steps_per_epoch,
                            "accuracy": float(ds.accuracy.values[i, s, c]),
                        }
                    )
    return pd.DataFrame(rows)


def cnn_table(inputs: list[StoreInput]) -> pd.DataFrame:
    """One row per (depth, width, lr, seed) of the Fig. 7 CNNs: the best test accuracy along the run."""
    rows = []
    for ds in _stores(inputs):
        a = ds.attrs
        for i, lr in enumerate(ds.lr.values):
            for s, sd in enumerate(ds.seed.values):
                rows.append(
                    {
                        "dataset": a["dataset"],
                        "depth": int(a["depth"]),
                        "width": int(a["width"]),
                        "n_params": int(a["n_params"]),
                        "lr": float(lr),
                        "seed": int(sd),
                        "best_accuracy": float(ds.best_accuracy.values[i, s]),
                        **_soundness(ds, i, s),
                    }
                )
    return pd.DataFrame(rows)


def make_table(spec: "FigureSpec", inputs: list[StoreInput]) -> pd.DataFrame:
    """The figure's table from its input stores (what the CSV holds; the audit re-derives it with this)."""
    name = spec.job.figure
    if name == "samples":
        return samples_table(inputs, spec.points)
    if name == "training_curves":
        return runs_table(inputs, spec.steps_per_epoch)
    if name == "fig7":
        return cnn_table(inputs)
    return accuracy_table(inputs)


def draw(spec: "FigureSpec", tab: pd.DataFrame):
    name = spec.job.figure
    if name == "samples":
        return plots.samples_figure(tab)
    if name == "training_curves":
        return plots.runs_figure(tab)
    if name == "fig7":
        return plots.realdata_figure(
            tab, f"Malach & Shalev-Shwartz Fig. 7: CNNs on real images ({tab.dataset.iloc[0]})"
        )
    if name == "fig4":
        return plots.width_figure(tab, by_params=True, title="Malach & Shalev-Shwartz Fig. 4: coarse 2-D Cantor set")
    if name == "fig6":
        return plots.width_figure(tab, by_params=False, title="Malach & Shalev-Shwartz Fig. 6: fine Vicsek set")
    if name == "fig5":
        return plots.curves_figure(tab)
    return plots.tables_figure(tab)


def make_figure(spec: "FigureSpec", inputs: list[StoreInput]):
    tab = make_table(spec, inputs)
    return draw(spec, tab), tab
