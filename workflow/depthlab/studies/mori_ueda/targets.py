"""Target functions of Mori & Ueda (2022), Sec. 2.1 and 3.3.

Pure array functions: numpy in, numpy out. Indices are fixed to
``i = (1, ..., k)`` (the paper's footnote 1), so in 0-based numpy terms the
local target reads columns ``0 .. k-1`` and the global target sums the same
window shifted by ``j = 1 .. d`` with periodic wrap (``x_{d+i} = x_i``).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

# g maps an array of shape [..., k] to [...]; Eqs. (11)-(12) plug it in.
GFunction = Callable[[np.ndarray], np.ndarray]


def _g_product(u: np.ndarray) -> np.ndarray:
    """g(u_1, ..., u_k) = u_1 u_2 ... u_k (Eqs. 1-2)."""
    return np.prod(u, axis=-1)


def _g_sin(u: np.ndarray) -> np.ndarray:
    """g(u_1, u_2) = sin(2 u_1 + u_2) (Sec. 3.3.3)."""
    return np.sin(2.0 * u[..., 0] + u[..., 1])


def _g_tanh_sin(u: np.ndarray) -> np.ndarray:
    """g(u_1, u_2) = tanh(u_1) sin(u_2) (Sec. 3.3.3)."""
    return np.tanh(u[..., 0]) * np.sin(u[..., 1])


# name -> (function, required k or None for any k >= 1)
G_FUNCTIONS: dict[str, tuple[GFunction, int | None]] = {
    "product": (_g_product, None),
    "sin": (_g_sin, 2),
    "tanh_sin": (_g_tanh_sin, 2),
}
LOCALITIES = ("local", "global")


class TargetError(ValueError):
    """(k, d, locality, g) is not a target; ``key`` names the argument at fault."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def check_target(k: int, d: int, locality: str, g: str) -> None:
    """Raise TargetError naming the offending argument if (k, d, locality, g) is not a target.

    The one place these rules live: the config validator calls it too.
    """
    if locality not in LOCALITIES:
        raise TargetError("locality", f"locality must be one of {LOCALITIES}, got {locality!r}")
    if g not in G_FUNCTIONS:
        raise TargetError("g", f"g must be one of {sorted(G_FUNCTIONS)}, got {g!r}")
    if k < 1:
        raise TargetError("k", f"k must be >= 1, got {k}")
    if k > d:
        raise TargetError("k", f"k = {k} exceeds the input dimension d = {d}; need k <= d")
    need = G_FUNCTIONS[g][1]
    if need is not None and k != need:
        raise TargetError("k", f"g = {g!r} takes exactly k = {need} arguments, got k = {k}")


def sample_inputs(n: int, d: int, seed: int) -> np.ndarray:
    """x ~ N(0, I_d): float64 array [n, d], a pure function of (n, d, seed)."""
    return np.random.default_rng(seed).standard_normal((n, d))


def k_local(x: np.ndarray, k: int, g: str = "product") -> np.ndarray:
    """k-local target, Eq. (1) / Eq. (11): f(x) = g(x_1, ..., x_k).  x: [n, d] -> [n]."""
    check_target(k, x.shape[1], "local", g)
    return G_FUNCTIONS[g][0](x[:, :k])


def k_global(x: np.ndarray, k: int, g: str = "product") -> np.ndarray:
    """k-global target, Eq. (2) / Eq. (12).

    f(x) = d^{-1/2} sum_{j=1..d} g(x_{j+1}, ..., x_{j+k}) with periodic indices.
    x: [n, d] -> [n].
    """
    n, d = x.shape
    check_target(k, d, "global", g)
    # window[j] holds the 0-based columns (j+1, ..., j+k) mod d for j = 1..d,
    # i.e. columns (j, ..., j+k-1) mod d for j = 0..d-1 after the shift.
    cols = (np.arange(1, d + 1)[:, None] + np.arange(k)[None, :]) % d  # [d, k]
    return G_FUNCTIONS[g][0](x[:, cols]).sum(axis=1) / np.sqrt(d)  # x[:, cols]: [n, d, k]


def target(x: np.ndarray, k: int, locality: str, g: str = "product") -> np.ndarray:
    """Dispatch to :func:`k_local` or :func:`k_global`.  x: [n, d] -> [n]."""
    check_target(k, x.shape[1], locality, g)
    return k_local(x, k, g) if locality == "local" else k_global(x, k, g)


def add_label_noise(y: np.ndarray, epsilon: float, seed: int) -> np.ndarray:
    """Noisy training labels y + eps * xi, xi ~ N(0, 1) (Sec. 3.3.1).  [n] -> [n]."""
    if epsilon < 0:
        raise ValueError(f"noise level epsilon must be >= 0, got {epsilon}")
    if epsilon == 0:
        return y.copy()
    return y + epsilon * np.random.default_rng(seed).standard_normal(y.shape)
