"""Fractal distributions of Malach & Shalev-Shwartz (2019), as the authors' code samples them (SPEC §2).

An iterated function system (IFS) of r contractions F_i(x) = s_i x + t_i maps the box
K_0 = [lo, hi]^dim into r disjoint child cells; K_n is the union of the n-fold images.

============  ===  ======  =========================================================
name          dim  K_0     maps
============  ===  ======  =========================================================
cantor        2    [-1,1]  x/3 + (+-2/3, +-2/3)                     (4 corners)
vicsek        2    [-1,1]  the 4 Cantor maps and x/3                (+ the centre)
sierpinski    2    [-1,1]  x/2 + {(0, .5), (-.5, -.5), (.5, -.5)}
pentaflake    2    [-1,1]  x/3 + {(-2/3, 0), (2/3, 0), (0, 2/3), (-1/3, -2/3), (1/3, -2/3)}
cantor1d      1    [0,1]   F1(x) = 1/3 - x/3, F2(x) = 2/3 + x/3     (the paper's Sec. 4)
============  ===  ======  =========================================================

One draw per example, fractal depth n, levels c = 1..n (coarsest first): at level c the
example is negative with probability prob[c] and stops: the Cantor sets draw it uniformly
from the central cube of the current cell (the middle third in every coordinate), the other
fractals uniformly from the current cell minus the union of its children; otherwise a child
map is picked uniformly and the draw recurses.  After level n it is positive, uniform in its
leaf cell.  The approximation curve sets prob: weights w_c over the n levels c = 1 (coarsest) ... n
(``pdeg`` < 10: w_c = c**pdeg, so the finest level weighs most; ``pdeg`` >= 10: ones on the finest
pdeg - 9 levels), q = w / sum w,
prob = 1 - 0.5**q, so prod(1 - prob) = 1/2: the classes are balanced, and
P(j) = P[x not in K_j or y = 1] = 1.5 - 0.5**(sum_{l <= j} q_l).

Sampling here draws exactly N/2 positives and N/2 negatives (the negatives' stop level from
its conditional law P(stop at c) / (1/2)), which is the same distribution with the class
counts fixed instead of binomial.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class IFS:
    name: str
    dim: int
    lo: float
    hi: float
    scale: tuple[float, ...]  # s_i (a negative scale reflects)
    shift: tuple[tuple[float, ...], ...]  # t_i, [r][dim]
    central: bool  # negatives from the central cube (Cantor sets) or from the cell minus its children

    @property
    def r(self) -> int:
        return len(self.scale)

    def child_boxes(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper corners of F_i(K_0): [r, dim] each."""
        s = np.asarray(self.scale)[:, None]
        t = np.asarray(self.shift, dtype=np.float64)
        a, b = s * self.lo + t, s * self.hi + t
        return np.minimum(a, b), np.maximum(a, b)


_C = (2 / 3, -2 / 3)
FRACTALS: dict[str, IFS] = {
    "cantor": IFS("cantor", 2, -1.0, 1.0, (1 / 3,) * 4, tuple((a, b) for a in _C for b in _C), True),
    "vicsek": IFS("vicsek", 2, -1.0, 1.0, (1 / 3,) * 5, tuple((a, b) for a in _C for b in _C) + ((0.0, 0.0),), False),
    "sierpinski": IFS("sierpinski", 2, -1.0, 1.0, (0.5,) * 3, ((0.0, 0.5), (-0.5, -0.5), (0.5, -0.5)), False),
    "pentaflake": IFS(
        "pentaflake",
        2,
        -1.0,
        1.0,
        (1 / 3,) * 5,
        ((-2 / 3, 0.0), (2 / 3, 0.0), (0.0, 2 / 3), (-1 / 3, -2 / 3), (1 / 3, -2 / 3)),
        False,
    ),
    "cantor1d": IFS("cantor1d", 1, 0.0, 1.0, (-1 / 3, 1 / 3), ((1 / 3,), (2 / 3,)), True),
}


def get(name: str) -> IFS:
    if name not in FRACTALS:
        raise ValueError(f"fractal must be one of {sorted(FRACTALS)}, got {name!r}")
    return FRACTALS[name]


# ---- approximation curves ---------------------------------------------------------------


def level_weights(n: int, pdeg: int) -> np.ndarray:
    """w_c over the levels c = 1 (coarsest) .. n, as the authors' ``cantor.py`` applies them.

    Their code builds ``prob_vec = linspace(n, 1, n)**pdeg`` and at level ``cur_depth`` (n at the
    coarsest, counting down) reads ``prob_vec[cur_depth - 1]``: level c gets c**pdeg.
    """
    if pdeg < 10:
        return np.arange(1, n + 1, dtype=np.float64) ** pdeg
    fine = pdeg - 9
    if fine > n:
        raise ValueError(f"pdeg = {pdeg} puts negatives on the finest {fine} levels, but the fractal has only n = {n}")
    return np.concatenate([np.zeros(n - fine), np.ones(fine)])


def stop_probabilities(n: int, pdeg: int) -> np.ndarray:
    """prob[c], c = 1..n: the chance a draw still running at level c stops there as a negative."""
    w = level_weights(n, pdeg)
    return 1.0 - 0.5 ** (w / w.sum())


def approximation_curve(n: int, pdeg: int) -> np.ndarray:
    """P(j) = 1.5 - 0.5**(sum_{l <= j} q_l) for j = 0..n (P(0) = 1/2, P(n) = 1)."""
    w = level_weights(n, pdeg)
    return 1.5 - 0.5 ** np.concatenate([[0.0], np.cumsum(w / w.sum())])


# ---- sampling -------------------------------------------------------------------------


def _apply(f: IFS, x: np.ndarray, i: np.ndarray) -> np.ndarray:
    """x <- F_i(x) row-wise (i: [m] map indices)."""
    return np.asarray(f.scale)[i][:, None] * x + np.asarray(f.shift)[i]


def _negative_region(f: IFS, m: int, rng: np.random.Generator) -> np.ndarray:
    """m points uniform in K_0's negative region: its central cube, or K_0 minus the children (by rejection)."""
    if f.central:
        third = (f.hi - f.lo) / 3
        return rng.uniform(f.lo + third, f.hi - third, (m, f.dim))
    lo, hi = f.child_boxes()
    out = np.empty((0, f.dim))
    while len(out) < m:
        u = rng.uniform(f.lo, f.hi, (2 * (m - len(out)) + 16, f.dim))
        inside = ((u[:, None, :] >= lo) & (u[:, None, :] <= hi)).all(2).any(1)
        out = np.concatenate([out, u[~inside]])
    return out[:m]


def sample(f: IFS, n: int, pdeg: int, N: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x [N, dim], y [N] in {-1, +1}, level [N]) with exactly N // 2 positives.

    ``level`` is the stop level c of a negative, and n + 1 for a positive.
    """
    prob = stop_probabilities(n, pdeg)
    p_stop = prob * np.concatenate([[1.0], np.cumprod(1.0 - prob)[:-1]])  # P(stop at c), sums to 1/2
    n_pos = N // 2
    level = np.concatenate([np.full(n_pos, n + 1), 1 + rng.choice(n, size=N - n_pos, p=p_stop / p_stop.sum())])
    rng.shuffle(level)
    x = np.empty((N, f.dim))
    pos = level == n + 1
    x[pos] = rng.uniform(f.lo, f.hi, (int(pos.sum()), f.dim))
    x[~pos] = _negative_region(f, int((~pos).sum()), rng)
    paths = rng.integers(0, f.r, (N, n))  # child chosen at levels 1..n (only the first level - 1 are used)
    depth = level - 1  # maps applied: c - 1 for a negative of level c, n for a positive
    for ell in range(n - 1, -1, -1):  # innermost (finest) map first: x = F_{i1}(F_{i2}(... F_{im}(u)))
        use = depth > ell
        x[use] = _apply(f, x[use], paths[use, ell])
    return x, np.where(pos, 1.0, -1.0), level


def in_K(f: IFS, x: np.ndarray, j: int) -> np.ndarray:
    """Whether each point lies in K_j (inverting the maps level by level): bool [N]."""
    lo, hi = f.child_boxes()
    s, t = np.asarray(f.scale), np.asarray(f.shift)
    u = np.array(x, dtype=np.float64, copy=True)
    ok = ((u >= f.lo) & (u <= f.hi)).all(1)
    for _ in range(j):
        hit = (u[:, None, :] >= lo) & (u[:, None, :] <= hi)
        inside = hit.all(2)  # [N, r]
        ok &= inside.any(1)
        i = inside.argmax(1)
        u = (u - t[i]) / s[i][:, None]
    return ok


def empirical_curve(f: IFS, x: np.ndarray, y: np.ndarray, n: int) -> np.ndarray:
    """P(j) estimated from a sample: the fraction with y = +1 or x outside K_j, j = 0..n."""
    return np.array([np.mean((y > 0) | ~in_K(f, x, j)) for j in range(n + 1)])
