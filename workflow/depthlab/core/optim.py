"""One optimisation step on M stacked nets, with the backward pass written out by hand.

No autograd graph is built: for small nets the framework overhead of autograd
dominates a step, and the ReLU MLP's gradient is a handful of batched matmuls.
Both optimisers share the forward pass and the backward recursion
(:func:`forward_backward`) and differ only in how a layer's gradient is applied:

* :class:`SGD` folds the learning rate into the small [M, B, out] factor and
  updates ``W -= lr a^T g`` in one fused batched matmul (dW is never formed);
* :class:`Adam` forms dW and keeps two moments per parameter (3x parameter
  memory), in exactly the operation order of ``torch.optim.Adam``.

Optimiser state is a flat dict of tensors (leading axis M where per model), so
the trainer can drop stopped models and checkpoint it without knowing its shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

import torch

from .losses import Loss
from .mlp import Params

# apply(layer l, a_{l-1} [M, B, in], g = dL/d(pre-activation_l) [M, B, out]) updates layer l in place
Apply = Callable[[int, torch.Tensor, torch.Tensor], None]


def forward_backward(params: Params, x: torch.Tensor, y: torch.Tensor, loss: Loss, apply: Apply) -> torch.Tensor:
    """Forward pass, loss, and backward recursion from the output layer down, calling ``apply`` per layer.

    x: [M, B, d], y: [M, B].  The gradient flowing to layer l-1 is computed from W_l
    *before* ``apply`` updates W_l.  Returns the minibatch loss [M] before the step.
    """
    acts = [x]  # z_0 .. z_L, each [M, B, n_l]
    for W, b in params[:-1]:
        acts.append(torch.baddbmm(b, acts[-1], W).relu_())
    W, b = params[-1]
    out = torch.baddbmm(b, acts[-1], W).squeeze(-1)  # [M, B]
    batch_loss, g = loss.value_and_grad(out, y)
    g = g.unsqueeze(-1)  # dL/d(output pre-activation), [M, B, 1]
    for ell in range(len(params) - 1, -1, -1):
        a_prev = acts[ell]
        g_down = None
        if ell > 0:
            # relu'(z) = 1[a > 0]; threshold_backward is that mask-multiply as one fused op
            g_down = torch.ops.aten.threshold_backward(torch.bmm(g, params[ell][0].transpose(1, 2)), a_prev, 0.0)
        apply(ell, a_prev, g)
        g = g_down
    return batch_loss


@dataclass(frozen=True)
class SGD:
    """Plain SGD, W <- W - lr dL/dW (Mori & Ueda Eq. 5)."""

    name: ClassVar[str] = "sgd"

    def init_state(self, params: Params) -> dict[str, torch.Tensor]:
        return {}

    def step(self, params: Params, state: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
             lr: torch.Tensor, loss: Loss) -> torch.Tensor:
        """One step on every model, in place. lr: [M].  Returns the minibatch loss [M]."""
        lr3 = lr.view(-1, 1, 1)

        def apply(ell: int, a_prev: torch.Tensor, g: torch.Tensor) -> None:
            W, b = params[ell]
            g_lr = g * lr3  # scale the small [M, B, out] factor, not the [M, in, out] gradient
            W.baddbmm_(a_prev.transpose(1, 2), g_lr, alpha=-1.0)  # W -= lr a^T g
            b.sub_(g_lr.sum(1, keepdim=True))

        return forward_backward(params, x, y, loss, apply)


@dataclass(frozen=True)
class Adam:
    """Adam (Kingma & Ba), bias-corrected, as torch.optim.Adam with per-model learning rates."""

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


OPTIMIZERS = {"sgd": SGD, "adam": Adam}


def get(name: str) -> SGD | Adam:
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {name!r}")
    return OPTIMIZERS[name]()
