"""Losses as objects: value and gradient, the error metric reported, and the stop rule.

A loss is chosen once (by name, from a spec) and carries everything that
depends on it, so no other module branches on a loss name:

=========  ==========================  =====================  ==================================
name       per-example loss            error metric           converged when (checked every check)
=========  ==========================  =====================  ==================================
mse        (f - y)^2                   MSE                    training loss < threshold
logistic   log(1 + exp(-y f))          misclassification      100 % training accuracy
hinge      max(0, 1 - y f)             misclassification      training loss < threshold
=========  ==========================  =====================  ==================================

A threshold of ``None`` means "never stop early" (run to the epoch cap).
Classification labels are +-1.  The sign convention is fixed once, in
:func:`sign_labels`: a score or target of exactly 0 counts as class +1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch


def sign_labels(v: np.ndarray) -> np.ndarray:
    """Class labels in {-1, +1} of scores or target values: +1 where v >= 0."""
    return np.where(np.asarray(v) >= 0, 1.0, -1.0)


def misclassification(pred: Any, y: Any) -> Any:
    """Fraction of sign(pred) != sign(y) along the last axis, with the tie rule of :func:`sign_labels`.

    Works on numpy arrays and on torch tensors (returning the same kind).
    """
    wrong = (pred >= 0) != (y >= 0)
    if isinstance(wrong, torch.Tensor):
        return wrong.to(pred.dtype if pred.is_floating_point() else torch.float64).mean(-1)
    return np.mean(wrong, axis=-1)


def mse(pred: Any, y: Any) -> Any:
    """Mean squared error along the last axis (Mori & Ueda Eq. 7)."""
    r = pred - y
    return (r * r).mean(-1)


@dataclass(frozen=True)
class Loss:
    """Base class. ``out`` and ``y`` are [M, B] tensors; gradients are of the per-model mean loss."""

    name: ClassVar[str] = ""
    task: ClassVar[str] = ""  # "regression" | "classification": which error metric a result reports

    def value(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per-model mean loss [M]."""
        raise NotImplementedError

    def value_and_grad(self, out: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(per-model mean loss [M], d loss / d out [M, B])."""
        raise NotImplementedError

    def error(self, pred: Any, y: Any) -> Any:
        """The reported error of predictions: MSE for regression, misclassification rate otherwise."""
        return mse(pred, y) if self.task == "regression" else misclassification(pred, y)

    def converged(self, loss: np.ndarray, accuracy: np.ndarray, threshold: float | None) -> np.ndarray:
        """Stop rule at a check, from the full training loss and accuracy [M] (bool [M])."""
        if threshold is None:
            return np.zeros(loss.shape, dtype=bool)
        return loss < threshold


@dataclass(frozen=True)
class MSE(Loss):
    name: ClassVar[str] = "mse"
    task: ClassVar[str] = "regression"

    def value(self, out, y):
        r = out - y
        return (r * r).mean(1)

    def value_and_grad(self, out, y):
        r = out - y
        return (r * r).mean(1), r * (2.0 / out.shape[1])


@dataclass(frozen=True)
class Logistic(Loss):
    """Cross-entropy of sigmoid(f) on labels +-1: softplus(-y f) (Mori & Ueda Sec. 3.3.2)."""

    name: ClassVar[str] = "logistic"
    task: ClassVar[str] = "classification"

    def value(self, out, y):
        return torch.nn.functional.softplus(-y * out).mean(1)

    def value_and_grad(self, out, y):
        m = -y * out
        return torch.nn.functional.softplus(m).mean(1), -y * torch.sigmoid(m) / out.shape[1]

    def converged(self, loss, accuracy, threshold):
        return accuracy >= 1.0  # the paper's rule: 100 % training accuracy (threshold unused)


@dataclass(frozen=True)
class Hinge(Loss):
    """mean(relu(1 - y f)), as in Malach & Shalev-Shwartz's code."""

    name: ClassVar[str] = "hinge"
    task: ClassVar[str] = "classification"

    def value(self, out, y):
        return torch.relu(1.0 - y * out).mean(1)

    def value_and_grad(self, out, y):
        margin = 1.0 - y * out
        # d/df relu(1 - y f) = -y 1[y f < 1]; at the kink (margin = 0) the subgradient 0, as torch.relu's backward
        return torch.relu(margin).mean(1), torch.where(margin > 0, -y, torch.zeros_like(y)) / out.shape[1]


LOSSES: dict[str, Loss] = {cls.name: cls() for cls in (MSE, Logistic, Hinge)}


def get(name: str) -> Loss:
    if name not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {name!r}")
    return LOSSES[name]
