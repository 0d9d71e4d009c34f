"""The training settings of the separation study's nets: MSE, with Adam or plain SGD as the config says."""

from __future__ import annotations

from typing import TYPE_CHECKING

from depthlab.core.losses.mse import MSE
from depthlab.core.optim.adam import Adam
from depthlab.core.optim.sgd import SGD
from depthlab.core.stopping import StopRule
from depthlab.core.trainer import TrainSettings

if TYPE_CHECKING:
    from depthlab.core.training_settings import Training

OPTIMIZERS = {"adam": Adam(), "sgd": SGD()}


def settings(t: "Training", device: str, variance: float = 1.0) -> TrainSettings:
    """``variance``: of the training targets, the unit of ``abs_tol`` (an improvement of the training MSE smaller than
    abs_tol Var(y) is none: a net memorising its last points has stopped improving what the claims measure)."""
    return TrainSettings(
        loss=MSE(),
        optimizer=OPTIMIZERS[t.optimizer],
        batch_size=t.batch_size,
        check_every=t.check_every,
        stop=StopRule(
            threshold=t.loss_threshold,
            patience=t.patience,
            rel_tol=t.rel_tol,
            abs_tol=t.abs_tol * variance,
            grow=t.plateau_growth,
        ),
        max_epochs=t.max_epochs,
        device=device,
    )
