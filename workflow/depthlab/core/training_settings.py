"""A training run's settings as plain frozen data: what a study's spec records (its JSON is the job's identity) and
the cost model reads, without the trainer's imports (torch: Snakemake's process builds every spec).
:meth:`Training.settings` builds the trainer's own :class:`depthlab.core.trainer.TrainSettings` from them, with the
loss and optimiser objects and the stop rule.

Mori & Ueda's nets (plain SGD on MSE or the logistic loss) and the separation study's (Adam or SGD on MSE) use it as
it is.  The fractal nets and the CNNs stop on their *test accuracy* with an onset rule and grow their rate grid at its
edges (``fractals/accuracy.py``): their settings are of another kind, and stay the study's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OPTIMIZERS = ("sgd", "adam")
LOSSES = ("mse", "logistic")


@dataclass(frozen=True)
class Training:
    optimizer: str  # sgd | adam
    loss: str  # mse | logistic
    batch_size: int
    check_every: int  # epochs between full-training-set checks
    loss_threshold: float  # the loss's target: a net below it has converged
    max_epochs: int  # the budget
    patience: int | None  # plateau rule: checks without a fall of the training loss by rel_tol of its best + abs_tol
    rel_tol: float
    abs_tol: float = 0.0  # in units of the training targets' variance (the ``variance`` of :meth:`settings`)
    plateau_growth: float = 0.0  # the plateau window: max(patience, plateau_growth x checks so far); 0: patience

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS or self.loss not in LOSSES:
            raise ValueError(
                f"optimizer must be one of {OPTIMIZERS} and loss one of {LOSSES}, got {self.optimizer!r}, {self.loss!r}"
            )

    def stop_rule(self, variance: float = 1.0) -> Any:
        """The loss's target, or a plateau of the full training loss (an improvement smaller than ``abs_tol`` x
        ``variance`` is none) over a window that grows with the run."""
        from .stopping import StopRule

        return StopRule(
            threshold=self.loss_threshold,
            patience=self.patience,
            rel_tol=self.rel_tol,
            abs_tol=self.abs_tol * variance,
            grow=self.plateau_growth,
        )

    def settings(self, device: str, variance: float = 1.0) -> Any:
        """The trainer's :class:`~depthlab.core.trainer.TrainSettings` on ``device``; ``variance``: of the training
        targets, the unit of ``abs_tol``."""
        from .losses.logistic import Logistic
        from .losses.mse import MSE
        from .optim.adam import Adam
        from .optim.sgd import SGD
        from .trainer import TrainSettings

        return TrainSettings(
            loss={"mse": MSE, "logistic": Logistic}[self.loss](),
            optimizer={"sgd": SGD, "adam": Adam}[self.optimizer](),
            batch_size=self.batch_size,
            check_every=self.check_every,
            stop=self.stop_rule(variance),
            max_epochs=self.max_epochs,
            device=device,
        )
