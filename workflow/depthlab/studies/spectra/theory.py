"""Stage ``theory``: the learning curve of one KRR kernel predicted from its own spectrum (claim B3).

The kernel's mu_k (theta rule of :mod:`.eigenvalues`, k = 0 .. k_max, kept up to the last reliable degree) and
the bump's degree powers give, per training-set size n and ridge (lambda, delta = n lambda as the KRR stage
solves it), the eigenlearning prediction of the test MSE (:mod:`.eigenlearning`); the best over the ridge grid is
compared with the measured curve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from . import eigenlearning as el
from .dotkernels import kernel
from .eigenvalues import mercer_eigenvalues, multiplicity

if TYPE_CHECKING:
    from .specs import TheorySpec


def run_theory(spec: "TheorySpec", inputs: dict, ctx) -> xr.Dataset:
    name, depth, d = spec.job.kernel, spec.job.depth, spec.d
    s = mercer_eigenvalues(kernel(name, depth), d, spec.k_max, spec.panels, spec.rtol)
    # keep every degree up to the last one whose eigenvalue is reliable or negligible (exact zeros, e.g. odd k of
    # bias-free 2-layer kernels); beyond it the trace identity closes the kernel's sums
    usable = s.reliable | (np.abs(s.mu) < 1e3 * s.floor)
    kr = int(np.argmin(usable)) - 1 if not usable.all() else spec.k_max
    mu = np.where(s.reliable[: kr + 1], s.mu[: kr + 1], 0.0)
    mult = np.array([multiplicity(d, k) for k in range(kr + 1)], dtype=np.float64)
    lam_tail = max(1.0 - float(np.sum(mult * mu)), 0.0)
    power, power_tail = el.target_power(d, spec.threshold, kr)
    ns, ridges = np.asarray(spec.n_train), 10.0 ** np.asarray(spec.log10_ridges)
    pred = np.empty((len(ns), len(ridges)))
    kappa = np.empty_like(pred)
    for i, n in enumerate(ns):
        for j, lam in enumerate(ridges):
            kappa[i, j] = el.effective_ridge(mu, mult, int(n), n * lam, lam_tail)
            pred[i, j] = el.predicted_mse(mu, mult, power, int(n), n * lam, lam_tail, power_tail)
    ratio = mu[-1] / np.where(kappa > 0, kappa, np.nan)
    ctx.progress(
        f"{name} depth {depth}: spectrum to k = {kr}, trace left {lam_tail:.2e}, target power left {power_tail:.2e}; "
        f"predicted best test MSE at n = {ns[-1]}: {pred[-1].min():.4g}"
    )
    return xr.Dataset(
        {
            "predicted_mse": (("n", "ridge"), pred, {"description": "eigenlearning prediction of the test MSE"}),
            "predicted_best_mse": (
                ("n",),
                pred.min(1),
                {"description": "the prediction at the best ridge of the grid"},
            ),
            "kappa": (("n", "ridge"), kappa, {"description": "the effective ridge the theory solves for"}),
            "tail_ratio": (
                ("n", "ridge"),
                ratio,
                {"description": "mu_K / kappa: the truncated spectrum's reach below kappa (<< 1)"},
            ),
            "mu": (("k",), mu),
            "target_power": (("k",), power, {"description": "||f_k||^2 = N(d, k) c_k^2 of the bump"}),
        },
        coords={"n": ns, "ridge": ridges, "k": np.arange(kr + 1)},
        attrs={
            "kernel": name,
            "depth": depth,
            "d": d,
            "k_reliable": kr,
            "trace_tail": lam_tail,
            "power_tail": power_tail,
        },
    )
