"""Stage ``train``: the final nets of one (target, depth), every learning rate x seed trained as one batch.

The learning rates are either the one the ``lrsearch`` input chose (depth sweeps,
Figs. 1, 2, 4-6) or the spec's grid (lr sweeps at a fixed width, Fig. 3).  Model
``(lr i, seed j)`` starts from seed j's initialisation and data order whatever
its lr (common random numbers), so curves over lr are not confounded by init.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from depthlab.core.losses import get as get_loss
from depthlab.core.mlp import init_params, layer_sizes, predict
from depthlab.core.trainer import TrainSettings, train

from .seeding import model_seeds


def run_train(spec: dict, inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    L, h = spec["depth"], spec["width"]
    lrs = np.atleast_1d(float(inputs["lrsearch"].best_lr)) if spec["lrs"] == "lrsearch" else np.asarray(spec["lrs"])
    seeds_cfg = np.asarray(spec["seeds"])
    S, n = len(seeds_cfg), data.sizes["train_sample"]
    init_s, order_s = model_seeds(list(seeds_cfg), L)
    sizes = layer_sizes(data.sizes["feature"], h, L)
    init = [(W.repeat(len(lrs), 1, 1), b.repeat(len(lrs), 1, 1)) for W, b in init_params(sizes, init_s, "glorot_uniform")]
    settings = TrainSettings(device=ctx.device, **spec["training"])
    res = train(data.x_train.values, data.y_train.values, np.tile(np.arange(n), (len(lrs) * S, 1)), np.repeat(lrs, S),
                init, np.tile(order_s, len(lrs)), settings, progress=ctx.progress, checkpoint=ctx.checkpoint)
    pred = predict(res.params, data.x_test.values)  # [M, n_test], model m = (lr m // S, seed m % S)
    err = np.where(res.diverged, np.nan, get_loss(settings.loss).error(pred, data.y_test.values))  # diverged: counted, not averaged
    shape = (len(lrs), S)
    conv = res.converged.reshape(shape)
    ok = conv.all(axis=1)
    return xr.Dataset(
        {
            "test_error": (("lr", "seed"), err.reshape(shape)),
            "train_loss": (("lr", "seed"), res.train_loss.reshape(shape)),
            "epochs": (("lr", "seed"), res.epochs.reshape(shape)),
            "converged": (("lr", "seed"), conv),
            "diverged": (("lr", "seed"), res.diverged.reshape(shape)),
            "history": (("lr", "seed", "check"), res.history.reshape(*shape, -1)),
            "prediction": (("lr", "seed", "test_sample"), pred.reshape(*shape, -1).astype(np.float32)),
            "max_converged_lr": ((), float(lrs[ok].max()) if ok.any() else float("nan"),
                                 {"description": "largest lr at which every seed reached the stop rule within max_epochs"}),
        },
        coords={"lr": lrs, "seed": seeds_cfg, "check_epoch": (("check",), res.check_epochs), "depth": L, "width": h},
        # timings are left out of the store: identical runs give identical hashes
        attrs={"n_params": spec["n_params"], "lr_source": "lrsearch" if spec["lrs"] == "lrsearch" else "grid"},
    )
