"""KRR learning curves against a direct solve."""

import numpy as np
import pytest

from depthlab.studies.spectra import dotkernels as dk
from depthlab.studies.spectra import krr_curves


def test_eigendecomposition_path_matches_direct_solves():
    rng = np.random.default_rng(0)
    x = krr_curves.sphere(120, 4, rng)
    xt = krr_curves.sphere(50, 4, rng)
    w = krr_curves.sphere(1, 4, rng)[0]
    y, yt = krr_curves.bump(x, w, 0.7), krr_curves.bump(xt, w, 0.7)
    kap = dk.kernel("ntk", 2)
    K, Kt = krr_curves.gram(kap, x, x), krr_curves.gram(kap, xt, x)
    ridges = np.array([1e-2, 1e-5])
    mse = krr_curves.learning_curve(K, Kt, y, yt, [30, 120], ridges)
    for i, n in enumerate([30, 120]):
        for j, lam in enumerate(ridges):
            pred = Kt[:, :n] @ np.linalg.solve(K[:n, :n] + n * lam * np.eye(n), y[:n])
            np.testing.assert_allclose(mse[i, j], np.mean((pred - yt) ** 2), rtol=1e-8)


def test_rate_is_the_log_log_slope():
    ns = np.array([10, 100, 1000, 10000])
    assert abs(krr_curves.rate(ns, 3.0 * ns**-0.4, 100) + 0.4) < 1e-12
    assert np.isnan(krr_curves.rate(ns, ns**-0.4, 5000))


@pytest.mark.parametrize("d,t", [(4, 0.7), (3, 0.2), (8, 0.5)])
def test_the_bump_is_a_spherical_cap_of_the_right_measure(d, t):
    """Independent value: for x uniform on S^(d-1), u = w.x has density prop. to (1 - u^2)^((d-3)/2), so
    P(u >= t) = I_{1-t^2}((d-1)/2, 1/2) / 2 for t >= 0 (regularised incomplete beta); d = 4 also in closed form."""
    from scipy.special import betainc

    rng = np.random.default_rng(d)
    x = krr_curves.sphere(200_000, d, rng)
    w = krr_curves.sphere(1, d, rng)[0]
    y = krr_curves.bump(x, w, t)
    assert set(np.unique(y)) == {0.0, 1.0}
    p = betainc((d - 1) / 2, 0.5, 1 - t * t) / 2
    if d == 4:
        assert abs(p - (np.pi / 2 - t * np.sqrt(1 - t * t) - np.arcsin(t)) / np.pi) < 1e-12
    assert abs(y.mean() - p) < 4 * np.sqrt(p * (1 - p) / len(y))
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-12)
