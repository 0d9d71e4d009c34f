"""Kernel ridge regression learning curves on the sphere, as in Bietti & Bach's experiment (``figures.py``).

Data: x uniform on S^(d-1), target the bump y = 1{w.x >= threshold} for a random unit w
(the authors: d = 4, threshold 1 - 0.3).  For each training-set size n, the estimator
f = K(., X_n) (K(X_n, X_n) + n lambda I)^{-1} y is scored by its test MSE, and the
learning curve keeps the best lambda of a grid.  All ridges of one n come from one
eigendecomposition K_n = V diag(s) V^T: f_lambda(X_test) = K(X_test, X_n) V diag(1/(s + n lambda)) V^T y.
"""

from __future__ import annotations

from typing import Callable

import numpy as np


def sphere(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """n points uniform on S^(d-1): [n, d]."""
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def bump(x: np.ndarray, w: np.ndarray, threshold: float) -> np.ndarray:
    """1{w.x >= threshold} as float64: [n]."""
    return (x @ w >= threshold).astype(np.float64)


def gram(kappa: Callable[[np.ndarray], np.ndarray], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """kappa(a b^T), with the dot products clipped to [-1, 1] against rounding."""
    return kappa(np.clip(a @ b.T, -1.0, 1.0))


def learning_curve(
    k_train: np.ndarray, k_test: np.ndarray, y: np.ndarray, y_test: np.ndarray, ns: list[int], ridges: np.ndarray
) -> np.ndarray:
    """Test MSE [len(ns), len(ridges)] of KRR on the first n training points, for every n and ridge lambda.

    k_train: [N, N] kernel between training points (N >= max(ns)), k_test: [N_test, N].
    """
    out = np.empty((len(ns), len(ridges)))
    for i, n in enumerate(ns):
        s, V = np.linalg.eigh(k_train[:n, :n])
        proj = V.T @ y[:n]  # [n]
        kv = k_test[:, :n] @ V  # [N_test, n]
        for j, lam in enumerate(ridges):
            pred = kv @ (proj / (s + n * lam))
            out[i, j] = np.mean((pred - y_test) ** 2)
    return out


def rate(ns: np.ndarray, mse: np.ndarray, n_min: int) -> float:
    """Fitted learning-curve rate: the slope of log(best test MSE) vs log n over n >= n_min (NaN below 2 points)."""
    ok = (ns >= n_min) & (mse > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns[ok]), np.log(mse[ok]), 1)[0])
