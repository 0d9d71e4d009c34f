"""depthlab: reproducible studies of what depth does for neural networks.

Layout: ``depthlab.core`` is the pure array math (arrays in, arrays out: nets,
losses, optimisers, the trainer, the lr search, kernels, seeds); the top-level
modules are the infrastructure every study shares (the study contract ``study``,
config, storage, provenance, checkpoint, audit, claims, render, plotstyle, cli);
``depthlab.studies.<name>`` holds one study each, one folder (its specs, schema,
stages, plots and claims), found by the registry without a list kept by hand.

Public names are loaded lazily (PEP 562), so a pipeline job imports only what its
stage needs (torch, scipy.stats and matplotlib each cost about a second of start-up).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.3.0"  # the one version string: pyproject.toml reads it (tool.setuptools.dynamic)

_EXPORTS = {
    "core.mlp": ["init_params", "forward", "predict"],
    "core.shapes": ["layer_sizes", "n_params", "width_for_hidden_weights", "width_for_params"],
    "core.trainer": ["TrainSettings", "TrainResult", "train"],
    "core.grid": ["train_grid"],
    "core.lrsearch": ["SearchSettings", "SearchResult", "search_lr", "fold_indices"],
    "core.kernels": ["kernel", "kernel_diagonal", "kappa0", "kappa1"],
    "core.kernel_regression": ["kernel_regression"],
    "core.metrics": ["misclassification", "sign_labels"],
    "core.device": ["resolve_device", "set_threads"],
    "core.seeds": ["seed"],
    "studies": ["get_study"],
    "results": ["open_results", "list_results", "ResultsError"],
}
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)  # noqa: PLE0605 (the exports are listed once, in _EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module 'depthlab' has no attribute {name!r}")
