"""Stage ``ntk``: kernel regression (Eq. 10) with the analytic NTK Theta^(L) and the NNGP kernel Sigma^(L) of one depth."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.kernel_regression import kernel_regression
from depthlab.core.metrics import misclassification, mse

if TYPE_CHECKING:
    from .specs import NtkSpec


def run_kernels(spec: "NtkSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    L = spec.depth
    y = data.y_train.values
    kinds = ("ntk", "nngp")
    fit = kernel_regression(
        data.x_train.values,
        y,
        data.x_test.values,
        [L],
        beta=spec.beta,
        block=spec.block,
        device=ctx.device,
        kinds=kinds,
    )
    pred = fit.prediction[:, 0]  # [kind, n_test]
    error = misclassification if spec.data.task == "classification" else mse
    return xr.Dataset(
        {
            "test_error": (("kernel",), error(pred, data.y_test.values)),
            "prediction": (("kernel", "test_sample"), pred),
            "jitter": (
                ("kernel",),
                fit.jitter[:, 0],
                {"description": "ridge added to the Gram diagonal for a stable Cholesky"},
            ),
            "max_train_residual": (("kernel",), np.max(np.abs(fit.train_prediction[:, 0] - y), axis=1)),
        },
        coords={"kernel": list(kinds), "depth": L},
        attrs={"beta": spec.beta},
    )
