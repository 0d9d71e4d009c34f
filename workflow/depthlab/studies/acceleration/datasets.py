"""Regression data for the acceleration study: a synthetic task of the paper's shape, scikit-learn's diabetes, and the
UCI Gas Sensor Array Drift "Ethanol" task from a user's local copy (nothing is downloaded).

Every data set is returned standardised: each feature and the target to zero mean and unit variance, so losses and
rates compare across data sets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

UCI_CLASS_ETHANOL = 1  # the Gas Sensor Array Drift data: class 1 of 6 is Ethanol
UCI_FEATURES = 128


class DataError(ValueError):
    """An input file that is missing or not in the expected format; the message names the file and the line."""


def standardise(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sx = x.std(0)
    sx[sx == 0] = 1.0
    return (x - x.mean(0)) / sx, (y - y.mean()) / (y.std() or 1.0)


def synthetic(n: int, d: int, decay: float, noise: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """x = z diag(j^(-decay/2)) Q^T (z standard normal, Q a random rotation): the covariance's eigenvalues fall as
    j^(-decay), in a random basis so standardising the features does not undo it; y = x w* + noise * xi, w* ~ N(0, I/d)."""
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    x = rng.standard_normal((n, d)) * np.arange(1, d + 1) ** (-decay / 2) @ q.T
    w = rng.standard_normal(d) / np.sqrt(d)
    y = x @ w + noise * np.std(x @ w) * rng.standard_normal(n)
    return standardise(x, y)


def diabetes() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled diabetes data: 442 x 10, the disease progression target."""
    from sklearn.datasets import load_diabetes

    d = load_diabetes()
    return standardise(d.data.astype(np.float64), d.target.astype(np.float64))


def uci_files(path: str | Path) -> list[Path]:
    """The UCI Gas Sensor Array Drift files: one ``batch*.dat`` file, or a folder holding ``batch1.dat`` ... ``batch10.dat``."""
    p = Path(path)
    if p.is_dir():
        files = sorted(p.glob("batch*.dat"), key=lambda f: (len(f.name), f.name))
        if not files:
            raise DataError(f"{p} holds no batch*.dat file (the UCI Gas Sensor Array Drift data set's batches)")
        return files
    if not p.is_file():
        raise DataError(
            f"{p} does not exist (give a batch*.dat file of the UCI Gas Sensor Array Drift data set, or their folder)"
        )
    return [p]


def read_uci(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """The Ethanol examples of the UCI files (libsvm-like lines: "<class>;<concentration> 1:v1 ... 128:v128"):
    x = the 128 sensor features, y = the concentration (standardised)."""
    xs, ys = [], []
    for f in uci_files(path):
        for i, line in enumerate(f.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                head, *feats = line.split()
                cls, conc = head.split(";")
                if int(cls) != UCI_CLASS_ETHANOL:
                    continue
                row = np.zeros(UCI_FEATURES)
                for item in feats:
                    k, v = item.split(":")
                    row[int(k) - 1] = float(v)
                if len(feats) != UCI_FEATURES:
                    raise ValueError(f"{len(feats)} features, expected {UCI_FEATURES}")
            except (ValueError, IndexError) as e:
                raise DataError(
                    f"{f}, line {i}: not '<class>;<concentration> 1:v ... {UCI_FEATURES}:v' ({e})"
                ) from None
            xs.append(row)
            ys.append(float(conc))
    if len(ys) < 2:
        raise DataError(f"{path}: fewer than two Ethanol (class {UCI_CLASS_ETHANOL}) examples")
    return standardise(np.stack(xs), np.asarray(ys))


def optimum(x: np.ndarray, y: np.ndarray, p: int) -> tuple[np.ndarray, float]:
    """The minimiser and minimum of L(w) = mean |x.w - y|^p / p (convex): least squares for p = 2, damped Newton from it
    otherwise (gradient X^T(|r|^(p-2) r)/m, Hessian (p-1) X^T diag(|r|^(p-2)) X / m)."""
    m = len(y)
    w = np.linalg.lstsq(x, y, rcond=None)[0]

    def loss(v):
        return float(np.mean(np.abs(x @ v - y) ** p) / p)

    for _ in range(200 if p != 2 else 0):
        r = x @ w - y
        g = x.T @ (np.abs(r) ** (p - 2) * r) / m
        H = (p - 1) * (x.T * np.abs(r) ** (p - 2)) @ x / m
        step = np.linalg.lstsq(H, g, rcond=None)[0]
        t, f0 = 1.0, loss(w)
        while loss(w - t * step) > f0 - 0.25 * t * g @ step and t > 1e-12:
            t /= 2
        w = w - t * step
        if np.linalg.norm(g) < 1e-13:
            break
    return w, loss(w)
