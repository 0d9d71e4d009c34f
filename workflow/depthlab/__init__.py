"""depthlab: what depth does for neural networks (Mori & Ueda 2022 and related studies)."""

from . import ntk
from .device import resolve_device, set_threads
from .lrsearch import SearchResult, SearchSettings, fold_indices, search_lr
from .ntk import KernelFit, kernel, kernel_diagonal, kernel_regression
from .targets import add_label_noise, k_global, k_local, sample_inputs, sign_labels, target
from .trainer import TrainResult, TrainSettings, glorot_init, predict, sgd_step, train
from .widths import n_params, width_for_budget

__version__ = "0.1.0"

__all__ = [
    "KernelFit", "SearchResult", "SearchSettings", "TrainResult", "TrainSettings",
    "add_label_noise", "fold_indices", "glorot_init", "k_global", "k_local", "kernel",
    "kernel_diagonal", "kernel_regression", "n_params", "ntk", "predict", "resolve_device",
    "sample_inputs", "search_lr", "set_threads", "sgd_step", "sign_labels", "target",
    "train", "width_for_budget",
]
