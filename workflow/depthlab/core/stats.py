"""Estimates with their standard errors, and the few tests the claim checkers decide with.

Arrays in, numbers out; no pandas, no paths.  Every quantity a claim compares is an :class:`Estimate` (a value and
its standard error), so a checker never compares bare numbers (``depthlab.claims`` turns an estimate and a
threshold into a verdict with its z):

* :func:`over_seeds`: the mean of per-seed values, SE = sample standard deviation / sqrt(n) (n >= 2).
* :func:`binomial`: an accuracy measured on ``n`` test points, SE = sqrt(p (1 - p) / n).
* :func:`bootstrap_mean`: the mean of per-point losses, SE from resampling the points.
* :func:`window_noise`: a curve's check-to-check fluctuation over its last window (the SD of successive differences
  / sqrt 2, which a steady trend does not inflate).
* :func:`combine`: independent SEs added in quadrature.
* :func:`difference`, :func:`ratio`: the SE of a - b, and of a / b by the delta method.
* :func:`trend_sign`: the share of bootstrap resamples in which a curve's rank trend keeps its sign.
* :func:`loglog_slope`: the least-squares slope of log y against log x, with its SE.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata


@dataclass(frozen=True)
class Estimate:
    value: float
    se: float  # NaN: no error bar could be formed (one value and nothing else to resample)
    n: int = 1  # how many values (seeds, test points) the estimate rests on
    how: str = ""  # where the SE comes from: "seeds", "binomial", "bootstrap", "window", ...

    def __str__(self) -> str:
        return f"{self.value:.4g} +- {self.se:.2g}" if math.isfinite(self.se) else f"{self.value:.4g} (no SE)"


def over_seeds(values) -> Estimate:
    """Mean of per-seed values (NaN, a diverged seed, left out) with SE = s / sqrt(n); NaN SE for fewer than 2 seeds."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return Estimate(float("nan"), float("nan"), 0, "seeds")
    se = float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) >= 2 else float("nan")
    return Estimate(float(v.mean()), se, len(v), "seeds")


def binomial(p: float, n: int) -> Estimate:
    """An accuracy ``p`` on ``n`` independent test points: SE = sqrt(p (1 - p) / n)."""
    if n <= 0:
        return Estimate(float(p), float("nan"), 0, "binomial")
    return Estimate(float(p), math.sqrt(max(p * (1 - p), 0.0) / n), int(n), "binomial")


def bootstrap_mean(losses, resamples: int = 2000, seed: int = 0) -> Estimate:
    """Mean of per-point losses with its bootstrap SE (resampling the points with replacement)."""
    x = np.asarray(losses, dtype=float)
    if len(x) < 2:
        return Estimate(float(x.mean()) if len(x) else float("nan"), float("nan"), len(x), "bootstrap")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    return Estimate(float(x.mean()), float(means.std(ddof=1)), len(x), "bootstrap")


def window_noise(curve) -> float:
    """The check-to-check fluctuation of a curve's last window: SD of successive differences / sqrt 2 (for white noise
    of SD s around a slow trend the differences have SD s sqrt 2); NaN for fewer than 3 points."""
    c = np.asarray(curve, dtype=float)
    c = c[np.isfinite(c)]
    if len(c) < 3:
        return float("nan")
    return float(np.diff(c).std(ddof=1) / math.sqrt(2))


def combine(*ses: float) -> float:
    """Independent standard errors in quadrature; NaN ones are skipped, NaN if all are."""
    fin = [s for s in ses if s is not None and math.isfinite(s)]
    return float(math.sqrt(sum(s * s for s in fin))) if fin else float("nan")


def difference(a: Estimate, b: Estimate) -> Estimate:
    """a - b, independent: SE = sqrt(se_a^2 + se_b^2) (NaN when either SE is NaN: a bare side gives no error bar)."""
    return Estimate(a.value - b.value, math.hypot(a.se, b.se), min(a.n, b.n), "difference")


def ratio(a: Estimate, b: Estimate) -> Estimate:
    """a / b, independent, by the delta method: SE = |a/b| sqrt((se_a/a)^2 + (se_b/b)^2)."""
    r = a.value / b.value if b.value else float("nan")
    rel = math.hypot(a.se / a.value if a.value else float("nan"), b.se / b.value if b.value else float("nan"))
    return Estimate(r, abs(r) * rel, min(a.n, b.n), "ratio")


def spearman_rows(x: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Spearman's rho of x with each row of ys at once: x one row [k] for every row of ys [R, k], or a row of its own
    per row of ys [R, k] (average ranks for ties, as spearmanr; 0 for a constant row)."""
    x = np.asarray(x, dtype=float)
    k = x.shape[-1]
    if k == 2:
        return np.sign((ys[:, 1] - ys[:, 0]) * (x[..., 1] - x[..., 0]))
    rx = rankdata(x, axis=-1) - (k + 1) / 2  # average ranks always sum to k (k + 1) / 2: centred exactly
    ry = rankdata(ys, axis=1) - (k + 1) / 2
    num = (ry * rx).sum(axis=1)
    den = np.sqrt((ry * ry).sum(axis=1) * (rx * rx).sum(axis=-1))
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def trend_sign(x, samples: list, resamples: int = 2000, seed: int = 0,
               sem: list | None = None) -> tuple[float, float, float, float]:
    """(rho, share of resamples with rho > 0, share with rho < 0, SD of rho over the resamples) of the rank trend of the
    mean of y against x.

    ``samples[i]`` holds the replicate values at ``x[i]`` (seeds).  Each resample draws, at every x, that many values
    with replacement from its replicates and takes their mean; with one replicate at some x, that point is drawn from a
    normal of its ``sem[i]`` (the test-sample SE of one net), or kept fixed when no SE is given.  A trend "holds its sign"
    when the share in that sign is >= 0.95 (the checkers' rule)."""
    x = np.asarray(x, dtype=float)
    groups = [np.asarray(s, dtype=float)[np.isfinite(np.asarray(s, dtype=float))] for s in samples]
    obs = float(spearman_rows(x, np.array([[g.mean() for g in groups]]))[0])
    rhos = resampled_rhos(x, groups, resamples, seed, sem)
    return obs, float((rhos > 0).mean()), float((rhos < 0).mean()), float(rhos.std(ddof=1))


def resampled_means(samples: list, resamples: int = 2000, seed: int = 0, sem: list | None = None) -> list:
    """Bootstrap resamples of the means of ``samples`` (one array of ``resamples`` means per group; see
    :func:`trend_sign` for a group of one replicate)."""
    groups = [np.asarray(s, dtype=float)[np.isfinite(np.asarray(s, dtype=float))] for s in samples]
    rng = np.random.default_rng(seed)
    out = []
    for i, g in enumerate(groups):
        if len(g) >= 2:
            out.append(g[rng.integers(0, len(g), size=(resamples, len(g)))].mean(axis=1))
        else:
            s = (sem[i] if sem is not None else 0.0) or 0.0
            out.append(g[0] + (rng.normal(0.0, s, resamples) if math.isfinite(s) and s > 0 else np.zeros(resamples)))
    return out


def resampled_rhos(x, samples: list, resamples: int = 2000, seed: int = 0, sem: list | None = None) -> np.ndarray:
    """Spearman's rho of x with the means of ``samples`` over bootstrap resamples (see :func:`trend_sign`)."""
    x = np.asarray(x, dtype=float)
    return spearman_rows(x, np.column_stack(resampled_means(samples, resamples, seed, sem)))


def loglog_slope(x, y) -> Estimate:
    """Least-squares slope of log y against log x with its standard error (NaN SE for 2 points)."""
    return slope(np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float)), how="loglog")


def slope(lx, ly, how: str = "slope", point_se=None) -> Estimate:
    """Least-squares slope of y against x, SE = sqrt(residual variance / sum (x - mean x)^2) (NaN SE for 2 points).

    ``point_se``: each y's own SE (its seed spread).  The SE is then the larger of the residual one and the one those
    carry into the slope, sqrt(sum (x - mean x)^2 se_i^2) / sum (x - mean x)^2 (the fit is a linear map of y); for
    2 points the carried one alone.  A point with no SE (NaN) makes the carried SE NaN: a bare point gives no bar."""
    lx, ly = np.asarray(lx, dtype=float), np.asarray(ly, dtype=float)
    pse = np.full_like(ly, np.nan) if point_se is None else np.asarray(point_se, dtype=float)
    ok = np.isfinite(lx) & np.isfinite(ly)
    lx, ly, pse = lx[ok], ly[ok], pse[ok]
    if len(lx) < 2:
        return Estimate(float("nan"), float("nan"), len(lx), how)
    A = np.vstack([lx, np.ones_like(lx)]).T
    coef, *_ = np.linalg.lstsq(A, ly, rcond=None)
    dx = lx - lx.mean()
    sxx = float((dx ** 2).sum())
    carried = float(math.sqrt(float((dx ** 2 * pse ** 2).sum())) / sxx) if point_se is not None else float("nan")
    if len(lx) == 2:
        return Estimate(float(coef[0]), carried, 2, how)
    resid = ly - A @ coef
    s2 = float(resid @ resid) / (len(lx) - 2)
    se = math.sqrt(s2 / sxx)
    return Estimate(float(coef[0]), max(se, carried) if math.isfinite(carried) else se, len(lx), how)
