"""When training is done: one stop rule for every trainer of every study (SPEC §6: a verdict rests on nets trained until
they stop improving).

A model is checked every so often (every ``check_every`` epochs, steps or iterations: the trainer decides).  At each
check it reports one *monitored value* (lower is better: a training loss, or a test error) and whether the loss's own
target is met (Mori & Ueda: training loss < 1e-4; the logistic loss: 100 % training accuracy).  The rule stops it when

* ``target``:  the target is met (:attr:`StopRule.threshold`, handed to the loss's ``converged``);
* ``plateau``: the monitored value has not improved on its best so far by more than ``rel_tol`` (relative) plus
  ``abs_tol`` (absolute) for ``patience`` checks in a row: it has stopped improving.  With an *onset* level
  (:attr:`StopRule.onset`), a model whose best value has not yet fallen below it (a net still at chance: it has not
  started to learn) is not stopped by a plateau before its ``onset_patience``-th check: a slow start is not a plateau;
  with ``grow`` > 0 the window grows with the run: no improvement for max(``patience``, ceil(``grow`` x checks so far))
  checks, so a slow learner is not stopped by a window that is short against how long it has run (the RZG23
  learner at m = 4d, d = 16 stopped after 10 checks x 25 steps at step 425, still falling); and no plateau stops a model
  before its ``min_checks``-th check;
* ``budget``:  the trainer's maximum budget ran out first (the trainer says so: :meth:`StopRule.budget`);
* ``diverged``: a non-finite loss or parameter appeared (the trainer says so).

``converged`` means *target* or *plateau*: the net stopped because it was done, not because the budget ran out.  A
model stopped by the budget was still improving within the last ``patience`` checks, so a claim resting on it is
inconclusive.

The rule is a small pure object; its per-model state (:class:`StopState`: numpy arrays over all M models of a batch)
travels with the trainer's state, so a checkpoint resumes it exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RUNNING, TARGET, PLATEAU, BUDGET, DIVERGED, PRUNED = 0, 1, 2, 3, 4, 5
REASONS = ("running", "target", "plateau", "budget", "diverged", "pruned")  # a reason code's name: REASONS[code]
# pruned: a successive-halving rate search stopped it at a rung, its candidate being among the worse (core.lrsearch)


@dataclass(frozen=True)
class StopRule:
    """Stop on the loss's target, on a plateau of the monitored value, or (the trainer's call) on the budget."""

    threshold: float | None = None  # the loss's target (see depthlab.core.losses.base); None: no target
    patience: int | None = None  # checks in a row without improvement before a plateau stops it; None: no plateau rule
    rel_tol: float = 0.01  # an improvement: value < best - (rel_tol |best| + abs_tol)
    abs_tol: float = 0.0
    monitor: str = "train_loss"  # train_loss | eval_error (the error on the trainer's evaluation set)
    onset: float | None = None  # a model has started once its best value is below this (a test error: chance - margin)
    onset_patience: int | None = (
        None  # until it has started, no plateau stop before this many checks; None: no onset rule
    )
    grow: float = (
        0.0  # the plateau window is max(patience, ceil(grow x checks so far)); 0: a fixed window of patience checks
    )
    min_checks: int = 0  # no plateau stop before this many checks

    def __post_init__(self) -> None:
        if self.monitor not in ("train_loss", "eval_error"):
            raise ValueError(f"monitor must be train_loss or eval_error, got {self.monitor!r}")
        if self.patience is not None and self.patience < 1:
            raise ValueError(f"patience must be >= 1 or None, got {self.patience}")
        if self.rel_tol < 0 or self.abs_tol < 0:
            raise ValueError("rel_tol and abs_tol must be >= 0")
        if (self.onset is None) != (self.onset_patience is None):
            raise ValueError("onset and onset_patience go together (both set, or neither)")
        if not 0.0 <= self.grow < 1.0:
            raise ValueError(f"grow must be in [0, 1), got {self.grow}")
        if self.min_checks < 0:
            raise ValueError(f"min_checks must be >= 0, got {self.min_checks}")
        if self.onset_patience is not None and (self.patience is None or self.onset_patience < self.patience):
            raise ValueError(
                f"onset_patience ({self.onset_patience}) needs a plateau rule and must be >= patience ({self.patience})"
            )

    def start(self, M: int) -> "StopState":
        return StopState(
            best=np.full(M, np.inf),
            since=np.zeros(M, dtype=np.int64),
            reason=np.zeros(M, dtype=np.int64),
            stopped_at=np.full(M, -1, dtype=np.int64),
            checks=np.zeros(M, dtype=np.int64),
        )

    def update(
        self, state: "StopState", ids: np.ndarray, value: np.ndarray, reached: np.ndarray, at: int
    ) -> np.ndarray:
        """One check of models ``ids`` (still running): their monitored values [n] and whether their loss's target is met
        [n] (the loss decides, from :attr:`threshold`: ``Loss.converged``).
        Records the stop reason and ``at`` (the check's epoch, step or iteration) of those that stop; returns the stop
        mask [n].  A non-finite value is left to the trainer (it is a divergence: :meth:`diverge`)."""
        ids = np.asarray(ids)
        value = np.asarray(value, dtype=np.float64)
        best = state.best[ids]
        better = value < best - (self.rel_tol * np.abs(np.where(np.isfinite(best), best, 0.0)) + self.abs_tol)
        better |= ~np.isfinite(best) & np.isfinite(value)
        state.best[ids] = np.where(np.isfinite(value), np.minimum(best, value), best)
        state.since[ids] = np.where(better, 0, state.since[ids] + 1)
        state.checks[ids] += 1
        target = np.asarray(reached, dtype=bool)
        if self.patience is not None:
            window = np.maximum(self.patience, np.ceil(self.grow * state.checks[ids])) if self.grow else self.patience
            plateau = (state.since[ids] >= window) & (state.checks[ids] >= self.min_checks)
        else:
            plateau = np.zeros(len(ids), dtype=bool)
        if self.onset is not None:  # not started (still at chance): no plateau before the onset_patience-th check
            plateau &= (state.best[ids] < self.onset) | (state.checks[ids] >= self.onset_patience)
        reason = np.where(target, TARGET, np.where(plateau, PLATEAU, RUNNING))
        stop = reason != RUNNING
        state.reason[ids[stop]] = reason[stop]
        state.stopped_at[ids[stop]] = at
        return stop

    @staticmethod
    def budget(state: "StopState", ids: np.ndarray, at: int) -> None:
        """The budget ran out for models ``ids`` (those still running are marked ``budget``)."""
        ids = np.asarray(ids)
        ids = ids[state.reason[ids] == RUNNING]
        state.reason[ids] = BUDGET
        state.stopped_at[ids] = at

    @staticmethod
    def prune(state: "StopState", ids: np.ndarray, at: int) -> None:
        """Models ``ids`` (still running) were cut at a rung of a successive-halving search: not converged, not diverged."""
        ids = np.asarray(ids)
        ids = ids[state.reason[ids] == RUNNING]
        state.reason[ids] = PRUNED
        state.stopped_at[ids] = at

    @staticmethod
    def diverge(state: "StopState", ids: np.ndarray, at: int) -> None:
        ids = np.asarray(ids)
        state.reason[ids] = DIVERGED
        state.stopped_at[ids] = at

    def describe(self, unit: str = "check", budget: str = "") -> str:
        """The rule in words, for a store's attributes and the claims' notes."""
        parts = []
        if self.threshold is not None:
            parts.append(f"the loss's target ({self.threshold:g}) is met")
        if self.patience is not None:
            tol = (
                " + ".join(
                    t
                    for t in (
                        f"{self.rel_tol:g} relative" if self.rel_tol else "",
                        f"{self.abs_tol:g} absolute" if self.abs_tol else "",
                    )
                    if t
                )
                or "0"
            )
            onset = (
                f" (and, while it has not yet fallen below {self.onset:g}, not before its {self.onset_patience}th {unit})"
                if self.onset is not None
                else ""
            )
            window = f"max({self.patience}, {self.grow:g} x the {unit}s so far)" if self.grow else str(self.patience)
            least = f", and not before its {self.min_checks}th {unit}" if self.min_checks else ""
            parts.append(
                f"the {self.monitor.replace('_', ' ')} has not improved on its best by more than {tol} "
                f"for {window} {unit}s in a row{onset}{least}"
            )
        parts.append(f"the budget{(' (' + budget + ')') if budget else ''} runs out (not converged)")
        return "stops when " + ", or ".join(parts)


@dataclass
class StopState:
    """Per-model state of a :class:`StopRule` over M models (all numpy, so a checkpoint carries it)."""

    best: np.ndarray  # [M] best monitored value so far
    since: np.ndarray  # [M] checks since the last improvement
    reason: np.ndarray  # [M] REASONS code (running until it stops)
    stopped_at: np.ndarray  # [M] the check's epoch / step / iteration at which it stopped (-1: still running)
    checks: np.ndarray  # [M] checks so far

    FIELDS = ("best", "since", "reason", "stopped_at", "checks")

    @property
    def converged(self) -> np.ndarray:
        """[M] bool: stopped because it was done (target or plateau), not by the budget or a divergence."""
        return (self.reason == TARGET) | (self.reason == PLATEAU)

    def names(self) -> np.ndarray:
        """[M] the stop reasons as words (for a store)."""
        return np.asarray(REASONS, dtype=object)[self.reason]


def reason_names(codes: np.ndarray) -> np.ndarray:
    return np.asarray(REASONS, dtype=object)[np.asarray(codes)]
