"""Named random streams: ids from names (no table), distinct, deterministic, keyed."""

import hashlib

import numpy as np
import pytest

from depthlab.core.seeds import rng, seed, seeds, stream_id

USED = [
    "x_train",
    "x_test",
    "label_noise",
    "search",
    "init",
    "order",
    "folds",
    "sphere",
    "fractal",
    "radial",
    "perturb",
]


def test_stream_ids_are_the_names_hash():
    # independent of the module: the first 8 bytes of SHA-256(name), little-endian
    for name in USED:
        assert stream_id(name) == int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
    assert len({stream_id(n) for n in USED}) == len(USED)


def test_streams_are_distinct_deterministic_and_keyed():
    assert seed(0, "init", 3) == seed(0, "init", 3)
    values = {seed(0, s, 3) for s in USED}
    assert len(values) == len(USED), "two streams share a seed"
    assert seed(0, "init", 3) != seed(0, "init", 4) != seed(1, "init", 4)
    assert all(0 <= v < 2**62 for v in values)
    np.testing.assert_array_equal(seeds(5, "order", 4, 2), [seed(5, "order", 2, i) for i in range(4)])
    assert rng(0, "folds").permutation(10).tolist() == rng(0, "folds").permutation(10).tolist()
    # the seed is SeedSequence([master, id, *keys]): check one against numpy directly
    want = int(np.random.SeedSequence([7, stream_id("init"), 2]).generate_state(2, dtype=np.uint64)[0]) & (
        (1 << 62) - 1
    )
    assert seed(7, "init", 2) == want


def test_a_new_stream_needs_no_registration_and_bad_names_and_keys_are_refused():
    assert seed(0, "a_new_study_stream") != seed(0, "init")
    with pytest.raises(ValueError, match="lower-case letters"):
        seed(0, "Init")
    with pytest.raises(ValueError, match=">= 0"):
        seed(0, "init", -1)
