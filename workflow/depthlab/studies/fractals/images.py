"""Stage ``images``: the real images of Fig. 7 as one store (train/test split, per-channel standardisation)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core.seeds import rng

from . import image_sets

if TYPE_CHECKING:
    from .specs import ImagesSpec


def make_images(spec: "ImagesSpec", inputs: dict, ctx=None) -> xr.Dataset:
    """Digits: a seeded split of the 1797 images (``n_test`` held out, the first ``n_train`` of the rest trained on);
    CIFAR-10: its own train and test files (their first ``n_train`` / ``n_test`` images).
    Pixels are standardised per channel by the training set's mean and standard deviation."""
    if spec.job.dataset == "digits":
        x, y = image_sets.read_digits()
        perm = rng(spec.seed, "digits_split").permutation(len(y))
        test, train = perm[: spec.n_test], perm[spec.n_test :]
        train = train[: spec.n_train] if spec.n_train else train
        x_train, y_train, x_test, y_test = x[train], y[train], x[test], y[test]
    else:
        x_train, y_train, x_test, y_test = image_sets.read_cifar(spec.cifar10_dir)
        if spec.n_train:
            x_train, y_train = x_train[: spec.n_train], y_train[: spec.n_train]
        if spec.n_test:
            x_test, y_test = x_test[: spec.n_test], y_test[: spec.n_test]
    x_train, x_test = x_train.astype(np.float64), x_test.astype(np.float64)
    mean = x_train.mean(axis=(0, 2, 3), keepdims=True)
    std = x_train.std(axis=(0, 2, 3), keepdims=True)
    std[std == 0] = 1.0
    return xr.Dataset(
        {
            "x_train": (("train_sample", "channel", "row", "col"), ((x_train - mean) / std).astype(np.float32)),
            "y_train": (("train_sample",), y_train),
            "x_test": (("test_sample", "channel", "row", "col"), ((x_test - mean) / std).astype(np.float32)),
            "y_test": (("test_sample",), y_test),
            "channel_mean": (("channel",), mean.ravel()),
            "channel_std": (("channel",), std.ravel()),
        },
        attrs={"dataset": spec.job.dataset, "classes": 10},
    )
