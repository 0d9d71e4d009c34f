"""Radial distributions and targets: the Eldan-Shamir density against Parseval and its samples, r0."""

import numpy as np
import pytest
from scipy import stats

from depthlab.studies.separation import radial_targets


@pytest.mark.parametrize("d", [2, 3, 8, 32])
def test_eldan_shamir_density_has_unit_mass(d):
    """|phi|_2 = |1_ball|_2 = 1 (Parseval): the radial density integrates to 1 (tail ~ C/r beyond the grid added)."""
    R = radial_targets.unit_volume_radius(d)
    from scipy.special import gammaln

    assert abs(d / 2 * np.log(np.pi) + d * np.log(R) - gammaln(d / 2 + 1)) < 1e-12  # unit volume
    r = np.linspace(1e-7, 2000 / R, 4_000_001)
    p = radial_targets.es_density(r, d)
    body = np.trapezoid(p, r)
    # asymptotically J_nu(z)^2 averages to 1/(pi z), so p(r) ~ omega R^d / (2 pi^2 R r^2): tail mass omega R^(d-1) / (2 pi^2 r_max)
    tail = radial_targets.sphere_area(d) * R ** (d - 1) / (2 * np.pi**2 * r[-1])
    assert abs(body + tail - 1) < 2e-3


@pytest.mark.parametrize("d", [449, 450])
def test_the_eldan_shamir_law_holds_its_unit_mass_where_R_to_the_d_overflows(d):
    """From d = 450 R_d^d overflows a double (the data job died with OverflowError at dims [2, 500]); the density is
    then summed in logs.  Its mass, body plus the analytic tail (in logs too), is 1 on both sides of the switch."""
    from scipy.special import gammaln

    R = radial_targets.unit_volume_radius(d)
    r = np.linspace(1e-4, 4000 / R, 4_000_001)
    p = radial_targets.es_density(r, d)
    assert np.isfinite(p).all()
    log_omega = np.log(2.0) + d / 2 * np.log(np.pi) - gammaln(d / 2)
    tail = np.exp(log_omega + (d - 1) * np.log(R) - np.log(2 * np.pi**2 * r[-1]))
    assert abs(np.trapezoid(p, r) + tail - 1) < 2e-3


@pytest.mark.parametrize("d", [450, 1000])
def test_the_radius_table_and_r0_exist_past_the_overflow(d):
    grid, cdf = radial_targets.es_radius_table(d, 0.95)
    r0, rel, inside = radial_targets.target_radius(d, "eldan_shamir", 0.95, 0.1)
    assert cdf[-1] == 1.0 and np.all(np.diff(cdf) >= 0) and 0 < r0 < grid[-1] and 0 < rel <= 1 and 0.3 < inside < 0.7


def test_sampled_radii_follow_the_truncated_law():
    rng = np.random.default_rng(0)
    d, q = 4, 0.9
    r = radial_targets.sample_radius(20000, d, "eldan_shamir", rng, q, 0.5)
    grid, cdf = radial_targets.es_radius_table(d, q)
    ks = stats.kstest(r, lambda v: np.interp(v, grid, cdf))
    assert ks.pvalue > 0.01 and r.max() <= grid[-1]
    # and the check can fail: the untruncated-median radius law of another d is rejected
    g8, c8 = radial_targets.es_radius_table(8, q)
    assert stats.kstest(r, lambda v: np.interp(v, g8, c8)).pvalue < 1e-6


@pytest.mark.parametrize("dist", ["eldan_shamir", "shell"])
def test_ball_target_is_balanced_at_the_median_radius(dist):
    rng = np.random.default_rng(1)
    d = 6
    r0 = radial_targets.median_radius(d, dist, 0.95, 0.5)
    x = radial_targets.sample(40000, d, dist, rng, 0.95, 0.5)
    assert abs(radial_targets.target(x, "ball", r0).mean() - 0.5) < 0.01
    f = radial_targets.target(x, "relu", r0)
    assert f.min() == 0 and f.max() <= 1 and np.allclose(f[np.linalg.norm(x, axis=1) >= r0], 0)
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    assert abs(u.mean(0)).max() < 0.02  # directions uniform


@pytest.mark.parametrize("d", [2, 8, 32, 64])
def test_r0_sits_on_a_lobe_maximum_of_the_eldan_shamir_law_near_its_median(d):
    r0, ratio, inside = radial_targets.target_radius(d, "eldan_shamir", 0.95, 0.5)
    eps = 1e-4 * r0
    p = radial_targets.es_density(np.array([r0 - eps, r0, r0 + eps]), d)
    assert p[1] >= p[0] and p[1] >= p[2], "a local maximum"
    assert 0 < ratio <= 1 and 0 < inside < 1
    grid, cdf = radial_targets.es_radius_table(d, 0.95)
    assert inside == pytest.approx(np.interp(r0, grid, cdf))
    # no lobe maximum lies closer to the median
    m = radial_targets.median_radius(d, "eldan_shamir", 0.95, 0.5)
    dens = radial_targets.es_density(grid, d)
    peaks = grid[1:-1][(dens[1:-1] > dens[:-2]) & (dens[1:-1] >= dens[2:])]
    assert abs(r0 - m) <= np.min(np.abs(peaks - m)) + 2 * (grid[1] - grid[0])
    assert radial_targets.target_radius(d, "shell", 0.95, 0.5) == (1.0, 1.0, 0.5)


@pytest.mark.parametrize("d", [4, 16])
def test_es16_shells_are_balanced_and_the_target_has_its_analytic_moments(d):
    """N equal-mass shells between the 5 % and 95 % radii: sampled inputs land in each with probability 0.9 / N, and g has
    mean 0.9 mean(eps) and variance 0.9 - mean^2 (its moments from the shell masses alone)."""
    n_shells = radial_targets.es16_shell_count(d, 2.0)
    assert n_shells == int(np.ceil(2 * np.sqrt(d)))
    edges = radial_targets.es16_shells(d, n_shells, 0.95)
    assert np.all(np.diff(edges) > 0)
    signs = np.random.default_rng(d).choice([-1.0, 1.0], n_shells)
    n = 200_000
    x = radial_targets.sample(n, d, "eldan_shamir", np.random.default_rng(7), 0.95, 0.5)
    r = np.linalg.norm(x, axis=1)
    counts = np.histogram(r, bins=edges)[0] / n
    se = np.sqrt(0.9 / n_shells / n)
    np.testing.assert_allclose(counts, 0.9 / n_shells, atol=5 * se)
    g = radial_targets.es16_target(x, edges, signs)
    assert set(np.unique(g)) <= {-1.0, 0.0, 1.0}
    mean, var = radial_targets.es16_moments(signs)
    assert mean == pytest.approx(0.9 * signs.mean())
    assert abs(g.mean() - mean) < 5 * np.sqrt(0.9 / n)
    assert abs(g.var() - var) < 5 * np.sqrt(0.9 / n)
    # and the balance check can fail: another dimension's shells are not equal-mass here
    other = np.histogram(r, bins=radial_targets.es16_shells(4 * d, n_shells, 0.95))[0] / n
    assert np.abs(other - 0.9 / n_shells).max() > 10 * se


@pytest.mark.parametrize("n", [1, 2, 3, 8, 9, 12])
def test_es16_signs_are_balanced_whatever_the_draw(n):
    """ceil(N/2) of one sign and floor(N/2) of the other for every stream (an unbalanced draw, 7 of 8 shells one sign at
    d = 16, made the target nearly radial-constant); both orders and both majorities occur over draws."""
    draws = [radial_targets.es16_signs(n, np.random.default_rng(s)) for s in range(200)]
    for sg in draws:
        assert sorted([int((sg > 0).sum()), int((sg < 0).sum())]) == [n // 2, n - n // 2]
    if n > 2:
        assert len({tuple(sg) for sg in draws}) > 2
    if n % 2:
        assert {int(np.sign(sg.sum())) for sg in draws} == {-1, 1}
