"""Fractal distributions: where positives and negatives lie, the class balance, the approximation curve."""

import numpy as np
import pytest

from depthlab.studies.fractals import distributions as D

NAMES = sorted(D.FRACTALS)


def test_curves_hand_values():
    np.testing.assert_allclose(D.level_weights(4, 0), [1, 1, 1, 1])
    np.testing.assert_allclose(D.level_weights(4, 2), [16, 9, 4, 1])
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
        assert D.in_K(f, neg, c - 1).all() and not D.in_K(f, neg, c).any(), "a level-c negative is in K_{c-1} but not K_c"
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
