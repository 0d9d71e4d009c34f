"""Stage ``train``: nets trained on fractal samples as the authors' code does.

Nets: depth T hidden ReLU layers of width k, scalar output, weights truncated normal with std
1/sqrt(fan_in), biases 0.1, hinge loss, Adam, batch 100; the test accuracy is recorded at
every check, so the paper's "best test accuracy along the run" and the final one are both stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.grid import train_grid
from depthlab.core.losses.hinge import Hinge
from depthlab.core.mlp import init_params
from depthlab.core.optim.adam import Adam
from depthlab.core.seeds import seed
from depthlab.core.shapes import layer_sizes, n_params
from depthlab.core.trainer import TrainSettings

if TYPE_CHECKING:
    from .specs import TrainSpec


def run_train(spec: "TrainSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    j = spec.job
    T, k = j.depth, j.width
    lrs, seeds_cfg = np.asarray(spec.lrs), list(spec.seeds)
    x, y = data.x_train.values, data.y_train.values
    sizes = layer_sizes(x.shape[1], k, T)
    init = init_params(sizes, np.array([seed(s, "init", T, k) for s in seeds_cfg]), spec.init)
    t = spec.training
    settings = TrainSettings(loss=Hinge(), optimizer=Adam(), batch_size=t.batch_size, check_every=t.check_every,
                             loss_threshold=None, max_epochs=t.max_epochs, device=ctx.device)
    grid = train_grid(x, y, lrs, init, np.array([seed(s, "order", T, k) for s in seeds_cfg]), settings,
                      eval_set=(data.x_test.values, data.y_test.values), progress=ctx.progress, checkpoint=ctx.checkpoint)
    res = grid.result  # model m = (lr m // S, seed m % S)
    acc = 1.0 - res.eval_history  # [M, C] test accuracy at each check
    best = np.nanmax(np.where(res.diverged[:, None], np.nan, acc), axis=1) if np.isfinite(acc).any() else np.full(len(acc), np.nan)
    ctx.progress(f"{j.fractal} n={j.n} pdeg={j.pdeg} depth {T} width {k}: best test accuracy along the run "
                 + ", ".join(f"{v:.4f}" for v in best))
    return xr.Dataset(
        {
            "best_accuracy": (("lr", "seed"), grid.grid(best), {"description": "best test accuracy along the run (the paper's number)"}),
            "final_accuracy": (("lr", "seed"), grid.grid(acc[:, -1])),
            "accuracy": (("lr", "seed", "check"), grid.grid(acc), {"description": "test accuracy at every check"}),
            "train_loss": (("lr", "seed"), grid.grid(res.train_loss)),
            "train_accuracy": (("lr", "seed"), grid.grid(res.train_accuracy)),
            "diverged": (("lr", "seed"), grid.grid(res.diverged)),
            "curve": (("j",), data.curve.values),
        },
        coords={"lr": lrs, "seed": seeds_cfg, "check_epoch": (("check",), res.check_epochs), "j": data.j.values},
        attrs={"fractal": j.fractal, "n": j.n, "pdeg": j.pdeg, "depth": T, "width": k, "n_params": n_params(x.shape[1], k, T)},
    )
