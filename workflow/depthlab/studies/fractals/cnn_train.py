"""Stage ``cnn``: the CNNs of one (depth, width) on real images, every learning rate x seed (Fig. 7)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.seeds import seed

from . import cnn

if TYPE_CHECKING:
    from .specs import CnnSpec


def run_cnn(spec: "CnnSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    j = spec.job
    lrs, seeds_cfg = np.asarray(spec.lrs), list(spec.seeds)
    init = np.array([seed(s, "cnn_init", j.depth, j.width) for s in seeds_cfg])
    order = np.array([seed(s, "cnn_order", j.depth, j.width) for s in seeds_cfg])
    acc, checks = cnn.train(data.x_train.values, data.y_train.values, data.x_test.values, data.y_test.values,
                            depth=j.depth, width=j.width, kernel=spec.kernel, lrs=lrs, init_seeds=init, order_seeds=order,
                            epochs=spec.epochs, batch_size=spec.batch_size, check_every=spec.check_every,
                            augment=spec.augment, crop=spec.crop, device=ctx.device, progress=ctx.progress,
                            checkpoint=ctx.checkpoint)
    shape = (len(lrs), len(seeds_cfg))
    best = np.nanmax(np.where(np.isnan(acc), -np.inf, acc), axis=1)
    best = np.where(np.isfinite(best), best, np.nan)
    side = spec.crop if spec.augment else data.sizes["row"]
    return xr.Dataset(
        {
            "best_accuracy": (("lr", "seed"), best.reshape(shape), {"description": "best test accuracy along the run"}),
            "accuracy": (("lr", "seed", "check"), acc.reshape(*shape, -1), {"description": "test accuracy at every check"}),
        },
        coords={"lr": lrs, "seed": seeds_cfg, "check_epoch": (("check",), checks)},
        attrs={"dataset": j.dataset, "depth": j.depth, "width": j.width, "kernel": spec.kernel,
               "n_params": cnn.count_params(j.depth, j.width, spec.kernel, data.sizes["channel"], side)},
    )
