"""Stage ``draws``: n standard normal draws from the study's own named random stream, and their mean."""

from __future__ import annotations

import xarray as xr

from depthlab.core.seeds import rng


def make_draws(spec, inputs: dict, ctx=None) -> xr.Dataset:
    x = rng(spec.seed, "tiny_draws", spec.job.n).standard_normal(spec.job.n)
    return xr.Dataset({"x": (("sample",), x), "mean": ((), x.mean())}, attrs={"n": spec.job.n})
