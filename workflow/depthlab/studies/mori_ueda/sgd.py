"""The training settings of every Mori & Ueda net: plain SGD (Eq. 5) on MSE, or on the logistic loss for classification."""

from __future__ import annotations

from typing import TYPE_CHECKING

from depthlab.core.losses.logistic import Logistic
from depthlab.core.losses.mse import MSE
from depthlab.core.optim.sgd import SGD
from depthlab.core.stopping import StopRule
from depthlab.core.trainer import TrainSettings

if TYPE_CHECKING:
    from depthlab.core.training_settings import Training

LOSSES = {"mse": MSE(), "logistic": Logistic()}


def settings(t: "Training", device: str) -> TrainSettings:
    return TrainSettings(
        loss=LOSSES[t.loss],
        optimizer=SGD(),
        batch_size=t.batch_size,
        check_every=t.check_every,
        stop=stop_rule(t),
        max_epochs=t.max_epochs,
        device=device,
    )


def stop_rule(t: "Training") -> StopRule:
    """The paper's target (training loss < loss_threshold; the logistic loss: 100 % training accuracy) or a plateau of the
    full training loss (depth sweeps only: an lr sweep converges only by the paper's target, Fig. 3), over a window that
    grows with the run (``plateau_growth``: a stall is not convergence)."""
    return StopRule(threshold=t.loss_threshold, patience=t.patience, rel_tol=t.rel_tol, grow=t.plateau_growth)
