"""Estimates with their standard errors, and the few tests the claim checkers decide with.

Arrays in, numbers out; no pandas, no paths.  Every quantity a claim compares is an :class:`Estimate` (a value and
its standard error), so a checker never compares bare numbers (``depthlab.claims`` turns an estimate and a
threshold into a verdict with its z):

* :func:`over_seeds`: the mean of per-seed values, SE = sample standard deviation / sqrt(n) (n >= 2), with n - 1
  degrees of freedom (``Estimate.dof``: a claim is decided against Student's t there, not the normal law).
* :func:`binomial`: an accuracy measured on ``n`` test points, SE = sqrt(p (1 - p) / n).
* :func:`bootstrap_mean`: the mean of per-point losses, SE from resampling the points.
* :func:`window_noise`: a curve's check-to-check fluctuation over its last window (the SD of successive differences
  / sqrt 2, which a steady trend does not inflate).
* :func:`robust_noise`: the same fluctuation, robust to a one-check spike (the median absolute deviation of the differences).
* :func:`combine`: independent SEs added in quadrature.
* :func:`difference`, :func:`ratio`: the SE of a - b, and of a / b by the delta method; their degrees of freedom by
  Welch-Satterthwaite (:func:`welch_dof`).
* :func:`trend_test`: a trend in y against x over seeds, decided by an exact permutation test of the slope (its error
  rate is what it says at 2-5 seeds, where a bootstrap of the means is over-confident); :func:`trend_sign` its
  confidences in each sign.
* :func:`loglog_slope`: the least-squares slope of log y against log x, with its SE.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.stats import rankdata


@dataclass(frozen=True)
class Estimate:
    value: float
    se: float  # NaN: no error bar could be formed (one value and nothing else to resample)
    n: int = 1  # how many values (seeds, test points) the estimate rests on
    how: str = ""  # where the SE comes from: "seeds", "binomial", "bootstrap", "window", ...
    # degrees of freedom of the SE: n - 1 where it is the spread of n seeds (Student's t decides then); inf where the
    # SE is known rather than estimated from a few values (binomial, bootstrap over many points, an exact value)
    dof: float = math.inf

    def __str__(self) -> str:
        return f"{self.value:.4g} +- {self.se:.2g}" if math.isfinite(self.se) else f"{self.value:.4g} (no SE)"


def over_seeds(values) -> Estimate:
    """Mean of per-seed values (NaN, a diverged seed, left out) with SE = s / sqrt(n); NaN SE for fewer than 2 seeds."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return Estimate(float("nan"), float("nan"), 0, "seeds")
    se = float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) >= 2 else float("nan")
    return Estimate(float(v.mean()), se, len(v), "seeds", float(len(v) - 1) if len(v) >= 2 else math.inf)


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


def robust_noise(curve) -> float:
    """The check-to-check fluctuation of a curve, robust to a one-check spike and to a steady trend: the median absolute
    deviation of its successive differences from their median, x 1.4826 (a normal's MAD to its SD) / sqrt 2; NaN for
    fewer than 3 points.  For white noise of SD s it estimates s, as :func:`window_noise` does."""
    c = np.asarray(curve, dtype=float)
    c = c[np.isfinite(c)]
    if len(c) < 3:
        return float("nan")
    d = np.diff(c)
    return float(np.median(np.abs(d - np.median(d))) * 1.4826 / math.sqrt(2))


def welch_dof(*parts: tuple[float, float]) -> float:
    """Welch-Satterthwaite: the degrees of freedom of a sum of independent variances ``(variance, dof)``:
    (sum v)^2 / sum(v^2 / dof); a part with infinite dof adds nothing to the denominator; inf when every part's is."""
    parts = [(v, d) for v, d in parts if v is not None and math.isfinite(v) and v > 0]
    den = sum(v * v / d for v, d in parts if math.isfinite(d) and d > 0)
    if not parts or den == 0:
        return math.inf
    return float(sum(v for v, _ in parts) ** 2 / den)


def with_se(e: Estimate, *extra: float, how: str = "") -> Estimate:
    """``e`` with further independent SEs (each known: infinite dof) added in quadrature; its dof by
    :func:`welch_dof`."""
    se = combine(e.se, *extra)
    dof = welch_dof((e.se**2, e.dof), *((x * x, math.inf) for x in extra if x is not None))
    return Estimate(e.value, se, e.n, how or e.how, dof)


def combine(*ses: float) -> float:
    """Independent standard errors in quadrature; NaN ones are skipped, NaN if all are."""
    fin = [s for s in ses if s is not None and math.isfinite(s)]
    return float(math.sqrt(sum(s * s for s in fin))) if fin else float("nan")


def difference(a: Estimate, b: Estimate) -> Estimate:
    """a - b, independent: SE = sqrt(se_a^2 + se_b^2) (NaN when either SE is NaN: a bare side gives no error bar)."""
    return Estimate(
        a.value - b.value,
        math.hypot(a.se, b.se),
        min(a.n, b.n),
        "difference",
        welch_dof((a.se**2, a.dof), (b.se**2, b.dof)),
    )


def ratio(a: Estimate, b: Estimate) -> Estimate:
    """a / b, independent, by the delta method: SE = |a/b| sqrt((se_a/a)^2 + (se_b/b)^2)."""
    r = a.value / b.value if b.value else float("nan")
    ra = a.se / a.value if a.value else float("nan")
    rb = b.se / b.value if b.value else float("nan")
    return Estimate(
        r, abs(r) * math.hypot(ra, rb), min(a.n, b.n), "ratio", welch_dof((ra * ra, a.dof), (rb * rb, b.dof))
    )


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


@dataclass(frozen=True)
class TrendTest:
    """The outcome of :func:`trend_test`: a trend in y against x, with a test whose error rate is what it says."""

    slope: float  # least-squares slope of y against x over every replicate value
    se: float  # its standard error (the regression's residuals over every replicate; the points' own SEs in the z law)
    p_up: float  # one-sided p-value of "y rises with x" (small: the rise is decided)
    p_down: float  # one-sided p-value of "y falls with x"
    rho: float  # Spearman's rho of the group means with x (a descriptive number; the p-values decide)
    rho_sd: float  # the SD of that rho under the test's null (its arrangements), so rho / rho_sd reads as a score
    how: str  # the law the p-values come from: "exact permutation (K arrangements)", "permutation (R random)", "z"
    n: int  # replicate values the test rests on
    mc_se: float = 0.0  # the Monte-Carlo SE of the smaller p-value (0: exact, or a normal law)
    mc_ok: bool = True  # False: random permutations up to MAX_RESAMPLES left that p within 10 MC SEs of alpha


EXACT_ARRANGEMENTS = 20_000  # up to this many distinct arrangements the permutation test enumerates them all
MAX_RESAMPLES = 256_000  # random permutations drawn at most, where they cannot be enumerated


@lru_cache(maxsize=64)
def _arrangements(sizes: tuple[int, ...]) -> np.ndarray:
    """Every distinct assignment of N = sum(sizes) pooled values to groups of these sizes: [K, N] group index per value
    position (K = N! / prod(n_i!)), or an empty array when K exceeds EXACT_ARRANGEMENTS."""
    n = sum(sizes)
    k = math.factorial(n)
    for s in sizes:
        k //= math.factorial(s)
    if k > EXACT_ARRANGEMENTS:
        return np.empty((0, n), dtype=np.int8)
    out = []

    def fill(free: tuple[int, ...], g: int, row: list[int]) -> None:
        if g == len(sizes) - 1:
            for i in free:
                row[i] = g
            out.append(row.copy())
            return
        for pick in itertools.combinations(free, sizes[g]):
            for i in pick:
                row[i] = g
            fill(tuple(i for i in free if i not in pick), g + 1, row)

    fill(tuple(range(n)), 0, [0] * n)
    return np.asarray(out, dtype=np.int8)


def trend_test(
    x, samples: list, resamples: int = 2000, seed: int = 0, sem: list | None = None, alpha: float | None = None
) -> TrendTest:
    """Does y trend with x?  ``samples[i]`` holds the replicate values (seeds; NaN, a diverged seed, left out) at ``x[i]``.

    The statistic is the least-squares slope of every replicate value against its x.  Its law under the flat null (the
    values do not depend on x) is the permutation law: every distinct assignment of the pooled values to the groups
    (their sizes fixed) is equally likely, so the one-sided p-value, the share of assignments whose slope is at least
    (at most) the observed one, is exact at any number of seeds; it is enumerated up to EXACT_ARRANGEMENTS
    arrangements, else estimated from ``resamples`` random permutations as (1 + hits) / (1 + resamples), which is also
    valid.  (The slope is a monotone function of the t statistic of the pooled regression over permutations of a fixed
    pool, so this is the permutation version of the t test on the slope.)  With 3 seeds at 3 depths there are 1 680
    arrangements; with 2 seeds at 2 depths only 6, so no trend can be decided at 5 % there (p >= 1/6): it says so by
    staying inconclusive.  Drawn at random, with ``alpha`` given, the draws double (up to MAX_RESAMPLES) until the
    smaller p-value's Monte-Carlo SE is under a tenth of its distance to alpha; ``mc_ok`` False where that is not
    reached (the draw, not the data, would decide).

    A group of one replicate with its own SE given (``sem[i]``, one net's test-sample SE) cannot be permuted against
    groups of seeds on a common footing: then the slope of the means is tested with a z law, its SE from each mean's SE
    (the seeds' SE where a group has two or more, ``sem[i]`` otherwise) carried through the fit."""
    x = np.asarray(x, dtype=float)
    groups = [np.asarray(s, dtype=float)[np.isfinite(np.asarray(s, dtype=float))] for s in samples]
    keep = [i for i, g in enumerate(groups) if len(g)]
    x, groups = x[keep], [groups[i] for i in keep]
    sem = [sem[i] for i in keep] if sem is not None else None
    means = np.array([g.mean() for g in groups])
    nan = float("nan")
    if len(groups) < 2 or np.ptp(x) == 0:
        return TrendTest(nan, nan, 1.0, 1.0, nan, nan, "too few points", sum(len(g) for g in groups))
    rho = float(spearman_rows(x, means[None, :])[0])
    if sem is not None and any(len(g) < 2 for g in groups):
        return _z_trend(x, groups, means, sem, rho)
    pool = np.concatenate(groups)
    xs = np.concatenate([np.full(len(g), xi) for g, xi in zip(groups, x)])
    n = len(pool)
    dx = xs - xs.mean()
    sxx = float(dx @ dx)
    slope_obs = float(dx @ pool) / sxx
    resid = pool - pool.mean() - slope_obs * dx
    se = math.sqrt(float(resid @ resid) / (n - 2) / sxx) if n > 2 else nan
    sizes = tuple(len(g) for g in groups)
    arr = _arrangements(sizes)
    xg = x - xs.mean()
    if len(arr):
        how = f"exact permutation ({len(arr)} arrangements)"
        # arrangement a puts value j in group arr[a, j]: its slope numerator is sum_j (x_group - mean) * value_j
        stat = xg[arr] @ pool
    else:
        rng = np.random.default_rng(seed)
        perm = np.argsort(rng.random((resamples, n)), axis=1)
        stat = pool[perm] @ dx
    obs = float(dx @ pool)
    mc_se, mc_ok = 0.0, True
    if len(arr):
        tol = 1e-9 * max(1.0, float(np.abs(stat).max()))
        p_up, p_down = float((stat >= obs - tol).mean()), float((stat <= obs + tol).mean())
    else:
        up = down = 0
        drawn, batch = 0, stat
        while True:
            tol = 1e-9 * max(1.0, abs(obs), float(np.abs(batch).max()))
            up += int((batch >= obs - tol).sum())
            down += int((batch <= obs + tol).sum())
            drawn += len(batch)
            p_up, p_down = (1 + up) / (1 + drawn), (1 + down) / (1 + drawn)
            p = min(p_up, p_down)
            mc_se = math.sqrt(p * (1 - p) / drawn)
            mc_ok = alpha is None or mc_se < abs(p - alpha) / 10
            if mc_ok or drawn >= MAX_RESAMPLES:
                break
            more = min(drawn, MAX_RESAMPLES - drawn)  # double the draws
            batch = pool[np.argsort(rng.random((more, n)), axis=1)] @ dx
        how = f"permutation ({drawn} random)"
    # rho's spread under the same null: the group means of (at most 2000 of) its arrangements
    sz = np.asarray(sizes, dtype=float)
    if len(arr):
        take = arr[:: max(1, len(arr) // 2000)]
        gm = np.stack([(take == g) @ pool for g in range(len(groups))], axis=1) / sz
    else:
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        gm = np.add.reduceat(pool[perm[:2000]], starts, axis=1) / sz
    rho_sd = float(spearman_rows(x, gm).std(ddof=1)) if len(gm) > 1 else nan
    return TrendTest(slope_obs, se, min(p_up, 1.0), min(p_down, 1.0), rho, rho_sd, how, n, mc_se, mc_ok)


def _z_trend(x: np.ndarray, groups: list, means: np.ndarray, sem: list, rho: float) -> TrendTest:
    """The slope of the group means with SE carried from each mean's own SE; normal law (see :func:`trend_test`)."""
    from scipy.stats import norm

    v = np.array(
        [
            g.std(ddof=1) ** 2 / len(g) if len(g) >= 2 else (sem[i] if sem[i] is not None else float("nan")) ** 2
            for i, g in enumerate(groups)
        ]
    )
    dx = x - x.mean()
    sxx = float(dx @ dx)
    b = float(dx @ means) / sxx
    se = math.sqrt(float((dx**2 * v).sum())) / sxx if np.isfinite(v).all() else float("nan")
    if not (math.isfinite(se) and se > 0):
        return TrendTest(b, se, 1.0, 1.0, rho, float("nan"), "z (no SE: undecided)", len(groups))
    return TrendTest(
        b,
        se,
        float(norm.sf(b / se)),
        float(norm.cdf(b / se)),
        rho,
        float("nan"),
        "z (each mean's own SE)",
        sum(len(g) for g in groups),
    )


def trend_sign(
    x, samples: list, resamples: int = 2000, seed: int = 0, sem: list | None = None
) -> tuple[float, float, float, float]:
    """(rho, confidence that y rises with x, confidence that it falls, SD of rho under the null) for the trend of y
    against x: :func:`trend_test`, its one-sided p-values turned into confidences 1 - p.  A checker decides a sign at
    confidence >= 0.95, i.e. p <= 0.05 one-sided, so under a flat null either sign is decided in at most 10 % of draws
    at any number of seeds (tests/core/test_stats.py simulates it).  rho is Spearman's of the means (descriptive)."""
    t = trend_test(x, samples, resamples=resamples, seed=seed, sem=sem)
    return t.rho, 1.0 - t.p_up, 1.0 - t.p_down, t.rho_sd


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
    sxx = float((dx**2).sum())
    carried = float(math.sqrt(float((dx**2 * pse**2).sum())) / sxx) if point_se is not None else float("nan")
    if len(lx) == 2:
        return Estimate(float(coef[0]), carried, 2, how)
    resid = ly - A @ coef
    s2 = float(resid @ resid) / (len(lx) - 2)
    se = math.sqrt(s2 / sxx)
    return Estimate(float(coef[0]), max(se, carried) if math.isfinite(carried) else se, len(lx), how)
