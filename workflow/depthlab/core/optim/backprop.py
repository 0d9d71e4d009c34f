"""The forward pass and the backward recursion of M stacked ReLU nets, written out by hand.

No autograd graph is built: for small nets the framework overhead of autograd dominates a
step, and the ReLU MLP's gradient is a handful of batched matmuls.  Every optimiser shares
:func:`forward_backward` and differs only in how a layer's gradient is applied.
Optimiser state is a flat dict of tensors (leading axis M where per model), so the trainer
can drop stopped models and checkpoint it without knowing its shape.
"""

from __future__ import annotations

from typing import Callable

import torch

from ..losses.base import Loss
from ..mlp import Params

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
