"""Telgarsky's sawtooth: the triangle map, a hand-built deep net that equals Delta^L, exact piece counts, a lower bound.

Delta(x) = 2x on [0, 1/2], 2 - 2x on [1/2, 1]; Delta^L (L-fold composition) has 2^L linear
pieces on [0, 1], i.e. 2^(L-1) "teeth" each rising 0 -> 1 and falling back to 0.

Construction: Delta(z) = 2 relu(z) - 4 relu(z - 1/2) for z in [0, 1], so a depth-L, width-2
ReLU net (hidden units relu(z), relu(z - 1/2) per layer, the 2, -4 folded into the next
layer's weights) equals Delta^L exactly on [0, 1].

Lower bounds on the error of a function g with p linear pieces on [0, 1] (x ~ U[0, 1]); a one-hidden-layer
net of width w has at most p = w + 1 pieces.  Two bounds, the larger is used, and both are positive exactly
when p < 2^L, i.e. when g has fewer pieces than Delta^L (one condition, stated the same in the claims):

* crossing count (the depth-separation survey's argument, made quantitative): g has p - 1 breakpoints, so at
  least 2^(L-1) - (p - 1) teeth of Delta^L contain none and are matched by one affine function each; the best
  affine fit of a tent over its width has MSE width/12 (mean absolute error width/4), so
  MSE >= (1/12) max(0, 1 - (p - 1)/2^(L-1)) and L1 >= (1/4) max(0, 1 - (p - 1)/2^(L-1));
* windows (positive up to p = 2^L - 1): disjoint windows of width 2^-L around the 2^L - 1 interior kinks of
  Delta^L; g has no kink in at least 2^L - p of them, and on each the best affine fit to the tent (height 1/2
  over the half-width) costs 1/48 in mean squared error, so MSE >= max(0, 1 - p/2^L)/48.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported where a net is built: the figures read the bounds without it
    import torch

    from depthlab.core.mlp import Params


def triangle(x: np.ndarray) -> np.ndarray:
    return np.where(x <= 0.5, 2.0 * x, 2.0 - 2.0 * x)


def sawtooth(x: np.ndarray, level: int) -> np.ndarray:
    """Delta^L(x) for x in [0, 1]."""
    y = np.asarray(x, dtype=np.float64)
    for _ in range(level):
        y = triangle(y)
    return y


def construction(level: int, dtype: "torch.dtype | None" = None) -> "Params":
    """Stacked (M = 1) parameters of the depth-L, width-2 net equal to Delta^L on [0, 1] (float64 by default)."""
    import torch

    dtype = torch.float64 if dtype is None else dtype
    fold = torch.tensor([[2.0, 2.0], [-4.0, -4.0]], dtype=dtype)  # [in = 2 units, out = 2 units]: z -> (z, z)
    bias = torch.tensor([[0.0, -0.5]], dtype=dtype)
    params = [(torch.tensor([[[1.0, 1.0]]], dtype=dtype), bias[None].clone())]  # x -> (relu(x), relu(x - 1/2))
    for _ in range(level - 1):
        params.append((fold[None].clone(), bias[None].clone()))
    params.append((torch.tensor([[[2.0], [-4.0]]], dtype=dtype), torch.zeros(1, 1, 1, dtype=dtype)))
    return params


def pieces(
    params: "Params", m: int = 0, lo: float = 0.0, hi: float = 1.0, rtol: float = 1e-9
) -> tuple[int, np.ndarray]:
    """Exact number of linear pieces on [lo, hi] of model m of a stack of 1-D-input ReLU nets, from its weights.

    Propagates the partition of [lo, hi] on which every unit of the current layer is affine:
    a unit's pre-activation a x + c crosses zero inside a segment at -c / a, which becomes a
    new breakpoint.  At the output, adjacent segments whose affine maps agree (slopes and
    values equal to ``rtol`` relative to the output scale) are merged: a kink that later
    weights cancel is not a piece boundary.  Returns (pieces, breakpoints inside (lo, hi)).
    """
    Ws = [W[m].detach().double().cpu().numpy() for W, _ in params]
    bs = [b[m, 0].detach().double().cpu().numpy() for _, b in params]
    edges = np.array([lo, hi])
    A = np.ones((1, 1))  # [segments, units]: the current layer's inputs as a x + c per segment (first: x itself)
    C = np.zeros((1, 1))
    for i, (W, b) in enumerate(zip(Ws, bs)):
        a, c = A @ W, C @ W + b  # pre-activations, [S, out]
        if i == len(Ws) - 1:
            break
        new_edges = [edges[0]]
        pieces_a, pieces_c = [], []
        for s in range(len(edges) - 1):
            x0, x1 = edges[s], edges[s + 1]
            with np.errstate(divide="ignore", invalid="ignore"):
                roots = -c[s] / a[s]
            cut = np.unique(roots[(roots > x0) & (roots < x1) & np.isfinite(roots)])
            bounds = np.concatenate([[x0], cut, [x1]])
            for j in range(len(bounds) - 1):
                mid = 0.5 * (bounds[j] + bounds[j + 1])
                on = (a[s] * mid + c[s]) > 0
                pieces_a.append(np.where(on, a[s], 0.0))
                pieces_c.append(np.where(on, c[s], 0.0))
                new_edges.append(bounds[j + 1])
        edges = np.asarray(new_edges)
        A, C = np.stack(pieces_a), np.stack(pieces_c)
    slope, icpt = a[:, 0], c[:, 0]
    scale = max(np.abs(slope).max() * (hi - lo), np.abs(icpt).max(), 1e-300)
    # the output is continuous, so two adjacent affine pieces are one exactly when their slopes agree
    keep = [0]
    for s in range(1, len(slope)):
        if abs(slope[s] - slope[keep[-1]]) * (hi - lo) > rtol * scale:
            keep.append(s)
    breaks = edges[keep[1:]]
    return len(keep), breaks


def crossing_bound(p: np.ndarray | int, level: int) -> np.ndarray:
    """The crossing-count lower bound on the MSE against Delta^L of a function with p pieces (positive for p <= 2^(L-1))."""
    return np.maximum(0.0, 1.0 - (np.asarray(p, dtype=np.float64) - 1.0) / 2.0 ** (level - 1)) / 12.0


def window_bound(p: np.ndarray | int, level: int) -> np.ndarray:
    """The window lower bound on the MSE against Delta^L of a function with p pieces (positive for p < 2^L)."""
    return np.maximum(0.0, 1.0 - np.asarray(p, dtype=np.float64) / 2.0**level) / 48.0


def mse_bound(p: np.ndarray | int, level: int) -> np.ndarray:
    """The larger of the two lower bounds: positive exactly when p < 2^L."""
    return np.maximum(crossing_bound(p, level), window_bound(p, level))


def l1_bound(p: np.ndarray | int, level: int) -> np.ndarray:
    """Lower bound on the mean absolute error of any function with p linear pieces against Delta^L."""
    return np.maximum(0.0, 1.0 - (np.asarray(p, dtype=np.float64) - 1.0) / 2.0 ** (level - 1)) / 4.0
