"""Stage ``radial_data``: one radial data set (inputs, target, the radius r0 it is scaled to)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import xarray as xr

from depthlab.core.seeds import rng

from . import radial_targets

if TYPE_CHECKING:
    from .specs import RadialDataSpec


def make_data(spec: "RadialDataSpec", inputs: dict, ctx=None) -> xr.Dataset:
    t, q, d = spec.job.target, spec.job.dist, spec.job.d
    quant, half = spec.es_quantile, spec.shell_halfwidth
    r0, density_ratio, inside = radial_targets.target_radius(d, q, quant, half)
    x = radial_targets.sample(spec.n_train, d, q, rng(spec.seed, "radial", d, 0), quant, half)
    xt = radial_targets.sample(spec.n_test, d, q, rng(spec.seed, "radial", d, 1), quant, half)
    extra, attrs = {}, {}
    if t == "es16":
        n = radial_targets.es16_shell_count(d, spec.es16_shells_per_sqrt_d)
        edges = radial_targets.es16_shells(d, n, quant)
        signs = radial_targets.es16_signs(n, rng(spec.seed, "es16_signs", d))
        y, yt = radial_targets.es16_target(x, edges, signs), radial_targets.es16_target(xt, edges, signs)
        extra = {"shell_edges": (("edge",), edges), "shell_signs": (("shell",), signs)}
        mean, var = radial_targets.es16_moments(signs)
        attrs = {"shells": n, "analytic_mean": mean, "analytic_variance": var}
    else:
        y, yt = radial_targets.target(x, t, r0), radial_targets.target(xt, t, r0)
    return xr.Dataset(
        {
            "x_train": (("train_sample", "feature"), x),
            "y_train": (("train_sample",), y),
            "x_test": (("test_sample", "feature"), xt),
            "y_test": (("test_sample",), yt),
            **extra,
        },
        attrs={
            "target": t,
            "distribution": q,
            "d": d,
            "r0": r0,
            "r0_density_ratio": density_ratio,
            "r0_inside": inside,
            **attrs,
            "median_radius": radial_targets.median_radius(d, q, quant, half),
            "es_quantile": quant if quant is not None else "n/a",
            "shell_halfwidth": half if half is not None else "n/a",
        },
    )
