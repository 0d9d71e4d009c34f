"""Full-batch runs of M models for a fixed number of iterations: the loss after every step, iterations to a target loss,
divergence.  One loop serves the depth-N nets, the end-to-end rule and the baselines (each supplies its step)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .linear import diverged, history_steps


@dataclass
class Runs:
    """Per-model records of one batch of runs; arrays have a leading axis M."""

    steps: np.ndarray  # [K] iterations at which the history is kept (0 = start)
    loss: np.ndarray  # [M, K] training loss after each kept iteration (NaN once diverged)
    extra: dict[str, np.ndarray]  # [M, K] per tracked quantity (e.g. the distance to the end-to-end rule)
    to_target: np.ndarray  # [M] first iteration at which the loss is <= the target (-1: never)
    diverged_at: np.ndarray  # [M] iteration of divergence (-1: none)


def run(loss_now: Callable[[], torch.Tensor], step: Callable[[torch.Tensor, int], None], iterations: int, target: float,
        track: dict[str, Callable[[], torch.Tensor]] | None = None,
        progress: Callable[[str], None] | None = None, label: str = "") -> Runs:
    """``loss_now()`` -> the current loss [M]; ``step(active, t)`` takes step t = 1..T of the models where active [M] is True.

    The loss of a diverged model (non-finite, or 1e6 times its start) is NaN from then on and it takes no more steps.
    """
    track = track or {}
    keep = history_steps(iterations)
    kept = {t: i for i, t in enumerate(keep)}
    start = loss_now()
    M = start.shape[0]
    loss = np.full((M, len(keep)), np.nan)
    extra = {k: np.full((M, len(keep)), np.nan) for k in track}
    to_target = np.full(M, -1, dtype=np.int64)
    div_at = np.full(M, -1, dtype=np.int64)
    active = torch.ones(M, dtype=torch.bool, device=start.device)
    t0 = time.perf_counter()
    cur = start
    for t in range(0, iterations + 1):
        if t > 0:
            step(active, t)
            cur = loss_now()
        bad = diverged(cur, start) & active
        if bool(bad.any()):
            div_at[bad.cpu().numpy()] = t
            active &= ~bad
        c = np.where(active.cpu().numpy(), cur.double().cpu().numpy(), np.nan)
        hit = (to_target < 0) & (c <= target)
        to_target[hit] = t
        if t in kept:
            loss[:, kept[t]] = c
            for k, fn in track.items():
                extra[k][:, kept[t]] = np.where(active.cpu().numpy(), fn().double().cpu().numpy(), np.nan)
        if progress and t and t % max(1, iterations // 4) == 0:
            progress(f"{label} iteration {t}/{iterations}: {int((to_target >= 0).sum())} of {M} at the target, "
                     f"{int((div_at >= 0).sum())} diverged, {time.perf_counter() - t0:.1f}s")
        if not bool(active.any()):
            break
    return Runs(steps=np.asarray(keep), loss=loss, extra=extra, to_target=to_target, diverged_at=div_at)
