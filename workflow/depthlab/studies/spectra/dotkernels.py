"""The dot-product kernels of the spectra study, as functions of u = x.x' on the sphere, normalised to kappa(1) = 1.

========  ==================================================================  ======  =========
name      kappa(u) (before normalising by kappa(1))                           depths  nu
========  ==================================================================  ======  =========
rf        kappa_RF^(depth+1): kappa_1 applied depth times                     >= 1    3/2
ntk       kappa_NTK^(depth+1)                                                 >= 1    1/2
rf_bias   (1 + u) kappa_1(u): the 2-layer RF kernel with a bias input         1       3/2
ntk_bias  ((u + 1) kappa_0(u) + kappa_1(u)) / 2: the 2-layer NTK with a bias  1       1/2
mu_ntk    Mori & Ueda's Theta^(depth) with |x|^2 = d (Appendix A, beta)       >= 1    1/2
mu_nngp   Mori & Ueda's Sigma^(depth) with |x|^2 = d                          >= 1    3/2
laplace   exp(-sqrt(1 - u))                                                   0       1/2
========  ==================================================================  ======  =========

``depth`` counts hidden layers (Bietti & Bach's L = depth + 1 layers); the bias
variants are Bietti & Bach's code's (``nn_rf.py``: kappa1b, ntkb): bias-free 2-layer
kernels have vanishing odd (k >= 3) eigenvalues, which the bias removes.  nu is the
order of the kernel's singularity at u = 1, kappa(1 - t) = poly(t) + c t^nu + ...,
which sets the eigenvalue decay mu_k ~ k^(-d - 2 nu + 1) (Bietti & Bach, Theorem).
The normalisation kappa(1) = 1 makes sum_k N(d, k) mu_k = 1 for every kernel.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from depthlab.core.kernels import appendix_a_sphere, dot_forms, kappa0, kappa1

from .families import FIXED_DEPTH, NU


def theory_slope(name: str, d: int) -> float:
    """The log-log slope of mu_k in k that the theorem predicts: -(d + 2 nu - 1)."""
    return -(d + 2 * NU[name] - 1)


def _raw(name: str, depth: int, beta: float) -> Callable[[np.ndarray], np.ndarray]:
    if name in ("rf", "ntk"):
        idx = 1 if name == "rf" else 2
        return lambda u: [f for f in dot_forms(u, depth + 1)][-1][idx]
    if name == "rf_bias":
        return lambda u: (1.0 + u) * kappa1(u)
    if name == "ntk_bias":
        return lambda u: 0.5 * ((u + 1.0) * kappa0(u) + kappa1(u))
    if name in ("mu_ntk", "mu_nngp"):
        idx = 2 if name == "mu_ntk" else 1
        return lambda u: [f for f in appendix_a_sphere(u, depth, beta)][-1][idx]
    if name == "laplace":
        return lambda u: np.exp(-np.sqrt(np.clip(1.0 - u, 0.0, None)))
    raise ValueError(f"unknown kernel {name!r}; known: {', '.join(NU)}")


def kernel(name: str, depth: int, beta: float = 0.1) -> Callable[[np.ndarray], np.ndarray]:
    """kappa(u) / kappa(1) of kernel ``name`` at ``depth`` (u: any float64 array in [-1, 1])."""
    if name in FIXED_DEPTH and depth != FIXED_DEPTH[name]:
        raise ValueError(f"kernel {name} exists at depth {FIXED_DEPTH[name]} only, got depth {depth}")
    raw = _raw(name, depth, beta)
    scale = float(np.asarray(raw(np.ones(1)))[0])
    return lambda u: raw(np.clip(np.asarray(u, dtype=np.float64), -1.0, 1.0)) / scale
