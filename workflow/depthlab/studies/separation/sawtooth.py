"""Stage ``sawtooth``: nets trained on Delta^L from random init or from the perturbed construction."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
import xarray as xr

from depthlab.core.edges import choose
from depthlab.core.grid import train_grid
from depthlab.core.mlp import init_params, predict
from depthlab.core.seeds import seed
from depthlab.core.shapes import layer_sizes
from depthlab.core.stopping import reason_names

from .telgarsky import construction, crossing_bound, mse_bound, pieces, sawtooth, window_bound
from .training import settings

if TYPE_CHECKING:
    from .specs import SawtoothSpec


def run_sawtooth(spec: "SawtoothSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    L, kind, depth, width = spec.job.level, spec.kind, spec.depth, spec.width
    lrs, seeds_cfg = np.asarray(spec.lrs), list(spec.seeds)
    x, xt, xp = data.x_train.values[:, None], data.x_test.values[:, None], data.x_plot.values[:, None]
    y, yt = sawtooth(x[:, 0], L), sawtooth(xt[:, 0], L)
    if kind == "construct":
        inits = []
        for s in seeds_cfg:
            g = torch.Generator().manual_seed(seed(s, "perturb", L))
            inits.append(
                [
                    (
                        W.float() + spec.perturbation * torch.randn(W.shape, generator=g),
                        b.float() + spec.perturbation * torch.randn(b.shape, generator=g),
                    )
                    for W, b in construction(L)
                ]
            )
        init = [
            (torch.cat([p[i][0] for p in inits]), torch.cat([p[i][1] for p in inits])) for i in range(len(inits[0]))
        ]
    else:
        init = init_params(
            layer_sizes(1, width, depth), np.array([seed(s, "init", L, depth, width) for s in seeds_cfg]), spec.init
        )
    grid = train_grid(
        x,
        y,
        lrs,
        init,
        np.array([seed(s, "order", L, depth, width) for s in seeds_cfg]),
        settings(spec.training, ctx.device, float(np.var(y))),
        progress=ctx.progress,
        checkpoint=ctx.checkpoint,
    )
    res = grid.result  # model m = (lr m // S, seed m % S)
    M = len(res.diverged)
    mse = np.mean((predict(res.params, xt) - yt) ** 2, axis=1)
    mse = np.where(res.diverged, np.nan, mse)
    count = np.array([pieces(res.params, m)[0] if not res.diverged[m] else -1 for m in range(M)])
    loss = np.where(res.diverged, np.inf, res.train_loss)
    best = int(np.argmin(loss))
    # the rate with the lowest mean training loss over seeds, and where it lies in the grid (no growth: S2 rests on a bound
    # that holds for every net, S3 is a question; the edge is reported beside the answer)
    choice = choose(lrs, grid.grid(loss).mean(1), grid.grid(res.diverged).all(1))
    rule = settings(spec.training, ctx.device, float(np.var(y))).stop
    ctx.progress(
        f"L={L} {spec.job.arch}: best (by training loss) test MSE {mse[best]:.3g}, {count[best]} pieces of {2**L}"
    )
    return xr.Dataset(
        {
            "test_mse": (("lr", "seed"), grid.grid(mse), {"description": "MSE against Delta^L on the test points"}),
            "train_loss": (("lr", "seed"), grid.grid(res.train_loss)),
            "pieces": (
                ("lr", "seed"),
                grid.grid(count),
                {"description": "exact linear pieces on [0, 1] (-1: diverged)"},
            ),
            "epochs": (("lr", "seed"), grid.grid(res.epochs)),
            "converged": (("lr", "seed"), grid.grid(res.converged)),
            "stop_reason": (
                ("lr", "seed"),
                grid.grid(reason_names(res.stop_reason)),
                {
                    "description": "why training stopped: "
                    + rule.describe("check", f"{spec.training.max_epochs} epochs")
                },
            ),
            "lr_edge": (
                (),
                choice.edge,
                {"description": "where the rate with the lowest mean training loss lies in the grid"},
            ),
            "diverged": (("lr", "seed"), grid.grid(res.diverged)),
            "prediction": (("lr", "seed", "plot_point"), grid.grid(predict(res.params, xp))),
            "best": (
                (),
                best,
                {"description": "flat index (lr * seeds + seed) of the model with the lowest training loss"},
            ),
            "mse_bound": (
                (),
                float(mse_bound(width + 1, L)) if depth == 1 else 0.0,
                {
                    "description": "lower bound on the MSE of any net of this shape (one hidden layer: at most w + 1 pieces): "
                    "the larger of the crossing-count and window bounds, positive when w + 1 < 2^L"
                },
            ),
            "crossing_bound": ((), float(crossing_bound(width + 1, L)) if depth == 1 else 0.0),
            "window_bound": ((), float(window_bound(width + 1, L)) if depth == 1 else 0.0),
        },
        coords={"lr": lrs, "seed": seeds_cfg, "level": L},
        attrs={"kind": kind, "depth": depth, "width": width, "n_params": spec.n_params},
    )
