"""Stage ``baseline``: one optimiser of the depth-1 model at every rate x seed, from the depth-1 net's start (SPEC §5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
import xarray as xr

from . import linear, optimizers
from .trajectory import run

if TYPE_CHECKING:
    from .specs import BaselineSpec


def run_baseline(spec: "BaselineSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    dev = torch.device(ctx.device)
    X = torch.as_tensor(data.x.values, dtype=torch.float64, device=dev)
    y = torch.as_tensor(data.y.values, dtype=torch.float64, device=dev)
    p, method = spec.job.p, spec.job.method
    lrs = 10.0 ** np.linspace(*spec.log10_lr_range, spec.lr_points)
    S = len(spec.seeds)
    lr = torch.as_tensor(np.repeat(lrs, S), dtype=torch.float64, device=dev)
    # the depth-1 net's start: the balanced one, |w| = init_scale along the same direction as every depth's w_e(0)
    w = linear.starts("balanced", spec.seeds, X.shape[1], 1, 1, spec.init_scale, len(lrs), dev)[0][:, 0, :].clone()
    state = optimizers.init_state(method, w)
    targets = data.target_loss.sel(p=p).values  # [fraction], loosest first

    prob = linear.Problem(X, y, p)

    def loss_now(active):
        return linear.on_rows(prob.loss, w, active)

    def step(active, t):
        g = linear.on_rows(lambda v: prob.grad(v)[1], w, active)
        optimizers.step(method, w, torch.where(active.view(-1, 1), g, 0.0), torch.where(active, lr, 0.0), state, t)

    r = run(loss_now, step, spec.budget, targets, S, progress=ctx.progress, label=f"{spec.job.dataset} p={p} {method}")
    C = len(lrs)
    return xr.Dataset(
        {
            "loss": (("lr", "seed", "step"), r.loss.reshape(C, S, -1)),
            "to_target": (
                ("lr", "seed", "fraction"),
                r.to_target.reshape(C, S, -1),
                {"description": "iterations to each target loss (-1: not reached before the batch stopped)"},
            ),
            "diverged_at": (("lr", "seed"), r.diverged_at.reshape(C, S)),
            "target_loss": (("fraction",), targets),
        },
        coords={"lr": lrs, "seed": list(spec.seeds), "step": r.steps, "fraction": data.fraction.values},
        attrs={
            "dataset": spec.job.dataset,
            "p": p,
            "method": method,
            "optimum_loss": float(data.optimum_loss.sel(p=p)),
            "initial_loss": float(data.initial_loss.sel(p=p)),
            "stopped_at": int(r.stopped_at),
            "max_iterations": spec.budget.max_iterations,
        },
    )
