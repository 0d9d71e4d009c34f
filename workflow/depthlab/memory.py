"""Rough peak-memory estimates of jobs, so the validator can refuse a config the machine cannot hold.

Each study's ``specs.memory(config)`` returns (job label, config key that drives it, bytes) per
job kind; the estimates are upper-bound-ish sums of the arrays a job holds at once (float64
data and kernels, float32 models with optimiser state and activations), not measurements.
"""

from __future__ import annotations

import os

F32, F64 = 4, 8
GIB = 1024**3


def machine_bytes() -> int:
    """Physical memory of this machine."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: no check
        return 1 << 62


def nets(models: int, sizes: list[int], batch: int, n_eval: int, adam: bool = False) -> int:
    """A batched training job: parameters (+ gradients, Adam moments), activations of a minibatch, one eval chunk."""
    params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    # per model: the parameters and their gradients (+ Adam's two moments), and two more copies the trainer keeps
    # (core.trainer.train): the caller's initial parameters and each model's final snapshot.  Counting only the first
    # two, `make paper-check` saw Fig. 3's width-5000 nets (33 models) planned at 20.0 GiB killed by the kernel at 22.3.
    state = params * ((4 if adam else 2) + 2) * F32
    acts = batch * sum(sizes) * 3 * F32
    evals = min(n_eval * models * max(sizes), 1 << 27) * 2 * F32  # the trainer bounds its evaluation chunks
    return models * (state + acts) + evals


STACK_GIB = 48.0  # a stack of models is split to stay under this (every paper job under a 64 GiB node)


def stack_budget(config: dict) -> float:
    """Bytes one stack of models may take: ``STACK_GIB``, or 3/4 of the config's ``max_memory_gib`` when that is lower."""
    limit = config.get("max_memory_gib", "auto")
    cap = STACK_GIB if limit == "auto" else min(STACK_GIB, 0.75 * float(limit))
    return cap * GIB


def per_stack(units: int, unit_bytes: int, budget: float) -> int:
    """How many of ``units`` (candidates with their folds, rates with their seeds) one stack takes within ``budget``
    bytes: all of them (0) when they fit, else as many as fit (at least 1)."""
    if units * unit_bytes <= budget:
        return 0
    return max(1, int(budget // max(1, unit_bytes)))


def data(n: int, d: int) -> int:
    return 3 * n * (d + 2) * F64


def gib(nbytes: float) -> str:
    """GiB to one decimal, or to two significant digits below 0.1 GiB (0.001 GiB read '0.0 GiB')."""
    g = nbytes / GIB
    return f"{g:.1f} GiB" if g >= 0.1 or g == 0 else f"{g:.2g} GiB"


def job(label: str, parts: dict[str, int]) -> tuple[str, str, int]:
    """(label, the config key of the largest part, total bytes) of a job whose memory is a sum of parts by key."""
    key = max(parts, key=parts.get)
    return label, key, sum(parts.values())
