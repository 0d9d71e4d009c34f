"""The separation study's name, its config section and its nets' training settings: what every spec module of the study
shares (:mod:`.specs`, :mod:`.radial_specs`)."""

from __future__ import annotations

from depthlab.core.training_settings import Training


STUDY = "separation"


def section(config: dict) -> dict:
    return config["studies"][STUDY]


def _training(t: dict, max_epochs: int | None = None) -> Training:
    return Training(  # MSE, with Adam or plain SGD as the config says
        optimizer=t["optimizer"],
        loss="mse",
        batch_size=t["batch_size"],
        check_every=t["check_every"],
        loss_threshold=float(t["loss_threshold"]),
        max_epochs=t["max_epochs"] if max_epochs is None else max_epochs,
        patience=t["patience"],
        rel_tol=float(t["rel_tol"]),
        abs_tol=float(t["abs_tol"]),
        plateau_growth=float(t["plateau_growth"]),
    )
