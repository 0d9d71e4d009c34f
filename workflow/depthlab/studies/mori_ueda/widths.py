"""Fixed parameter budget, Eq. (3) of Mori & Ueda: P = d h + (L - 1) h^2."""

from __future__ import annotations

import math

from depthlab.core.shapes import n_params


def width_for_budget(d: int, budget: float, depth: int) -> tuple[int, int]:
    """Integer width h that best satisfies P = d h + (L-1) h^2 (Eq. 3), and the exact count.

    Returns ``(h, n_params(d, h, depth))``.  Raises ValueError naming d, P and L
    when the nearest integer width is below 1.
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
    return h, n_params(d, h, depth)
