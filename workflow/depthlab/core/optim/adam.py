"""Adam (Kingma & Ba) on M stacked nets, bias-corrected, one fused pass per net: PyTorch's own fused kernel
(``torch._fused_adam_``, the kernel of ``torch.optim.Adam(fused=True)``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

import torch

from ..losses.base import Loss
from ..mlp import Params
from .backprop import forward_backward


class _Plan(NamedTuple):
    """One stack's fused calls, built once and reused while the stack keeps its tensors (until a model leaves): the
    gradient buffers the backward pass writes into, and per net the views of parameters, gradients and moments the
    kernel takes.  Slicing them each step (96 slices at depth 5) was 6 % of a width-100 step."""

    state: dict
    lr: torch.Tensor
    params: list[torch.Tensor]  # held, so no other tensor can take their identity while the plan lives
    grads: list[torch.Tensor]
    steps: list[torch.Tensor]
    calls: list[tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], float]]

    def serves(self, state: dict, lr: torch.Tensor, params: list[torch.Tensor]) -> bool:
        """The same stack: the same state, rates and parameter tensors (the trainer replaces all three when a model
        leaves, and never changes a rate in place; the rates are read when the plan is built)."""
        return (
            self.state is state
            and self.lr is lr
            and len(self.params) == len(params)
            and all(a is b for a, b in zip(self.params, params))
        )


@dataclass(frozen=True)
class Adam:
    """Forms dW and keeps two moments per parameter (3x parameter memory); per-model learning rates."""

    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    name: ClassVar[str] = "adam"
    # the last stack's plan (_Plan): a cache, not a setting (out of repr, equality and hash, so out of every fingerprint)
    _plan: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def plan(self, params: Params, state: dict[str, torch.Tensor], lr: torch.Tensor) -> _Plan:
        flat = [t for layer in params for t in layer]
        last = self._plan.get("last")
        if last is not None and last.serves(state, lr, flat):
            return last
        grads = [torch.empty_like(t) for t in flat]
        ms = [state[f"m_{kind}{ell}"] for ell in range(len(params)) for kind in "Wb"]
        vs = [state[f"v_{kind}{ell}"] for ell in range(len(params)) for kind in "Wb"]
        # one call per model, on that model's own tensors: the kernel runs a vector loop and a scalar tail, which round
        # differently, so its bits depend on the length it is handed; per model, a net's arithmetic is the same in any
        # stack (alone, in groups, after others left) and the same as torch.optim.Adam(fused=True) on that net
        calls = [
            tuple([t[m] for t in ts] for ts in (flat, grads, ms, vs)) + (rate,) for m, rate in enumerate(lr.tolist())
        ]
        plan = _Plan(state, lr, flat, grads, [state["step"]] * len(flat), calls)
        self._plan["last"] = plan
        return plan

    @staticmethod
    def gradients(
        params: Params, x: torch.Tensor, y: torch.Tensor, loss: Loss, grads: list[torch.Tensor]
    ) -> torch.Tensor:
        """Every layer's gradient into ``grads`` (dW_0, db_0, dW_1, ...: the stacked parameters' shapes); returns the
        minibatch loss [M].  The Adam-trained nets took new bits with the fused kernel, so they take the fast scalar
        head too (``forward_backward``'s ``row_head``)."""
        gW, gb = grads[0::2], grads[1::2]

        def record(ell: int, a_prev: torch.Tensor, g: torch.Tensor) -> None:
            if g.shape[2] == 1:  # the scalar head: g^T a as one row [M, 1, n] (a column is MKL's slow shape)
                M, n = a_prev.shape[0], a_prev.shape[2]
                torch.bmm(g.transpose(1, 2), a_prev, out=gW[ell].view(M, 1, n))
            else:
                torch.bmm(a_prev.transpose(1, 2), g, out=gW[ell])
            torch.sum(g, 1, keepdim=True, out=gb[ell])

        return forward_backward(params, x, y, loss, record, row_head=True)

    def init_state(self, params: Params) -> dict[str, torch.Tensor]:
        # float64: the kernel reads the count as a double, exact far past any budget (float32 stops at 2^24 steps)
        state = {"step": torch.zeros((), dtype=torch.float64, device=params[0][0].device)}
        for ell, (W, b) in enumerate(params):
            for kind, p in (("W", W), ("b", b)):
                state[f"m_{kind}{ell}"] = torch.zeros_like(p)
                state[f"v_{kind}{ell}"] = torch.zeros_like(p)
        return state

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

        The backward pass only records each layer's gradient, into the plan's buffers (the gradient sent down to layer
        l-1 never reads W_l's update, so nothing changes by waiting); then one fused kernel call
        per net updates its parameters and both moments (views of the stacked tensors) in one pass over memory.  It is ``torch.optim.Adam``'s update, bias correction and eps placement included:

            m = lerp(m, g, 1 - beta1);  v = beta2 v + (1 - beta2) g^2
            p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

        with the correction computed in double from the step count (a tensor: no host read of it).  The eight
        ``torch._foreach_*`` passes it replaces cost 28-32 % of a fractal step (``benchmarks/fractal_step.py``)."""
        state["step"] += 1  # in place: every model in the batch takes this step, so one counter serves all
        plan = self.plan(params, state, lr)
        batch_loss = self.gradients(params, x, y, loss, plan.grads)
        for ps, grads, ms, vs, rate in plan.calls:
            torch._fused_adam_(
                ps,
                grads,
                ms,
                vs,
                [],
                plan.steps,
                lr=rate,
                beta1=self.beta1,
                beta2=self.beta2,
                weight_decay=0.0,
                eps=self.eps,
                amsgrad=False,
                maximize=False,
            )
        return batch_loss
