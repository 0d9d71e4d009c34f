"""Interrupted runs: a training or lr search killed mid-run resumes from its checkpoint to the same result."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import depthlab as dl

ROOT = Path(__file__).resolve().parents[1]
D, N, WIDTH, DEPTH = 6, 400, 64, 2
SETTINGS = dict(check_every=5, loss_threshold=1e-6, max_epochs=120, device="cpu")
LRS = [0.003, 0.01, 0.03]

SCRIPT = """
import sys, numpy as np
sys.path.insert(0, {workflow!r})
import depthlab as dl
dl.set_threads(1)
x = dl.sample_inputs({N}, {D}, 0); y = dl.target(x, 2, "local")
if {search}:
    dl.search_lr(x, y, {DEPTH}, {WIDTH}, dl.SearchSettings(folds=2, log10_lr_bounds=(-3.0, -1.0), init_points=2, rounds=2,
                 candidates_per_round=2), dl.TrainSettings(**{settings}), checkpoint={ckpt!r})
else:
    M = {M}
    dl.train(x, y, np.tile(np.arange({N}), (M, 1)), np.array({lrs}), {DEPTH}, {WIDTH}, np.arange(M), np.arange(M) + 7,
             dl.TrainSettings(**{settings}), checkpoint={ckpt!r})
"""


def problem():
    x = dl.sample_inputs(N, D, 0)
    return x, dl.target(x, 2, "local")


def start_and_kill(ckpt: Path, sig: int, search: bool, wait_for: str) -> None:
    """Run the training in a child process and kill it with ``sig`` once ``wait_for`` exists."""
    code = SCRIPT.format(workflow=str(ROOT / "workflow"), N=N, D=D, DEPTH=DEPTH, WIDTH=WIDTH, settings=SETTINGS,
                         ckpt=str(ckpt), M=len(LRS), lrs=LRS, search=search)
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
    args = (x, y, np.tile(np.arange(N), (M, 1)), np.array(LRS), DEPTH, WIDTH, np.arange(M), np.arange(M) + 7)
    ref = dl.train(*args, dl.TrainSettings(**SETTINGS))
    ckpt = tmp_path / "run.ckpt"
    start_and_kill(ckpt, sig, search=False, wait_for=str(ckpt))
    state = torch.load(ckpt, weights_only=True)  # loads without unpickling arbitrary objects
    assert 0 < int(state["epoch"]) < SETTINGS["max_epochs"]
    messages = []
    res = dl.train(*args, dl.TrainSettings(**SETTINGS), checkpoint=ckpt, progress=messages.append)
    assert any(m.startswith("resumed from checkpoint") for m in messages)
    for (Wa, ba), (Wb, bb) in zip(ref.params, res.params):
        torch.testing.assert_close(Wa, Wb, rtol=0, atol=0)
        torch.testing.assert_close(ba, bb, rtol=0, atol=0)
    np.testing.assert_array_equal(ref.history, res.history)
    np.testing.assert_array_equal(ref.epochs, res.epochs)
    np.testing.assert_array_equal(ref.converged, res.converged)


def test_stale_checkpoint_is_ignored(tmp_path):
    x, y = problem()
    ckpt = tmp_path / "run.ckpt"
    s = dl.TrainSettings(**{**SETTINGS, "max_epochs": 10})
    dl.train(x, y, np.arange(N)[None], np.array([0.01]), DEPTH, WIDTH, [0], [1], s, checkpoint=ckpt)
    messages = []
    other = dl.train(x, y, np.arange(N)[None], np.array([0.02]), DEPTH, WIDTH, [0], [1], s, checkpoint=ckpt, progress=messages.append)
    fresh = dl.train(x, y, np.arange(N)[None], np.array([0.02]), DEPTH, WIDTH, [0], [1], s)
    assert not any(m.startswith("resumed") for m in messages)
    np.testing.assert_array_equal(other.history, fresh.history)


def test_killed_lr_search_resumes_to_the_uninterrupted_result(tmp_path):
    x, y = problem()
    search = dl.SearchSettings(folds=2, log10_lr_bounds=(-3.0, -1.0), init_points=2, rounds=2, candidates_per_round=2)
    ref = dl.search_lr(x, y, DEPTH, WIDTH, search, dl.TrainSettings(**SETTINGS))
    ckpt = tmp_path / "search.ckpt"
    # die inside round 1, after round 0 was saved
    start_and_kill(ckpt, signal.SIGKILL, search=True, wait_for=f"{ckpt}.round1")
    assert ckpt.exists()
    res = dl.search_lr(x, y, DEPTH, WIDTH, search, dl.TrainSettings(**SETTINGS), checkpoint=ckpt)
    np.testing.assert_array_equal(ref.lr, res.lr)
    np.testing.assert_array_equal(ref.val_error, res.val_error)
    assert ref.best_lr == res.best_lr
