"""Stage ``krr_data``: the sphere data sets of the KRR learning curves (one per trial), bump targets."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.seeds import rng

from . import krr_curves

if TYPE_CHECKING:
    from .specs import KrrDataSpec


def make_krr_data(spec: "KrrDataSpec", inputs: dict, ctx=None) -> xr.Dataset:
    d, n, nt, T = spec.d, spec.n_train, spec.n_test, spec.trials
    xs, ys, ws = [], [], []
    for t in range(T):
        g = rng(spec.seed, "sphere", t)
        x = krr_curves.sphere(n + nt, d, g)
        w = krr_curves.sphere(1, d, g)[0]
        xs.append(x)
        ws.append(w)
        ys.append(krr_curves.bump(x, w, spec.threshold))
    xs, ys = np.stack(xs), np.stack(ys)
    return xr.Dataset(
        {
            "x_train": (("trial", "train_sample", "feature"), xs[:, :n]),
            "y_train": (("trial", "train_sample"), ys[:, :n]),
            "x_test": (("trial", "test_sample", "feature"), xs[:, n:]),
            "y_test": (("trial", "test_sample"), ys[:, n:]),
            "w": (("trial", "feature"), np.stack(ws), {"description": "direction of the bump 1{w.x >= threshold}"}),
        },
        coords={"trial": np.arange(T)},
        attrs={"threshold": spec.threshold},
    )
