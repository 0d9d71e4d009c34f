"""Thin xarray wrappers: one function per pipeline stage, spec + Datasets in, Dataset out.

No paths here (storage.py does I/O) and no plotting (plotting.py).  Dims and
names follow the math: ``depth``, ``width``, ``lr``, ``fold``, ``seed``,
``x_train``, ``test_error``.
"""

from __future__ import annotations

import logging
from typing import Callable

import numpy as np
import pandas as pd
import xarray as xr

from .lrsearch import SearchSettings, search_lr
from .ntk import kernel_regression
from .targets import add_label_noise, sample_inputs, sign_labels, target
from .trainer import TrainSettings, predict, train
from .widths import width_for_budget

log = logging.getLogger("depthlab")


def _seed(master: int, *stream: int) -> int:
    """Independent child seed of the master seed for a named stream (numpy SeedSequence)."""
    return int(np.random.SeedSequence([master, *stream]).generate_state(1)[0])


def model_seeds(seeds: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """(init seeds, data-order seeds) of the final-training models of one depth, from the config's seeds."""
    init = np.array([_seed(int(sd), 4, depth) for sd in seeds]) % (2**62)
    order = np.array([_seed(int(sd), 5, depth) for sd in seeds]) % (2**62)
    return init, order


def test_error(prediction: np.ndarray, y_test: np.ndarray, task: str) -> np.ndarray:
    """Eq. (7) MSE against noiseless f, or the misclassification rate of sign(prediction) vs sign f.

    prediction: [..., n_test], y_test: [n_test] (noiseless f) -> [...].
    """
    if task == "classification":
        return np.mean((prediction >= 0) != (y_test >= 0), axis=-1)
    return np.mean((prediction - y_test) ** 2, axis=-1)


def make_data(spec: dict) -> xr.Dataset:
    """Training and test sets of one target: x ~ N(0, I_d), labels per task and noise."""
    t = spec["target"]
    d, n, n_test = t["d"], t["n_train"], spec["n_test"]
    x = sample_inputs(n, d, _seed(spec["seed"], 0))
    xt = sample_inputs(n_test, d, _seed(spec["seed"], 1))
    f = target(x, t["k"], t["locality"], t["g"])
    ft = target(xt, t["k"], t["locality"], t["g"])
    y = add_label_noise(f, t["noise"], _seed(spec["seed"], 2))
    if spec["task"] == "classification":
        y = sign_labels(f)
    return xr.Dataset(
        {
            "x_train": (("train_sample", "feature"), x),
            "y_train": (("train_sample",), y, {"description": "labels used for training (noisy / sign f per task)"}),
            "f_train": (("train_sample",), f, {"description": "noiseless target f(x_train)"}),
            "x_test": (("test_sample", "feature"), xt),
            "y_test": (("test_sample",), ft, {"description": "noiseless target f(x_test); classification uses sign"}),
        },
        attrs={"k": t["k"], "locality": t["locality"], "g": t["g"], "d": d, "noise": t["noise"], "task": spec["task"]},
    )


def _settings(spec: dict, device: str) -> TrainSettings:
    return TrainSettings(device=device, **spec["training"])


def run_lrsearch(spec: dict, data: xr.Dataset, device: str = "auto", progress: Callable[[str], None] | None = None,
                 checkpoint: str | None = None) -> xr.Dataset:
    """Cross-validated BO of the learning rate at one depth (fixed budget P)."""
    L = spec["depth"]
    d = data.sizes["feature"]
    h, count = width_for_budget(d, spec["budget"], L)
    s = spec["search"]
    search = SearchSettings(
        folds=s["folds"], log10_lr_bounds=tuple(s["log10_lr_bounds"]), init_points=s["init_points"],
        rounds=s["rounds"], candidates_per_round=s["candidates_per_round"], seed=_seed(s["seed"], 3, L),
    )
    res = search_lr(data.x_train.values, data.y_train.values, L, h, search, _settings(spec, device), progress, checkpoint)
    return xr.Dataset(
        {
            "lr": (("eval",), res.lr),
            "round": (("eval",), res.round),
            "val_error": (("eval", "fold"), res.val_error),
            "diverged": (("eval", "fold"), res.diverged),
            "converged": (("eval", "fold"), res.converged),
            "epochs": (("eval", "fold"), res.epochs),
            "score": (("eval",), res.score, {"description": "-log10(mean val_error over folds), maximised"}),
            "best_lr": ((), res.best_lr),
            "fold_of": (("train_sample",), res.fold_of),
        },
        coords={"fold": np.arange(search.folds), "depth": L, "width": h},
        attrs={"n_params": count},
    )


def run_train(spec: dict, data: xr.Dataset, lrsearch: xr.Dataset, device: str = "auto",
              progress: Callable[[str], None] | None = None, checkpoint: str | None = None) -> xr.Dataset:
    """Final training on the full training set at the CV-chosen lr, one model per seed (batched)."""
    L = spec["depth"]
    d = data.sizes["feature"]
    h, count = width_for_budget(d, spec["budget"], L)
    lr = float(lrsearch.best_lr)
    seeds = np.asarray(spec["seeds"])
    M = len(seeds)
    n = data.sizes["train_sample"]
    init, order = model_seeds(seeds, L)
    res = train(data.x_train.values, data.y_train.values, np.tile(np.arange(n), (M, 1)), np.full(M, lr),
                L, h, init, order, _settings(spec, device), progress=progress, checkpoint=checkpoint)
    pred = predict(res.params, data.x_test.values)  # [M, n_test]
    err = test_error(pred, data.y_test.values, spec["data"]["task"])
    err = np.where(res.diverged, np.nan, err)  # a diverged run has no test error; it is counted, not averaged
    return xr.Dataset(
        {
            "test_error": (("seed",), err),
            "train_loss": (("seed",), res.train_loss),
            "epochs": (("seed",), res.epochs),
            "converged": (("seed",), res.converged),
            "diverged": (("seed",), res.diverged),
            "history": (("seed", "check"), res.history),
            "prediction": (("seed", "test_sample"), pred.astype(np.float32)),
        },
        coords={"seed": seeds, "check_epoch": (("check",), res.check_epochs), "depth": L, "width": h, "lr": lr},
        # timings are attrs, outside the content hash, so identical runs give identical hashes
        attrs={"n_params": count, "train_seconds": res.seconds},
    )


def run_sweep(spec: dict, data: xr.Dataset, device: str = "auto", progress: Callable[[str], None] | None = None,
              checkpoint: str | None = None) -> xr.Dataset:
    """Fig. 3: every lr x seed at a fixed width, trained as one batch; test error per (lr, seed).

    ``max_converged_lr`` is the largest lr at which every seed reached the loss
    threshold within ``max_epochs`` (the paper ends each curve there).
    """
    L, h = spec["depth"], spec["width"]
    lrs = np.asarray(spec["lrs"])
    seeds = np.asarray(spec["seeds"])
    n = data.sizes["train_sample"]
    lr_m = np.repeat(lrs, len(seeds))  # model m = (lr i, seed j), i = m // S
    init, order = (np.tile(a, len(lrs)) for a in model_seeds(seeds, L))
    res = train(data.x_train.values, data.y_train.values, np.tile(np.arange(n), (len(lr_m), 1)), lr_m, L, h,
                init, order, _settings(spec, device), progress=progress, checkpoint=checkpoint)
    err = test_error(predict(res.params, data.x_test.values), data.y_test.values, spec["data"]["task"])
    shape = (len(lrs), len(seeds))
    conv = res.converged.reshape(shape)
    ok = conv.all(axis=1)
    max_lr = float(lrs[ok].max()) if ok.any() else float("nan")
    return xr.Dataset(
        {
            "test_error": (("lr", "seed"), np.where(res.diverged, np.nan, err).reshape(shape)),
            "train_loss": (("lr", "seed"), res.train_loss.reshape(shape)),
            "epochs": (("lr", "seed"), res.epochs.reshape(shape)),
            "converged": (("lr", "seed"), conv),
            "diverged": (("lr", "seed"), res.diverged.reshape(shape)),
            "max_converged_lr": ((), max_lr),
        },
        coords={"lr": lrs, "seed": seeds, "depth": L, "width": h},
    )


def run_ntk(spec: dict, data: xr.Dataset, device: str = "auto") -> xr.Dataset:
    """NTK kernel regression (Eq. 10) at one depth, and its test error."""
    L = spec["depth"]
    y = data.y_train.values
    fit = kernel_regression(data.x_train.values, y, data.x_test.values, [L], beta=spec["beta"], block=spec["block"], device=device)
    pred = fit.prediction[0]
    return xr.Dataset(
        {
            "test_error": ((), float(test_error(pred, data.y_test.values, spec["data"]["task"]))),
            "prediction": (("test_sample",), pred),
            "jitter": ((), float(fit.jitter[0])),
            "max_train_residual": ((), float(np.max(np.abs(fit.train_prediction[0] - y)))),
        },
        coords={"depth": L},
        attrs={"beta": spec["beta"]},
    )


def sweep_table(spec: dict, sweep: dict[tuple[str, int], xr.Dataset], ntk: dict[tuple[str, int], xr.Dataset]) -> pd.DataFrame:
    """One row per (target, depth, lr, seed) of an lr sweep, with the NTK error of that (target, depth)."""
    rows = []
    for (name, L), ds in sorted(sweep.items()):
        t = spec["targets"][name]
        for i, lr in enumerate(ds.lr.values):
            for j, sd in enumerate(ds.seed.values):
                rows.append({
                    "target": name, "k": t["k"], "locality": t["locality"], "g": t["g"], "d": t["d"],
                    "n_train": t["n_train"], "noise": t["noise"], "depth": L, "width": int(ds.width), "lr": float(lr),
                    "seed": int(sd), "nn_test_error": float(ds.test_error.values[i, j]),
                    "converged": bool(ds.converged.values[i, j]), "diverged": bool(ds.diverged.values[i, j]),
                    "epochs": int(ds.epochs.values[i, j]), "max_converged_lr": float(ds.max_converged_lr),
                    "ntk_test_error": float(ntk[(name, L)].test_error),
                })
    return pd.DataFrame(rows)


def depth_table(spec: dict, train: dict[tuple[str, int], xr.Dataset], ntk: dict[tuple[str, int], xr.Dataset]) -> pd.DataFrame:
    """One row per (target, depth, seed): NN test error, and the NTK error of that (target, depth)."""
    rows = []
    for (name, L), ds in sorted(train.items()):
        t = spec["targets"][name]
        for i, sd in enumerate(ds.seed.values):
            rows.append({
                "target": name, "k": t["k"], "locality": t["locality"], "g": t["g"], "d": t["d"],
                "n_train": t["n_train"], "noise": t["noise"], "depth": L, "width": int(ds.width), "n_params": int(ds.attrs["n_params"]),
                "lr": float(ds.lr), "seed": int(sd), "nn_test_error": float(ds.test_error.values[i]),
                "converged": bool(ds.converged.values[i]), "diverged": bool(ds.diverged.values[i]),
                "epochs": int(ds.epochs.values[i]), "ntk_test_error": float(ntk[(name, L)].test_error),
                "ntk_jitter": float(ntk[(name, L)].jitter),
            })
    return pd.DataFrame(rows)
