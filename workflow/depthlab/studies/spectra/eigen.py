"""Stage ``eigen``: the Mercer eigenvalues of one kernel on S^(d-1), for each of its depths, and their decay fits."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from .dotkernels import NU, kernel, theory_slope
from .eigenvalues import decay_fit, fit_shift, mercer_eigenvalues, multiplicity

if TYPE_CHECKING:
    from .specs import EigenSpec


def run_eigen(spec: "EigenSpec", inputs: dict, ctx) -> xr.Dataset:
    name, d = spec.job.kernel, spec.job.d
    depths, k_max = list(spec.depths), spec.k_max
    rows = []
    for L in depths:
        s = mercer_eigenvalues(
            kernel(name, L, spec.beta if spec.beta is not None else 0.0), d, k_max, spec.panels, spec.rtol
        )
        fits = [decay_fit(s.mu, s.reliable, parity, spec.fit_k_min, fit_shift(d)) for parity in (0, 1)]
        plain = [decay_fit(s.mu, s.reliable, parity, spec.fit_k_min)[0] for parity in (0, 1)]
        rows.append((s, fits, plain))
        ctx.progress(
            f"{name} d={d} depth {L}: reliable up to k = {np.flatnonzero(s.reliable).max(initial=-1)}, "
            f"slopes even/odd {fits[0][0]:.3f} / {fits[1][0]:.3f} (log k fit {plain[0]:.3f} / {plain[1]:.3f}; "
            f"theory {theory_slope(name, d):g})"
        )
    stack = lambda attr: np.stack([getattr(s, attr) for s, _, _ in rows])  # noqa: E731
    fit = lambda i: np.array([[f[i] for f in fits] for _, fits, _ in rows])  # noqa: E731
    return xr.Dataset(
        {
            "mu": (
                ("depth", "k"),
                stack("mu"),
                {"description": "Mercer eigenvalue mu_k (theta rule), kernel normalised to kappa(1) = 1"},
            ),
            "mu_check": (
                ("depth", "k"),
                stack("mu_check"),
                {"description": "mu_k by the graded t rule (independent check)"},
            ),
            "rel_diff": (("depth", "k"), stack("rel_diff")),
            "floor": (("depth", "k"), stack("floor"), {"description": "rounding-error scale of the theta rule"}),
            "reliable": (
                ("depth", "k"),
                stack("reliable"),
                {"description": "the rules agree to rtol and mu_k is far above the floor"},
            ),
            "multiplicity": (("k",), np.array([multiplicity(d, k) for k in range(k_max + 1)], dtype=np.int64)),
            "slope": (
                ("depth", "parity"),
                fit(0),
                {"description": "slope of log mu_k vs log(k + (d-2)/2) over the reliable tail of one parity"},
            ),
            "slope_log_k": (
                ("depth", "parity"),
                np.array([p for _, _, p in rows]),
                {
                    "description": "the same fit against plain log k (biased by about d/(2k): kept to show the difference)"
                },
            ),
            "fit_k_lo": (("depth", "parity"), fit(1).astype(np.int64)),
            "fit_k_hi": (("depth", "parity"), fit(2).astype(np.int64)),
            "fit_points": (("depth", "parity"), fit(3).astype(np.int64)),
            "theory_slope": ((), theory_slope(name, d), {"description": "-(d + 2 nu - 1), Bietti & Bach's Theorem"}),
        },
        coords={"depth": depths, "k": np.arange(k_max + 1), "parity": ["even", "odd"]},
        attrs={"kernel": name, "d": d, "nu": NU[name], "rtol": spec.rtol},
    )
