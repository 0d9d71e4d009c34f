"""Stage ``entk``: the lazy limit of the very nets Fig. 3 trains: their empirical tangent kernel at initialisation.

The nets are trained in the standard parameterisation with Glorot init, while Appendix A's
NTK is the NTK parameterisation's infinite-width limit.  The lazy limit of a trained net is
the linearisation of that same net around its initialisation (Chizat, Oyallon & Bach):
f0(x) + Theta_hat(x, X) Theta_hat(X, X)^{-1} (y - f0(X)), Theta_hat = J J^T over all its
parameters (depthlab.core.tangent.empirical_ntk).  One per seed, from the very numbers the
``train`` stage starts from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.metrics import misclassification, mse
from depthlab.core.mlp import init_params, predict
from depthlab.core.shapes import layer_sizes
from depthlab.core.tangent import linearized_prediction

from .seeding import model_seeds

if TYPE_CHECKING:
    from .specs import EntkSpec


def run_entk(spec: "EntkSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    L, h = spec.shape.depth, spec.shape.width
    seeds_cfg = list(spec.seeds)
    init_s, _ = model_seeds(seeds_cfg, L)
    params = init_params(
        layer_sizes(data.sizes["feature"], h, L), init_s, "glorot_uniform"
    )  # float32, as training starts
    x, y, xt, yt = data.x_train.values, data.y_train.values, data.x_test.values, data.y_test.values
    error = misclassification if spec.data.task == "classification" else mse
    preds, jit = [], []
    for m in range(len(seeds_cfg)):
        p, j = linearized_prediction(params, x, y, xt, m)
        preds.append(p)
        jit.append(j)
        ctx.progress(f"seed {seeds_cfg[m]}: linearised-model test error {float(error(p, yt)):.4g} (jitter {j:.3g})")
    preds = np.stack(preds)
    f0 = predict(params, xt)
    return xr.Dataset(
        {
            "test_error": (
                ("seed",),
                error(preds, yt),
                {"description": "test error of the net linearised at its init, trained to interpolation"},
            ),
            "init_test_error": (("seed",), error(f0, yt), {"description": "test error of the net at initialisation"}),
            "prediction": (("seed", "test_sample"), preds.astype(np.float32)),
            "jitter": (("seed",), np.asarray(jit)),
        },
        coords={"seed": seeds_cfg, "depth": L, "width": h},
    )
