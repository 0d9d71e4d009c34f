"""Logistic loss: the cross-entropy of sigmoid(f) on labels +-1, softplus(-y f) (Mori & Ueda Sec. 3.3.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import Loss


@dataclass(frozen=True)
class Logistic(Loss):
    name: ClassVar[str] = "logistic"
    task: ClassVar[str] = "classification"

    def value(self, out, y):
        return torch.nn.functional.softplus(-y * out).mean(1)

    def value_and_grad(self, out, y):
        m = -y * out
        return torch.nn.functional.softplus(m).mean(1), -y * torch.sigmoid(m) / out.shape[1]

    def converged(self, loss, accuracy, threshold):
        return accuracy >= 1.0  # the paper's rule: 100 % training accuracy (threshold unused)
