"""A training run's settings as plain frozen data: what a study's spec records (its JSON is the job's identity) and
the cost model reads.  Mori & Ueda's nets (plain SGD on MSE or the logistic loss) and the separation study's (Adam or
SGD on MSE) use it as it is.

Each study turns it into the trainer's :class:`depthlab.core.trainer.TrainSettings` in a converter of its own
(``mori_ueda/sgd.py``, ``separation/training.py``), importing at its top exactly the losses and optimisers that study
uses.  That is where the code fingerprint finds them: a stage's fingerprint follows module-level imports, so a
converter here, importing every loss and optimiser, would rerun Mori & Ueda's jobs on an edit of Adam, and one
importing them inside a function would rerun nothing on an edit of SGD (``tests/test_provenance.py`` caught it).  The fractal nets and the CNNs stop on their *test accuracy* with an onset rule and grow their rate grid at its
edges (``fractals/accuracy.py``): their settings are of another kind, and stay the study's own.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    abs_tol: float = 0.0  # in units of the training targets' variance (separation/training.py scales it)
    plateau_growth: float = 0.0  # the plateau window: max(patience, plateau_growth x checks so far); 0: patience

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS or self.loss not in LOSSES:
            raise ValueError(
                f"optimizer must be one of {OPTIMIZERS} and loss one of {LOSSES}, got {self.optimizer!r}, {self.loss!r}"
            )
