"""Radial targets and input distributions of the depth-separation results (Eldan & Shamir; Safran & Shamir; Safran, Eldan & Shamir).

Targets, with the radius r0 scaled to the input distribution (:func:`target_radius`):

    relu:  f(x) = max(0, 1 - |x| / r0)       (Safran, Eldan & Shamir 2019, ReLU(1 - |x|))
    ball:  f(x) = 1{|x| <= r0}                (Safran & Shamir 2017, the ball indicator)

Input distributions (x = r u, u uniform on the sphere S^(d-1), r drawn from a radial law):

* ``eldan_shamir``: density phi(x)^2, phi the inverse Fourier transform of the indicator of
  the ball of unit volume (radius R_d = Gamma(d/2 + 1)^(1/d) / sqrt(pi)):
  phi(x) = (R_d / |x|)^(d/2) J_{d/2}(2 pi R_d |x|), |phi|_2 = 1 (Parseval).  The radius
  then has density p(r) = omega_{d-1} R_d^d J_{d/2}(2 pi R_d r)^2 / r, a heavy tail ~ r^-2
  (infinite mean), so it is truncated at its ``quantile`` (renormalised); say so wherever it is used.
* ``shell``: r uniform on [1 - h, 1 + h] (a plain distribution near the unit sphere).

The radius r0.  On the shell, the median radius (half the inputs inside).  On the Eldan-Shamir law the radial
density oscillates (it vanishes at the Bessel zeros) and its median drifts into thin lobes as d grows (the density
there is 0.96 of its maximum at d = 2 but 0.13 at d = 64), so with r0 at the median the number of points near the
target's kink would change with d and confound the comparison across d (SPEC §4).  r0 is therefore the maximum of
the lobe nearest the median; the density there relative to the law's maximum, and the fraction of inputs inside,
are recorded beside every result.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, jv

DISTRIBUTIONS = ("eldan_shamir", "shell")
TARGETS = ("relu", "ball", "es16")


def unit_volume_radius(d: int) -> float:
    """R_d with vol(R_d B_d) = pi^(d/2) R_d^d / Gamma(d/2 + 1) = 1."""
    return float(np.exp(gammaln(d / 2 + 1) / d) / np.sqrt(np.pi))


def sphere_area(d: int) -> float:
    """omega_{d-1} = 2 pi^(d/2) / Gamma(d/2): the area of S^(d-1)."""
    return float(2 * np.exp(d / 2 * np.log(np.pi) - gammaln(d / 2)))


def es_density(r: np.ndarray, d: int) -> np.ndarray:
    """Radial density p(r) of the Eldan-Shamir distribution (integrates to 1 over (0, inf)).

    R_d^d overflows a double from d = 450 (and J_{d/2} underflows where r is small), while the product is a density of
    order one: past the point where R_d^d would overflow, the product is summed in logs.  Below
    it, the direct product (the arithmetic of every store made before, so their bits stay)."""
    R = unit_volume_radius(d)
    r = np.asarray(r, dtype=np.float64)
    log_front = np.log(2.0) + d / 2 * np.log(np.pi) - gammaln(d / 2) + d * np.log(R)  # log(omega_{d-1} R^d)
    if d * np.log(R) < 700.0:  # R^d finite (exp(709) is a double's largest)
        return sphere_area(d) * R**d * jv(d / 2, 2 * np.pi * R * r) ** 2 / r
    with np.errstate(divide="ignore"):
        log_j = np.log(np.abs(jv(d / 2, 2 * np.pi * R * r)))
    return np.exp(log_front + 2 * log_j - np.log(r))


def es_radius_table(d: int, quantile: float, points_per_period: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(r grid, CDF of the truncated radius) for inverse-CDF sampling, up to the ``quantile`` of the untruncated law.

    The grid resolves J_{d/2}(2 pi R r)^2, whose period in r is 1 / (2 R); it extends until
    the trapezoid CDF reaches ``quantile``.
    """
    R = unit_volume_radius(d)
    step = 1.0 / (2 * R * points_per_period)
    r_max = 32.0 / R
    while True:
        r = np.arange(1, int(r_max / step) + 1) * step
        p = es_density(r, d)
        cdf = np.concatenate([[0.0], np.cumsum((p[1:] + p[:-1]) / 2 * step)])
        cdf += es_density(np.array([step]), d)[0] * step / 2  # (0, step]: p ~ r^(d-1) near 0, a tiny triangle
        if cdf[-1] >= quantile:
            cut = int(np.searchsorted(cdf, quantile)) + 1
            return r[:cut], cdf[:cut] / cdf[cut - 1]
        r_max *= 4


def sample_radius(n: int, d: int, dist: str, rng: np.random.Generator, quantile: float, halfwidth: float) -> np.ndarray:
    if dist == "shell":
        return rng.uniform(1.0 - halfwidth, 1.0 + halfwidth, n)
    if dist == "eldan_shamir":
        r, cdf = es_radius_table(d, quantile)
        return np.interp(rng.uniform(0.0, 1.0, n), cdf, r)
    raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, got {dist!r}")


def median_radius(d: int, dist: str, quantile: float, halfwidth: float) -> float:
    """The median of |x| under the (truncated) distribution: the target radius r0."""
    if dist == "shell":
        return 1.0
    r, cdf = es_radius_table(d, quantile)
    return float(np.interp(0.5, cdf, r))


def radial_density(r: np.ndarray, d: int, dist: str, quantile: float, halfwidth: float) -> np.ndarray:
    """The (truncated, renormalised) density of |x| at r."""
    r = np.asarray(r, dtype=np.float64)
    if dist == "shell":
        return np.where(np.abs(r - 1.0) <= halfwidth, 1.0 / (2 * halfwidth), 0.0)
    grid, cdf = es_radius_table(d, quantile)
    return np.where(r <= grid[-1], es_density(r, d) / quantile, 0.0)


def target_radius(d: int, dist: str, quantile: float, halfwidth: float) -> tuple[float, float, float]:
    """(r0, density at r0 / its maximum, P(|x| <= r0)): see the module docstring for the rule."""
    median = median_radius(d, dist, quantile, halfwidth)
    if dist == "shell":
        return median, 1.0, 0.5
    grid, cdf = es_radius_table(d, quantile)
    p = es_density(grid, d)
    peaks = np.flatnonzero((p[1:-1] > p[:-2]) & (p[1:-1] >= p[2:])) + 1  # the lobes' maxima on the grid
    i = int(peaks[np.argmin(np.abs(grid[peaks] - median))])
    # refine the lobe's maximum between its grid neighbours
    from scipy.optimize import minimize_scalar

    best = minimize_scalar(
        lambda r: -es_density(np.array([r]), d)[0],
        bounds=(grid[i - 1], grid[i + 1]),
        method="bounded",
        options={"xatol": 1e-12 * grid[i]},
    )
    r0 = float(best.x)
    p0 = float(es_density(np.array([r0]), d)[0])
    return r0, p0 / max(p0, float(p.max())), float(np.interp(r0, grid, cdf))


def sample(n: int, d: int, dist: str, rng: np.random.Generator, quantile: float, halfwidth: float) -> np.ndarray:
    """n inputs x = r u: [n, d]."""
    u = rng.standard_normal((n, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return u * sample_radius(n, d, dist, rng, quantile, halfwidth)[:, None]


def target(x: np.ndarray, name: str, r0: float) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1)
    if name == "relu":
        return np.maximum(0.0, 1.0 - norm / r0)
    if name == "ball":
        return (norm <= r0).astype(np.float64)
    raise ValueError(f"target must be one of {TARGETS}, got {name!r}")


# ---- the ES16 hard function (lecture notes §5.1, Lemma 5) ---------------------------------------------------------

ES16_MASS = (0.05, 0.95)  # the shells tile the radii between these quantiles of the (truncated) Eldan-Shamir law


def es16_shell_count(d: int, per_sqrt_d: float) -> int:
    """N = ceil(per_sqrt_d * sqrt(d)) shells: N grows with d (the stated rule)."""
    return int(np.ceil(per_sqrt_d * np.sqrt(d)))


def es16_shells(d: int, n_shells: int, quantile: float) -> np.ndarray:
    """Edges [N + 1] of N shells of equal probability between the 5 % and 95 % radii of the Eldan-Shamir law: thin
    where the law has its mass."""
    grid, cdf = es_radius_table(d, quantile)
    return np.interp(np.linspace(*ES16_MASS, n_shells + 1), cdf, grid)


def es16_signs(n: int, rng: np.random.Generator) -> np.ndarray:
    """N balanced random signs: ceil(N/2) of one sign and floor(N/2) of the other (which one gets the extra is a coin
    flip), in a uniformly random order.  An unbalanced draw can leave the function nearly constant on the radii where the
    law has its mass (one draw at d = 16 gave 7 of 8 shells one sign), which is not the hard function."""
    major = rng.choice([-1.0, 1.0])
    signs = np.where(np.arange(n) < -(-n // 2), major, -major)
    return rng.permutation(signs)


def es16_target(x: np.ndarray, edges: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """g(x) = sum_i eps_i 1{|x| in [edges_i, edges_{i+1})}: random signs on thin radial shells, 0 elsewhere."""
    norm = np.linalg.norm(x, axis=1)
    i = np.searchsorted(edges, norm, side="right") - 1
    inside = (i >= 0) & (i < len(signs))
    return np.where(inside, signs[np.clip(i, 0, len(signs) - 1)], 0.0)


def es16_moments(signs: np.ndarray) -> tuple[float, float]:
    """(E g, Var g) of the shell target: each shell holds probability (0.95 - 0.05)/N, so E g = 0.9 mean(eps) and
    E g^2 = 0.9."""
    mass = ES16_MASS[1] - ES16_MASS[0]
    mean = mass * float(np.mean(signs))
    return mean, mass - mean * mean
