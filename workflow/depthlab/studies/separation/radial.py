"""Stage ``radial``: nets of one depth at one parameter budget, the lr chosen on a validation split."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.grid import train_grid
from depthlab.core.lrsearch import search_lr
from depthlab.core.mlp import init_params, predict
from depthlab.core.seeds import seed
from depthlab.core.shapes import layer_sizes
from depthlab.core.stopping import reason_names

from .training import settings

if TYPE_CHECKING:
    from .specs import RadialSpec


def run_radial(spec: "RadialSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    d, L, h = spec.job.d, spec.depth, spec.width
    x, y, xt, yt = data.x_train.values, data.y_train.values, data.x_test.values, data.y_test.values
    sizes = layer_sizes(d, h, L)
    search = spec.search
    ckpt = ctx.checkpoint
    var_y = float(np.var(y))
    found = search_lr(
        x, y, sizes, spec.init, search, settings(spec.search_training, ctx.device, var_y), ctx.progress, ckpt
    )
    seeds_cfg = list(spec.seeds)
    init = init_params(sizes, np.array([seed(v, "init", d, L, h) for v in seeds_cfg]), spec.init)
    final = settings(spec.training, ctx.device, var_y)
    res = train_grid(
        x,
        y,
        [found.best_lr],
        init,
        np.array([seed(v, "order", d, L, h) for v in seeds_cfg]),
        final,
        progress=ctx.progress,
        checkpoint=ckpt.child("final") if ckpt is not None else None,
    ).result
    mse = np.where(res.diverged, np.nan, np.mean((predict(res.params, xt) - yt) ** 2, axis=1))
    var = float(np.var(yt))
    return xr.Dataset(
        {
            "test_mse": (("seed",), mse),
            "test_nmse": (("seed",), mse / var, {"description": "test MSE / Var(y_test): 1 is the constant predictor"}),
            "train_loss": (("seed",), res.train_loss),
            "train_nmse": (
                ("seed",),
                res.train_loss / float(np.var(y)),
                {"description": "training MSE / Var(y_train)"},
            ),
            "epochs": (("seed",), res.epochs),
            "converged": (("seed",), res.converged),
            "stop_reason": (
                ("seed",),
                reason_names(res.stop_reason),
                {"description": "why training stopped: " + final.stop.describe("check", f"{final.max_epochs} epochs")},
            ),
            "diverged": (("seed",), res.diverged),
            "search_lr": (("eval",), found.lr),
            "search_val_error": (("eval", "fold"), found.val_error),
            "search_converged": (("eval", "fold"), found.converged),
            "best_lr": ((), found.best_lr),
            "lr_edge": (
                (),
                found.edge,
                {
                    "description": "'' (inside), 'lower' or 'upper': where best_lr lies among the rates the search evaluated"
                },
            ),
            "lr_flagged": ((), found.flagged, {"description": "best_lr is at an edge the search could not grow past"}),
        },
        coords={"seed": seeds_cfg, "depth": L, "width": h, "d": d},
        attrs={
            "n_params": spec.n_params,
            "target_variance": var,
            "r0": data.attrs["r0"],
            "r0_density_ratio": data.attrs["r0_density_ratio"],
            "r0_inside": data.attrs["r0_inside"],
            **{k: data.attrs[k] for k in ("shells", "analytic_mean", "analytic_variance") if k in data.attrs},
        },
    )
