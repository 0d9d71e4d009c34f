"""The separation study's name, its config section and its nets' training settings: what every spec module of the study
shares (:mod:`.specs`, :mod:`.radial_specs`)."""

from __future__ import annotations

from dataclasses import dataclass


STUDY = "separation"


def section(config: dict) -> dict:
    return config["studies"][STUDY]


@dataclass(frozen=True)
class Training:
    optimizer: str  # adam | sgd
    batch_size: int
    check_every: int
    loss_threshold: float
    max_epochs: int  # the budget
    patience: int  # plateau rule: checks without a fall of the training MSE by rel_tol of its best + abs_tol Var(y)
    rel_tol: float
    abs_tol: float  # in units of the training targets' variance
    plateau_growth: float  # the plateau window: max(patience, plateau_growth x checks so far)


def _training(t: dict, max_epochs: int | None = None) -> Training:
    return Training(
        optimizer=t["optimizer"],
        batch_size=t["batch_size"],
        check_every=t["check_every"],
        loss_threshold=float(t["loss_threshold"]),
        max_epochs=t["max_epochs"] if max_epochs is None else max_epochs,
        patience=t["patience"],
        rel_tol=float(t["rel_tol"]),
        abs_tol=float(t["abs_tol"]),
        plateau_growth=float(t["plateau_growth"]),
    )
