"""Stage ``train``: the depth-N linear net and the end-to-end rule from the same start, every rate x seed (SPEC §5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
import xarray as xr

from . import linear
from .trajectory import Runs, run

if TYPE_CHECKING:
    from .specs import TrainSpec


def run_train(spec: "TrainSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    dev = torch.device(ctx.device)
    X = torch.as_tensor(data.x.values, dtype=torch.float64, device=dev)
    y = torch.as_tensor(data.y.values, dtype=torch.float64, device=dev)
    p, N = spec.job.p, spec.job.depth
    lrs = 10.0 ** np.linspace(*spec.log10_lr_range, spec.lr_points)
    S = len(spec.seeds)
    lr = torch.as_tensor(np.repeat(lrs, S), dtype=torch.float64, device=dev)
    Ws = linear.starts(spec.init, spec.seeds, X.shape[1], spec.width, N, spec.init_scale, len(lrs), dev)
    w_rule = linear.end_to_end(Ws).clone()
    targets = data.target_loss.sel(p=p).values  # [fraction], loosest first
    wd = spec.weight_decay

    M = len(lr)

    # the net (models 0..M-1) and its end-to-end rule (models M..2M-1) step together, so they are compared at every step
    prob = linear.Problem(X, y, p)

    def loss_now(active):
        return torch.cat(
            [
                linear.on_rows(prob.loss, linear.end_to_end(Ws), None if active is None else active[:M]),
                linear.on_rows(prob.loss, w_rule, None if active is None else active[M:]),
            ]
        )

    def step(active, t):
        g = linear.on_rows(lambda w: prob.grad(w)[1], linear.end_to_end(Ws), active[:M])
        linear.net_step(Ws, g, torch.where(active[:M], lr, 0.0), wd)
        g = linear.on_rows(lambda w: prob.grad(w)[1], w_rule, active[M:])
        linear.rule_step(w_rule, g, torch.where(active[M:], lr, 0.0), N, wd)

    def distance():
        w = linear.end_to_end(Ws)
        d = (w - w_rule).norm(dim=1) / w_rule.norm(dim=1).clamp_min(1e-300)
        return torch.cat([d, d])

    def balance():
        b = linear.balancedness(Ws)
        return torch.cat([b, b])

    both = run(
        loss_now,
        step,
        spec.budget,
        targets,
        S,
        judged=M,
        track={"distance": distance, "balancedness": balance},
        progress=ctx.progress,
        label=f"{spec.job.dataset} p={p} {spec.init} depth {N} (net and end-to-end rule)",
    )
    net = Runs(
        both.steps,
        both.loss[:M],
        {k: v[:M] for k, v in both.extra.items()},
        both.to_target[:M],
        both.diverged_at[:M],
        both.stopped_at,
    )
    rule = Runs(both.steps, both.loss[M:], {}, both.to_target[M:], both.diverged_at[M:], both.stopped_at)
    C = len(lrs)

    def grid(a):
        return np.asarray(a).reshape(C, S, *np.asarray(a).shape[1:])

    return xr.Dataset(
        {
            "loss": (("lr", "seed", "step"), grid(net.loss), {"description": "training loss of the depth-N net"}),
            "rule_loss": (
                ("lr", "seed", "step"),
                grid(rule.loss),
                {"description": "training loss of the end-to-end rule"},
            ),
            "distance": (
                ("lr", "seed", "step"),
                grid(net.extra["distance"]),
                {"description": "|w_e(net) - w(rule)| / |w(rule)|: the net against its end-to-end rule"},
            ),
            "balancedness": (
                ("lr", "seed", "step"),
                grid(net.extra["balancedness"]),
                {"description": "max_j |W_{j+1}^T W_{j+1} - W_j W_j^T| / |W_j W_j^T|"},
            ),
            "to_target": (
                ("lr", "seed", "fraction"),
                grid(net.to_target),
                {"description": "iterations to each target loss (-1: not reached before the batch stopped)"},
            ),
            "rule_to_target": (("lr", "seed", "fraction"), grid(rule.to_target)),
            "diverged_at": (
                ("lr", "seed"),
                grid(net.diverged_at),
                {"description": "iteration of divergence (-1: none)"},
            ),
            "rule_diverged_at": (("lr", "seed"), grid(rule.diverged_at)),
            "target_loss": (("fraction",), targets),
        },
        coords={"lr": lrs, "seed": list(spec.seeds), "step": net.steps, "fraction": data.fraction.values},
        attrs={
            "dataset": spec.job.dataset,
            "p": p,
            "depth": N,
            "init": spec.init,
            "width": spec.width,
            "optimum_loss": float(data.optimum_loss.sel(p=p)),
            "initial_loss": float(data.initial_loss.sel(p=p)),
            "weight_decay": wd,
            "stopped_at": int(both.stopped_at),
            "max_iterations": spec.budget.max_iterations,
        },
    )
