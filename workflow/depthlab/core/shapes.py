"""Shapes of the fully connected nets: layer sizes, exact parameter counts, and the width for a budget (pure Python).

Two budgets are in use, and each has its own width function, named for what it counts:

* :func:`width_for_hidden_weights`: Mori & Ueda's Eq. 3, P = d h + (L - 1) h^2, which counts the
  weights into and between the hidden layers (no biases, no output layer);
* :func:`width_for_params`: the exact parameter count :func:`n_params` (biases and output layer
  included), as the depth-separation study compares nets.
"""

from __future__ import annotations

import math


def layer_sizes(d: int, width: int, depth: int) -> list[int]:
    """(d, h, ..., h, 1): the input, L = depth hidden widths and the scalar output."""
    if depth < 1 or width < 1 or d < 1:
        raise ValueError(f"need d, width, depth >= 1, got d = {d}, width = {width}, depth = {depth}")
    return [d] + [width] * depth + [1]


def n_params(d: int, width: int, depth: int) -> int:
    """Exact parameter count, biases included: (d h + h) + (L - 1)(h^2 + h) + (h + 1)."""
    sizes = layer_sizes(d, width, depth)
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def width_for_hidden_weights(*, d: int, depth: int, budget: float) -> int:
    """The integer width h that best satisfies P = d h + (L - 1) h^2 (Mori & Ueda, Eq. 3).

    Raises ValueError naming d, P and L when the nearest integer width is below 1.
    """
    if depth < 1:
        raise ValueError(f"depth L must be >= 1, got L = {depth}")
    if depth == 1:
        root = budget / d
    else:
        a = depth - 1
        # positive root of a h^2 + d h - P = 0, written to avoid cancellation
        root = 2.0 * budget / (d + math.sqrt(d * d + 4.0 * a * budget))
    # Eq. 3's left side is increasing in h, so the integer closest to satisfying it
    # is floor(root) or ceil(root): keep whichever misses P by less.
    lo = max(int(math.floor(root)), 0)
    h = min((lo, lo + 1), key=lambda w: (abs(d * w + (depth - 1) * w * w - budget), w))
    if h < 1:
        raise ValueError(
            f"no positive width for budget P = {budget:g} at d = {d}, L = {depth}: "
            f"Eq. 3 gives h = {root:.3f}; raise P or lower d"
        )
    return h


def width_for_params(*, d: int, depth: int, budget: int) -> int:
    """The width h >= 1 whose exact parameter count :func:`n_params` (d, h, depth) is closest to ``budget``."""
    if n_params(d, 1, depth) > budget:
        raise ValueError(
            f"budget {budget} is below the smallest net (width 1: {n_params(d, 1, depth)} parameters) "
            f"at d = {d}, depth {depth}"
        )
    a, b = depth - 1, d + 2 + (depth - 1)  # n_params = a h^2 + b h + 1
    root = (budget - 1) / b if a == 0 else (-b + math.sqrt(b * b + 4 * a * (budget - 1))) / (2 * a)
    return min(
        (max(1, math.floor(root)), max(1, math.ceil(root))), key=lambda w: (abs(n_params(d, w, depth) - budget), w)
    )


def batches(n: int, batch_size: int) -> int:
    """Minibatches in one epoch of ``n`` examples (the last one may be short): optimiser steps per epoch."""
    return max(1, -(-int(n) // max(1, int(batch_size))))
