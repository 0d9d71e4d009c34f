"""Stage ``lrsearch``: the learning rate of one (target, depth) by K-fold CV and Bayesian optimisation (Sec. 2.3)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from depthlab.core.lrsearch import SearchSettings, search_lr
from depthlab.core.mlp import layer_sizes
from depthlab.core.trainer import TrainSettings


def run_lrsearch(spec: dict, inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    s = spec["search"]
    search = SearchSettings(folds=s["folds"], log10_lr_bounds=tuple(s["log10_lr_bounds"]), init_points=s["init_points"],
                            rounds=s["rounds"], candidates_per_round=s["candidates_per_round"], seed=s["seed"])
    sizes = layer_sizes(data.sizes["feature"], spec["width"], spec["depth"])
    res = search_lr(data.x_train.values, data.y_train.values, sizes, "glorot_uniform", search,
                    TrainSettings(device=ctx.device, **spec["training"]), ctx.progress, ctx.checkpoint)
    return xr.Dataset(
        {
            "lr": (("eval",), res.lr),
            "round": (("eval",), res.round),
            "val_error": (("eval", "fold"), res.val_error),
            "diverged": (("eval", "fold"), res.diverged),
            "converged": (("eval", "fold"), res.converged),
            "epochs": (("eval", "fold"), res.epochs),
            "score": (("eval",), res.score, {"description": "-log10(mean val_error over folds), maximised"}),
            "best_lr": ((), res.best_lr),
            "fold_of": (("train_sample",), res.fold_of),
        },
        coords={"fold": np.arange(search.folds), "depth": spec["depth"], "width": spec["width"]},
        attrs={"n_params": spec["n_params"]},
    )
