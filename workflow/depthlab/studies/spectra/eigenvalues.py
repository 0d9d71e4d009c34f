"""Mercer eigenvalues of dot-product kernels on the sphere S^(d-1), two independent quadratures, and decay fits.

Funk-Hecke: K(x, y) = kappa(x.y) has eigenfunctions the spherical harmonics of degree
k, with multiplicity N(d, k), and eigenvalue

    mu_k = (omega_{d-2} / omega_{d-1}) int_{-1}^{1} kappa(t) P_k(t) (1 - t^2)^((d-3)/2) dt,

P_k the Gegenbauer polynomial of degree k in dimension d normalised to P_k(1) = 1,
omega_{p-1} = 2 pi^(p/2) / Gamma(p/2) the area of S^(p-1).

kappa has (1 -+ t)^nu singularities at t = +-1, and mu_k spans many decades, so the
integral is computed two different ways:

* ``theta``: t = cos(theta), composite Gauss-Legendre on uniform panels of [0, pi].  In
  theta the integrand kappa(cos th) P_k(cos th) sin(th)^(d-2) is analytic on the closed
  interval (sqrt(1 - cos th) = sqrt(2) sin(th/2)), so the rule converges exponentially.
* ``t``: composite Gauss-Legendre in t on panels between the points cos(theta_j), with the
  two end panels refined geometrically towards +-1 (an hp-graded mesh), which resolves
  the algebraic endpoint behaviour of kappa and of the weight (1 - t^2)^((d-3)/2).

Where they agree to ``rtol`` the digits are trusted (``reliable``); where they do not,
double precision has run out (large k at large d: mu_k below ~1e-16 of the integrand's
size) or mu_k vanishes (the odd eigenvalues of bias-free 2-layer kernels), and the value
is stored but flagged and never plotted.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Callable

import numpy as np
from scipy.special import gammaln

NODES = 24  # Gauss-Legendre nodes per panel
_X, _W = np.polynomial.legendre.leggauss(NODES)


def multiplicity(d: int, k: int) -> int:
    """N(d, k): the number of spherical harmonics of degree k on S^(d-1)."""
    if k == 0:
        return 1
    return (2 * k + d - 2) * comb(k + d - 3, d - 2) // k


def gegenbauer(t: np.ndarray, k_max: int, d: int) -> np.ndarray:
    """P_0..P_kmax at t, normalised P_k(1) = 1: [k_max + 1, *t.shape].

    Three-term recurrence P_{k+1} = ((2k + d - 2) t P_k - k P_{k-1}) / (k + d - 2) (stable on [-1, 1]).
    """
    t = np.asarray(t, dtype=np.float64)
    P = np.empty((k_max + 1, *t.shape))
    P[0] = 1.0
    if k_max >= 1:
        P[1] = t
    for k in range(1, k_max):
        P[k + 1] = ((2 * k + d - 2) * t * P[k] - k * P[k - 1]) / (k + d - 2)
    return P


def funk_hecke_constant(d: int) -> float:
    """omega_{d-2} / omega_{d-1} = Gamma(d/2) / (sqrt(pi) Gamma((d-1)/2))."""
    return float(np.exp(gammaln(d / 2) - gammaln((d - 1) / 2)) / np.sqrt(np.pi))


def _panel_nodes(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = edges[:-1, None], edges[1:, None]
    return ((b - a) / 2 * _X + (a + b) / 2).ravel(), ((b - a) / 2 * _W).ravel()


def nodes_theta(panels: int) -> tuple[np.ndarray, np.ndarray]:
    """t-nodes and weights (including the Jacobian and sin^(d-2) is left to the caller) of the theta rule."""
    return _panel_nodes(np.linspace(0.0, np.pi, panels + 1))


def nodes_t(panels: int, levels: int = 40, ratio: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights in t of the graded rule: panel ends at cos(theta_j), end panels graded by ``ratio``."""
    tb = np.cos(np.linspace(0.0, np.pi, panels + 1))[::-1]  # -1 .. 1
    left = -1.0 + (tb[1] + 1.0) * ratio ** np.arange(levels)
    right = 1.0 - (1.0 - tb[-2]) * ratio ** np.arange(levels)
    return _panel_nodes(np.unique(np.concatenate([[-1.0, 1.0], left, tb[1:-1], right])))


@dataclass
class Spectrum:
    mu: np.ndarray  # [K] mu_k by the theta rule
    mu_check: np.ndarray  # [K] mu_k by the graded t rule
    rel_diff: np.ndarray  # [K] |mu - mu_check| / |mu|
    floor: np.ndarray  # [K] rounding-error scale of the theta rule: eps * sum_i |term_i|
    reliable: np.ndarray  # [K] bool: the two rules agree to rtol and |mu| is far above the floor


def mercer_eigenvalues(
    kappa: Callable[[np.ndarray], np.ndarray], d: int, k_max: int, panels: int, rtol: float
) -> Spectrum:
    """mu_0 .. mu_kmax of kappa on S^(d-1) by both rules (see the module docstring); d >= 3."""
    if d < 3:
        raise ValueError(f"d must be >= 3 (the Gegenbauer weight (1 - t^2)^((d-3)/2)), got {d}")
    c = funk_hecke_constant(d)
    th, wth = nodes_theta(panels)
    t = np.cos(th)
    terms = gegenbauer(t, k_max, d) * (c * kappa(t) * np.sin(th) ** (d - 2) * wth)  # [K, nodes]
    mu = terms.sum(1)
    floor = np.finfo(float).eps * np.abs(terms).sum(1)
    t2, w2 = nodes_t(panels)
    mu_check = gegenbauer(t2, k_max, d) @ (c * kappa(t2) * (1.0 - t2 * t2) ** ((d - 3) / 2) * w2)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(mu - mu_check) / np.abs(mu)
    reliable = (rel <= rtol) & (np.abs(mu) > 1e3 * floor)
    return Spectrum(mu=mu, mu_check=mu_check, rel_diff=rel, floor=floor, reliable=reliable)


def decay_fit(
    mu: np.ndarray, reliable: np.ndarray, parity: int, k_min: int, shift: float = 0.0
) -> tuple[float, int, int, int]:
    """Least-squares slope of log mu_k vs log(k + shift) over the reliable, positive k >= k_min of one parity.

    With ``shift`` = (d - 2)/2 (:func:`fit_shift`) the fit has no leading finite-k bias: the Gegenbauer
    normalisation makes mu_k behave like (k + (d - 2)/2)^(-(d + 2 nu - 1)) to leading order, so a plain log k fit
    (shift 0) reads too shallow by about d / (2k).  Returns (slope, k_lo, k_hi, points); NaN with fewer than 3 points.
    """
    k = np.arange(len(mu))
    ok = (k >= max(k_min, 1)) & (k % 2 == parity) & reliable & (mu > 0)
    if ok.sum() < 3:
        return float("nan"), -1, -1, int(ok.sum())
    slope = np.polyfit(np.log(k[ok] + shift), np.log(mu[ok]), 1)[0]
    return float(slope), int(k[ok].min()), int(k[ok].max()), int(ok.sum())


def fit_shift(d: int) -> float:
    """(d - 2)/2: the shift of k that removes the leading finite-k bias of the decay fit (SPEC §3)."""
    return (d - 2) / 2
