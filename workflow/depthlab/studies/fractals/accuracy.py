"""What the fractal nets and the CNNs share: their stop rule (the test accuracy stops rising) and reading a run's record
of test accuracies (the best along the run, the last it reached)."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from depthlab.core.stopping import StopRule

from .chance import CHANCE


class StopSettings(Protocol):
    """What :func:`stop_rule` reads of a training's settings (the fractal nets' and the CNNs' ``Training`` of
    ``specs``; named structurally, so this module imports nothing of the specs, which import it)."""

    patience: int
    abs_tol: float
    plateau_growth: float
    onset_checks: int | None
    onset_margin: float | None


def stop_rule(t: StopSettings) -> StopRule:
    """The plateau rule on the test error; with ``onset_checks`` (fractal nets), a net whose test accuracy has not yet risen
    above chance + ``onset_margin`` (a slow start: the pdeg-12 net at rate 1e-5 sits at 0.50-0.51 for 100 epochs, then
    climbs) is not stopped before that many checks.  The CNNs' Training has none (onset_checks None).  The window grows
    with the run (``plateau_growth``): a net that has run long is not stopped by a window short against its run."""
    return StopRule(
        patience=t.patience,
        rel_tol=0.0,
        abs_tol=t.abs_tol,
        monitor="eval_error",
        grow=t.plateau_growth,
        onset=None if t.onset_checks is None else 1.0 - CHANCE - t.onset_margin,
        onset_patience=t.onset_checks,
    )


def best_along(acc: np.ndarray) -> np.ndarray:
    """The best of each row of test accuracies [..., checks], NaN (not an error) for a row with none: a net that diverged
    before its first check, or checks it never reached."""
    finite = np.isfinite(acc)
    return np.where(finite.any(-1), np.max(np.where(finite, acc, -np.inf), axis=-1), np.nan)


def last_along(acc: np.ndarray) -> np.ndarray:
    """The last finite accuracy of each row (where the net stopped), NaN for a row with none."""
    finite = np.isfinite(acc)
    idx = acc.shape[-1] - 1 - np.argmax(finite[..., ::-1], axis=-1)
    return np.where(finite.any(-1), np.take_along_axis(acc, idx[..., None], -1)[..., 0], np.nan)
