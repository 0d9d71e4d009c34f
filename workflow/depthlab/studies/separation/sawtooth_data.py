"""Stage ``sawtooth_data``: the training, test and plotting points on [0, 1]."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.seeds import rng

if TYPE_CHECKING:
    from .specs import SawtoothDataSpec


def make_data(spec: "SawtoothDataSpec", inputs: dict, ctx=None) -> xr.Dataset:
    g = rng(spec.seed, "x_train")
    gt = rng(spec.seed, "x_test")
    return xr.Dataset(
        {
            "x_train": (("train_sample",), g.uniform(0.0, 1.0, spec.n_train)),
            "x_test": (("test_sample",), gt.uniform(0.0, 1.0, spec.n_test)),
            "x_plot": (("plot_point",), np.linspace(0.0, 1.0, spec.plot_points)),
        }
    )
