"""Stages ``sawtooth_data``, ``construction`` and ``sawtooth``: what depth can express vs what training finds on Delta^L."""

from __future__ import annotations

import numpy as np
import torch
import xarray as xr

from depthlab.core.mlp import init_params, layer_sizes, predict
from depthlab.core.seeds import rng, seed
from depthlab.core.trainer import TrainSettings, train

from .sawtooth import construction, mse_bound, pieces, sawtooth


def make_data(spec: dict, inputs: dict, ctx=None) -> xr.Dataset:
    g = rng(spec["seed"], "x_train")
    gt = rng(spec["seed"], "x_test")
    return xr.Dataset(
        {
            "x_train": (("train_sample",), g.uniform(0.0, 1.0, spec["n_train"])),
            "x_test": (("test_sample",), gt.uniform(0.0, 1.0, spec["n_test"])),
            "x_plot": (("plot_point",), np.linspace(0.0, 1.0, spec["plot_points"])),
        }
    )


def make_construction(spec: dict, inputs: dict, ctx=None) -> xr.Dataset:
    """The hand-built depth-L width-2 nets: max |net - Delta^L| on a fine grid, exact pieces, and their outputs."""
    levels = spec["levels"]
    grid = np.linspace(0.0, 1.0, 2**16 + 1)
    plot = np.linspace(0.0, 1.0, spec["plot_points"])
    err, count, out = [], [], []
    for L in levels:
        p = construction(L)
        err.append(float(np.max(np.abs(predict(p, grid[:, None])[0] - sawtooth(grid, L)))))
        count.append(pieces(p)[0])
        out.append(predict(p, plot[:, None])[0])
    return xr.Dataset(
        {
            "max_abs_error": (("level",), np.asarray(err), {"description": "max |net - Delta^L| over 2^16 + 1 grid points"}),
            "pieces": (("level",), np.asarray(count, dtype=np.int64), {"description": "exact linear pieces on [0, 1], from the weights"}),
            "target_pieces": (("level",), 2 ** np.asarray(levels, dtype=np.int64)),
            "prediction": (("level", "plot_point"), np.stack(out)),
            "target": (("level", "plot_point"), np.stack([sawtooth(plot, L) for L in levels])),
            "x_plot": (("plot_point",), plot),
        },
        coords={"level": levels},
    )


def run_sawtooth(spec: dict, inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    L, kind, depth, width = spec["job"]["level"], spec["kind"], spec["depth"], spec["width"]
    lrs, seeds_cfg = np.asarray(spec["lrs"]), list(spec["seeds"])
    C, S = len(lrs), len(seeds_cfg)
    x, xt, xp = data.x_train.values[:, None], data.x_test.values[:, None], data.x_plot.values[:, None]
    y, yt = sawtooth(x[:, 0], L), sawtooth(xt[:, 0], L)
    sizes = layer_sizes(1, width, depth)
    if kind == "construct":
        inits = []
        for s in seeds_cfg:
            g = torch.Generator().manual_seed(seed(s, "perturb", L))
            inits.append([(W.float() + spec["perturbation"] * torch.randn(W.shape, generator=g),
                           b.float() + spec["perturbation"] * torch.randn(b.shape, generator=g)) for W, b in construction(L)])
        init = [(torch.cat([p[i][0] for p in inits]), torch.cat([p[i][1] for p in inits])) for i in range(len(inits[0]))]
    else:
        init = init_params(sizes, np.array([seed(s, "init", L, depth, width) for s in seeds_cfg]), spec["init"])
    init = [(W.repeat(C, 1, 1), b.repeat(C, 1, 1)) for W, b in init]  # model m = (lr m // S, seed m % S)
    order = np.tile([seed(s, "order", L, depth, width) for s in seeds_cfg], C)
    res = train(x, y, np.tile(np.arange(len(y)), (C * S, 1)), np.repeat(lrs, S), init, order,
                TrainSettings(device=ctx.device, **spec["training"]), progress=ctx.progress, checkpoint=ctx.checkpoint)
    mse = np.mean((predict(res.params, xt) - yt) ** 2, axis=1)
    mse = np.where(res.diverged, np.nan, mse)
    count = np.array([pieces(res.params, m)[0] if not res.diverged[m] else -1 for m in range(C * S)])
    loss = np.where(res.diverged, np.inf, res.train_loss)
    best = int(np.argmin(loss))
    shape = (C, S)
    ctx.progress(f"L={L} {spec['job']['arch']}: best (by training loss) test MSE {mse[best]:.3g}, {count[best]} pieces of {2**L}")
    return xr.Dataset(
        {
            "test_mse": (("lr", "seed"), mse.reshape(shape), {"description": "MSE against Delta^L on the test points"}),
            "train_loss": (("lr", "seed"), res.train_loss.reshape(shape)),
            "pieces": (("lr", "seed"), count.reshape(shape), {"description": "exact linear pieces on [0, 1] (-1: diverged)"}),
            "epochs": (("lr", "seed"), res.epochs.reshape(shape)),
            "converged": (("lr", "seed"), res.converged.reshape(shape)),
            "diverged": (("lr", "seed"), res.diverged.reshape(shape)),
            "prediction": (("lr", "seed", "plot_point"), predict(res.params, xp).reshape(*shape, -1)),
            "best": ((), best, {"description": "flat index (lr * seeds + seed) of the model with the lowest training loss"}),
            "mse_bound": ((), float(mse_bound(width + 1, L)) if depth == 1 else 0.0,
                          {"description": "lower bound on the MSE of any net of this shape (one hidden layer: at most w + 1 pieces)"}),
        },
        coords={"lr": lrs, "seed": seeds_cfg, "level": L},
        attrs={"kind": kind, "depth": depth, "width": width, "n_params": spec["n_params"]},
    )
