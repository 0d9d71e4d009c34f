"""Error metrics shared by every study (numpy arrays or torch tensors in, the same kind out).

The sign convention is fixed once, in :func:`sign_labels`: a score or target of exactly 0
counts as class +1, and :func:`misclassification` uses the same rule.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def sign_labels(v: np.ndarray) -> np.ndarray:
    """Class labels in {-1, +1} of scores or target values: +1 where v >= 0."""
    return np.where(np.asarray(v) >= 0, 1.0, -1.0)


def misclassification(pred: Any, y: Any) -> Any:
    """Fraction of sign(pred) != sign(y) along the last axis, with the tie rule of :func:`sign_labels`.

    Works on numpy arrays and on torch tensors (returning the same kind).
    """
    wrong = (pred >= 0) != (y >= 0)
    torch = sys.modules.get("torch")  # torch tensors in, a torch tensor out; never imported here (numpy-only stages)
    if torch is not None and isinstance(wrong, torch.Tensor):
        return wrong.to(pred.dtype if pred.is_floating_point() else torch.float64).mean(-1)
    return np.mean(wrong, axis=-1)


def mse(pred: Any, y: Any) -> Any:
    """Mean squared error along the last axis (Mori & Ueda Eq. 7)."""
    r = pred - y
    return (r * r).mean(-1)
