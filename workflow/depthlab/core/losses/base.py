"""The loss interface: value and gradient, the error metric a result reports, and the stop rule.

A loss is chosen once (a stage picks the object) and carries everything that depends on it,
so no other code branches on a loss:

=========  ==========================  =====================  ==================================
loss       per-example loss            error metric           converged when (checked every check)
=========  ==========================  =====================  ==================================
MSE        (f - y)^2                   MSE                    training loss < threshold
Logistic   log(1 + exp(-y f))          misclassification      100 % training accuracy
Hinge      max(0, 1 - y f)             misclassification      training loss < threshold
=========  ==========================  =====================  ==================================

A threshold of ``None`` means "never stop early" (run to the epoch cap).  Classification
labels are +-1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from ..metrics import misclassification, mse


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
