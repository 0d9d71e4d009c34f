"""Stage ``construction``: the hand-built depth-L width-2 nets against Delta^L."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.mlp import predict

from .telgarsky import construction, pieces, sawtooth

if TYPE_CHECKING:
    from .specs import ConstructionSpec


def make_construction(spec: "ConstructionSpec", inputs: dict, ctx=None) -> xr.Dataset:
    """max |net - Delta^L| on a fine grid, exact pieces, and the nets' outputs, per level."""
    levels = list(spec.levels)
    grid = np.linspace(0.0, 1.0, 2**16 + 1)
    plot = np.linspace(0.0, 1.0, spec.plot_points)
    err, count, out = [], [], []
    for L in levels:
        p = construction(L)
        err.append(float(np.max(np.abs(predict(p, grid[:, None])[0] - sawtooth(grid, L)))))
        count.append(pieces(p)[0])
        out.append(predict(p, plot[:, None])[0])
    return xr.Dataset(
        {
            "max_abs_error": (
                ("level",),
                np.asarray(err),
                {"description": "max |net - Delta^L| over 2^16 + 1 grid points"},
            ),
            "pieces": (
                ("level",),
                np.asarray(count, dtype=np.int64),
                {"description": "exact linear pieces on [0, 1], from the weights"},
            ),
            "target_pieces": (("level",), 2 ** np.asarray(levels, dtype=np.int64)),
            "prediction": (("level", "plot_point"), np.stack(out)),
            "target": (("level", "plot_point"), np.stack([sawtooth(plot, L) for L in levels])),
            "x_plot": (("plot_point",), plot),
        },
        coords={"level": levels},
    )
