"""Stage ``data``: samples of one fractal distribution (exactly balanced), with its approximation curve."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.seeds import rng

from . import distributions as D

if TYPE_CHECKING:
    from .specs import DataSpec


def make_data(spec: "DataSpec", inputs: dict, ctx=None) -> xr.Dataset:
    j = spec.job
    f = D.get(j.fractal)
    x, y, lev = D.sample(f, j.n, j.pdeg, spec.n_train, rng(spec.seed, "fractal", j.n, j.pdeg, 0))
    xt, yt, levt = D.sample(f, j.n, j.pdeg, spec.n_test, rng(spec.seed, "fractal", j.n, j.pdeg, 1))
    curve = D.approximation_curve(j.n, j.pdeg)
    return xr.Dataset(
        {
            "x_train": (("train_sample", "feature"), x),
            "y_train": (("train_sample",), y),
            "level_train": (("train_sample",), lev, {"description": "stop level of a negative; n + 1 for a positive"}),
            "x_test": (("test_sample", "feature"), xt),
            "y_test": (("test_sample",), yt),
            "level_test": (("test_sample",), levt),
            "curve": (("j",), curve, {"description": "approximation curve P(j), analytic"}),
            "curve_empirical": (
                ("j",),
                D.empirical_curve(f, x, y, j.n),
                {"description": "P(j) estimated from the training sample"},
            ),
        },
        coords={"j": np.arange(j.n + 1)},
        attrs={"fractal": j.fractal, "n": j.n, "pdeg": j.pdeg},
    )
