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

    def bias_corrections(self, step: torch.Tensor) -> tuple[float | torch.Tensor, float | torch.Tensor]:
        """``1 - beta1^t`` and ``sqrt(1 - beta2^t)`` after ``t`` steps, as Python floats (``torch.optim.Adam``'s
        arithmetic).  Reading ``t`` to the host is a graph break for ``torch.compile``; a variant may return 0-d
        tensors instead (``benchmarks/bench.py``'s ``AdamDeviceBC``), and ``step`` uses whatever this returns."""
        t = float(step)
        return 1.0 - self.beta1**t, (1.0 - self.beta2**t) ** 0.5

    def step(
        self,
        params: Params,
        state: dict[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        lr: torch.Tensor,
        loss: Loss,
    ) -> torch.Tensor:
        """One step of every model, in place.  lr: [M].  Returns the minibatch loss [M].

        The backward pass only records each layer's gradient (the gradient sent down to layer l-1 never reads W_l's
        update, so nothing changes by waiting); then every tensor is updated by one ``torch._foreach_*`` call per
        operation instead of one Python call per operation and tensor.  On the CPU each foreach op runs the same
        kernel on each tensor as the per-tensor code did, so the result is the same to the bit; it is 1.06-1.6x
        faster a step at the fractal shapes (``python benchmarks/adam_layout.py``, docs/performance.md)."""
        state["step"] += 1  # every model in the batch takes this step, so one counter serves all
        bc1, bc2_sqrt = self.bias_corrections(state["step"])
        neg_step = (-lr / bc1).view(-1, 1, 1)  # -lr / (1 - beta1^t), per model
        ps: list[torch.Tensor] = []
        grads: list[torch.Tensor] = []
        ms: list[torch.Tensor] = []
        vs: list[torch.Tensor] = []

        def record(ell: int, a_prev: torch.Tensor, g: torch.Tensor) -> None:
            W, b = params[ell]
            ps.extend((W, b))
            grads.extend((torch.bmm(a_prev.transpose(1, 2), g), g.sum(1, keepdim=True)))
            ms.extend((state[f"m_W{ell}"], state[f"m_b{ell}"]))
            vs.extend((state[f"v_W{ell}"], state[f"v_b{ell}"]))

        batch_loss = forward_backward(params, x, y, loss, record)
        torch._foreach_lerp_(ms, grads, 1.0 - self.beta1)
        torch._foreach_mul_(vs, self.beta2)
        torch._foreach_addcmul_(vs, grads, grads, value=1.0 - self.beta2)
        denom = torch._foreach_sqrt(vs)
        torch._foreach_div_(denom, bc2_sqrt)
        torch._foreach_add_(denom, self.eps)
        # torch.optim.Adam: p.addcdiv_(m, denom, value=-step_size) = p + (-step_size * m) / denom
        torch._foreach_addcdiv_(ps, torch._foreach_mul(ms, [neg_step] * len(ms)), denom)
        return batch_loss
