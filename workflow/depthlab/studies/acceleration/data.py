"""Stage ``data``: one regression data set, standardised, with the optimum and the target loss for each p."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.seeds import rng

from . import datasets

if TYPE_CHECKING:
    from .specs import DataSpec


def make_data(spec: "DataSpec", inputs: dict, ctx=None) -> xr.Dataset:
    name = spec.job.dataset
    if spec.synthetic is not None:
        s = spec.synthetic
        x, y = datasets.synthetic(s.n, s.d, s.decay, s.noise, rng(spec.seed, "accel_synthetic"))
    elif name == "diabetes":
        x, y = datasets.diabetes()
    else:
        x, y = datasets.read_uci(spec.uci_file)
    ps = list(spec.ps)
    best = [datasets.optimum(x, y, p)[1] for p in ps]
    start = [float(np.mean(np.abs(y) ** p) / p) for p in ps]  # L(0)
    fractions = list(spec.target_fractions)
    target = [[b + f * (s - b) for f in fractions] for b, s in zip(best, start)]
    eig = np.linalg.eigvalsh(x.T @ x / len(y))
    return xr.Dataset(
        {
            "x": (("sample", "feature"), x),
            "y": (("sample",), y),
            "optimum_loss": (("p",), np.asarray(best), {"description": "min_w L(w), least squares or damped Newton"}),
            "initial_loss": (("p",), np.asarray(start), {"description": "L(0)"}),
            "target_loss": (("p", "fraction"), np.asarray(target), {"description": "L* + fraction (L(0) - L*)"}),
            "covariance_eigenvalues": (("feature",), eig[::-1].copy()),
        },
        coords={"p": ps, "fraction": fractions},
        attrs={
            "dataset": name,
            "condition_number": float(eig[-1] / max(eig[0], 1e-300)),
            "covariance_decay": spec.synthetic.decay if spec.synthetic is not None else "n/a",
        },
    )
