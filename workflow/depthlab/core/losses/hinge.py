"""Hinge loss mean(relu(1 - y f)), as in Malach & Shalev-Shwartz's code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import Loss


@dataclass(frozen=True)
class Hinge(Loss):
    name: ClassVar[str] = "hinge"
    task: ClassVar[str] = "classification"

    def value(self, out, y):
        return torch.relu(1.0 - y * out).mean(1)

    def value_and_grad(self, out, y):
        margin = 1.0 - y * out
        # d/df relu(1 - y f) = -y 1[y f < 1]; at the kink (margin = 0) the subgradient 0, as torch.relu's backward
        return torch.relu(margin).mean(1), torch.where(margin > 0, -y, torch.zeros_like(y)) / out.shape[1]
