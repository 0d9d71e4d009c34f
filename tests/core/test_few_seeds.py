"""Decisions that hold at two and three seeds (SPEC §6's error bars at the seeds the default runs).

A SE from the spread of n seeds has n - 1 degrees of freedom: judged against the normal law's z = 2 it decides a
flat-null row far more often than it says (30 % of draws at two seeds).  ``claims.exceeds`` uses Student's t at the
estimate's dof (``Estimate.dof``, Welch-Satterthwaite through differences and ratios), and a permutation p drawn at
random is drawn until its Monte-Carlo SE is a tenth of its distance to alpha, or the row stays inconclusive.  Each
test a claim uses is simulated here under a flat null at n = 2 and 3: its false-decision rate is at most the nominal
rate + 2 points."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from depthlab import claims
from depthlab.claims import TREND_SHARE, Z, critical, exceeds, trend
from depthlab.core import stats

DRAWS = 4000
NOMINAL = 2 * norm.sf(Z)  # exceeds decides either way beyond Z: 4.55 % of a flat null's draws, for a known SE


def _rate(decide, draws: int = DRAWS) -> float:
    return sum(decide(i) for i in range(draws)) / draws


@pytest.mark.parametrize("n", [2, 3])
def test_a_mean_over_n_seeds_is_decided_at_most_at_the_nominal_rate_under_a_flat_null(n):
    rng = np.random.default_rng(n)
    draws = rng.normal(0.0, 1.0, (DRAWS, n))
    rate = _rate(lambda i: exceeds(stats.over_seeds(draws[i]), 0.0).holds is not None)
    assert rate <= NOMINAL + 0.02, (n, rate)
    # the normal law's bar alone, on the same draws, is far over it (so this check can fail)
    z_rate = _rate(lambda i: abs(draws[i].mean() / (draws[i].std(ddof=1) / math.sqrt(n))) >= Z)
    assert z_rate > NOMINAL + 0.05, (n, z_rate)
    assert stats.over_seeds(draws[0]).dof == n - 1 and critical(Z, n - 1) > Z


@pytest.mark.parametrize("n", [2, 3])
def test_a_difference_and_a_ratio_of_seed_means_keep_the_nominal_rate(n):
    rng = np.random.default_rng(10 + n)
    a, b = rng.normal(5.0, 1.0, (DRAWS, n)), rng.normal(5.0, 1.0, (DRAWS, n))
    diff = _rate(
        lambda i: exceeds(stats.difference(stats.over_seeds(a[i]), stats.over_seeds(b[i])), 0.0).holds is not None
    )
    ratio = _rate(lambda i: exceeds(stats.ratio(stats.over_seeds(a[i]), stats.over_seeds(b[i])), 1.0).holds is not None)
    assert diff <= NOMINAL + 0.02 and ratio <= NOMINAL + 0.02, (n, diff, ratio)
    e = stats.difference(stats.over_seeds(a[0]), stats.over_seeds(b[0]))
    assert n - 1 <= e.dof <= 2 * (n - 1) + 1e-9  # Welch-Satterthwaite lies between one side's dof and their sum
    # a known SE beside the seeds' (a binomial one) raises the dof, never above infinity
    w = stats.with_se(stats.over_seeds(a[0]), 10.0)
    assert w.dof > n - 1 and math.isclose(w.se, math.hypot(stats.over_seeds(a[0]).se, 10.0))


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("depths", [3, 4])
def test_a_trend_over_depths_is_decided_at_most_at_its_nominal_rate_under_a_flat_null(n, depths):
    rng = np.random.default_rng(100 * n + depths)
    x = np.log(np.arange(1, depths + 1))
    draws = rng.normal(0.0, 1.0, (1000, depths, n))
    rate = _rate(lambda i: trend(x, list(draws[i]), falling=False).holds is not None, 1000)
    assert rate <= 2 * (1 - TREND_SHARE) + 0.02, (n, depths, rate)


def test_a_random_permutation_p_is_drawn_until_its_monte_carlo_se_is_a_tenth_of_its_distance_to_alpha(monkeypatch):
    """8 depths x 3 seeds: 24! / 6^8 arrangements, drawn at random.  With alpha given, the draws grow until the MC SE
    is under |p - alpha| / 10 (or the cap); a p sitting on alpha at a small cap leaves the row inconclusive, saying so."""
    rng = np.random.default_rng(7)
    x = np.log(np.arange(1, 9))
    samples = [rng.normal(0.02 * k, 1.0, 3) for k in range(8)]
    t = stats.trend_test(x, samples, alpha=0.05)
    p = min(t.p_up, t.p_down)
    assert "random" in t.how and t.mc_ok and t.mc_se < abs(p - 0.05) / 10, t
    # alpha placed on the observed p: no number of draws separates them; at a cap of 4 000 the row says so
    monkeypatch.setattr(stats, "MAX_RESAMPLES", 4000)
    t2 = stats.trend_test(x, samples, alpha=p)
    assert not t2.mc_ok and "4000 random" in t2.how
    monkeypatch.setattr(claims, "TREND_SHARE", 1 - p)
    v = trend(x, samples, falling=False, share=1 - p)
    assert v.holds is None and "Monte-Carlo" in v.problem and v.problem.kinds == ("error_bars",)
