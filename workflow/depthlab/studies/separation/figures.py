"""Stage ``figure``: tidy tables from the sawtooth and radial stores, and their plots."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.core.shapes import n_params
from depthlab.study import StoreInput

from . import plots

if TYPE_CHECKING:
    from .specs import FigureSpec


def _by_job(inputs: list[StoreInput], stage: str) -> list[StoreInput]:
    return sorted((i for i in inputs if i.stage == stage), key=lambda i: tuple(i.job.values().values()))


def sawtooth_table(inputs: list[StoreInput]) -> pd.DataFrame:
    """One row per (level, arch, lr, seed) of the trained nets, and one per level for the hand-built net."""
    rows = []
    con = _by_job(inputs, "construction")[0].data
    for i, L in enumerate(con.level.values):
        rows.append({"level": int(L), "arch": "construction", "kind": "construction", "depth": int(L), "width": 2,
                     "n_params": n_params(1, 2, int(L)), "lr": np.nan, "seed": -1, "test_mse": float(con.max_abs_error.values[i]) ** 2,
                     "max_abs_error": float(con.max_abs_error.values[i]), "train_loss": np.nan, "pieces": int(con.pieces.values[i]),
                     "best": True, "mse_bound": 0.0, "crossing_bound": 0.0, "window_bound": 0.0, "diverged": False})
    for inp in _by_job(inputs, "sawtooth"):
        ds, arch = inp.data, inp.job.arch
        best = int(ds.best)
        S = ds.sizes["seed"]
        for i, lr in enumerate(ds.lr.values):
            for j, sd in enumerate(ds.seed.values):
                rows.append({"level": int(ds.level), "arch": arch, "kind": ds.attrs["kind"], "depth": int(ds.attrs["depth"]),
                             "width": int(ds.attrs["width"]), "n_params": int(ds.attrs["n_params"]), "lr": float(lr), "seed": int(sd),
                             "test_mse": float(ds.test_mse.values[i, j]), "max_abs_error": np.nan,
                             "train_loss": float(ds.train_loss.values[i, j]), "pieces": int(ds.pieces.values[i, j]),
                             "best": i * S + j == best, "mse_bound": float(ds.mse_bound), "crossing_bound": float(ds.crossing_bound),
                             "window_bound": float(ds.window_bound), "diverged": bool(ds.diverged.values[i, j])})
    return pd.DataFrame(rows)


def functions_table(inputs: list[StoreInput], levels: list[int]) -> pd.DataFrame:
    """Curves on [0, 1] for a few levels: the target, the hand-built net, and the best trained net of each arch."""
    con = _by_job(inputs, "construction")[0].data
    x = con.x_plot.values
    rows = []
    for L in levels:
        i = int(np.flatnonzero(con.level.values == L)[0])
        rows += [{"level": L, "curve": "target", "x": xv, "y": yv} for xv, yv in zip(x, con.target.values[i])]
        for inp in _by_job(inputs, "sawtooth"):
            if inp.job.level == L:
                pred = inp.data.prediction.values.reshape(-1, len(x))[int(inp.data.best)]
                rows += [{"level": L, "curve": inp.job.arch, "x": xv, "y": yv} for xv, yv in zip(x, pred)]
    return pd.DataFrame(rows)


def radial_table(inputs: list[StoreInput]) -> pd.DataFrame:
    rows = []
    for inp in _by_job(inputs, "radial"):
        ds, job = inp.data, inp.job
        for j, sd in enumerate(ds.seed.values):
            rows.append({"target": job.target, "dist": job.dist, "d": job.d, "budget": job.budget, "depth": job.depth,
                         "width": int(ds.width), "n_params": int(ds.attrs["n_params"]), "best_lr": float(ds.best_lr),
                         "seed": int(sd), "test_mse": float(ds.test_mse.values[j]), "test_nmse": float(ds.test_nmse.values[j]),
                         "diverged": bool(ds.diverged.values[j]), "r0": float(ds.attrs["r0"]),
                         "r0_density_ratio": float(ds.attrs["r0_density_ratio"]), "r0_inside": float(ds.attrs["r0_inside"])})
    return pd.DataFrame(rows)


def make_figure(spec: "FigureSpec", inputs: list[StoreInput]):
    name = spec.job.figure
    if name == "radial_error":
        tab = radial_table(inputs)
        return plots.radial_figure(tab), tab
    tab = sawtooth_table(inputs)
    if name == "sawtooth_error":
        return plots.error_figure(tab), tab
    if name == "sawtooth_pieces":
        return plots.pieces_figure(tab), tab
    levels = sorted(tab.level.unique())
    shown = sorted({levels[0], levels[len(levels) // 2], levels[-1]})
    curves = functions_table(inputs, shown)
    return plots.functions_figure(curves), curves
