"""Adam (Kingma & Ba) on M stacked nets, bias-corrected, in exactly the operation order of ``torch.optim.Adam``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from ..losses.base import Loss
from ..mlp import Params
from .backprop import forward_backward


@dataclass(frozen=True)
class Adam:
    """Forms dW and keeps two moments per parameter (3x parameter memory); per-model learning rates."""

    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    name: ClassVar[str] = "adam"

    def init_state(self, params: Params) -> dict[str, torch.Tensor]:
        state = {"step": torch.zeros((), dtype=torch.float64)}
        for ell, (W, b) in enumerate(params):
            for kind, p in (("W", W), ("b", b)):
                state[f"m_{kind}{ell}"] = torch.zeros_like(p)
                state[f"v_{kind}{ell}"] = torch.zeros_like(p)
        return state

    def step(self, params: Params, state: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
             lr: torch.Tensor, loss: Loss) -> torch.Tensor:
        state["step"] += 1  # every model in the batch takes this step, so one counter serves all
        t = float(state["step"])
        bc1 = 1.0 - self.beta1**t
        bc2_sqrt = (1.0 - self.beta2**t) ** 0.5
        neg_step = (-lr / bc1).view(-1, 1, 1)  # -lr / (1 - beta1^t), per model

        def update(p: torch.Tensor, grad: torch.Tensor, key: str) -> None:
            m, v = state[f"m_{key}"], state[f"v_{key}"]
            m.lerp_(grad, 1.0 - self.beta1)
            v.mul_(self.beta2).addcmul_(grad, grad, value=1.0 - self.beta2)
            denom = (v.sqrt() / bc2_sqrt).add_(self.eps)
            # torch.optim.Adam: p.addcdiv_(m, denom, value=-step_size) = p + (-step_size * m) / denom
            p.addcdiv_(m * neg_step, denom)

        def apply(ell: int, a_prev: torch.Tensor, g: torch.Tensor) -> None:
            W, b = params[ell]
            update(W, torch.bmm(a_prev.transpose(1, 2), g), f"W{ell}")
            update(b, g.sum(1, keepdim=True), f"b{ell}")

        return forward_backward(params, x, y, loss, apply)
