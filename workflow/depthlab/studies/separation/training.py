"""The training settings of the separation study's nets: MSE, with Adam or plain SGD as the config says."""

from __future__ import annotations

from typing import TYPE_CHECKING

from depthlab.core.losses.mse import MSE
from depthlab.core.optim.adam import Adam
from depthlab.core.optim.sgd import SGD
from depthlab.core.stopping import StopRule
from depthlab.core.trainer import TrainSettings

if TYPE_CHECKING:
    from .specs import Training

OPTIMIZERS = {"adam": Adam(), "sgd": SGD()}


def settings(t: "Training", device: str) -> TrainSettings:
    return TrainSettings(loss=MSE(), optimizer=OPTIMIZERS[t.optimizer], batch_size=t.batch_size, check_every=t.check_every,
                         stop=StopRule(threshold=t.loss_threshold, patience=t.patience, rel_tol=t.rel_tol), max_epochs=t.max_epochs,
                         device=device)
