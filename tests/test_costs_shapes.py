"""The CPU throughput model of depthlab plan (depthlab.costs.shapes): a training stack's step priced by its shapes,
fitted to timed steps, and the stages priced by it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from depthlab.costs import calibrate, model, shapes
from depthlab.costs.model import StageCost, spec_seconds

TRUTH = shapes.CpuThroughput(1.5e-11, 4.0e-9, 7.0e-9, 1.5e-10, 2.5e-9, 1.1e-4, 5e-12, 2e-9, learner=0.6, probe_s=0.05)
GRID = [  # (d, n, P-sizes, L, h, M, B, adam): the spread of the papers' shapes, in and out of the cache
    (30, 4096, [30, 20000, 1], 20, 50, False),
    (30, 4096, [30, 30000, 1], 2, 100, False),  # its activations outgrow the cache
    (100, 4096, [100, 300, 1], 50, 50, False),
    (100, 4096, [100, 5000, 1], 24, 50, False),
    (100, 4096, [100, 300, 300, 300, 300, 300, 1], 30, 50, False),
    (1000, 4096, [1000, 10000, 1], 2, 50, False),
    (40, 4096, [40, 3000, 3000, 3000, 1], 2, 50, False),
    (2, 4096, [2, 10, 1], 9, 100, True),
    (2, 4096, [2, 400, 400, 400, 400, 400, 1], 3, 100, True),
    (128, 4096, [128, 512, 512, 512, 1], 12, 100, True),
    (100, 4096, [100, 4999, 1], 10, 50, False),  # widths not a multiple of 8 floats (so is h = 10 above)
    (30, 4096, [30, 3333, 1], 10, 50, False),
]


def shape(d, n, sizes, M, B, adam, kind="mlp"):
    P = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    return shapes.StepShape(d, n, float(P), len(sizes) - 2, float(max(sizes[1:-1])), M, B, adam, kind)


def points(truth=TRUTH):
    out = [shape(*g) for g in GRID] + [
        shapes.StepShape(64, 8000, 64 * 1024 + 128.0, 2, 1024.0, 3, 8000, False, "learner")
    ]
    return [{**vars(s), "step_s": truth.step_s(s), "label": str(i)} for i, s in enumerate(out)]


def test_the_fit_recovers_the_constants_of_steps_a_known_model_made():
    """An independent check of the fit: steps a known model timed give back its eight constants and the learner's
    factor, and fewer points than constants are refused."""
    got = shapes.fit(points(), probe_s=0.05)
    for k in (*shapes.TERMS, "learner"):
        assert getattr(got, k) == pytest.approx(getattr(TRUTH, k), rel=1e-6), k
    assert all(r == pytest.approx(1.0) for *_, r in shapes.check(got, points()))
    with pytest.raises(ValueError, match="at least 8"):
        shapes.fit(points()[:5])


def test_check_finds_a_step_the_model_misses():
    pts = points()
    pts[2] = {**pts[2], "step_s": pts[2]["step_s"] * 3}
    rows = shapes.check(TRUTH, pts)
    assert rows[2][3] == pytest.approx(1 / 3) and not 1 / shapes.GOAL <= rows[2][3] <= shapes.GOAL


def test_the_counts_are_the_step_arithmetic_counted_another_way():
    """6 B P multiply-adds: twice the forward's 2 B P (the backward's two products) counted layer by layer from the
    weights' shapes; the activations are B x (hidden units + 1)."""
    sizes = [100, 300, 300, 300, 1]
    s = shape(100, 4096, sizes, 7, 50, False)
    fwd = sum(2 * 50 * (a * b + b) for a, b in zip(sizes[:-1], sizes[1:]))  # 2 flops per multiply-add, with biases
    r = s.regressors()
    assert r[0] == pytest.approx(7 * 3 * fwd)
    assert r[1] == 7 * 50 * (300 * 3 + 1)
    assert r[5] == s.L + 1  # one group: its weights fit the cache
    assert s.steps_per_epoch == math.ceil(4096 / 50)


def test_an_unaligned_width_is_charged_its_arithmetic_and_activations_again():
    """A hidden width that is not a multiple of 8 floats: the last two counts repeat the multiply-adds and the
    activations; an aligned width, or the learner's step, has none there."""
    odd, even = shape(100, 4096, [100, 4999, 1], 10, 50, False), shape(100, 4096, [100, 5000, 1], 10, 50, False)
    r, q = odd.regressors(), even.regressors()
    assert r[6] == r[0] and r[7] == r[1] and q[6] == q[7] == 0
    learner = shapes.StepShape(64, 8000, 64 * 999 + 128.0, 2, 999.0, 3, 8000, False, "learner")
    assert learner.regressors()[6:].tolist() == [0.0, 0.0]
    assert TRUTH.step_s(odd) / TRUTH.step_s(even) > 1.2  # the side-by-side timings: 1.3-1.45x


def test_the_groups_are_the_trainers():
    """StepShape.group copies core.trainer.models_per_step's rule (Snakemake's process must not import torch): the
    constants agree and so do the groups on real stacks, SGD and Adam, in the cache and out of it."""
    from depthlab.core import trainer
    from depthlab.core.mlp import init_params
    from depthlab.core.optim.adam import Adam
    from depthlab.core.optim.sgd import SGD

    assert shapes.ALL_AT_ONCE_BYTES == trainer.ALL_AT_ONCE_BYTES
    assert shapes.STEP_CHUNK_BYTES == trainer.STEP_CHUNK_BYTES
    for sizes, M, opt in (([100, 300, 1], 50, "sgd"), ([100, 5000, 1], 24, "sgd"), ([2, 400, 400, 1], 9, "adam")):
        params = [(W, b) for W, b in init_params(sizes, np.arange(M), "glorot_uniform")]
        state = (Adam() if opt == "adam" else SGD()).init_state(params)
        assert shape(sizes[0], 4096, sizes, M, 50, opt == "adam").group() == trainer.models_per_step(params, state)


def test_load_scales_to_another_probe_and_refuses_a_damaged_file(tmp_path):
    f = tmp_path / "cpu_points.json"
    f.write_text(json.dumps({"probe_s": 0.05, "cache_bytes": 32 << 20, "points": points()}))
    same, slow = shapes.load(f), shapes.load(f, to_probe=0.1)
    s = shape(*GRID[2])
    assert slow.step_s(s) == pytest.approx(2 * same.step_s(s))
    assert shapes.load(tmp_path / "none.json") is None
    for bad, key in (
        ({"probe_s": -1, "points": points()}, "probe_s"),
        ({"cache_bytes": 12, "points": points()}, "cache_bytes"),
        ({"points": [{**points()[0], "P": -5.0}]}, r"points\[0\]\.P"),
        ({"points": [{**points()[0], "kind": "gpu"}]}, "kind"),
        ({"points": {}}, "points"),
    ):
        f.write_text(json.dumps(bad))
        with pytest.raises(shapes.ShapesError, match=key):
            shapes.load(f)


def test_a_damaged_shipped_points_file_is_a_costs_error(tmp_path, monkeypatch):
    """Reported in one line wherever a damaged cost file is (the rules, the CLI, plan), before any job."""
    bad = tmp_path / "cpu_points.json"
    bad.write_text(json.dumps({"points": [{**points()[0], "step_s": 0}]}))
    monkeypatch.setattr(shapes, "POINTS", bad)
    model.shipped_cpu_model.cache_clear()
    model.shipped_costs.cache_clear()
    try:
        with pytest.raises(model.CostsError, match=r"points\[0\]\.step_s"):
            model.shipped_costs()
    finally:
        model.shipped_cpu_model.cache_clear()
        model.shipped_costs.cache_clear()


class _Spec:
    STUDY, STAGE = "mori_ueda", "train"  # a stage that declares a training step and counts its calls

    def __init__(self, M=10, epochs=100.0):
        self.M, self.epochs = M, epochs

    def gpu_shape(self):
        return {"d": 100, "n": 4096, "P": 30401.0, "L": 1, "h": 300.0, "M": self.M, "B": 50, "adam": False}, self.epochs

    def work(self):
        return 6.0 * 30401 * 4096 * self.epochs

    def calls(self):
        return 0.0


def test_a_stage_with_a_shape_factor_is_priced_by_shape_and_one_without_by_its_line():
    spec = _Spec()
    epoch = TRUTH.model_epoch_s(shapes.StepShape.of(spec.gpu_shape()[0]))
    line = StageCost(2.0, 1e10, 5, fraction=0.5)
    shaped = StageCost(2.0, 1e10, 5, fraction=0.5, shape_factor=1.6)
    assert spec_seconds(shaped, spec, cpu=TRUTH) == pytest.approx(2.0 + 0.5 * 1.6 * 100 * epoch)
    assert spec_seconds(line, spec, cpu=TRUTH) == pytest.approx(2.0 + 0.5 * spec.work() / 1e10)
    assert spec_seconds(shaped, spec, cpu=None) == pytest.approx(2.0 + 0.5 * spec.work() / 1e10)  # no model: the line


def test_the_calibration_fits_a_shape_factor_that_keeps_the_stage_total():
    """Jobs whose seconds are a start-up plus 0.3 of their shape seconds (at a trained share of 0.5): the fitted factor
    prices the stage's total as measured, and a stage whose jobs have no shape keeps its line alone."""
    rng = np.random.default_rng(0)
    pts = []
    for _ in range(40):
        spec = _Spec(M=int(rng.integers(2, 60)), epochs=float(rng.integers(10, 500)))
        sh = model.shape_seconds(spec, TRUTH)
        pts.append((spec.work(), 2.0 + 0.5 * 0.3 * sh, 0.5, 0.0, sh))
    c = calibrate.fit(pts)
    assert c.fraction == pytest.approx(0.5)
    assert sum(model.point_seconds(c, p) for p in pts) == pytest.approx(sum(p[1] for p in pts), rel=1e-9)
    assert c.shape_factor == pytest.approx(0.3, rel=0.05)
    assert calibrate.fit([p[:4] for p in pts]).shape_factor is None


def test_a_measure_file_row_with_shape_seconds_round_trips_and_a_bad_one_is_refused(tmp_path):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"devices": ["cpu"], "stages": {"a/train": [[1e9, 5.0, 0.5, 10.0, 3.0], [1e9, 5.0]]}}))
    rows = calibrate.read_measurements(f, set())["a/train"]
    assert rows == [(1e9, 5.0, 0.5, 10.0, 3.0), (1e9, 5.0, None, 0.0, None)]
    f.write_text(json.dumps({"devices": ["cpu"], "stages": {"a/train": [[1e9, 5.0, 0.5, 10.0, -3.0]]}}))
    with pytest.raises(SystemExit, match="shape seconds"):
        calibrate.read_measurements(f, set())


def test_the_learner_shape_is_one_group_and_uses_its_factor():
    s = shapes.StepShape(128, 8192, 128 * 2048 + 128.0, 2, 2048.0, 9, 8192, False, "learner")
    assert s.group() == 9
    coef = np.array([getattr(TRUTH, k) for k in shapes.TERMS])
    assert TRUTH.step_s(s) == pytest.approx(0.6 * float(coef @ s.regressors()))
