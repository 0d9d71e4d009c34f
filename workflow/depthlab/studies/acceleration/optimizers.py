"""The baselines of Arora, Cohen & Hazan on the depth-1 model, M parameter vectors [M, d] at once, each with its own rate.

Each follows ``torch.optim``'s update (default hyper-parameters, tested against it): heavy-ball momentum (SGD with
momentum 0.9, no dampening), AdaGrad (eps 1e-10), AdaDelta (rho 0.9, eps 1e-6; its lr scales the step), Adam
(0.9, 0.999, eps 1e-8); and plain gradient descent.
"""

from __future__ import annotations

import torch

METHODS = ("gd", "momentum", "adagrad", "adadelta", "adam")


def init_state(method: str, w: torch.Tensor) -> dict[str, torch.Tensor]:
    z = torch.zeros_like(w)
    return {
        "gd": {},
        "momentum": {"buf": z.clone()},
        "adagrad": {"sum": z.clone()},
        "adadelta": {"v": z.clone(), "u": z.clone()},
        "adam": {"m": z.clone(), "v": z.clone()},
    }[method]


def step(
    method: str, w: torch.Tensor, g: torch.Tensor, lr: torch.Tensor, state: dict[str, torch.Tensor], t: int
) -> None:
    """One in-place step of ``method`` at iteration t = 1, 2, ...: w, g [M, d], lr [M]."""
    lr = lr.view(-1, 1)
    if method == "gd":
        w.sub_(lr * g)
    elif method == "momentum":
        buf = state["buf"]
        buf.mul_(0.9).add_(g) if t > 1 else buf.copy_(g)
        w.sub_(lr * buf)
    elif method == "adagrad":
        s = state["sum"]
        s.addcmul_(g, g)
        w.sub_(lr * g / (s.sqrt() + 1e-10))
    elif method == "adadelta":
        v, u = state["v"], state["u"]
        v.mul_(0.9).addcmul_(g, g, value=0.1)
        delta = (u + 1e-6).sqrt() / (v + 1e-6).sqrt() * g
        u.mul_(0.9).addcmul_(delta, delta, value=0.1)
        w.sub_(lr * delta)
    elif method == "adam":
        m, v = state["m"], state["v"]
        m.lerp_(g, 0.1)
        v.mul_(0.999).addcmul_(g, g, value=0.001)
        mhat, vhat = m / (1 - 0.9**t), v / (1 - 0.999**t)
        w.sub_(lr * mhat / (vhat.sqrt() + 1e-8))
    else:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
