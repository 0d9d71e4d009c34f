"""Stage ``figure``: tidy tables from the eigen and krr stores, and their plots."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.study import StoreInput

from . import plots

if TYPE_CHECKING:
    from .specs import FigureSpec


def _stores(inputs: list[StoreInput]) -> list:
    """The input stores in (stage, kernel, d or depth) order."""
    return [i.data for i in sorted(inputs, key=lambda i: (i.stage, *i.job.values().values()))]


def eigen_table(inputs: list[StoreInput]) -> pd.DataFrame:
    """One row per (kernel, d, depth, k)."""
    rows = []
    for ds in _stores(inputs):
        for i, L in enumerate(ds.depth.values):
            for k in ds.k.values:
                rows.append(
                    {
                        "kernel": ds.attrs["kernel"],
                        "d": int(ds.attrs["d"]),
                        "depth": int(L),
                        "k": int(k),
                        "mu": float(ds.mu.values[i, k]),
                        "mu_check": float(ds.mu_check.values[i, k]),
                        "rel_diff": float(ds.rel_diff.values[i, k]),
                        "reliable": bool(ds.reliable.values[i, k]),
                        "multiplicity": int(ds.multiplicity.values[k]),
                        "theory_slope": float(ds.theory_slope),
                    }
                )
    return pd.DataFrame(rows)


def slope_table(inputs: list[StoreInput]) -> pd.DataFrame:
    """One row per (kernel, d, depth, parity): the fitted tail slope and the theory's."""
    rows = []
    for ds in _stores(inputs):
        for i, L in enumerate(ds.depth.values):
            for j, parity in enumerate(ds.parity.values):
                rows.append(
                    {
                        "kernel": ds.attrs["kernel"],
                        "d": int(ds.attrs["d"]),
                        "depth": int(L),
                        "parity": str(parity),
                        "slope": float(ds.slope.values[i, j]),
                        "slope_log_k": float(ds.slope_log_k.values[i, j]),
                        "theory_slope": float(ds.theory_slope),
                        "fit_k_lo": int(ds.fit_k_lo.values[i, j]),
                        "fit_k_hi": int(ds.fit_k_hi.values[i, j]),
                        "fit_points": int(ds.fit_points.values[i, j]),
                        "reliable_k_max": int(np.flatnonzero(ds.reliable.values[i]).max(initial=-1)),
                    }
                )
    return pd.DataFrame(rows)


def krr_table(inputs: list[StoreInput]) -> pd.DataFrame:
    """One row per (kernel, depth, trial, n): the best test MSE over the ridge grid, the kernel's fitted rate, and the
    eigenlearning prediction of the best-over-ridge test MSE from the kernel's own spectrum (claim B3)."""
    theory = {(i.job.kernel, i.job.depth): i.data for i in inputs if i.stage == "theory"}
    rows = []
    for inp in sorted((i for i in inputs if i.stage == "krr"), key=lambda i: (i.job.kernel, i.job.depth)):
        ds = inp.data
        th = theory.get((inp.job.kernel, inp.job.depth))
        pred = dict(zip(th.n.values.tolist(), th.predicted_best_mse.values.tolist())) if th is not None else {}
        for t in ds.trial.values:
            for i, n in enumerate(ds.n.values):
                rows.append(
                    {
                        "kernel": ds.attrs["kernel"],
                        "depth": int(ds.attrs["depth"]),
                        "trial": int(t),
                        "n": int(n),
                        "best_mse": float(ds.best_mse.values[t, i]),
                        "best_ridge": float(ds.best_ridge.values[t, i]),
                        "rate": float(ds.rate),
                        "predicted_best_mse": float(pred.get(int(n), np.nan)),
                    }
                )
    return pd.DataFrame(rows)


def make_table(spec: "FigureSpec", inputs: list[StoreInput]) -> pd.DataFrame:
    """The figure's table from its input stores (what the CSV holds; the audit re-derives it with this)."""
    name = spec.job.figure
    if name == "learning_curves":
        return krr_table(inputs)
    if name == "slopes":
        return slope_table(inputs)
    return eigen_table(inputs)


def draw(spec: "FigureSpec", tab: pd.DataFrame):
    name = spec.job.figure
    if name == "learning_curves":
        return plots.krr_figure(tab)
    if name == "slopes":
        return plots.slope_figure(tab)
    title = (
        "Mori & Ueda's kernels on the sphere (|x|^2 = d): Mercer eigenvalues per depth"
        if name == "mori_ueda_eigenvalues"
        else "Bietti & Bach: Mercer eigenvalues of deep ReLU kernels on the sphere, per depth"
    )
    return plots.eigen_figure(tab, title)


def make_figure(spec: "FigureSpec", inputs: list[StoreInput]):
    tab = make_table(spec, inputs)
    return draw(spec, tab), tab
