"""Stage wrappers: data sets per task and noise, the Fig. 3 maximum-lr detection, test errors."""

import numpy as np
import pytest

import depthlab as dl
from depthlab import experiments as ex


def data_spec(**kw):
    t = {"k": 2, "locality": "local", "g": "product", "d": 5, "n_train": 200, "noise": 0.0}
    t.update(kw.pop("target", {}))
    return {"stage": "data", "target": t, "task": kw.get("task", "regression"), "n_test": 300, "seed": 3}


def test_noise_only_on_training_labels():
    clean = ex.make_data(data_spec())
    noisy = ex.make_data(data_spec(target={"noise": 0.5}))
    np.testing.assert_array_equal(clean.x_train, noisy.x_train)
    np.testing.assert_array_equal(clean.y_test, noisy.y_test)  # test labels stay noiseless
    np.testing.assert_array_equal(noisy.f_train, clean.y_train)
    resid = noisy.y_train.values - noisy.f_train.values
    assert 0.4 < resid.std() < 0.6
    np.testing.assert_allclose(noisy.y_test, dl.target(noisy.x_test.values, 2, "local"))


def test_classification_labels_are_signs():
    ds = ex.make_data(data_spec(task="classification"))
    np.testing.assert_array_equal(ds.y_train, np.where(ds.f_train >= 0, 1.0, -1.0))
    assert ex.test_error(np.array([[1.0, -1.0, 2.0]]), np.array([0.5, 0.5, -0.1]), "classification")[0] == pytest.approx(2 / 3)


def test_sweep_max_converged_lr_matches_separate_runs():
    data = ex.make_data(data_spec(target={"k": 1}))
    lrs = [1e-5, 0.01, 0.1, 100.0]
    spec = {"stage": "sweep", "data": data_spec(target={"k": 1}), "depth": 2, "width": 32, "lrs": lrs,
            "training": {"batch_size": 50, "check_every": 10, "loss_threshold": 1e-3, "max_epochs": 200, "loss": "mse"},
            "seeds": [0, 1]}
    ds = ex.run_sweep(spec, data, device="cpu")
    conv = ds.converged.values
    assert not conv[0].any(), "1e-5 cannot fit in 200 epochs"
    assert ds.diverged.values[-1].all(), "lr = 100 must diverge"
    assert np.isnan(ds.test_error.values[-1]).all()
    expected = max(lr for lr, c in zip(lrs, conv) if c.all())
    assert ds.max_converged_lr == expected and expected in (0.01, 0.1)
    # independent check: train each (lr, seed) alone and compare the converged flags
    for i, lr in enumerate(lrs):
        for j, sd in enumerate([0, 1]):
            init, order = ex.model_seeds(np.array([sd]), 2)
            r = dl.train(data.x_train.values, data.y_train.values, np.arange(200)[None], np.array([lr]), 2, 32, init, order,
                         dl.TrainSettings(check_every=10, loss_threshold=1e-3, max_epochs=200, device="cpu"))
            assert r.converged[0] == conv[i, j]


def test_same_config_and_seeds_give_identical_stores_on_cpu():
    from depthlab.storage import content_hash

    dspec = data_spec()
    training = {"batch_size": 50, "check_every": 5, "loss_threshold": 1e-4, "max_epochs": 10, "loss": "mse"}
    ls = {"stage": "lrsearch", "data": dspec, "depth": 2, "budget": 500.0, "training": training,
          "search": {"folds": 2, "log10_lr_bounds": [-2.0, -0.5], "init_points": 2, "rounds": 1, "candidates_per_round": 2, "seed": 0}}
    tr = {"stage": "train", "data": dspec, "depth": 2, "budget": 500.0, "training": training, "seeds": [0, 1]}
    hashes = []
    for _ in range(2):
        data = ex.make_data(dspec)
        search = ex.run_lrsearch(ls, data, device="cpu")
        hashes.append((content_hash(data), content_hash(search), content_hash(ex.run_train(tr, data, search, device="cpu"))))
    assert hashes[0] == hashes[1]
