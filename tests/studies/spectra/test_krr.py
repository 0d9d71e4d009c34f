"""KRR learning curves against a direct solve."""

import numpy as np

from depthlab.studies.spectra import dotkernels as dk
from depthlab.studies.spectra import krr


def test_eigendecomposition_path_matches_direct_solves():
    rng = np.random.default_rng(0)
    x = krr.sphere(120, 4, rng)
    xt = krr.sphere(50, 4, rng)
    w = krr.sphere(1, 4, rng)[0]
    y, yt = krr.bump(x, w, 0.7), krr.bump(xt, w, 0.7)
    kap = dk.kernel("ntk", 2)
    K, Kt = krr.gram(kap, x, x), krr.gram(kap, xt, x)
    ridges = np.array([1e-2, 1e-5])
    mse = krr.learning_curve(K, Kt, y, yt, [30, 120], ridges)
    for i, n in enumerate([30, 120]):
        for j, lam in enumerate(ridges):
            pred = Kt[:, :n] @ np.linalg.solve(K[:n, :n] + n * lam * np.eye(n), y[:n])
            np.testing.assert_allclose(mse[i, j], np.mean((pred - yt) ** 2), rtol=1e-8)
    assert np.isclose(y.mean(), np.mean(x @ w >= 0.7))


def test_rate_is_the_log_log_slope():
    ns = np.array([10, 100, 1000, 10000])
    assert abs(krr.rate(ns, 3.0 * ns ** -0.4, 100) + 0.4) < 1e-12
    assert np.isnan(krr.rate(ns, ns ** -0.4, 5000))
