"""The seeds of the final nets: one (init, data order) pair per config seed and depth.

Its own module so that the stages which only need the initialisation (entk) do not import the trainer.
"""

from __future__ import annotations

import numpy as np

from depthlab.core.seeds import seed


def model_seeds(config_seeds: list[int], depth: int) -> tuple[np.ndarray, np.ndarray]:
    """(init seeds, data-order seeds) of the final nets of one depth, one pair per config seed."""
    init = np.array([seed(s, "init", depth) for s in config_seeds], dtype=np.int64)
    order = np.array([seed(s, "order", depth) for s in config_seeds], dtype=np.int64)
    return init, order
