"""Shapes of the fully connected nets: layer sizes and exact parameter counts (pure Python: no torch import)."""

from __future__ import annotations


def layer_sizes(d: int, width: int, depth: int) -> list[int]:
    """(d, h, ..., h, 1): the input, L = depth hidden widths and the scalar output."""
    if depth < 1 or width < 1 or d < 1:
        raise ValueError(f"need d, width, depth >= 1, got d = {d}, width = {width}, depth = {depth}")
    return [d] + [width] * depth + [1]


def n_params(d: int, width: int, depth: int) -> int:
    """Exact parameter count, biases included: (d h + h) + (L - 1)(h^2 + h) + (h + 1)."""
    sizes = layer_sizes(d, width, depth)
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
