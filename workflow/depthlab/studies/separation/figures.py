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


def _last(row: np.ndarray) -> float:
    """The last recorded value of a run (where it stopped: later checks are NaN), NaN if none."""
    f = row[np.isfinite(row)]
    return float(f[-1]) if len(f) else np.nan


def _by_job(inputs: list[StoreInput], stage: str) -> list[StoreInput]:
    return sorted((i for i in inputs if i.stage == stage), key=lambda i: tuple(i.job.values().values()))


def sawtooth_table(inputs: list[StoreInput]) -> pd.DataFrame:
    """One row per (level, arch, lr, seed) of the trained nets, and one per level for the hand-built net."""
    rows = []
    con = _by_job(inputs, "construction")[0].data
    for i, L in enumerate(con.level.values):
        rows.append(
            {
                "level": int(L),
                "arch": "construction",
                "kind": "construction",
                "depth": int(L),
                "width": 2,
                "n_params": n_params(1, 2, int(L)),
                "lr": np.nan,
                "seed": -1,
                "test_mse": float(con.max_abs_error.values[i]) ** 2,
                "max_abs_error": float(con.max_abs_error.values[i]),
                "train_loss": np.nan,
                "pieces": int(con.pieces.values[i]),
                "best": True,
                "mse_bound": 0.0,
                "crossing_bound": 0.0,
                "window_bound": 0.0,
                "diverged": False,
                "converged": True,
                "stop_reason": "built",
                "lr_edge": "",
            }
        )
    for inp in _by_job(inputs, "sawtooth"):
        ds, arch = inp.data, inp.job.arch
        best = int(ds.best)
        S = ds.sizes["seed"]
        for i, lr in enumerate(ds.lr.values):
            for j, sd in enumerate(ds.seed.values):
                rows.append(
                    {
                        "level": int(ds.level),
                        "arch": arch,
                        "kind": ds.attrs["kind"],
                        "depth": int(ds.attrs["depth"]),
                        "width": int(ds.attrs["width"]),
                        "n_params": int(ds.attrs["n_params"]),
                        "lr": float(lr),
                        "seed": int(sd),
                        "test_mse": float(ds.test_mse.values[i, j]),
                        "max_abs_error": np.nan,
                        "train_loss": float(ds.train_loss.values[i, j]),
                        "pieces": int(ds.pieces.values[i, j]),
                        "best": i * S + j == best,
                        "mse_bound": float(ds.mse_bound),
                        "crossing_bound": float(ds.crossing_bound),
                        "window_bound": float(ds.window_bound),
                        "diverged": bool(ds.diverged.values[i, j]),
                        "converged": bool(ds.converged.values[i, j]),
                        "stop_reason": str(ds.stop_reason.values[i, j]),
                        "lr_edge": str(ds.lr_edge.values),
                    }
                )
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
            rows.append(
                {
                    "target": job.target,
                    "dist": job.dist,
                    "d": job.d,
                    "budget": job.budget,
                    "depth": job.depth,
                    "width": int(ds.width),
                    "n_params": int(ds.attrs["n_params"]),
                    "best_lr": float(ds.best_lr),
                    "seed": int(sd),
                    "test_mse": float(ds.test_mse.values[j]),
                    "test_nmse": float(ds.test_nmse.values[j]),
                    "train_nmse": float(ds.train_nmse.values[j]),
                    "diverged": bool(ds.diverged.values[j]),
                    "converged": bool(ds.converged.values[j]),
                    "stop_reason": str(ds.stop_reason.values[j]),
                    "lr_edge": str(ds.lr_edge.values),
                    "lr_flagged": bool(ds.lr_flagged),
                    "r0": float(ds.attrs["r0"]),
                    "r0_density_ratio": float(ds.attrs["r0_density_ratio"]),
                    "r0_inside": float(ds.attrs["r0_inside"]),
                }
            )
    return pd.DataFrame(rows)


def es16_table(inputs: list[StoreInput]) -> pd.DataFrame:
    """The radial table of the ES16 nets, with the target's shell count and analytic variance per d."""
    tab = radial_table(inputs)
    tab["shells"] = [int(i.data.attrs["shells"]) for i in _by_job(inputs, "radial") for _ in i.data.seed.values]
    tab["analytic_variance"] = [
        float(i.data.attrs["analytic_variance"]) for i in _by_job(inputs, "radial") for _ in i.data.seed.values
    ]
    return tab


def learner_table(inputs: list[StoreInput]) -> pd.DataFrame:
    """Final test nMSE per (dist, d, model, seed): the learner at each width, its reduced model, and the 1-hidden-layer
    nets with the learner's parameter count (R3)."""
    rows = []
    for inp in _by_job(inputs, "learner"):
        ds = inp.data
        for j, sd in enumerate(ds.seed.values):
            base = {
                "dist": ds.attrs["dist"],
                "d": int(ds.attrs["d"]),
                "width": int(ds.attrs["width"]),
                "width_rule": ds.attrs["width_rule"],
                "n_params": int(ds.attrs["n_params"]),
                "seed": int(sd),
                "lr": float(ds.best_lr),
                "diverged": str(ds.stop_reason.values[j]) == "diverged",
                "converged": bool(ds.converged.values[j]),
                "stop_reason": str(ds.stop_reason.values[j]),
                "stopped_step": int(ds.stopped_step.values[j]),
                "lr_edge": str(ds.lr_edge.values),
                "lr_flagged": bool(ds.lr_flagged),
            }
            rows.append(
                {
                    **base,
                    "model": "learner",
                    "test_nmse": _last(ds.test_nmse.values[j]),
                    "train_nmse": _last(ds.train_nmse.values[j]),
                }
            )
            rows.append(
                {**base, "model": "reduced", "test_nmse": _last(ds.reduced_test_nmse.values[j]), "train_nmse": np.nan}
            )
    for inp in _by_job(inputs, "radial"):
        ds, job = inp.data, inp.job
        for j, sd in enumerate(ds.seed.values):
            rows.append(
                {
                    "dist": job.dist,
                    "d": job.d,
                    "width": int(ds.width),
                    "width_rule": "equal parameters",
                    "n_params": int(ds.attrs["n_params"]),
                    "seed": int(sd),
                    "lr": float(ds.best_lr),
                    "diverged": bool(ds.diverged.values[j]),
                    "converged": bool(ds.converged.values[j]),
                    "stop_reason": str(ds.stop_reason.values[j]),
                    "stopped_step": -1,
                    "lr_edge": str(ds.lr_edge.values),
                    "lr_flagged": bool(ds.lr_flagged),
                    "model": "1 hidden layer",
                    "test_nmse": float(ds.test_nmse.values[j]),
                    "train_nmse": float(ds.train_nmse.values[j]),
                }
            )
    return pd.DataFrame(rows)


def learner_curves(inputs: list[StoreInput]) -> pd.DataFrame:
    """alpha of the finite net and of the reduced model, the deviation, both test errors and the training error per recorded
    step: at the chosen rate (``regime`` "best") and at each small flow rate of the store (``regime`` "flow"; R4)."""
    rows = []
    for inp in _by_job(inputs, "learner"):
        ds = inp.data
        runs = [
            (
                "best",
                float(ds.best_lr),
                {
                    k: ds[k].values
                    for k in ("alpha", "reduced_alpha", "deviation", "test_nmse", "reduced_test_nmse", "train_nmse")
                },
            )
        ]
        if "flow_lr" in ds.coords:
            runs += [
                (
                    "flow",
                    float(lr),
                    {
                        k: ds[f"flow_{k}"].values[i]
                        for k in ("alpha", "reduced_alpha", "deviation", "test_nmse", "reduced_test_nmse", "train_nmse")
                    },
                )
                for i, lr in enumerate(ds.flow_lr.values)
            ]
        for regime, lr, v in runs:
            for j, sd in enumerate(ds.seed.values):
                for c, step in enumerate(ds.check_step.values):
                    if not np.isfinite(v["alpha"][j, c]):  # after it stopped
                        continue
                    rows.append(
                        {
                            "dist": ds.attrs["dist"],
                            "d": int(ds.attrs["d"]),
                            "width": int(ds.attrs["width"]),
                            "width_rule": ds.attrs["width_rule"],
                            "regime": regime,
                            "lr": lr,
                            "seed": int(sd),
                            "step": int(step),
                            "alpha": float(v["alpha"][j, c]),
                            "reduced_alpha": float(v["reduced_alpha"][j, c]),
                            "deviation": float(v["deviation"][j, c]),
                            "test_nmse": float(v["test_nmse"][j, c]),
                            "reduced_test_nmse": float(v["reduced_test_nmse"][j, c]),
                            "train_nmse": float(v["train_nmse"][j, c]),
                        }
                    )
    return pd.DataFrame(rows)


def profile_table(inputs: list[StoreInput]) -> pd.DataFrame:
    """F(u)/alpha on great circles at the start and after training (seed 0 of each run), a few d."""
    runs = _by_job(inputs, "learner")
    dims = sorted({int(i.data.attrs["d"]) for i in runs})
    shown = sorted({dims[0], dims[len(dims) // 2], dims[-1]})
    rows = []
    for inp in runs:
        ds = inp.data
        if int(ds.attrs["d"]) not in shown:
            continue
        for when in ("start", "end"):
            prof = ds[f"{when}_profile"].values[0]
            for p in range(prof.shape[0]):
                rows += [
                    {
                        "dist": ds.attrs["dist"],
                        "d": int(ds.attrs["d"]),
                        "width": int(ds.attrs["width"]),
                        "width_rule": ds.attrs["width_rule"],
                        "when": when,
                        "plane": p,
                        "angle": float(a),
                        "F_over_alpha": float(v),
                    }
                    for a, v in zip(ds.angle.values, prof[p])
                ]
    return pd.DataFrame(rows)


_TABLES = {
    "radial_error": radial_table,
    "es16_error": es16_table,
    "learner_error": learner_table,
    "learner_alpha": learner_curves,
    "learner_first_layer": profile_table,
}
_DRAW = {
    "radial_error": "radial_figure",
    "es16_error": "es16_figure",
    "learner_error": "learner_error_figure",
    "learner_alpha": "learner_alpha_figure",
    "learner_first_layer": "first_layer_figure",
    "sawtooth_error": "error_figure",
    "sawtooth_pieces": "pieces_figure",
}


def make_table(spec: "FigureSpec", inputs: list[StoreInput]) -> pd.DataFrame:
    """The figure's table from its input stores (what the CSV holds; the audit re-derives it with this)."""
    name = spec.job.figure
    if name in _TABLES:
        return _TABLES[name](inputs)
    tab = sawtooth_table(inputs)
    if name in _DRAW:
        return tab
    levels = sorted(tab.level.unique())
    shown = sorted({levels[0], levels[len(levels) // 2], levels[-1]})
    return functions_table(inputs, shown)


def draw(spec: "FigureSpec", tab: pd.DataFrame):
    return getattr(plots, _DRAW.get(spec.job.figure, "functions_figure"))(tab)


def make_figure(spec: "FigureSpec", inputs: list[StoreInput]):
    tab = make_table(spec, inputs)
    return draw(spec, tab), tab
