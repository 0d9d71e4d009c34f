"""Named random streams: every seed in depthlab is ``seed(master, stream, *keys)``.

One integer in the config (``seed``) reproduces every array.  Each use of
randomness draws from its own named stream, so adding a use never shifts
another's numbers, and two uses can never share a stream by accident
(``numpy.random.SeedSequence`` spawns statistically independent children
from distinct entropy tuples).

The stream numbers are part of the results: changing one changes every array
drawn from it.  They are listed here once, with what each one seeds.
"""

from __future__ import annotations

import numpy as np

STREAMS: dict[str, int] = {
    "x_train": 0,  # training inputs of a data set
    "x_test": 1,  # test inputs (independent of the training set)
    "label_noise": 2,  # xi of y + eps xi (Mori & Ueda Sec. 3.3.1)
    "search": 3,  # the lr search of one job: Bayesian-optimisation proposals
    "init": 4,  # initial weights of one model
    "order": 5,  # minibatch order of one model (per epoch: see trainer.epoch_order)
    "folds": 6,  # cross-validation / validation split of a training set
    "search_models": 7,  # init and order of the models trained inside an lr search
    "sphere": 8,  # points on the sphere (spectra: Funk-Hecke check, KRR data)
    "fractal": 9,  # fractal samples (fractals study)
    "radial": 10,  # radial inputs (separation study)
    "perturb": 11,  # noise added to a hand-built net (separation study)
}

_MASK = (1 << 62) - 1  # torch.Generator.manual_seed and numpy accept these without overflow


def seed(master: int, stream: str, *keys: int) -> int:
    """A 62-bit seed for ``stream`` under the master seed, keyed by integers (depth, model index, ...).

    >>> seed(0, "init", 3) == seed(0, "init", 3) != seed(0, "order", 3)
    True
    """
    if stream not in STREAMS:
        raise KeyError(f"unknown random stream {stream!r}; known: {', '.join(sorted(STREAMS))}")
    entropy = [int(master), STREAMS[stream], *(int(k) for k in keys)]
    if any(e < 0 for e in entropy):
        raise ValueError(f"seeds and keys must be >= 0, got {entropy}")
    return int(np.random.SeedSequence(entropy).generate_state(2, dtype=np.uint64)[0]) & _MASK


def seeds(master: int, stream: str, n: int, *keys: int) -> np.ndarray:
    """``[seed(master, stream, *keys, i) for i in range(n)]`` as an int64 array [n]."""
    return np.array([seed(master, stream, *keys, i) for i in range(n)], dtype=np.int64)


def rng(master: int, stream: str, *keys: int) -> np.random.Generator:
    """A numpy Generator on ``stream``."""
    return np.random.default_rng(seed(master, stream, *keys))
