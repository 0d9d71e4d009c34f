"""Every learning rate x seed of one net shape, trained as one batch: the grid every study trains.

Model ``m = (lr m // S, seed m % S)``.  Seed s starts from the same initial parameters, data
order and training rows whatever its learning rate (common random numbers), so a curve over
learning rates is not confounded by initialisation.  The "seeds" may be cross-validation folds,
each with its own training rows (:func:`depthlab.core.lrsearch.validation_errors`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .mlp import Params
from .trainer import Checkpoint, TrainResult, TrainSettings, train


def concat(parts: list[TrainResult]) -> TrainResult:
    """The results of consecutive stacks as one (models in order; every part has the same check epochs)."""
    import torch

    first = parts[0]
    cat = {
        f: np.concatenate([getattr(p, f) for p in parts])
        for f in (
            "train_loss",
            "train_accuracy",
            "epochs",
            "converged",
            "diverged",
            "stop_reason",
            "history",
            "eval_history",
        )
    }
    params = [
        (torch.cat([p.params[i][0] for p in parts]), torch.cat([p.params[i][1] for p in parts]))
        for i in range(len(first.params))
    ]
    return TrainResult(**cat, check_epochs=first.check_epochs, params=params, seconds=sum(p.seconds for p in parts))


@dataclass
class GridResult:
    """A :class:`TrainResult` of C x S models, with the learning rates; :meth:`grid` reshapes a per-model array."""

    lrs: np.ndarray  # [C]
    seeds: int  # S
    result: TrainResult

    def grid(self, a: np.ndarray) -> np.ndarray:
        """[C * S, ...] -> [C, S, ...]."""
        a = np.asarray(a)
        return a.reshape(len(self.lrs), self.seeds, *a.shape[1:])


def train_grid(
    x: np.ndarray,
    y: np.ndarray,
    lrs: np.ndarray,
    init: Params,
    order_seeds: np.ndarray,
    settings: TrainSettings,
    *,
    rows: np.ndarray | None = None,
    eval_set: tuple[np.ndarray, np.ndarray] | None = None,
    progress: Callable[[str], None] | None = None,
    checkpoint: Checkpoint | None = None,
    prune=None,
    stack_lrs: int = 0,
) -> GridResult:
    """Train C = len(lrs) rates x S = len(order_seeds) seeds as one batch of C S models.

    init: stacked initial parameters of the S seeds (CPU); order_seeds: [S] data-order seeds;
    rows: [S, n] training rows per seed (default: every row of x for every seed).  ``stack_lrs``: at most this many
    rates (with all their seeds) per stack, the parts trained one after another (a width-5000 sweep outgrew a
    node); every model's arithmetic is that of one stack (it never depends on the other models; with two or more seeds a
    model's step runs the same kernels), so the result is the same as one stack's: to the bit for the MSE loss, not
    always for the logistic loss (:func:`depthlab.core.trainer.models_per_step`).
    """
    lrs = np.asarray(lrs, dtype=np.float64)
    order_seeds = np.asarray(order_seeds)
    C, S = len(lrs), len(order_seeds)
    if (
        stack_lrs and stack_lrs < C and prune is None
    ):  # too many for one stack: in parts of whole rates (all their seeds)
        parts = [
            train_grid(
                x,
                y,
                lrs[a : a + stack_lrs],
                init,
                order_seeds,
                settings,
                rows=rows,
                eval_set=eval_set,
                progress=progress,
                checkpoint=checkpoint.child(f"part{a // stack_lrs}") if checkpoint is not None else None,
            )
            for a in range(0, C, stack_lrs)
        ]
        return GridResult(lrs=lrs, seeds=S, result=concat([p.result for p in parts]))
    if init[0][0].shape[0] != S:
        raise ValueError(f"init holds {init[0][0].shape[0]} models for {S} seeds")
    rows = np.tile(np.arange(len(y)), (S, 1)) if rows is None else np.asarray(rows)
    res = train(
        x,
        y,
        np.tile(rows, (C, 1)),
        np.repeat(lrs, S),
        [(W.repeat(C, 1, 1), b.repeat(C, 1, 1)) for W, b in init],
        np.tile(order_seeds, C),
        settings,
        eval_set=eval_set,
        progress=progress,
        checkpoint=checkpoint,
        prune=prune,
    )
    return GridResult(lrs=lrs, seeds=S, result=res)
