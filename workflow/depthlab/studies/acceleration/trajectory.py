"""Full-batch runs of M models until they are done: the loss along the way, iterations to each target loss, divergence.
One loop serves the depth-N nets, the end-to-end rule and the baselines (each supplies its step).

When a batch is done (SPEC §5, "the iteration budget grows until every method reaches the tightest target"): a batch
holds every rate x seed of one method (model m = (rate m // S, seed m % S)), and its rates compete for the fewest
iterations to each target.  It stops when every judged run has reached the tightest target or diverged; or once it has
run ``patience_factor`` times T, T the first iteration at which some rate had every seed at the tightest target (a rate
still short of it then has a mean over its S seeds above T whenever patience_factor >= S, so it cannot be the best);
never before ``min_iterations`` (small rates, where the discrete steps follow the gradient flow, keep their curves for
A3), never after ``max_iterations`` (the budget: a method none of whose rates reached the tightest target by then is
reported as such, and the claims resting on it are inconclusive)."""

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
    loss: np.ndarray  # [M, K] training loss after each kept iteration (NaN once diverged or after the batch stopped)
    extra: dict[str, np.ndarray]  # [M, K] per tracked quantity (e.g. the distance to the end-to-end rule)
    to_target: np.ndarray  # [M, F] first iteration at which the loss is <= each target (-1: never)
    diverged_at: np.ndarray  # [M] iteration of divergence (-1: none)
    stopped_at: int  # the iteration at which the batch stopped


def run(
    loss_now: Callable[[torch.Tensor], torch.Tensor],
    step: Callable[[torch.Tensor, int], None],
    budget,
    targets: np.ndarray,
    seeds: int,
    judged: int | None = None,
    track: dict[str, Callable[[], torch.Tensor]] | None = None,
    progress: Callable[[str], None] | None = None,
    label: str = "",
) -> Runs:
    """``loss_now(active)`` -> the current loss [M] (only the rows where active [M] is True are read); ``step(active, t)``
    takes step t = 1..T of the models where active is True.  A model leaves the batch (active False) when it diverges or
    reaches the tightest target: its record is complete, and it costs nothing more.

    ``targets`` [F]: target losses, the tightest last; ``budget``: max_iterations, min_iterations, patience_factor (the
    module docstring); the first ``judged`` models (default: all) are the rates x ``seeds`` seeds whose progress ends the
    batch (the others, e.g. the end-to-end rule beside each net, go on as long as it does).  The loss of a diverged model
    (non-finite, or 1e6 times its start) is NaN from then on and it takes no more steps.
    """
    track = track or {}
    targets = np.asarray(targets, dtype=np.float64)
    keep = history_steps(budget.max_iterations)
    kept = {t: i for i, t in enumerate(keep)}
    start = loss_now(None)
    M = start.shape[0]
    J = M if judged is None else judged
    loss = np.full((M, len(keep)), np.nan)
    extra = {k: np.full((M, len(keep)), np.nan) for k in track}
    to_target = np.full((M, len(targets)), -1, dtype=np.int64)
    div_at = np.full(M, -1, dtype=np.int64)
    active = torch.ones(M, dtype=torch.bool, device=start.device)
    t0 = time.perf_counter()
    cur = start
    first = None  # T: the first iteration at which some rate had every seed at the tightest target
    t = 0
    for t in range(0, budget.max_iterations + 1):
        if t > 0:
            step(active, t)
            cur = loss_now(active)
        bad = diverged(cur, start) & active
        if bool(bad.any()):
            div_at[bad.cpu().numpy()] = t
            active &= ~bad
        act = active.cpu().numpy()
        c = np.where(act, cur.double().cpu().numpy(), np.nan)
        hit = (to_target < 0) & (c[:, None] <= targets[None, :])
        to_target[hit] = t
        if t in kept:
            loss[:, kept[t]] = c
            for k, fn in track.items():
                extra[k][:, kept[t]] = np.where(act, fn().double().cpu().numpy(), np.nan)
        finished = act & (to_target[:, -1] >= 0)  # at the tightest target: its record is complete
        if finished.any():
            active &= ~torch.as_tensor(finished, device=active.device)
        done = (to_target[:J, -1] >= 0) | (div_at[:J] >= 0)
        if first is None:
            per_rate = ((to_target[:J, -1] >= 0) & (div_at[:J] < 0)).reshape(-1, seeds).all(1)
            first = t if per_rate.any() else None
        if progress and t and t % max(1, budget.max_iterations // 8) == 0:
            progress(
                f"{label} iteration {t}/{budget.max_iterations}: {int((to_target[:J, -1] >= 0).sum())} of {J} at the tightest "
                f"target, {int((div_at >= 0).sum())} diverged, {time.perf_counter() - t0:.1f}s"
            )
        if not bool(active.any()):
            break
        if t >= budget.min_iterations and (
            done.all() or (first is not None and t >= budget.patience_factor * max(first, 1))
        ):
            break
    if progress:
        progress(
            f"{label}: stopped at iteration {t} ({'every run done' if done.all() else 'patience' if first is not None else 'budget'}), "
            f"{time.perf_counter() - t0:.1f}s"
        )
    return Runs(steps=np.asarray(keep), loss=loss, extra=extra, to_target=to_target, diverged_at=div_at, stopped_at=t)
