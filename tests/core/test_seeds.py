"""Named random streams."""

import numpy as np
import pytest

from depthlab.core.seeds import STREAMS, rng, seed, seeds


def test_streams_are_distinct_deterministic_and_keyed():
    assert seed(0, "init", 3) == seed(0, "init", 3)
    values = {seed(0, s, 3) for s in STREAMS}
    assert len(values) == len(STREAMS), "two streams share a seed"
    assert seed(0, "init", 3) != seed(0, "init", 4) != seed(1, "init", 4)
    assert all(0 <= v < 2**62 for v in values)
    np.testing.assert_array_equal(seeds(5, "order", 4, 2), [seed(5, "order", 2, i) for i in range(4)])
    assert rng(0, "folds").permutation(10).tolist() == rng(0, "folds").permutation(10).tolist()


def test_unknown_stream_and_negative_keys_are_refused():
    with pytest.raises(KeyError, match="unknown random stream 'inti'"):
        seed(0, "inti")
    with pytest.raises(ValueError, match=">= 0"):
        seed(0, "init", -1)
