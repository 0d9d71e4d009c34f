"""Mercer eigenvalues against closed forms, a 30-digit reference, and the Gram matrix of random sphere points."""

from math import comb

import mpmath as mp
import numpy as np
import pytest
from scipy.special import eval_gegenbauer

from depthlab.studies.spectra import dotkernels as dk
from depthlab.studies.spectra.eigenvalues import (
    decay_fit,
    funk_hecke_constant,
    gegenbauer,
    mercer_eigenvalues,
    multiplicity,
)
from depthlab.studies.spectra.krr_curves import sphere


@pytest.mark.parametrize("d", [3, 4, 5, 8])
def test_multiplicity_and_gegenbauer(d):
    for k in range(12):  # harmonic polynomials of degree k: dim of degree-k polys minus degree-(k-2)
        assert multiplicity(d, k) == comb(k + d - 1, d - 1) - (comb(k + d - 3, d - 1) if k >= 2 else 0)
    t = np.linspace(-1, 1, 9)
    lam = (d - 2) / 2
    P = gegenbauer(t, 10, d)
    for k in range(11):
        np.testing.assert_allclose(P[k], eval_gegenbauer(k, lam, t) / eval_gegenbauer(k, lam, 1.0), atol=1e-12)


@pytest.mark.parametrize("d", [3, 4, 7])
def test_polynomial_kernel_closed_form(d):
    # u^2 = (1/d) P_0 + ((d-1)/d) P_2, and Funk-Hecke: mu_k = coefficient / N(d, k)
    s = mercer_eigenvalues(lambda u: u * u, d, 6, 20, 1e-9)
    want = np.zeros(7)
    want[0], want[2] = 1 / d, 2 / (d * (d + 2))
    np.testing.assert_allclose(s.mu[[0, 2]], want[[0, 2]], rtol=1e-13)
    np.testing.assert_allclose(s.mu[[1, 3, 4, 5, 6]], 0, atol=1e-15)
    assert s.reliable[[0, 2]].all() and not s.reliable[[1, 3, 5]].any(), "exact zeros are never 'reliable' digits"


def _mp_kappa_ntk(t, layers):
    th, _rf, ntk = mp.acos(t), t, t
    for _ in range(2, layers + 1):
        k0 = 1 - th / mp.pi
        k1 = (mp.sin(th) + (mp.pi - th) * mp.cos(th)) / mp.pi
        ntk, _rf, th = ntk * k0 + k1, k1, mp.acos(k1)
    return ntk / layers


def _mp_mu(d, k, layers):
    mp.mp.dps = 30
    lam = mp.mpf(d - 2) / 2

    def f(th):
        return (
            _mp_kappa_ntk(mp.cos(th), layers)
            * mp.gegenbauer(k, lam, mp.cos(th))
            / mp.gegenbauer(k, lam, 1)
            * mp.sin(th) ** (d - 2)
        )

    return float(mp.mpf(funk_hecke_constant(d)) * mp.quad(f, [mp.pi * i / (2 * k + 4) for i in range(2 * k + 5)]))


@pytest.mark.parametrize(
    "d,k",
    [
        (3, 0),
        (3, 9),
        pytest.param(3, 40, marks=pytest.mark.slow),
        (4, 25),
        (8, 2),
        pytest.param(8, 30, marks=pytest.mark.slow),
    ],
)  # the two slowest in the slow set
def test_both_quadratures_match_a_30_digit_reference(d, k):
    s = mercer_eigenvalues(dk.kernel("ntk", 2), d, 40, 60, 1e-8)
    ref = _mp_mu(d, k, 3)
    assert abs(s.mu[k] / ref - 1) < 1e-9 and abs(s.mu_check[k] / ref - 1) < 1e-9
    assert s.reliable[k]


def test_the_agreement_check_can_fail():
    """A kernel evaluated wrongly near u = 1 in one rule only is caught as disagreement, not passed as digits."""
    good = dk.kernel("rf", 2)
    calls = []

    def tampered(u):
        calls.append(1)
        out = good(u)
        return out + (1e-7 * (u > 1 - 1e-3) if len(calls) == 2 else 0.0)  # the second rule (graded t) sees a defect

    s = mercer_eigenvalues(tampered, 4, 40, 60, 1e-6)
    assert not s.reliable[20:].all()


@pytest.mark.parametrize("name,depth,d", [("ntk", 2, 3), ("rf", 1, 4), ("mu_ntk", 2, 3), ("laplace", 0, 3)])
def test_funk_hecke_gram_eigenvalues_of_random_sphere_points(name, depth, d):
    """Eigenvalues of K(x_i, x_j) / n for n uniform points approach mu_k, each with multiplicity N(d, k)."""
    kap = dk.kernel(name, depth)
    n = 1500
    x = sphere(n, d, np.random.default_rng(3))
    ev = np.sort(np.linalg.eigvalsh(kap(np.clip(x @ x.T, -1, 1)) / n))[::-1]
    mu = mercer_eigenvalues(kap, d, 6, 40, 1e-8).mu
    # the top eigenvalues, grouped by degree in decreasing order of mu_k, with their multiplicities
    order = np.argsort(-mu)[:3]
    start = 0
    for k in order:
        m = multiplicity(d, int(k))
        group = ev[start : start + m]
        assert abs(group.mean() / mu[k] - 1) < 0.08, (k, group.mean(), mu[k])
        start += m


def test_beta_zero_mori_ueda_kernel_is_bietti_bachs_ntk_one_layer_deeper():
    u = np.linspace(-1, 1, 101)
    np.testing.assert_allclose(dk.kernel("mu_ntk", 3, beta=0.0)(u), dk.kernel("ntk", 3)(u), atol=1e-13)
    np.testing.assert_allclose(dk.kernel("mu_nngp", 3, beta=0.0)(u), dk.kernel("rf", 3)(u), atol=1e-13)
    assert abs(dk.kernel("mu_ntk", 3, beta=0.1)(np.array([0.3]))[0] - dk.kernel("ntk", 3)(np.array([0.3]))[0]) > 1e-3


def test_decay_fit_recovers_a_power_law_per_parity():
    k = np.arange(200.0)
    mu = np.where(k % 2 == 0, 2.0, 5.0) * np.maximum(k, 1) ** -4.5
    reliable = np.ones(200, bool)
    reliable[150:] = False
    for parity in (0, 1):
        slope, lo, hi, n = decay_fit(mu, reliable, parity, 50)
        assert abs(slope + 4.5) < 1e-10 and lo in (50, 51) and hi in (148, 149)


@pytest.mark.parametrize("name", ["rf", "ntk"])
def test_bias_free_two_layer_kernels_have_vanishing_odd_eigenvalues(name):
    s = mercer_eigenvalues(dk.kernel(name, 1), 4, 30, 40, 1e-6)
    odd = np.arange(3, 31, 2)
    assert not s.reliable[odd].any() and np.all(np.abs(s.mu[odd]) < 1e-14)
    sb = mercer_eigenvalues(dk.kernel(f"{name}_bias", 1), 4, 30, 40, 1e-6)
    assert sb.reliable[odd].all() and np.all(sb.mu[odd] > 0)


def test_the_shifted_fit_removes_the_finite_k_bias():
    """mu_k = (k + (d-2)/2)^(-p): the fit against log(k + (d-2)/2) returns -p exactly, the plain log k fit is off by
    about d/(2k) (here over k = 50 ... 70 at d = 8, as the default config fits)."""
    from depthlab.studies.spectra.eigenvalues import fit_shift

    d, p = 8, 10.0
    k = np.arange(71.0)
    mu = (k + fit_shift(d)) ** -p
    ok = np.ones(71, bool)
    shifted = decay_fit(mu, ok, 0, 50, fit_shift(d))[0]
    plain = decay_fit(mu, ok, 0, 50)[0]
    assert abs(shifted + p) < 1e-10 and plain > -p + 0.3


@pytest.mark.parametrize("name,depth,d", [("rf", 2, 4), ("ntk", 3, 4)])
def test_real_kernel_slopes_meet_the_theory_within_the_claims_tolerance(name, depth, d):
    from depthlab.studies.spectra.eigenvalues import fit_shift

    s = mercer_eigenvalues(dk.kernel(name, depth), d, 150, 150, 1e-6)
    for parity in (0, 1):
        slope = decay_fit(s.mu, s.reliable, parity, 50, fit_shift(d))[0]
        assert abs(slope - dk.theory_slope(name, d)) < 0.1, (parity, slope)
