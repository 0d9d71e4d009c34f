"""Named random streams: every seed in depthlab is ``seed(master, stream, *keys)``.

One integer in the config (``seed``) reproduces every array.  Each use of randomness draws
from its own named stream, so adding a use never shifts another's numbers, and two uses can
never share a stream by accident: the stream's id is derived from its name (64 bits of the
name's SHA-256), and ``numpy.random.SeedSequence`` spawns statistically independent children
from distinct entropy tuples.

There is no table of stream names: a study names its streams in its own code (``"x_train"``,
``"fractal"``, ``"tiny_draws"``, ...), so adding a stream for a new study changes no existing
number and no shared module (nothing of the other studies reruns).  A stream's name is part of
the results: renaming one changes every array drawn from it.
"""

from __future__ import annotations

import functools
import hashlib
import re

import numpy as np

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_MASK = (1 << 62) - 1  # torch.Generator.manual_seed and numpy accept these without overflow


@functools.lru_cache(maxsize=None)
def stream_id(stream: str) -> int:
    """The 64-bit id of a named stream: the first 8 bytes of SHA-256(name), little-endian."""
    if not isinstance(stream, str) or not NAME.match(stream):
        raise ValueError(f"a random stream is named by lower-case letters, digits and _, got {stream!r}")
    return int.from_bytes(hashlib.sha256(stream.encode()).digest()[:8], "little")


def seed(master: int, stream: str, *keys: int) -> int:
    """A 62-bit seed for ``stream`` under the master seed, keyed by integers (depth, model index, ...).

    >>> seed(0, "init", 3) == seed(0, "init", 3) != seed(0, "order", 3)
    True
    """
    entropy = [int(master), stream_id(stream), *(int(k) for k in keys)]
    if any(e < 0 for e in entropy):
        raise ValueError(f"seeds and keys must be >= 0, got {entropy}")
    return int(np.random.SeedSequence(entropy).generate_state(2, dtype=np.uint64)[0]) & _MASK


def seeds(master: int, stream: str, n: int, *keys: int) -> np.ndarray:
    """``[seed(master, stream, *keys, i) for i in range(n)]`` as an int64 array [n]."""
    return np.array([seed(master, stream, *keys, i) for i in range(n)], dtype=np.int64)


def rng(master: int, stream: str, *keys: int) -> np.random.Generator:
    """A numpy Generator on ``stream``."""
    return np.random.default_rng(seed(master, stream, *keys))
