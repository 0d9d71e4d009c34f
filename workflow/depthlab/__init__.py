"""depthlab: what depth does for neural networks (Mori & Ueda 2022 and related studies).

Public names are loaded lazily (PEP 562), so a pipeline job imports only what its
stage needs (torch, scipy.stats and matplotlib each cost ~1 s of start-up).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "targets": ["add_label_noise", "k_global", "k_local", "sample_inputs", "sign_labels", "target"],
    "widths": ["n_params", "width_for_budget"],
    "device": ["resolve_device", "set_threads"],
    "trainer": ["TrainResult", "TrainSettings", "glorot_init", "predict", "sgd_step", "train"],
    "lrsearch": ["SearchResult", "SearchSettings", "fold_indices", "search_lr"],
    "ntk": ["KernelFit", "kernel", "kernel_diagonal", "kernel_regression"],
}
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE) + ["ntk"]


def __getattr__(name: str) -> Any:
    if name == "ntk":
        return importlib.import_module(".ntk", __name__)
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module 'depthlab' has no attribute {name!r}")
