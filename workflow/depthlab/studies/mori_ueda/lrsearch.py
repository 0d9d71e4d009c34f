"""Stage ``lrsearch``: the learning rate of one (target, depth) by K-fold CV and Bayesian optimisation (Sec. 2.3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.lrsearch import search_lr
from depthlab.core.shapes import layer_sizes

from .sgd import settings

if TYPE_CHECKING:
    from .specs import LrSearchSpec


def run_lrsearch(spec: "LrSearchSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    s = search = spec.search
    sizes = layer_sizes(data.sizes["feature"], spec.shape.width, spec.shape.depth)
    res = search_lr(
        data.x_train.values,
        data.y_train.values,
        sizes,
        "glorot_uniform",
        search,
        settings(spec.training, ctx.device),
        ctx.progress,
        ctx.checkpoint,
    )
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
            "lr_edge": (
                (),
                res.edge,
                {"description": "where best_lr lies among the rates evaluated: '', 'lower' or 'upper'"},
            ),
            "lr_flagged": ((), res.flagged, {"description": "best_lr is at an edge the search could not grow past"}),
            "fold_of": (("train_sample",), res.fold_of),
            **(
                {}
                if res.pruned is None
                else {
                    "pruned": (
                        ("eval", "fold"),
                        res.pruned,
                        {
                            "description": f"cut at a rung of successive halving (eta {s.halving_eta}, {s.halving_rungs} rungs): its "
                            "val_error is the one at its rung, and it could not be chosen"
                        },
                    )
                }
            ),
        },
        coords={"fold": np.arange(search.folds), "depth": spec.shape.depth, "width": spec.shape.width},
        attrs={
            "n_params": spec.shape.n_params,
            "search": (
                f"successive halving, eta {s.halving_eta}, {s.halving_rungs} rungs"
                + (f", the first on {s.first_rung_folds} of {s.folds} folds" if s.first_rung_folds else "")
                + (
                    f" (keeping too every candidate within {s.first_rung_se:g} SE of its best)"
                    if s.first_rung_folds and s.first_rung_se
                    else ""
                )
                if s.halving_eta > 1
                else "full: every candidate trained to its budget"
            ),
        },
    )
