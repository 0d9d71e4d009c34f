"""Fractal distributions: where positives and negatives lie, the class balance, the approximation curve."""

import numpy as np
import pytest

from depthlab.studies.fractals import distributions as D

NAMES = sorted(D.FRACTALS)


# ---- a port of the authors' sampler (emalach/IsDeeperBetter, cantor.py and ifs.py), kept here, not in the package ----


def authors_prob_vec(n: int, pdeg: int) -> np.ndarray:
    """cantor.py's __main__: prob_vec = linspace(n, 1, n)**pdeg, or ones on its first pdeg - 9 entries; normalised; 1 - 0.5**."""
    if pdeg < 10:
        pv = np.linspace(n, 1, n) ** pdeg
    else:
        pv = np.zeros(n)
        pv[: pdeg - 10 + 1] = 1.0
    pv = pv / pv.sum()
    return 1 - 0.5**pv


def authors_profile(prob_vec: np.ndarray) -> np.ndarray:
    """cantor.py's plotted curve: [0.5] + 0.5 + cumsum(prod(1 - rev[:i]) rev[i]), rev = prob_vec[::-1]."""
    rev = prob_vec[::-1]
    return np.array([0.5] + list(0.5 + np.cumsum([np.prod(1 - rev[:i]) * rev[i] for i in range(len(rev))])))


def authors_draw(f: D.IFS, n: int, prob_vec: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """rand_cantor_d_labeled / rand_ifs_labeled: at depth cur_depth (n at the coarsest, counting down) stop with
    prob_vec[cur_depth - 1] as a negative (the central cube, or the cell minus its children), else recurse into a
    child chosen uniformly; a positive after the finest level.  (The authors' 0.3333 is taken as 1/3.)"""
    lo, hi = np.full(f.dim, f.lo), np.full(f.dim, f.hi)
    scale, shift = np.asarray(f.scale), np.asarray(f.shift, dtype=float)
    for cur_depth in range(n, 0, -1):
        centre, half = (lo + hi) / 2, (hi - lo) / 2
        corners = [
            np.sort(
                np.stack([(scale[i] * -1 + shift[i]) * half + centre, (scale[i] * 1 + shift[i]) * half + centre]), 0
            )
            for i in range(f.r)
        ]
        if rng.binomial(1, prob_vec[cur_depth - 1]):
            if f.central:
                return rng.uniform(lo + (hi - lo) / 3, hi - (hi - lo) / 3), -1
            while True:
                x = rng.uniform(lo, hi)
                if not any(np.all((c[0] <= x) & (x <= c[1])) for c in corners):
                    return x, -1
        lo, hi = corners[rng.integers(f.r)]
    return rng.uniform(lo, hi), +1


# every (fractal, n, pdeg) of the shipped configs
CURVES = (
    [("cantor", 5, p) for p in (0, 12, 11, 5, 9, 10)]
    + [("cantor", 3, 0), ("cantor", 3, 10), ("vicsek", 6, 10), ("vicsek", 3, 10)]
    + [(f, 5, p) for f in ("vicsek", "sierpinski", "pentaflake") for p in (0, 10)]
    + [("sierpinski", 3, 0), ("sierpinski", 3, 10), ("cantor1d", 5, 0), ("cantor1d", 3, 0)]
)


@pytest.mark.parametrize("name,n,pdeg", CURVES)
def test_the_analytic_curve_is_the_authors_profile(name, n, pdeg):
    np.testing.assert_allclose(
        D.approximation_curve(n, pdeg), authors_profile(authors_prob_vec(n, pdeg)), rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(D.stop_probabilities(n, pdeg), authors_prob_vec(n, pdeg)[::-1], rtol=0, atol=1e-15)


@pytest.mark.parametrize("name,n,pdeg", [c for c in CURVES if c[0] != "cantor1d"])  # the 1-D set is not in their code
def test_data_drawn_by_the_authors_sampler_follow_the_curve_as_ours_do(name, n, pdeg):
    f = D.get(name)
    rng = np.random.default_rng(n * 100 + pdeg)
    N = 3000
    draws = [authors_draw(f, n, authors_prob_vec(n, pdeg), rng) for _ in range(N)]
    x, y = np.stack([d[0] for d in draws]), np.array([d[1] for d in draws], dtype=float)
    P = D.approximation_curve(n, pdeg)
    emp = D.empirical_curve(f, x, y, n)  # the port's data, scored by the package's membership test
    assert np.all(np.abs(emp - P) <= 5 * np.sqrt(P * (1 - P) / N) + 1e-9), (emp, P)
    ours = D.empirical_curve(f, *D.sample(f, n, pdeg, N, np.random.default_rng(7))[:2], n)
    assert np.all(np.abs(ours - emp) <= 5 * np.sqrt(2 * P * (1 - P) / N) + 1e-9), (ours, emp)


def test_the_finest_level_weighs_most_below_pdeg_10():
    """Curves #4 and #5 (pdeg 5 and 9) put most negatives on fine levels: P(4) = 0.684 and 0.584 at n = 5."""
    assert D.approximation_curve(5, 5)[4] == pytest.approx(0.684, abs=1e-3)
    assert D.approximation_curve(5, 9)[4] == pytest.approx(0.584, abs=1e-3)
    np.testing.assert_allclose(D.approximation_curve(5, 5), [0.5, 0.5, 0.505, 0.542, 0.684, 1.0], atol=1e-3)


def test_curves_hand_values():
    np.testing.assert_allclose(D.level_weights(4, 0), [1, 1, 1, 1])
    np.testing.assert_allclose(D.level_weights(4, 2), [1, 4, 9, 16])
    np.testing.assert_allclose(D.level_weights(5, 11), [0, 0, 0, 1, 1])
    for pdeg in (0, 5, 9, 10, 11, 12):
        P = D.approximation_curve(5, pdeg)
        assert P[0] == 0.5 and abs(P[-1] - 1) < 1e-15 and np.all(np.diff(P) >= 0)
        assert abs(np.prod(1 - D.stop_probabilities(5, pdeg)) - 0.5) < 1e-15  # balanced classes
    np.testing.assert_allclose(D.approximation_curve(5, 10)[:5], 0.5)  # all negatives on the finest level
    with pytest.raises(ValueError, match="finest 7 levels"):
        D.level_weights(5, 16)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("pdeg", [0, 5, 11])
def test_samples_lie_where_the_spec_says(name, pdeg):
    f = D.get(name)
    n = 4
    x, y, level = D.sample(f, n, pdeg, 6000, np.random.default_rng(1))
    assert (y > 0).sum() == (y < 0).sum() == 3000, "exactly balanced"
    assert np.all((x >= f.lo) & (x <= f.hi))
    pos = y > 0
    assert D.in_K(f, x[pos], n).all(), "every positive lies in K_n"
    assert np.all(level[pos] == n + 1) and np.all((level[~pos] >= 1) & (level[~pos] <= n))
    lo, hi = f.child_boxes()
    s, t = np.asarray(f.scale), np.asarray(f.shift)
    for c in range(1, n + 1):
        neg = x[(~pos) & (level == c)]
        if not len(neg):
            continue
        assert D.in_K(f, neg, c - 1).all() and not D.in_K(f, neg, c).any(), (
            "a level-c negative is in K_{c-1} but not K_c"
        )
        u = neg.copy()  # map back into its level-(c-1) cell's K_0 coordinates
        for _ in range(c - 1):
            i = ((u[:, None, :] >= lo) & (u[:, None, :] <= hi)).all(2).argmax(1)
            u = (u - t[i]) / s[i][:, None]
        if f.central:  # the central cube: the middle third in every coordinate
            third = (f.hi - f.lo) / 3
            assert np.all((u >= f.lo + third - 1e-12) & (u <= f.hi - third + 1e-12))
        else:  # the cell minus its children
            assert not ((u[:, None, :] >= lo) & (u[:, None, :] <= hi)).all(2).any()


@pytest.mark.parametrize("name", ["cantor", "vicsek", "sierpinski"])
@pytest.mark.parametrize("pdeg", [0, 12, 11, 5, 9, 10])
def test_empirical_curve_matches_the_analytic_one(name, pdeg):
    f = D.get(name)
    N, n = 20000, 5
    x, y, _ = D.sample(f, n, pdeg, N, np.random.default_rng(pdeg))
    P = D.approximation_curve(n, pdeg)
    emp = D.empirical_curve(f, x, y, n)
    se = np.sqrt(P * (1 - P) / N) + 1e-12
    assert np.all(np.abs(emp - P) <= 5 * se + 1e-9), (emp, P)


def test_the_curve_check_can_fail():
    f = D.get("cantor")
    x, y, _ = D.sample(f, 5, 0, 20000, np.random.default_rng(0))
    emp = D.empirical_curve(f, x, y, 5)
    other = D.approximation_curve(5, 10)
    assert np.max(np.abs(emp - other)) > 0.1


def test_one_dimensional_cantor_maps():
    f = D.get("cantor1d")
    np.testing.assert_allclose(f.child_boxes()[0].ravel(), [0, 2 / 3])
    np.testing.assert_allclose(f.child_boxes()[1].ravel(), [1 / 3, 1])
    assert D.in_K(f, np.array([[0.1], [0.5], [0.7]]), 1).tolist() == [True, False, True]
    # F1 reflects: 0.1 in [0, 1/3] maps back to (1/3 - 0.1) * 3 = 0.7, which is in K_1, so 0.1 is in K_2
    assert D.in_K(f, np.array([[0.1]]), 2).tolist() == [True]


def test_sampling_is_deterministic_for_a_seed():
    f = D.get("pentaflake")
    a = D.sample(f, 3, 5, 100, np.random.default_rng(7))
    b = D.sample(f, 3, 5, 100, np.random.default_rng(7))
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
