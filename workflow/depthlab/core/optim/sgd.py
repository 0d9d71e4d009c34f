"""Plain SGD on M stacked nets, W <- W - lr dL/dW (Mori & Ueda Eq. 5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from ..losses.base import Loss
from ..mlp import Params
from .backprop import forward_backward


@dataclass(frozen=True)
class SGD:
    """Folds the learning rate into the small [M, B, out] factor and updates ``W -= lr a^T g`` in one fused
    batched matmul (dW is never formed)."""

    name: ClassVar[str] = "sgd"

    def init_state(self, params: Params) -> dict[str, torch.Tensor]:
        return {}

    def step(
        self,
        params: Params,
        state: dict[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        lr: torch.Tensor,
        loss: Loss,
    ) -> torch.Tensor:
        """One step on every model, in place. lr: [M].  Returns the minibatch loss [M]."""
        lr3 = lr.view(-1, 1, 1)

        def apply(ell: int, a_prev: torch.Tensor, g: torch.Tensor) -> None:
            W, b = params[ell]
            g_lr = g * lr3  # scale the small [M, B, out] factor, not the [M, in, out] gradient
            W.baddbmm_(a_prev.transpose(1, 2), g_lr, alpha=-1.0)  # W -= lr a^T g
            b.sub_(g_lr.sum(1, keepdim=True))

        return forward_backward(params, x, y, loss, apply)
