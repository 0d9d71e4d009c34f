"""depthlab.core.stats against closed forms and simulated data of known spread, and depthlab.claims' decisions on them."""

import math

import numpy as np
import pandas as pd
import pytest

from depthlab import claims
from depthlab.core import stats


def test_over_seeds_se_matches_the_spread_of_means_of_simulated_seeds():
    rng = np.random.default_rng(0)
    draws = rng.normal(0.3, 0.05, size=(20000, 4))  # 4 seeds of SD 0.05: the SE of their mean is 0.025
    ses = np.array([stats.over_seeds(d).se for d in draws[:4000]])
    assert abs(np.sqrt((ses**2).mean()) - 0.025) < 0.001  # E[s^2]/n = sigma^2/n
    assert abs(draws.mean(axis=1).std() - 0.025) < 0.0005
    e = stats.over_seeds([0.1, np.nan, 0.3])
    assert e.n == 2 and e.value == pytest.approx(0.2) and e.se == pytest.approx(0.1)
    assert math.isnan(stats.over_seeds([0.2]).se)


def test_binomial_and_bootstrap_ses_against_closed_forms():
    assert stats.binomial(0.9, 400).se == pytest.approx(0.015)
    rng = np.random.default_rng(1)
    x = rng.exponential(2.0, 5000)  # SD 2: the SE of the mean is 2 / sqrt(5000)
    b = stats.bootstrap_mean(x, resamples=1000)
    assert b.se == pytest.approx(x.std(ddof=1) / np.sqrt(len(x)), rel=0.1)
    assert stats.window_noise(0.5 + 0.001 * np.arange(200) + rng.normal(0, 0.01, 200)) == pytest.approx(0.01, rel=0.15)


def test_ratio_and_difference_ses_against_a_simulation():
    rng = np.random.default_rng(2)
    a, b = rng.normal(2.0, 0.05, 200000), rng.normal(1.0, 0.02, 200000)
    r = stats.ratio(stats.Estimate(2.0, 0.05), stats.Estimate(1.0, 0.02))
    assert r.se == pytest.approx((a / b).std(), rel=0.03)
    assert stats.difference(stats.Estimate(2.0, 0.05), stats.Estimate(1.0, 0.02)).se == pytest.approx(
        (a - b).std(), rel=0.01
    )


def test_loglog_slope_recovers_a_power_law_and_its_se_covers_it():
    rng = np.random.default_rng(3)
    eta = np.logspace(-3, -1, 6)
    hits = 0
    for _i in range(400):
        y = 0.7 * eta**1.0 * np.exp(rng.normal(0, 0.1, len(eta)))
        e = stats.loglog_slope(eta, y)
        hits += abs(e.value - 1.0) <= 1.96 * e.se
    assert 0.88 <= hits / 400 <= 0.98  # a 95 % interval (t with 4 dof is a bit wider than 1.96)


def test_slope_carries_the_points_own_ses_and_covers_the_truth_with_two_points():
    """Two points (R1 with one d left out) gave no SE; the points' seed SEs carried through the fit give one that covers
    the true slope at the stated rate (simulated: 4 seeds per point, SD 0.05 each)."""
    rng = np.random.default_rng(4)
    x = np.array([2.0, 4.0])
    hits = 0
    for _i in range(1000):
        seeds = 0.1 + 0.2 * x[:, None] + rng.normal(0, 0.05, (2, 4))
        se = [stats.over_seeds(v).se for v in seeds]
        e = stats.slope(x, seeds.mean(1), point_se=se)
        hits += abs(e.value - 0.2) <= 2 * e.se
    assert 0.85 <= hits / 1000 <= 0.99  # z = 2 with SEs from 4 seeds (t with 3 dof: about 86 %)
    assert math.isnan(stats.slope(x, [0.5, 0.9]).se)
    assert math.isnan(stats.slope(x, [0.5, 0.9], point_se=[0.01, float("nan")]).se)  # a bare point gives no bar
    # with more points the larger of the residuals' SE and the carried one: exact points on a line keep the carried one
    e = stats.slope([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], point_se=[0.1, 0.1, 0.1])
    assert e.value == pytest.approx(1.0) and e.se == pytest.approx(0.1 / math.sqrt(2))


def test_trend_sign_is_sure_of_a_clear_trend_and_unsure_of_noise():
    rho, up, down, sd = stats.trend_sign([1, 2, 3, 4], [[0.9, 0.91], [0.6, 0.61], [0.5, 0.52], [0.4, 0.41]])
    # the observed arrangement is the most extreme of the 8! / 2!^4 = 2520: p = 1 / 2520
    assert rho == -1.0 and down == pytest.approx(1 - 1 / 2520) and up == 0.0
    rho, up, down, sd = stats.trend_sign(
        [1, 2, 3, 4], [[0.3, 0.36, 0.24], [0.2, 0.26, 0.14], [0.25, 0.31, 0.19], [0.295, 0.355, 0.235]]
    )
    assert max(up, down) < 0.95 and sd > 0.2


def test_the_exact_permutation_p_equals_a_brute_force_count_over_every_permutation():
    """An independent estimate: every one of the 7! orderings of the pooled values (not the distinct group assignments
    the test enumerates), counted directly."""
    import itertools

    x = [1.0, 2.0, 4.0]
    samples = [[0.31, 0.29], [0.25, 0.33, 0.27], [0.22, 0.26]]
    t = stats.trend_test(np.log(x), samples)
    pool = np.concatenate(samples)
    xs = np.repeat(np.log(x), [2, 3, 2])
    obs = float(np.dot(xs - xs.mean(), pool))
    stat = np.array([np.dot(xs - xs.mean(), pool[list(p)]) for p in itertools.permutations(range(7))])
    assert t.p_down == pytest.approx(float((stat <= obs + 1e-12).mean()))
    assert t.p_up == pytest.approx(float((stat >= obs - 1e-12).mean()))
    assert t.how.startswith("exact permutation (210 arrangements)")
    # the slope is the least-squares slope of every value against log x
    assert t.slope == pytest.approx(np.polyfit(xs, pool, 1)[0])


@pytest.mark.parametrize("seeds", [2, 3, 5])
def test_the_trend_test_decides_a_flat_null_at_its_nominal_rate(seeds):
    """1 000 flat-null draws (no trend, SD 0.05) at depths {1, 2, 4} and {1, 2, 3, 4}: a sign is
    decided (confidence >= 0.95 either way, the checkers' rule) in at most the nominal 10 % plus 2 Monte Carlo SEs.
    The bootstrap of the means it replaced decided 22-25 % at 3 seeds (shown below on the same draws)."""
    rng = np.random.default_rng(100 + seeds)
    n = 1000
    nominal = 0.10
    mc = 2 * np.sqrt(nominal * (1 - nominal) / n)
    for depths in ([1, 2, 4], [1, 2, 3, 4]):
        hits = boot_hits = 0
        for i in range(n):
            samples = [rng.normal(0.3, 0.05, seeds) for _ in depths]
            _, up, down, _ = stats.trend_sign(np.log(depths), samples, seed=i)
            hits += (up >= 0.95) or (down >= 0.95)
            if seeds == 3 and i < 400:  # the old test: the share of bootstrap resamples of the means keeping the sign
                rhos = stats.resampled_rhos(np.log(depths), samples, 400, i)
                boot_hits += ((rhos > 0).mean() >= 0.95) or ((rhos < 0).mean() >= 0.95)
        assert hits / n <= nominal + mc, (depths, seeds, hits / n)
        assert hits / n >= nominal / 3, (depths, seeds, hits / n)  # and it is not a test that never decides
        if seeds == 3:
            assert boot_hits / 400 > nominal + mc, boot_hits / 400  # the over-confident old law, a negative control


def test_the_trend_test_decides_a_real_trend_and_its_z_law_takes_each_points_own_se():
    rng = np.random.default_rng(5)
    depths = np.log([1, 2, 4])
    falling = [rng.normal(m, 0.01, 3) for m in (0.30, 0.25, 0.20)]
    t = stats.trend_test(depths, falling)
    assert t.p_down <= 1 / 1680 + 1e-12 and t.slope < 0
    # one value per point with its own SE: a z law on the slope, SE carried from the points
    z = stats.trend_test(depths, [[0.30], [0.25], [0.20]], sem=[0.01, 0.01, 0.01])
    dx = depths - depths.mean()
    assert z.how.startswith("z") and z.se == pytest.approx(0.01 * np.sqrt((dx**2).sum()) / (dx**2).sum())
    assert z.p_down < 1e-6
    wide = stats.trend_test(depths, [[0.30], [0.25], [0.20]], sem=[0.1, 0.1, 0.1])
    assert 0.05 < wide.p_down < 0.5


def test_exceeds_decides_only_outside_z_standard_errors():
    assert claims.exceeds(stats.Estimate(0.5, 0.1), 0.25).holds is True  # z = 2.5
    t = claims.exceeds(stats.Estimate(0.35, 0.1), 0.25)
    assert t.holds is None and "inside the error bars" in t.problem and t.z == pytest.approx(1.0)
    assert claims.exceeds(stats.Estimate(0.0, 0.1), 0.25).holds is False
    assert claims.exceeds(stats.Estimate(0.1, 0.05), 0.25, below=True).holds is True  # 3 SE below
    bare = claims.exceeds(stats.Estimate(0.3, float("nan")), 0.25)
    assert bare.holds is True and bare.z is None and "no error bar" in bare.note


def test_claims_json_rows_carry_the_four_fields_and_a_verdict_and_are_strict_json():
    import json

    v = claims.judge("X", "s", "f", "subj", claims.exceeds(stats.Estimate(0.35, 0.1), 0.25), "ev")
    row = json.loads(json.dumps(v.as_dict(), allow_nan=False))
    assert (
        row["verdict"] == "inconclusive" and row["effect"] == 0.35 and row["stderr"] == 0.1 and row["threshold"] == 0.25
    )
    assert row["z"] == pytest.approx(1.0)
    nan_row = claims.judge(
        "X", "s", "f", "subj", claims.exceeds(stats.Estimate(0.35, float("nan")), 0.25), "ev"
    ).as_dict()
    assert nan_row["stderr"] is None and nan_row["z"] is None and json.dumps(nan_row, allow_nan=False)
    old = {k: row[k] for k in ("claim", "statement", "figure", "subject", "holds", "evidence", "kind", "reason")}
    assert claims.Verdict.from_dict(old).effect is None  # a row of an older run reads, without the numbers
    md = claims.render("T", [v, claims.not_applicable("S2", "s", "f", "x", "ev", "add a width")], [])
    assert "| effect | SE | threshold | z |" in md and "0 hold, 0 do not hold, 1 inconclusive, 1 not applicable" in md


@pytest.mark.parametrize("seed", range(6))
def test_noise_inside_the_error_bar_never_flips_holds_into_does_not_hold(seed):
    """The property: perturbing every seed's error by noise within the SE of a Mori & Ueda table never turns a
    row that holds into one that does not, nor the reverse (it may move a row to or from inconclusive)."""
    from depthlab.studies.mori_ueda.claims import depth_claims

    rng = np.random.default_rng(seed)
    curves = {
        "2-local": ("local", {1: 0.6, 2: 0.45, 3: 0.4, 4: 0.41}),
        "2-global": ("global", {1: 0.3, 2: 0.33, 3: 0.36, 4: 0.4}),
        "1-local": ("local", {1: 0.2, 2: 0.3, 3: 0.26, 4: 0.3}),
    }
    rows = []
    for target, (loc, nn) in curves.items():
        k = 1 if target.startswith("1") else 2
        for L, e in nn.items():
            for s in range(3):
                rows.append(
                    {
                        "target": target,
                        "k": k,
                        "locality": loc,
                        "depth": L,
                        "lr": 0.1,
                        "seed": s,
                        "nn_test_error": e + rng.normal(0, 0.02),
                        "ntk_test_error": 0.5 + 0.01 * L * (1 if k == 2 else -1),
                        "diverged": False,
                    }
                )
    base = pd.DataFrame(rows)
    before = depth_claims("f", None, base)
    for _ in range(10):
        t = base.copy()
        sd = t.groupby(["target", "depth"]).nn_test_error.transform("std") / np.sqrt(3)
        t["nn_test_error"] += rng.uniform(-1, 1, len(t)) * sd  # within the SE of each depth's mean
        after = depth_claims("f", None, t)
        for a, b in zip(before, after):
            assert {a.verdict, b.verdict} != {"holds", "does not hold"}, (a.claim, a.subject, a.evidence, b.evidence)


def test_a_row_of_parts_fails_only_on_a_part_decided_beyond_its_error_bar():
    """all_of failed a row whenever any part failed.  A part failing beyond its error bar (or exactly)
    still fails the row; a part failing on a bare value (no SE) leaves it inconclusive, saying so; a part inside its
    error bars beside a decided pass leaves it inconclusive."""
    passes = claims.exceeds(stats.Estimate(0.5, 0.1), 0.25)
    decided_fail = claims.exceeds(stats.Estimate(0.0, 0.1), 0.25)
    bare_fail = claims.exceeds(stats.Estimate(0.2, float("nan")), 0.25)
    exact_fail = claims.exceeds(stats.Estimate(0.2, 0.0), 0.25)
    inside = claims.exceeds(stats.Estimate(0.3, 0.1), 0.25)
    assert claims.all_of(passes, decided_fail).holds is False
    assert claims.all_of(passes, exact_fail).holds is False
    t = claims.all_of(passes, bare_fail)
    assert t.holds is None and "no error bar" in t.problem
    assert claims.all_of(passes, inside).holds is None
    assert claims.all_of(inside, decided_fail).holds is False
    assert claims.all_of(passes, passes).holds is True


def test_extension_rows_are_listed_apart_and_never_counted():
    paper = claims.judge("4", "s", "f", "2-local", claims.exceeds(stats.Estimate(0.0, 0.1), 0.25), "ev")
    ext = claims.judge("4-aside", "aside", "f", "2-local", claims.exceeds(stats.Estimate(0.0, 0.1), 0.25), "ev")
    ext.scope = "extension"
    assert claims.counts([paper, ext]) == (0, 1, 0, 0) and claims.counts([paper, ext], "extension") == (0, 1, 0, 0)
    md = claims.render("T", [paper, ext], [])
    main, apart = md.split("## Extensions")
    assert "| 4 |" in main and "4-aside" not in main and "| 4-aside |" in apart
    assert "0 hold, 1 do not hold" in main and "Extensions: 0 hold, 1 do not hold" in apart
    row = ext.as_dict()
    assert row["scope"] == "extension" and claims.Verdict.from_dict(row).scope == "extension"
    index = claims.render_index([("mori_ueda", "M&U", [paper.as_dict(), row])])
    head, tail = index.split("## Extensions")
    assert "| [M&U](mori_ueda/claims.md) | 0 | 1 | 0 | 0 | 1 |" in head and "4-aside" not in head and "4-aside" in tail
    with pytest.raises(ValueError, match="scope"):
        claims.Verdict("1", "s", "f", "x", True, "ev", scope="mine")


def test_robust_noise_estimates_white_noise_and_ignores_a_spike_and_a_trend():
    rng = np.random.default_rng(4)
    x = 0.3 * rng.standard_normal(4000)
    assert stats.robust_noise(x) == pytest.approx(0.3, rel=0.05) and stats.window_noise(x) == pytest.approx(
        0.3, rel=0.05
    )
    spiked = np.r_[0.01 * rng.standard_normal(200)]
    spiked[100] = 5.0
    assert stats.robust_noise(spiked) < 0.02 < stats.window_noise(spiked)
    assert stats.robust_noise(np.linspace(0, 1, 50)) == pytest.approx(0.0, abs=1e-12)
