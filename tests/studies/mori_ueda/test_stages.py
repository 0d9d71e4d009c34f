"""Mori & Ueda stages on specs built from a config by the study's own spec classes: data sets per task and noise,
the train grid (Fig. 3's max lr), determinism."""

import copy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

import depthlab.config as dlc
from depthlab.core.stopping import StopRule
from depthlab.core.losses.mse import MSE
from depthlab.core.metrics import misclassification
from depthlab.core.mlp import init_params
from depthlab.core.optim.sgd import SGD
from depthlab.core.shapes import layer_sizes
from depthlab.core.trainer import TrainSettings, train
from depthlab.storage import content_hash
from depthlab.studies import get_study
from depthlab.studies.mori_ueda import data, lrsearch
from depthlab.studies.mori_ueda import train as train_stage
from depthlab.studies.mori_ueda.seeding import model_seeds
from depthlab.studies.mori_ueda.specs import DataJob, DepthJob
from depthlab.studies.mori_ueda.targets import target

ROOT = Path(__file__).resolve().parents[3]
CTX = SimpleNamespace(device="cpu", progress=lambda m: None, checkpoint=None)
STUDY = get_study("mori_ueda")


def config(**figures) -> dict:
    """The smoke config with the mori_ueda figures replaced by ``figures``, validated (defaults filled in)."""
    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    cfg["seed"] = 3
    cfg["studies"] = {"mori_ueda": cfg["studies"]["mori_ueda"]}
    mu = cfg["studies"]["mori_ueda"]
    mu["figures"] = copy.deepcopy(figures)
    mu["training"].update(batch_size=50, check_every=10, loss_threshold=1.0e-3, max_epochs=200)
    return dlc.validate(cfg)


def fig(task="regression", **target) -> dict:
    t = {"k": 2, "locality": "local", "d": 5, "n_train": 200, **target}
    return {"task": task, "budget": 2000.0, "n_test": 300, "depths": [2], "seeds": [0, 1], "targets": {"t": t}}


def test_noise_only_on_training_labels():
    cfg = config(fig1=fig(), fig2=fig(noise=0.5))
    clean = data.make_data(STUDY.spec(cfg, "data", DataJob("fig1", "t")), {})
    noisy = data.make_data(STUDY.spec(cfg, "data", DataJob("fig2", "t")), {})
    np.testing.assert_array_equal(clean.x_train, noisy.x_train)
    np.testing.assert_array_equal(clean.y_test, noisy.y_test)  # test labels stay noiseless
    np.testing.assert_array_equal(noisy.f_train, clean.y_train)
    resid = noisy.y_train.values - noisy.f_train.values
    assert 0.4 < resid.std() < 0.6
    np.testing.assert_allclose(noisy.y_test, target(noisy.x_test.values, 2, "local"))
    assert not np.array_equal(clean.x_train[:5], clean.x_test[:5]), "train and test inputs come from different streams"


def test_classification_labels_are_signs():
    cfg = config(fig5=fig(task="classification"))
    ds = data.make_data(STUDY.spec(cfg, "data", DataJob("fig5", "t")), {})
    np.testing.assert_array_equal(ds.y_train, np.where(ds.f_train >= 0, 1.0, -1.0))
    assert misclassification(np.array([[1.0, -1.0, 2.0]]), np.array([0.5, 0.5, -0.1]))[0] == pytest.approx(2 / 3)


def test_grid_max_converged_lr_matches_separate_runs():
    sweep = {**fig(k=1), "kind": "lr_sweep", "width": 32, "log10_lrs": [-5.0, -2.0, -1.0, 2.0], "max_epochs": 200}
    sweep.pop("budget")
    cfg = config(fig3=sweep)
    ds = data.make_data(STUDY.spec(cfg, "data", DataJob("fig3", "t")), {})
    spec = STUDY.spec(cfg, "train", DepthJob("fig3", "t", 2))
    assert spec.lrs == pytest.approx((1e-5, 0.01, 0.1, 100.0)) and spec.shape.width == 32
    out = train_stage.run_train(spec, {"data": ds}, CTX)
    conv = out.converged.values
    assert out.test_error.dims == ("lr", "seed") and out.attrs["lr_source"] == "grid"
    assert not conv[0].any(), "1e-5 cannot fit in 200 epochs"
    assert out.diverged.values[-1].all(), "lr = 100 must diverge"
    assert np.isnan(out.test_error.values[-1]).all()
    expected = max(lr for lr, c in zip(spec.lrs, conv) if c.all())
    assert out.max_converged_lr == expected and expected in (spec.lrs[1], spec.lrs[2])
    # independent check: train each (lr, seed) alone with a plain settings object and compare the converged flags
    plain = TrainSettings(
        loss=MSE(),
        optimizer=SGD(),
        batch_size=50,
        check_every=10,
        stop=StopRule(threshold=1e-3),
        max_epochs=200,
        device="cpu",
    )
    for i, lr in enumerate(spec.lrs):
        for j, sd in enumerate([0, 1]):
            init, order = model_seeds([sd], 2)
            r = train(
                ds.x_train.values,
                ds.y_train.values,
                np.arange(200)[None],
                np.array([lr]),
                init_params(layer_sizes(5, 32, 2), init),
                order,
                plain,
            )
            assert r.converged[0] == conv[i, j]


def test_same_spec_gives_identical_stores_on_cpu():
    cfg = config(fig2=fig())
    mu = cfg["studies"]["mori_ueda"]
    mu["training"].update(max_epochs=10, check_every=5, loss_threshold=1e-4)
    mu["lrsearch"].update(
        folds=2, log10_lr_bounds=[-2.0, -0.5], init_points=2, rounds=1, candidates_per_round=2, max_epochs=10
    )
    ls = STUDY.spec(cfg, "lrsearch", DepthJob("fig2", "t", 2))
    tr = STUDY.spec(cfg, "train", DepthJob("fig2", "t", 2))
    assert tr.lrs is None and set(tr.inputs()) == {"data", "lrsearch"}
    hashes = []
    for _ in range(2):
        ds = data.make_data(STUDY.spec(cfg, "data", DataJob("fig2", "t")), {})
        s = lrsearch.run_lrsearch(ls, {"data": ds}, CTX)
        t = train_stage.run_train(tr, {"data": ds, "lrsearch": s}, CTX)
        assert float(t.lr) == float(s.best_lr)
        hashes.append((content_hash(ds), content_hash(s), content_hash(t)))
    assert hashes[0] == hashes[1]


def test_a_cv_rate_at_which_a_seed_diverges_is_halved_until_none_does():
    """The final nets of a depth sweep at the CV rate: where a seed diverges, every seed trains again at half the rate,
    at most train_stage.HALVINGS times.  Checked against separate plain runs of each seed at each halved rate."""
    import xarray as xr

    cfg = config(fig2=fig())
    ds = data.make_data(STUDY.spec(cfg, "data", DataJob("fig2", "t")), {})
    tr = STUDY.spec(cfg, "train", DepthJob("fig2", "t", 2))
    plain = train_stage.sgd_settings(tr.training, "cpu")  # the study's own loss, stop rule and budget

    def diverges(lr: float) -> bool:  # any seed, each trained alone
        out = []
        for sd in tr.seeds:
            init, order = model_seeds([sd], 2)
            r = train(
                ds.x_train.values,
                ds.y_train.values,
                np.arange(200)[None],
                np.array([lr]),
                init_params(layer_sizes(5, tr.shape.width, 2), init),
                order,
                plain,
            )
            out.append(bool(r.diverged[0]))
        return any(out)

    def search_store(lr: float) -> xr.Dataset:
        return xr.Dataset({"best_lr": ((), lr), "lr_edge": ((), ""), "lr_flagged": ((), False)})

    rates = [0.05 * 2.0**i for i in range(9)]
    div = [diverges(r) for r in rates]
    assert not div[0] and div[-1], "the rate grid must span the edge of stability"
    edge = div.index(True)  # the smallest rate of the grid at which a seed diverges
    t = train_stage.run_train(tr, {"data": ds, "lrsearch": search_store(rates[edge])}, CTX)
    assert float(t.cv_lr) == rates[edge] and int(t.lr_halvings) == 1 and float(t.lr) == rates[edge - 1]
    assert not t.diverged.values.any() and np.isfinite(t.test_error.values).all()
    stable = train_stage.run_train(tr, {"data": ds, "lrsearch": search_store(rates[edge - 1])}, CTX)
    assert int(stable.lr_halvings) == 0 and float(stable.lr) == float(stable.cv_lr) == rates[edge - 1]
    np.testing.assert_array_equal(stable.test_error.values, t.test_error.values)  # the halved run is that rate's run
    far = train_stage.run_train(tr, {"data": ds, "lrsearch": search_store(1.0e4)}, CTX)  # diverges at every halving
    assert int(far.lr_halvings) == train_stage.HALVINGS and float(far.lr) == 1.0e4 / 2**train_stage.HALVINGS
    assert far.diverged.values.all()


def test_the_search_checks_finer_with_the_same_plateau_window_in_epochs_and_its_rungs_sit_at_the_finer_checks():
    """lrsearch.check_every: the CV nets check every 10 epochs in the default config, their plateau window
    stays patience x train.check_every epochs, and the halving's rungs move to 1/9 and 1/3 of the budget (rounded up
    to a check: 40 and 100 of 300, where training's check puts the first at 50); the final nets keep training's check."""
    from depthlab.core.lrsearch import rung_epochs
    from depthlab.studies.mori_ueda.specs import LrSearchSpec, TrainSpec

    cfg = dlc.load(ROOT / "config" / "config.yaml")
    tr, ls = cfg["studies"]["mori_ueda"]["training"], cfg["studies"]["mori_ueda"]["lrsearch"]
    job = LrSearchSpec.jobs(cfg)[0]
    s = LrSearchSpec.from_config(cfg, job)
    assert s.training.check_every == ls["check_every"] == 10 and tr["check_every"] == 50
    assert s.training.patience * s.training.check_every == tr["patience"] * tr["check_every"] == 200
    assert s.training.max_epochs == ls["max_epochs"] == 300
    assert rung_epochs(300, s.training.check_every, s.search.halving_eta, s.search.halving_rungs) == (40, 100)
    assert rung_epochs(300, tr["check_every"], 3, 2) == (50, 100)  # training's check: the first rung at 1/6, not 1/9
    assert rung_epochs(300, s.training.check_every, 3, 3) == (20, 40, 100)
    assert rung_epochs(300, tr["check_every"], 3, 3) == (50, 100)  # ... and the two lowest of 3 rungs merge at 50
    t = TrainSpec.from_config(cfg, job).training
    assert (t.check_every, t.patience) == (tr["check_every"], tr["patience"])
    # without the key, the search checks as training does
    del cfg["studies"]["mori_ueda"]["lrsearch"]["check_every"]
    s = LrSearchSpec.from_config(cfg, job)
    assert (s.training.check_every, s.training.patience) == (tr["check_every"], tr["patience"])
