"""Stage ``krr``: KRR learning curves of one kernel and depth (Bietti & Bach's experiment)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from . import krr_curves
from .dotkernels import kernel

if TYPE_CHECKING:
    from .specs import KrrSpec


def run_krr(spec: "KrrSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    name, depth = spec.job.kernel, spec.job.depth
    kap = kernel(name, depth)
    ns = list(spec.n_train)
    ridges = 10.0 ** np.asarray(spec.log10_ridges)
    N = max(ns)
    mse = []
    for t in data.trial.values:
        x, xt = data.x_train.values[t, :N], data.x_test.values[t]
        mse.append(
            krr_curves.learning_curve(
                krr_curves.gram(kap, x, x),
                krr_curves.gram(kap, xt, x),
                data.y_train.values[t, :N],
                data.y_test.values[t],
                ns,
                ridges,
            )
        )
        ctx.progress(f"{name} depth {depth}: trial {t} done, best test MSE at n = {N}: {mse[-1][-1].min():.4g}")
    mse = np.stack(mse)  # [trial, n, ridge]
    best = mse.min(2)
    mean = best.mean(0)
    return xr.Dataset(
        {
            "test_mse": (("trial", "n", "ridge"), mse),
            "best_mse": (("trial", "n"), best, {"description": "test MSE at the best ridge of the grid"}),
            "best_ridge": (("trial", "n"), ridges[mse.argmin(2)]),
            "rate": (
                (),
                krr_curves.rate(np.asarray(ns), mean, spec.fit_n_min),
                {"description": "slope of log(mean best test MSE) vs log n over n >= fit_n_min"},
            ),
        },
        coords={"trial": data.trial.values, "n": ns, "ridge": ridges},
        attrs={"kernel": name, "depth": depth},
    )
