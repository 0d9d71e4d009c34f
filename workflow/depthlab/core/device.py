"""Where torch runs: CUDA when present, else the CPU with a fixed thread count."""

from __future__ import annotations

import os

import torch


def resolve_device(device: str = "auto") -> torch.device:
    """'auto' -> cuda if available else cpu; 'cpu' / 'cuda' / 'cuda:N' pass through (checked)."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device = {device!r} requested but CUDA is not available; use 'auto' or 'cpu'")
    return dev


def set_threads(threads: int | None = None) -> int:
    """Set torch's intra-op threads; default 1, or $DEPTHLAB_THREADS.

    On a 2-core box one thread per process and one process per core beat two
    threads in one process by a wide margin (small SGD steps are overhead-bound).
    """
    n = threads if threads is not None else int(os.environ.get("DEPTHLAB_THREADS", "1"))
    if n < 1:
        raise ValueError(f"threads must be >= 1, got {n}")
    torch.set_num_threads(n)
    return n


def describe(dev: torch.device) -> str:
    """Human-readable device name for provenance attrs."""
    if dev.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(dev)}"
    return f"cpu:{torch.get_num_threads()}threads"
