"""Stage ``data``: the training and test sets of one target (Mori & Ueda Sec. 2.1, 3.3).

x ~ N(0, I_d) for N training and N_test test points (independent streams); labels
f(x), plus eps xi on the training labels only (Sec. 3.3.1), or sign f(x) for
classification (Sec. 3.3.2).  Test labels are always the noiseless f.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import xarray as xr

from depthlab.core.metrics import sign_labels
from depthlab.core.seeds import seed

from .targets import add_label_noise, sample_inputs, target

if TYPE_CHECKING:
    from .specs import DataSpec


def make_data(spec: "DataSpec", inputs: dict, ctx: object = None) -> xr.Dataset:
    t = spec.target
    d, n, n_test, master = t.d, t.n_train, spec.n_test, spec.seed
    x = sample_inputs(n, d, seed(master, "x_train"))
    xt = sample_inputs(n_test, d, seed(master, "x_test"))
    f = target(x, t.k, t.locality, t.g)
    ft = target(xt, t.k, t.locality, t.g)
    y = sign_labels(f) if spec.task == "classification" else add_label_noise(f, t.noise, seed(master, "label_noise"))
    return xr.Dataset(
        {
            "x_train": (("train_sample", "feature"), x),
            "y_train": (
                ("train_sample",),
                y,
                {"description": "labels used for training (noisy f, or sign f for classification)"},
            ),
            "f_train": (("train_sample",), f, {"description": "noiseless target f(x_train)"}),
            "x_test": (("test_sample", "feature"), xt),
            "y_test": (
                ("test_sample",),
                ft,
                {"description": "noiseless target f(x_test); classification compares signs"},
            ),
        },
        attrs={"k": t.k, "locality": t.locality, "g": t.g, "d": d, "noise": t.noise, "task": spec.task},
    )
