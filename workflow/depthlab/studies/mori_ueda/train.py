"""Stage ``train``: the final nets of one (target, depth), every learning rate x seed trained as one batch.

The learning rates are either the one the ``lrsearch`` input chose (depth sweeps,
Figs. 1, 2, 4-6) or the spec's grid (lr sweeps at a fixed width, Fig. 3).  Model
``(lr i, seed j)`` starts from seed j's initialisation and data order whatever
its lr (common random numbers, :func:`depthlab.core.grid.train_grid`).

A depth sweep's rate was chosen by cross-validation on folds; when a seed of the final nets diverges at it, the rate
sits beyond the edge of stability at the full training set.  Then every seed is trained again at half the rate, at most
``HALVINGS`` times (the store keeps the CV rate, ``cv_lr``, and the number of halvings); a seed that still diverges is
reported (the claims call the rows that rest on it inconclusive).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.grid import train_grid
from depthlab.core.mlp import init_params, predict, to
from depthlab.core.tangent import kernel_change
from depthlab.core.shapes import layer_sizes
from depthlab.core.stopping import reason_names

from .seeding import model_seeds
from .sgd import settings as sgd_settings

if TYPE_CHECKING:
    from .specs import TrainSpec

HALVINGS = 3  # a depth sweep's final nets: the CV rate halved at most this often while some seed diverges
KERNEL_POINTS = 256  # an lr sweep measures how far each net's tangent kernel moved on this many training points


def run_train(spec: "TrainSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    L, h = spec.shape.depth, spec.shape.width
    search = inputs.get("lrsearch")
    lrs = np.atleast_1d(float(search.best_lr)) if spec.lrs is None else np.asarray(spec.lrs)
    seeds_cfg = np.asarray(spec.seeds)
    init_s, order_s = model_seeds(list(seeds_cfg), L)
    settings = sgd_settings(spec.training, ctx.device)
    init = init_params(layer_sizes(data.sizes["feature"], h, L), init_s, "glorot_uniform")
    halvings = 0
    while True:
        ckpt = ctx.checkpoint.child(f"half{halvings}") if halvings and ctx.checkpoint is not None else ctx.checkpoint
        grid = train_grid(
            data.x_train.values,
            data.y_train.values,
            lrs,
            init,
            order_s,
            settings,
            progress=ctx.progress,
            checkpoint=ckpt,
            stack_lrs=spec.stack_lrs,
        )
        n_div = int(grid.result.diverged.sum())
        if spec.lrs is not None or not n_div or halvings == HALVINGS:
            break
        ctx.progress(
            f"L={L}: {n_div} of {len(seeds_cfg)} seeds diverged at lr {lrs[0]:.4g}: every seed again at {lrs[0] / 2:.4g}"
        )
        lrs, halvings = lrs / 2, halvings + 1
    res = grid.result
    pred = predict(res.params, data.x_test.values)  # [M, n_test], model m = (lr m // S, seed m % S)
    err = np.where(
        res.diverged, np.nan, settings.loss.error(pred, data.y_test.values)
    )  # diverged: counted, not averaged
    conv = grid.grid(res.converged)
    ok = conv.all(axis=1)
    ds = xr.Dataset(
        {
            "test_error": (("lr", "seed"), grid.grid(err)),
            "train_loss": (("lr", "seed"), grid.grid(res.train_loss)),
            "epochs": (("lr", "seed"), grid.grid(res.epochs)),
            "converged": (("lr", "seed"), conv),
            "stop_reason": (
                ("lr", "seed"),
                grid.grid(reason_names(res.stop_reason)).astype(str),
                {
                    "description": "why training stopped: "
                    + settings.stop.describe("check", f"{settings.max_epochs} epochs")
                },
            ),
            "diverged": (("lr", "seed"), grid.grid(res.diverged)),
            # the rate's place in its grid: the lrsearch store's choice (a depth sweep), or none (an lr sweep's own grid)
            "lr_edge": (
                (),
                str(search.lr_edge.values) if search is not None else "",
                {
                    "description": "'' (inside), 'lower' or 'upper': where the CV-chosen rate lies among the rates evaluated"
                },
            ),
            "lr_flagged": (
                (),
                bool(search.lr_flagged) if search is not None else False,
                {"description": "the CV-chosen rate sits at an edge its search could not grow past"},
            ),
            "history": (("lr", "seed", "check"), grid.grid(res.history)),
            "prediction": (("lr", "seed", "test_sample"), grid.grid(pred).astype(np.float32)),
            "max_converged_lr": (
                (),
                float(lrs[ok].max()) if ok.any() else float("nan"),
                {"description": "largest lr at which every seed reached the stop rule within max_epochs"},
            ),
        },
        coords={"lr": lrs, "seed": seeds_cfg, "check_epoch": (("check",), res.check_epochs), "depth": L, "width": h},
        # timings are left out of the store: identical runs give identical hashes
        attrs={"n_params": spec.shape.n_params, "lr_source": "lrsearch" if spec.lrs is None else "grid"},
    )
    if spec.lrs is not None:  # an lr sweep (Fig. 3): how lazy each net was, for claim 5's regime test
        xk = data.x_train.values[:KERNEL_POINTS]
        ds["ntk_change"] = (
            ("lr", "seed"),
            grid.grid(kernel_change(init, to(res.params, "cpu"), xk, len(seeds_cfg))),
            {
                "description": f"|Theta_hat_T - Theta_hat_0|_F / |Theta_hat_0|_F of the net's own tangent kernel "
                f"on its first {len(xk)} training points: small in the lazy regime"
            },
        )
    if spec.lrs is None:  # one rate, the job's own (its search chose it): a variable of the job, not a dimension
        ds = ds.squeeze("lr").reset_coords("lr")
        ds["lr"].attrs["description"] = (
            f"the rate the nets were trained at: the lrsearch store's choice (cv_lr), halved "
            f"while some seed diverged (lr_halvings times, at most {HALVINGS})"
        )
        ds["cv_lr"] = (
            (),
            float(search.best_lr),
            {"description": "the rate the lrsearch store chose for this (target, depth)"},
        )
        ds["lr_halvings"] = ((), halvings, {"description": "how often cv_lr was halved because a seed diverged at it"})
    return ds
