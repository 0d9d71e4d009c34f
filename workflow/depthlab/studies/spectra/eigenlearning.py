"""The KRR learning curve predicted from the spectrum: eigenlearning (Canatar, Bordelon & Pehlevan 2021; Simon et al. 2021).

Kernel ridge regression with n samples, f = K(., X) (K(X, X) + delta I)^{-1} y, a kernel with Mercer eigenvalues
lambda_i (eigenfunctions orthonormal under the input law) and a noiseless target with components v_i.  The theory's
effective ridge kappa solves

    sum_i lambda_i / (lambda_i + kappa) + delta / kappa = n,

and with the learnabilities L_i = lambda_i / (lambda_i + kappa) and E0 = n / (n - sum_i L_i^2) the expected test MSE is

    E0 * sum_i (1 - L_i)^2 v_i^2.

On the sphere a dot-product kernel has eigenvalue mu_k with multiplicity N(d, k) (Funk-Hecke), and a zonal target
g(w.x) has degree-k power ||f_k||^2 = N(d, k) c_k^2, c_k the Funk-Hecke coefficient of g.  Spectra are computed up
to a degree K; beyond it two exact identities close the sums: sum_k N(d, k) mu_k = kappa(1) = 1 (the kernels are
normalised), and sum_k ||f_k||^2 = E[g^2] (Parseval).  The tails enter with L_k ~ mu_k / kappa (valid where
mu_k << kappa, which the caller checks: :func:`tail_ratio`).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import betainc

from .eigenvalues import funk_hecke_constant, gegenbauer, multiplicity


def effective_ridge(lam: np.ndarray, mult: np.ndarray, n: int, delta: float, tail: float = 0.0) -> float:
    """kappa solving sum mult lam / (lam + kappa) + tail / kappa + delta / kappa = n (0 if the modes are fewer than n
    and delta = 0: the interpolating regime of a finite-rank kernel)."""
    lam, mult = np.asarray(lam, dtype=np.float64), np.asarray(mult, dtype=np.float64)

    def g(log_kappa: float) -> float:
        k = np.exp(log_kappa)
        return float(np.sum(mult * lam / (lam + k)) + (tail + delta) / k - n)

    hi = np.log(2 * (np.sum(mult * lam) + tail + delta) / n + 1e-300)
    lo = np.log(1e-300)
    if g(lo) <= 0:  # fewer effective modes than samples and no ridge
        return 0.0
    return float(np.exp(brentq(g, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=500)))


def predicted_mse(
    lam: np.ndarray,
    mult: np.ndarray,
    power: np.ndarray,
    n: int,
    delta: float,
    lam_tail: float = 0.0,
    power_tail: float = 0.0,
) -> float:
    """E0 sum (1 - L)^2 power: the predicted test MSE of KRR with n samples and ridge delta (the (K + delta I) convention).

    lam, mult: eigenvalues and multiplicities up to a degree K; power: the target's power in each (||f_k||^2,
    multiplicity included); lam_tail = sum of mult lam beyond K, power_tail = the target's power beyond K."""
    lam, mult, power = (np.asarray(a, dtype=np.float64) for a in (lam, mult, power))
    kappa = effective_ridge(lam, mult, n, delta, lam_tail)
    if kappa == 0.0:
        L = (lam > 0).astype(np.float64)
        dof = np.sum(mult * L)
        return float(n / (n - dof) * (np.sum((1 - L) ** 2 * power) + power_tail)) if dof < n else float("nan")
    L = lam / (lam + kappa)
    dof2 = np.sum(mult * L**2) + (lam[-1] / kappa) * (
        lam_tail / kappa
    )  # the tail's sum of L^2 (L <= lam_K / kappa there)
    e0 = n / (n - dof2)
    return float(e0 * (np.sum((1 - L) ** 2 * power) + power_tail))


def cap_coefficients(d: int, threshold: float, k_max: int, panels: int = 400) -> np.ndarray:
    """Funk-Hecke coefficients c_0 .. c_kmax of g(u) = 1{u >= threshold} on S^(d-1):
    c_k = (omega_{d-2} / omega_{d-1}) int_threshold^1 P_k(u) (1 - u^2)^((d-3)/2) du, in theta = arccos u (Gauss-Legendre panels)."""
    x, w = np.polynomial.legendre.leggauss(24)
    edges = np.linspace(0.0, np.arccos(threshold), panels + 1)
    a, b = edges[:-1, None], edges[1:, None]
    th, wt = ((b - a) / 2 * x + (a + b) / 2).ravel(), ((b - a) / 2 * w).ravel()
    return gegenbauer(np.cos(th), k_max, d) @ (funk_hecke_constant(d) * np.sin(th) ** (d - 2) * wt)


def cap_measure(d: int, threshold: float) -> float:
    """P(w.x >= threshold) for x uniform on S^(d-1) (threshold >= 0): I_{1 - t^2}((d-1)/2, 1/2) / 2."""
    return float(betainc((d - 1) / 2, 0.5, 1 - threshold * threshold) / 2)


def target_power(d: int, threshold: float, k_max: int) -> tuple[np.ndarray, float]:
    """(||f_k||^2 = N(d, k) c_k^2 for k = 0 .. k_max, the power beyond k_max = E[g^2] - their sum) of the bump."""
    c = cap_coefficients(d, threshold, k_max, panels=max(400, k_max))
    power = np.array([multiplicity(d, k) for k in range(k_max + 1)], dtype=np.float64) * c * c
    return power, max(cap_measure(d, threshold) - float(power.sum()), 0.0)


def tail_ratio(lam: np.ndarray, kappa: float) -> float:
    """lambda_K / kappa: how far the truncated spectrum reaches below the effective ridge (the tails need << 1)."""
    return float(lam[-1] / kappa) if kappa > 0 else float("inf")
