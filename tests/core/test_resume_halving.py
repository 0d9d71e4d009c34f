"""A rate search stopped after any checkpoint it writes, in any form of successive halving, resumes to the bits of an
uninterrupted one: the candidates cut at the rungs already passed stay cut (they are in the restored stop reasons)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from depthlab.checkpoint import FileCheckpoint
from depthlab.core.losses.mse import MSE
from depthlab.core.lrsearch import SearchSettings, search_lr
from depthlab.core.optim.sgd import SGD
from depthlab.core.shapes import layer_sizes
from depthlab.core.stopping import StopRule
from depthlab.core.trainer import TrainSettings
from depthlab.studies.mori_ueda.targets import sample_inputs, target

D, N = 5, 150
SIZES = layer_sizes(D, 24, 2)
SETTINGS = TrainSettings(
    loss=MSE(), optimizer=SGD(), max_epochs=40, check_every=10, stop=StopRule(threshold=1e-5), device="cpu"
)
BASE = SearchSettings(
    folds=3,
    log10_lr_bounds=(-3.0, 0.5),
    init_points=6,
    rounds=1,
    candidates_per_round=2,
    seed=0,
    grow_rounds=0,
    halving_eta=3,
    halving_rungs=2,
)
FORMS = {
    "every fold, 2 rungs": {},  # the paper config's form
    "every fold, 3 rungs": {"halving_rungs": 3},
    "one-fold screen, 2 rungs": {"first_rung_folds": 1},
    "one-fold screen, 3 rungs": {"first_rung_folds": 1, "halving_rungs": 3},
    "a round in parts": {"max_candidates": 3},
}


class Killed(Exception):
    """Stands for SIGKILL right after a checkpoint reached the disk."""


class KillAfter(FileCheckpoint):
    """A FileCheckpoint (children included) that dies after its n-th save, once that save is on disk."""

    def __init__(self, path, n: int, count: list | None = None):
        super().__init__(path)
        self.n, self.count = n, count if count is not None else [0]

    def child(self, name: str) -> "KillAfter":
        return KillAfter(super().child(name).path, self.n, self.count)

    def save(self, fingerprint, tensors):
        super().save(fingerprint, tensors)
        self.count[0] += 1
        if self.count[0] == self.n:
            raise Killed(self.path.name)


@pytest.fixture(scope="module")
def problem():
    x = sample_inputs(N, D, 0)
    return x, target(x, 2, "local")


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.lr, b.lr)
    np.testing.assert_array_equal(a.val_error, b.val_error)
    np.testing.assert_array_equal(a.epochs, b.epochs)
    np.testing.assert_array_equal(a.pruned, b.pruned)
    assert a.best_lr == b.best_lr


# the paper config's form (the one that resumed to another store) in the fast suite; the others in the slow set
@pytest.mark.parametrize(
    "form", [f if f == "every fold, 2 rungs" else pytest.param(f, marks=pytest.mark.slow) for f in FORMS]
)
def test_a_search_stopped_after_each_checkpoint_resumes_to_the_uninterrupted_bits(problem, tmp_path, form):
    search = dataclasses.replace(BASE, **FORMS[form])
    said: list[str] = []
    ref = search_lr(*problem, SIZES, "glorot_uniform", search, SETTINGS, progress=said.append)
    halving = [m for m in said if m.startswith("successive halving")]
    # count the saves an uninterrupted run makes, then stop it after each one in turn
    counter = KillAfter(tmp_path / "count" / "s.ckpt", 10**9)
    (tmp_path / "count").mkdir()
    search_lr(*problem, SIZES, "glorot_uniform", search, SETTINGS, checkpoint=counter)
    saves = counter.count[0]
    assert saves >= 3, saves
    for n in range(1, saves + 1):
        folder = tmp_path / f"kill{n}"
        folder.mkdir()
        with pytest.raises(Killed):
            search_lr(*problem, SIZES, "glorot_uniform", search, SETTINGS, checkpoint=KillAfter(folder / "s.ckpt", n))
        again: list[str] = []
        res = search_lr(
            *problem,
            SIZES,
            "glorot_uniform",
            search,
            SETTINGS,
            progress=again.append,
            checkpoint=FileCheckpoint(folder / "s.ckpt"),
        )
        assert any("resumed from checkpoint" in m or "restored from checkpoint" in m for m in again), n
        _same(ref, res)
        # what the rungs of the resumed round kept is said as the uninterrupted run said it (restored rounds say nothing)
        said_again = [m for m in again if m.startswith("successive halving")]
        assert said_again == halving[len(halving) - len(said_again) :], (n, halving, said_again)


def test_the_race_is_rebuilt_from_the_stop_reasons():
    """Halving.resume against the race a run keeps: 6 candidates x 2 folds, cut 4 at epoch 10, one more at 20."""
    from depthlab.core.lrsearch import Halving
    from depthlab.core.stopping import PRUNED, RUNNING, TARGET

    h = Halving((10, 20, 30), 3, np.zeros((4, 1)), np.zeros(4), np.zeros((2, 1), dtype=int), 6, MSE(), 10.0)
    reason = np.full(12, RUNNING)
    stopped = np.full(12, -1)
    for c in (1, 2, 4, 5):  # cut at 10 (both folds)
        reason[2 * c : 2 * c + 2], stopped[2 * c : 2 * c + 2] = PRUNED, 10
    reason[6], stopped[6] = PRUNED, 20  # candidate 3's fold 0 cut at 20; its fold 1 had converged at 15
    reason[7], stopped[7] = TARGET, 15
    h.resume(reason, stopped, 20)
    np.testing.assert_array_equal(h.out, [False, True, True, True, True, True])
    assert h.log == [(10, 6, 2), (20, 2, 1)]
    reason[6:8], stopped[6:8] = RUNNING, -1  # the state at epoch 10: the second rung is yet to come
    h.resume(reason, stopped, 10)
    np.testing.assert_array_equal(h.out, [False, True, True, False, True, True])
    assert h.log == [(10, 6, 2)]
