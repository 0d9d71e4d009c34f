"""Interrupted runs: a training or lr search killed mid-run resumes from its checkpoint to the same result."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from depthlab.core.stopping import StopRule
from depthlab.checkpoint import FileCheckpoint
from depthlab.core.losses.mse import MSE
from depthlab.core.lrsearch import SearchSettings, search_lr
from depthlab.core.mlp import init_params
from depthlab.core.optim.sgd import SGD
from depthlab.core.shapes import layer_sizes
from depthlab.core.trainer import TrainSettings, train
from depthlab.studies.mori_ueda.targets import sample_inputs, target

ROOT = Path(__file__).resolve().parents[2]
D, N, WIDTH, DEPTH = 6, 400, 64, 2
SETTINGS = dict(
    check_every=5, stop=StopRule(threshold=1e-6, patience=4, rel_tol=0.05), max_epochs=120, device="cpu"
)  # the plateau rule's state resumes too
LRS = [0.003, 0.01, 0.03]

SCRIPT = """
import sys, numpy as np
sys.path.insert(0, {workflow!r})
from depthlab.checkpoint import FileCheckpoint
from depthlab.core.device import set_threads
from depthlab.core.losses.mse import MSE
from depthlab.core.lrsearch import SearchSettings, search_lr
from depthlab.core.mlp import init_params
from depthlab.core.optim.sgd import SGD
from depthlab.core.shapes import layer_sizes
from depthlab.core.stopping import StopRule
from depthlab.core.trainer import TrainSettings, train
from depthlab.studies.mori_ueda.targets import sample_inputs, target
set_threads(1)
x = sample_inputs({N}, {D}, 0); y = target(x, 2, "local")
sizes = layer_sizes({D}, {WIDTH}, {DEPTH})
if {search}:
    search_lr(x, y, sizes, "glorot_uniform", SearchSettings(folds=2, log10_lr_bounds=(-3.0, -1.0), init_points=2, rounds=2, grow_rounds=2, log10_lr_limits=(-3.0, 0.0),
              candidates_per_round=2), TrainSettings(loss=MSE(), optimizer=SGD(), **{settings}), checkpoint=FileCheckpoint({ckpt!r}, code={code!r}))
else:
    M = {M}
    train(x, y, np.tile(np.arange({N}), (M, 1)), np.array({lrs}), init_params(sizes, np.arange(M)), np.arange(M) + 7,
          TrainSettings(loss=MSE(), optimizer=SGD(), **{settings}), checkpoint=FileCheckpoint({ckpt!r}, code={code!r}))
"""


def problem():
    x = sample_inputs(N, D, 0)
    return x, target(x, 2, "local")


SIZES = layer_sizes(D, WIDTH, DEPTH)


def start_and_kill(ckpt: Path, sig: int, search: bool, wait_for: str, code_fingerprint: str = "") -> None:
    """Run the training in a child process and kill it with ``sig`` once ``wait_for`` exists."""
    code = SCRIPT.format(
        workflow=str(ROOT / "workflow"),
        N=N,
        D=D,
        DEPTH=DEPTH,
        WIDTH=WIDTH,
        settings=SETTINGS,
        ckpt=str(ckpt),
        M=len(LRS),
        lrs=LRS,
        search=search,
        code=code_fingerprint,
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    target = Path(wait_for)
    while not target.exists():
        if p.poll() is not None:
            raise AssertionError(f"child ended before it could be killed: {p.stderr.read().decode()[-2000:]}")
        if time.time() > deadline:
            p.kill()
            raise AssertionError("no checkpoint appeared within 120 s")
        time.sleep(0.02)
    p.send_signal(sig)
    p.wait(timeout=60)
    assert p.returncode != 0, "the child was meant to die mid-run"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_training_resumes_to_the_uninterrupted_result(tmp_path, sig):
    x, y = problem()
    M = len(LRS)
    args = (x, y, np.tile(np.arange(N), (M, 1)), np.array(LRS), init_params(SIZES, np.arange(M)), np.arange(M) + 7)
    ref = train(*args, TrainSettings(loss=MSE(), optimizer=SGD(), **SETTINGS))
    ckpt = tmp_path / "run.ckpt"
    start_and_kill(ckpt, sig, search=False, wait_for=str(ckpt))
    state = torch.load(ckpt, weights_only=True)  # loads without unpickling arbitrary objects
    assert 0 < int(state["epoch"]) < SETTINGS["max_epochs"]
    messages = []
    res = train(
        *args,
        TrainSettings(loss=MSE(), optimizer=SGD(), **SETTINGS),
        checkpoint=FileCheckpoint(ckpt),
        progress=messages.append,
    )
    assert any(m.startswith("resumed from checkpoint") for m in messages)
    for (Wa, ba), (Wb, bb) in zip(ref.params, res.params):
        torch.testing.assert_close(Wa, Wb, rtol=0, atol=0)
        torch.testing.assert_close(ba, bb, rtol=0, atol=0)
    np.testing.assert_array_equal(ref.history, res.history)
    np.testing.assert_array_equal(ref.epochs, res.epochs)
    np.testing.assert_array_equal(ref.converged, res.converged)


class EditedSGD(SGD):
    """The optimiser after a one-line edit (the step now also shrinks every weight by 1e-3): other code."""

    def step(self, params, state, x, y, lr, loss):
        out = super().step(params, state, x, y, lr, loss)
        with torch.no_grad():
            for W, _ in params:
                W.mul_(1 - 1e-3)
        return out


def test_a_checkpoint_from_other_code_is_ignored_and_the_run_starts_afresh(tmp_path, caplog):
    """Kill under the old code, edit the optimiser, resume: a fresh start equal to an uninterrupted run of the new code."""
    x, y = problem()
    M = len(LRS)
    args = (x, y, np.tile(np.arange(N), (M, 1)), np.array(LRS), init_params(SIZES, np.arange(M)), np.arange(M) + 7)
    ckpt = tmp_path / "run.ckpt"
    start_and_kill(ckpt, signal.SIGKILL, search=False, wait_for=str(ckpt), code_fingerprint="old-code-fp")
    assert 0 < int(torch.load(ckpt, weights_only=True)["epoch"]) < SETTINGS["max_epochs"]
    messages = []
    with caplog.at_level("WARNING", logger="depthlab"):
        res = train(
            *args,
            TrainSettings(loss=MSE(), optimizer=EditedSGD(), **SETTINGS),
            checkpoint=FileCheckpoint(ckpt, code="new-code-fp"),
            progress=messages.append,
        )
    assert not any(m.startswith("resumed") for m in messages)
    line = " ".join(r.getMessage() for r in caplog.records)
    assert "old-code-fp" in line and "new-code-fp" in line, line
    new = train(*args, TrainSettings(loss=MSE(), optimizer=EditedSGD(), **SETTINGS))
    old = train(*args, TrainSettings(loss=MSE(), optimizer=SGD(), **SETTINGS))
    np.testing.assert_array_equal(res.history, new.history)
    for (Wa, _), (Wb, _) in zip(new.params, res.params):
        torch.testing.assert_close(Wa, Wb, rtol=0, atol=0)
    assert not np.array_equal(new.history, old.history)  # the edit matters, so the test can tell the two apart


def test_run_store_tags_its_checkpoint_with_the_stage_code_fingerprint(tmp_path, monkeypatch):
    """The CLI hands each stage a checkpoint carrying that stage's code fingerprint (the one its store records)."""
    from depthlab import config as cfg
    from depthlab import runner
    from depthlab import provenance as prov
    from depthlab.studies import get_study

    seen = {}
    config = cfg.load(ROOT / "config" / "smoke.yaml")
    study = get_study("separation")
    stage = study.stage("radial_data")
    spec = study.spec(config, stage.name, study.jobs(config, stage.name)[0])
    monkeypatch.setattr(runner.storage, "write_store", lambda ds, out, rec: seen.update(record=rec))

    def fn(spec, inputs, ctx):
        seen["code"] = ctx.checkpoint.code
        return None

    runner.run_store(study, spec, fn, {}, tmp_path / "x.zarr", str(tmp_path), "cpu", 1)
    assert seen["code"] == prov.code_fingerprint(stage.fingerprint_modules) == seen["record"]["code_fingerprint"]


def test_stale_checkpoint_is_ignored(tmp_path):
    x, y = problem()
    ckpt = tmp_path / "run.ckpt"
    s = TrainSettings(loss=MSE(), optimizer=SGD(), **{**SETTINGS, "max_epochs": 10})
    init = init_params(SIZES, np.array([0]))
    train(x, y, np.arange(N)[None], np.array([0.01]), init, np.array([1]), s, checkpoint=FileCheckpoint(ckpt))
    assert ckpt.exists()
    messages = []
    other = train(
        x,
        y,
        np.arange(N)[None],
        np.array([0.02]),
        init,
        np.array([1]),
        s,
        checkpoint=FileCheckpoint(ckpt),
        progress=messages.append,
    )
    fresh = train(x, y, np.arange(N)[None], np.array([0.02]), init, np.array([1]), s)
    assert not any(m.startswith("resumed") for m in messages)
    np.testing.assert_array_equal(other.history, fresh.history)


def test_killed_lr_search_resumes_to_the_uninterrupted_result(tmp_path):
    x, y = problem()
    search = SearchSettings(
        folds=2,
        log10_lr_bounds=(-3.0, -1.0),
        init_points=2,
        rounds=2,
        candidates_per_round=2,
        grow_rounds=2,
        log10_lr_limits=(-3.0, 0.0),
    )
    ref = search_lr(x, y, SIZES, "glorot_uniform", search, TrainSettings(loss=MSE(), optimizer=SGD(), **SETTINGS))
    ckpt = tmp_path / "search.ckpt"
    # die inside round 1, after round 0 was saved
    start_and_kill(ckpt, signal.SIGKILL, search=True, wait_for=f"{ckpt}.round1")
    assert ckpt.exists()
    res = search_lr(
        x,
        y,
        SIZES,
        "glorot_uniform",
        search,
        TrainSettings(loss=MSE(), optimizer=SGD(), **SETTINGS),
        checkpoint=FileCheckpoint(ckpt),
    )
    np.testing.assert_array_equal(ref.lr, res.lr)
    np.testing.assert_array_equal(ref.val_error, res.val_error)
    assert ref.best_lr == res.best_lr


@pytest.mark.parametrize("payload", ["garbage", "no fingerprint", "not tensors"])
def test_malformed_checkpoint_is_ignored_and_the_run_completes(tmp_path, payload):
    x, y = problem()
    ckpt = tmp_path / "run.ckpt"
    if payload == "garbage":
        ckpt.write_bytes(b"not a torch file")
    elif payload == "no fingerprint":
        torch.save({"epoch": torch.tensor(3)}, ckpt)  # loadable, but made by nothing we know
    else:
        torch.save({"fingerprint": torch.zeros(3, dtype=torch.uint8), "epoch": [1, 2]}, ckpt)
    s = TrainSettings(loss=MSE(), optimizer=SGD(), **{**SETTINGS, "max_epochs": 10})
    init = init_params(SIZES, np.array([0]))
    messages = []
    res = train(
        x,
        y,
        np.arange(N)[None],
        np.array([0.01]),
        init,
        np.array([1]),
        s,
        checkpoint=FileCheckpoint(ckpt),
        progress=messages.append,
    )
    fresh = train(x, y, np.arange(N)[None], np.array([0.01]), init, np.array([1]), s)
    assert not any(m.startswith("resumed") for m in messages)
    np.testing.assert_array_equal(res.history, fresh.history)


def test_clear_removes_exactly_the_names_a_checkpoint_writes(tmp_path):
    """The clean-up removed every ``<store>.ckpt*``, a user's file included."""
    from depthlab.checkpoint import FileCheckpoint

    ck = FileCheckpoint(tmp_path / "L1.zarr.ckpt")
    ours = [
        "L1.zarr.ckpt",
        "L1.zarr.ckpt.round0",
        "L1.zarr.ckpt.round12",
        "L1.zarr.ckpt.final",
        "L1.zarr.ckpt.grow1",
        "L1.zarr.ckpt.tmp-123",
        "L1.zarr.ckpt.round3.tmp-77",
        "L1.zarr.ckpt.final.round2",
    ]
    theirs = [
        "L1.zarr.ckpt.notes",
        "L1.zarr.ckpt-old",
        "L1.zarr.ckpt.bak",
        "L1.zarr.ckpt.round",
        "L1.zarr.ckpts",
        "L2.zarr.ckpt",
    ]
    for n in ours + theirs:
        (tmp_path / n).write_text("x")
    ck.clear()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(theirs)
    with pytest.raises(ValueError, match="checkpoint child"):
        ck.child("notes")
    assert ck.child("round4").child("grow1").path.name == "L1.zarr.ckpt.round4.grow1"


def test_a_held_job_waits_after_its_checkpoint_until_released(tmp_path, monkeypatch):
    """With $DEPTHLAB_TEST_HOLD, saving a checkpoint blocks until <folder>/release exists (the SLURM
    chaos test's faults then land on running jobs whatever the machine's speed); unset, it never waits."""
    import threading
    import time

    import torch

    from depthlab.checkpoint import HOLD, FileCheckpoint

    ck = FileCheckpoint(tmp_path / "s.zarr.ckpt", code="c")
    monkeypatch.delenv(HOLD, raising=False)
    ck.save("fp", {"w": torch.ones(2)})  # returns at once
    hold = tmp_path / "hold"
    hold.mkdir()
    monkeypatch.setenv(HOLD, str(hold))
    t = threading.Thread(target=ck.save, args=("fp", {"w": torch.zeros(2)}))
    t.start()
    time.sleep(1.5)
    assert t.is_alive() and list(hold.glob("held-*")), "the save did not hold"
    assert torch.equal(ck.load("fp")["w"], torch.zeros(2))  # held after the checkpoint was written
    (hold / "release").touch()
    t.join(5)
    assert not t.is_alive()


def _flip_payload(path: Path, tensor: torch.Tensor) -> None:
    """Flip 8 bytes inside the stored bytes of ``tensor`` (torch's zip format stores them uncompressed)."""
    raw = bytearray(path.read_bytes())
    payload = tensor.contiguous().numpy().tobytes()
    at = raw.find(payload[64:128])
    assert at > 0, "the tensor's bytes were not found in the file"
    raw[at : at + 8] = bytes(b ^ 0xFF for b in raw[at : at + 8])
    path.write_bytes(bytes(raw))


def test_a_damaged_checkpoint_is_discarded_with_a_warning(tmp_path, caplog):
    """A checkpoint whose bytes changed on disk still loads with torch (other numbers); its content hash catches it."""
    ck = FileCheckpoint(tmp_path / "s.zarr.ckpt", code="c")
    w = torch.arange(4096, dtype=torch.float32)
    ck.save("fp", {"w": w, "epoch": torch.tensor(10)})
    assert torch.equal(ck.load("fp")["w"], w)
    _flip_payload(ck.path, w)
    state = torch.load(ck.path, weights_only=True)  # torch itself notices nothing
    assert not torch.equal(state["w"], w)
    with caplog.at_level("WARNING", logger="depthlab"):
        assert ck.load("fp") is None
    assert "damaged" in caplog.text


def test_training_resumed_from_a_damaged_checkpoint_starts_over_and_equals_a_fresh_run(tmp_path):
    x, y = problem()
    ckpt = tmp_path / "run.ckpt"
    s = TrainSettings(loss=MSE(), optimizer=SGD(), **{**SETTINGS, "max_epochs": 10})
    init = init_params(SIZES, np.array([0]))
    args = (x, y, np.arange(N)[None], np.array([0.01]), init, np.array([1]), s)
    train(*args, checkpoint=FileCheckpoint(ckpt))
    saved = torch.load(ckpt, weights_only=True)
    _flip_payload(ckpt, saved["W0"])
    messages = []
    res = train(*args, checkpoint=FileCheckpoint(ckpt), progress=messages.append)
    assert not any(m.startswith("resumed") for m in messages)
    fresh = train(*args)
    np.testing.assert_array_equal(res.history, fresh.history)
