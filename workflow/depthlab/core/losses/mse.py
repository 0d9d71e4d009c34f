"""Mean squared error, the regression loss (Mori & Ueda Eq. 6)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Loss


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
