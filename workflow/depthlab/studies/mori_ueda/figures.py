"""Stage ``figure``: one tidy table from the train and ntk stores of a figure, and its plot."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.core import stats
from depthlab.core.metrics import misclassification
from depthlab.study import StoreInput

from . import plots

if TYPE_CHECKING:
    from .specs import FigureSpec


def table(spec: "FigureSpec", inputs: list[StoreInput]) -> pd.DataFrame:
    """One row per (target, depth, lr, seed): the net's test error and the kernels' errors at that (target, depth).

    inputs: the figure's train and ntk stores (and entk for an lr sweep), each with its typed job, and its data stores.
    A kernel is one fit per (target, depth), with no seeds: its error's standard error is over the test points
    (``ntk_test_error_se``, ``nngp_test_error_se``: :func:`test_point_se`).
    """
    labels = {i.job.target: i.data.y_test.values for i in inputs if i.stage == "data"}
    store = {(i.stage, i.job.target, i.job.depth): i.data for i in inputs if i.stage != "data"}
    rows = []
    for (stage, target, depth), ds in sorted(store.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        if stage != "train":
            continue
        scalars = ds  # the job's own values (the rate's edge flags, the largest converged rate)
        if "lr" not in ds.dims:  # a depth sweep's store: its one (chosen) rate is a variable, not a dimension
            ds = (
                ds[["test_error", "converged", "diverged", "stop_reason", "epochs", "lr"]]
                .set_coords("lr")
                .expand_dims("lr")
            )
        t = spec.targets[target]
        kern = store[("ntk", target, depth)]
        kerr = {str(k): float(v) for k, v in zip(kern.kernel.values, kern.test_error.values)}
        y = labels.get(target)
        kse = {
            str(k): test_point_se(kern.prediction.values[i], y, spec.task) if y is not None else np.nan
            for i, k in enumerate(kern.kernel.values)
        }
        entk = store.get(("entk", target, depth))
        eerr = dict(zip(entk.seed.values.tolist(), entk.test_error.values.tolist())) if entk is not None else {}
        for i, lr in enumerate(ds.lr.values):
            for j, sd in enumerate(ds.seed.values):
                rows.append(
                    {
                        "target": target,
                        "k": t.k,
                        "locality": t.locality,
                        "g": t.g,
                        "d": t.d,
                        "n_train": t.n_train,
                        "noise": t.noise,
                        "depth": int(ds.depth),
                        "width": int(ds.width),
                        "n_params": int(scalars.attrs["n_params"]),
                        "lr": float(lr),
                        "lr_source": scalars.attrs["lr_source"],
                        "seed": int(sd),
                        "nn_test_error": float(ds.test_error.values[i, j]),
                        "converged": bool(ds.converged.values[i, j]),
                        "diverged": bool(ds.diverged.values[i, j]),
                        "stop_reason": str(ds.stop_reason.values[i, j]),
                        "epochs": int(ds.epochs.values[i, j]),
                        "lr_edge": str(scalars.lr_edge.values),
                        "lr_flagged": bool(scalars.lr_flagged),
                        "max_converged_lr": float(scalars.max_converged_lr),
                        "cv_lr": float(scalars.cv_lr) if "cv_lr" in scalars else float(lr),
                        "lr_halvings": int(scalars.lr_halvings) if "lr_halvings" in scalars else 0,
                        "ntk_test_error": kerr["ntk"],
                        "nngp_test_error": kerr["nngp"],
                        "ntk_test_error_se": kse["ntk"],
                        "nngp_test_error_se": kse["nngp"],
                        "entk_test_error": float(eerr.get(int(sd), np.nan)),
                        "ntk_change": float(ds.ntk_change.values[i, j]) if "ntk_change" in ds else np.nan,
                    }
                )
    return pd.DataFrame(rows)


def test_point_se(pred: np.ndarray, y: np.ndarray, task: str) -> float:
    """The standard error of one fit's test error over its n test points: the SD of the per-point squared errors / sqrt n
    for an MSE (what a bootstrap over the test points converges to: ``depthlab.core.stats.bootstrap_mean``), the binomial
    sqrt(p (1 - p) / n) for a misclassification rate p (the same SD, of the 0/1 errors)."""
    pred, y = np.asarray(pred, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = y.shape[-1]
    if n < 2:
        return float("nan")
    if task == "classification":
        return stats.binomial(float(misclassification(pred, y)), n).se
    return float(np.std((pred - y) ** 2, ddof=1) / np.sqrt(n))


def make_table(spec: "FigureSpec", inputs: list[StoreInput]) -> pd.DataFrame:
    """The figure's table from its input stores (what the CSV holds; the audit re-derives it with this)."""
    return table(spec, inputs)


def draw(spec: "FigureSpec", tab: pd.DataFrame):
    name = spec.job.figure
    if spec.kind == "lr_sweep":
        fig = plots.lr_figure(
            tab,
            f"Mori & Ueda {name}: test error vs learning rate (NN solid; analytic NTK dashed; "
            "the net's own tangent kernel at init dotted)",
            spec.task,
        )
    else:
        fig = plots.depth_figure(
            tab, f"Mori & Ueda {name}: test error vs depth (NN solid, NTK dashed, NNGP dash-dot)", spec.task
        )
    return fig


def make_figure(spec: "FigureSpec", inputs: list[StoreInput]):
    tab = make_table(spec, inputs)
    return draw(spec, tab), tab
