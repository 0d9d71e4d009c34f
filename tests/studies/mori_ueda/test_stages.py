"""Mori & Ueda stages: data sets per task and noise, the train grid (Fig. 3's max lr), determinism."""

from types import SimpleNamespace

import numpy as np
import pytest

from depthlab.core.losses import misclassification
from depthlab.core.mlp import init_params, layer_sizes
from depthlab.core.trainer import TrainSettings, train
from depthlab.storage import content_hash
from depthlab.studies.mori_ueda import data, search, training
from depthlab.studies.mori_ueda.seeding import model_seeds
from depthlab.studies.mori_ueda.targets import target

CTX = SimpleNamespace(device="cpu", progress=lambda m: None, checkpoint=None)


def data_spec(**kw):
    t = {"k": 2, "locality": "local", "g": "product", "d": 5, "n_train": 200, "noise": 0.0}
    t.update(kw.pop("target", {}))
    return {"study": "mori_ueda", "stage": "data", "job": {"figure": "fig9", "target": "t"}, "target": t,
            "task": kw.get("task", "regression"), "n_test": 300, "seed": 3}


def test_noise_only_on_training_labels():
    clean = data.make_data(data_spec(), {})
    noisy = data.make_data(data_spec(target={"noise": 0.5}), {})
    np.testing.assert_array_equal(clean.x_train, noisy.x_train)
    np.testing.assert_array_equal(clean.y_test, noisy.y_test)  # test labels stay noiseless
    np.testing.assert_array_equal(noisy.f_train, clean.y_train)
    resid = noisy.y_train.values - noisy.f_train.values
    assert 0.4 < resid.std() < 0.6
    np.testing.assert_allclose(noisy.y_test, target(noisy.x_test.values, 2, "local"))
    assert not np.array_equal(clean.x_train[:5], clean.x_test[:5]), "train and test inputs come from different streams"


def test_classification_labels_are_signs():
    ds = data.make_data(data_spec(task="classification"), {})
    np.testing.assert_array_equal(ds.y_train, np.where(ds.f_train >= 0, 1.0, -1.0))
    assert misclassification(np.array([[1.0, -1.0, 2.0]]), np.array([0.5, 0.5, -0.1]))[0] == pytest.approx(2 / 3)


TRAINING = {"batch_size": 50, "check_every": 10, "loss_threshold": 1e-3, "max_epochs": 200, "loss": "mse", "optimizer": "sgd"}


def test_grid_max_converged_lr_matches_separate_runs():
    dspec = data_spec(target={"k": 1})
    ds = data.make_data(dspec, {})
    lrs = [1e-5, 0.01, 0.1, 100.0]
    spec = {"study": "mori_ueda", "stage": "train", "job": {}, "data": dspec, "depth": 2, "width": 32, "n_params": 0,
            "lrs": lrs, "training": TRAINING, "seeds": [0, 1]}
    out = training.run_train(spec, {"data": ds}, CTX)
    conv = out.converged.values
    assert out.test_error.dims == ("lr", "seed") and out.attrs["lr_source"] == "grid"
    assert not conv[0].any(), "1e-5 cannot fit in 200 epochs"
    assert out.diverged.values[-1].all(), "lr = 100 must diverge"
    assert np.isnan(out.test_error.values[-1]).all()
    expected = max(lr for lr, c in zip(lrs, conv) if c.all())
    assert out.max_converged_lr == expected and expected in (0.01, 0.1)
    # independent check: train each (lr, seed) alone and compare the converged flags
    for i, lr in enumerate(lrs):
        for j, sd in enumerate([0, 1]):
            init, order = model_seeds([sd], 2)
            r = train(ds.x_train.values, ds.y_train.values, np.arange(200)[None], np.array([lr]),
                      init_params(layer_sizes(5, 32, 2), init), order, TrainSettings(device="cpu", **TRAINING))
            assert r.converged[0] == conv[i, j]


def test_same_spec_gives_identical_stores_on_cpu():
    dspec = data_spec()
    training_ = {**TRAINING, "max_epochs": 10, "check_every": 5, "loss_threshold": 1e-4}
    ls = {"study": "mori_ueda", "stage": "lrsearch", "job": {}, "data": dspec, "depth": 2, "width": 20, "n_params": 0,
          "training": training_,
          "search": {"folds": 2, "log10_lr_bounds": [-2.0, -0.5], "init_points": 2, "rounds": 1, "candidates_per_round": 2, "seed": 0}}
    tr = {"study": "mori_ueda", "stage": "train", "job": {}, "data": dspec, "depth": 2, "width": 20, "n_params": 0,
          "lrs": "lrsearch", "training": training_, "seeds": [0, 1]}
    hashes = []
    for _ in range(2):
        ds = data.make_data(dspec, {})
        s = search.run_lrsearch(ls, {"data": ds}, CTX)
        t = training.run_train(tr, {"data": ds, "lrsearch": s}, CTX)
        assert float(t.lr.values[0]) == float(s.best_lr)
        hashes.append((content_hash(ds), content_hash(s), content_hash(t)))
    assert hashes[0] == hashes[1]
