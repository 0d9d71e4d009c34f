"""Stages ``data`` and ``train``: fractal samples, and nets trained on them as the authors' code does.

Nets: depth T hidden ReLU layers of width k, scalar output, weights truncated normal with std
1/sqrt(fan_in), biases 0.1, hinge loss, Adam, batch 100; the test accuracy is recorded at
every check, so the paper's "best test accuracy along the run" and the final one are both stored.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from depthlab.core.mlp import init_params, layer_sizes
from depthlab.core.seeds import seed
from depthlab.core.trainer import TrainSettings, train


def run_train(spec: dict, inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    j = spec["job"]
    T, k = j["depth"], j["width"]
    lrs, seeds_cfg = np.asarray(spec["lrs"]), list(spec["seeds"])
    C, S = len(lrs), len(seeds_cfg)
    x, y = data.x_train.values, data.y_train.values
    sizes = layer_sizes(x.shape[1], k, T)
    init = init_params(sizes, np.array([seed(s, "init", T, k) for s in seeds_cfg]), spec["init"])
    init = [(W.repeat(C, 1, 1), b.repeat(C, 1, 1)) for W, b in init]  # model m = (lr m // S, seed m % S)
    order = np.tile([seed(s, "order", T, k) for s in seeds_cfg], C)
    res = train(x, y, np.tile(np.arange(len(y)), (C * S, 1)), np.repeat(lrs, S), init, order,
                TrainSettings(device=ctx.device, **spec["training"]), eval_set=(data.x_test.values, data.y_test.values),
                progress=ctx.progress, checkpoint=ctx.checkpoint)
    acc = 1.0 - res.eval_history  # [M, C] test accuracy at each check
    shape = (C, S)
    best = np.nanmax(np.where(res.diverged[:, None], np.nan, acc), axis=1) if np.isfinite(acc).any() else np.full(C * S, np.nan)
    ctx.progress(f"{j['fractal']} n={j['n']} pdeg={j['pdeg']} depth {T} width {k}: best test accuracy along the run "
                 + ", ".join(f"{v:.4f}" for v in best))
    return xr.Dataset(
        {
            "best_accuracy": (("lr", "seed"), best.reshape(shape), {"description": "best test accuracy along the run (the paper's number)"}),
            "final_accuracy": (("lr", "seed"), acc[:, -1].reshape(shape)),
            "accuracy": (("lr", "seed", "check"), acc.reshape(*shape, -1), {"description": "test accuracy at every check"}),
            "train_loss": (("lr", "seed"), res.train_loss.reshape(shape)),
            "train_accuracy": (("lr", "seed"), res.train_accuracy.reshape(shape)),
            "diverged": (("lr", "seed"), res.diverged.reshape(shape)),
            "curve": (("j",), data.curve.values),
        },
        coords={"lr": lrs, "seed": seeds_cfg, "check_epoch": (("check",), res.check_epochs), "j": data.j.values},
        attrs={"fractal": j["fractal"], "n": j["n"], "pdeg": j["pdeg"], "depth": T, "width": k,
               "n_params": int(sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:])))},
    )
