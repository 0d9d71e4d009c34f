"""The eigenlearning prediction of KRR's test MSE: a closed form, Parseval for the bump, and measured KRR."""

import numpy as np
import pytest

from depthlab.studies.spectra import dotkernels as dk
from depthlab.studies.spectra import eigenlearning as el
from depthlab.studies.spectra import krr_curves
from depthlab.studies.spectra.eigenvalues import mercer_eigenvalues, multiplicity


@pytest.mark.parametrize("M,n", [(50, 10), (200, 120), (1000, 999)])
def test_ridgeless_regression_on_m_equal_modes_has_error_one_minus_n_over_m(M, n):
    """M modes of equal eigenvalue, a target of unit power spread over them, no ridge: kappa = lambda (M - n) / n,
    L = n / M, E0 = M / (M - n), so the test MSE is 1 - n / M (the isotropic ridgeless closed form)."""
    lam = 0.3
    kappa = el.effective_ridge(np.array([lam]), np.array([M]), n, 0.0)
    assert kappa == pytest.approx(lam * (M - n) / n, rel=1e-10)
    assert el.predicted_mse(np.array([lam]), np.array([M]), np.array([1.0]), n, 0.0) == pytest.approx(
        1 - n / M, rel=1e-9
    )


def test_with_a_ridge_kappa_solves_its_equation_and_more_samples_help():
    lam = 1.0 / np.arange(1, 400) ** 2
    mult = np.ones_like(lam)
    power = lam.copy()
    prev = np.inf
    for n in (10, 30, 100, 300):
        k = el.effective_ridge(lam, mult, n, 0.05)
        assert np.sum(lam / (lam + k)) + 0.05 / k == pytest.approx(n, rel=1e-10)
        mse = el.predicted_mse(lam, mult, power, n, 0.05)
        assert 0 < mse < prev
        prev = mse


@pytest.mark.parametrize("d,t", [(3, 0.2), (4, 0.7)])
def test_the_bumps_degree_powers_add_up_to_its_mean_square(d, t):
    """Parseval: sum_k N(d, k) c_k^2 = E[g^2] = P(w.x >= t), the cap measure; the computed powers leave a small tail."""
    power, tail = el.target_power(d, t, 600)
    assert power.sum() + tail == pytest.approx(el.cap_measure(d, t), rel=1e-12)
    assert 0 <= tail < 0.02 * el.cap_measure(d, t)
    assert power[0] == pytest.approx(el.cap_measure(d, t) ** 2, rel=1e-10)  # the mean's component: E[g]^2


@pytest.mark.parametrize("name,depth,d,n,lam", [("ntk", 2, 3, 150, 1e-3), ("rf_bias", 1, 4, 150, 1e-4)])
def test_the_prediction_agrees_with_measured_krr(name, depth, d, n, lam):
    """Averaged over 24 independent data sets (the theory predicts the mean), within 10 % and 3 standard errors."""
    kap = dk.kernel(name, depth)
    s = mercer_eigenvalues(kap, d, 200, 200, 1e-6)
    usable = s.reliable | (np.abs(s.mu) < 1e3 * s.floor)
    kr = int(np.argmin(usable)) - 1 if not usable.all() else 200
    mu = np.where(s.reliable[: kr + 1], s.mu[: kr + 1], 0.0)
    mult = np.array([multiplicity(d, k) for k in range(kr + 1)], dtype=np.float64)
    power, ptail = el.target_power(d, 0.7, kr)
    pred = el.predicted_mse(mu, mult, power, n, n * lam, max(1 - np.sum(mult * mu), 0.0), ptail)
    meas = []
    for trial in range(24):
        g = np.random.default_rng(trial)
        x = krr_curves.sphere(n + 1500, d, g)
        w = krr_curves.sphere(1, d, g)[0]
        y = krr_curves.bump(x, w, 0.7)
        meas.append(
            krr_curves.learning_curve(
                krr_curves.gram(kap, x[:n], x[:n]),
                krr_curves.gram(kap, x[n:], x[:n]),
                y[:n],
                y[n:],
                [n],
                np.array([lam]),
            )[0, 0]
        )
    m, se = np.mean(meas), np.std(meas) / np.sqrt(len(meas))
    assert abs(pred - m) < max(0.10 * m, 3 * se), (pred, m, se)
    # and the check can fail: another kernel's spectrum predicts another curve
    other = el.predicted_mse(mu * 0 + mu[0], mult, power, n, n * lam)
    assert abs(other - m) > 0.10 * m
