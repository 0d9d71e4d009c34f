"""Stage ``figure``: tidy tables from the sawtooth and radial stores, and their plots."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from . import plots


def sawtooth_table(inputs: dict[str, xr.Dataset]) -> pd.DataFrame:
    """One row per (level, arch, lr, seed) of the trained nets, and one per level for the hand-built net."""
    rows = []
    con = inputs["construction"]
    for i, L in enumerate(con.level.values):
        rows.append({"level": int(L), "arch": "construction", "kind": "construction", "depth": int(L), "width": 2,
                     "n_params": 2 + 6 * (int(L) - 1) + 3, "lr": np.nan, "seed": -1, "test_mse": float(con.max_abs_error.values[i]) ** 2,
                     "max_abs_error": float(con.max_abs_error.values[i]), "train_loss": np.nan, "pieces": int(con.pieces.values[i]),
                     "best": True, "mse_bound": 0.0, "diverged": False})
    for name, ds in sorted(inputs.items()):
        if name == "construction":
            continue
        arch = name.split("/")[1]
        best = int(ds.best)
        S = ds.sizes["seed"]
        for i, lr in enumerate(ds.lr.values):
            for j, sd in enumerate(ds.seed.values):
                rows.append({"level": int(ds.level), "arch": arch, "kind": ds.attrs["kind"], "depth": int(ds.attrs["depth"]),
                             "width": int(ds.attrs["width"]), "n_params": int(ds.attrs["n_params"]), "lr": float(lr), "seed": int(sd),
                             "test_mse": float(ds.test_mse.values[i, j]), "max_abs_error": np.nan,
                             "train_loss": float(ds.train_loss.values[i, j]), "pieces": int(ds.pieces.values[i, j]),
                             "best": i * S + j == best, "mse_bound": float(ds.mse_bound), "diverged": bool(ds.diverged.values[i, j])})
    return pd.DataFrame(rows)


def functions_table(inputs: dict[str, xr.Dataset], levels: list[int]) -> pd.DataFrame:
    """Curves on [0, 1] for a few levels: the target, the hand-built net, and the best trained net of each arch."""
    con = inputs["construction"]
    x = con.x_plot.values
    rows = []
    for L in levels:
        i = int(np.flatnonzero(con.level.values == L)[0])
        rows += [{"level": L, "curve": "target", "x": xv, "y": yv} for xv, yv in zip(x, con.target.values[i])]
        for name, ds in sorted(inputs.items()):
            if name.startswith(f"L{L}/"):
                pred = ds.prediction.values.reshape(-1, len(x))[int(ds.best)]
                rows += [{"level": L, "curve": name.split("/")[1], "x": xv, "y": yv} for xv, yv in zip(x, pred)]
    return pd.DataFrame(rows)


def radial_table(inputs: dict[str, xr.Dataset]) -> pd.DataFrame:
    rows = []
    for name, ds in sorted(inputs.items()):
        target, dist = name.split("/")[1:3]
        budget = int(name.split("/")[4].removeprefix("P"))
        for j, sd in enumerate(ds.seed.values):
            rows.append({"target": target, "dist": dist, "d": int(ds.d), "budget": budget, "depth": int(ds.depth),
                         "width": int(ds.width), "n_params": int(ds.attrs["n_params"]), "best_lr": float(ds.best_lr),
                         "seed": int(sd), "test_mse": float(ds.test_mse.values[j]), "test_nmse": float(ds.test_nmse.values[j])})
    return pd.DataFrame(rows)


def make_figure(spec: dict, inputs: dict[str, xr.Dataset]):
    name = spec["job"]["figure"]
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
