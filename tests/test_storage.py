"""Stores: content hashes survive the zarr round trip, writes are atomic, provenance is recorded."""

import numpy as np
import pytest
import xarray as xr

import depthlab.storage as st


def sample() -> xr.Dataset:
    return xr.Dataset(
        {"test_error": (("seed",), np.array([0.1, 0.2])), "diverged": (("seed",), np.array([False, True])),
         "best_lr": ((), 0.05)},
        coords={"seed": [0, 1], "depth": 3},
    )


def test_round_trip_keeps_content_hash_and_attrs(tmp_path):
    spec = {"stage": "train", "depth": 3}
    p = st.write_store(sample(), tmp_path / "a.zarr", spec, {}, "cpu:1threads")
    back = st.read_store(p)
    assert st.content_hash(back) == back.attrs["content_hash"] == st.content_hash(sample())
    a = st.read_attrs(p)
    assert a["depthlab_spec"] == spec and a["device"] == "cpu:1threads"
    assert set(a["packages"]) >= {"torch", "numpy", "xarray", "zarr"}
    assert a["code_version"]


def test_content_hash_sees_a_changed_value():
    ds = sample()
    other = ds.copy(deep=True)
    other["test_error"][0] = 0.1000001
    assert st.content_hash(ds) != st.content_hash(other)


def test_inputs_are_recorded_with_their_hashes(tmp_path):
    a = st.write_store(sample(), tmp_path / "a.zarr", {"stage": "data"}, {}, "cpu")
    b = st.write_store(sample() * 2, tmp_path / "b.zarr", {"stage": "train"}, {"data": a}, "cpu")
    rec = st.read_attrs(b)["inputs"]["data"]
    assert rec["content_hash"] == st.read_attrs(a)["content_hash"]
    assert rec["path"] == str(a)


def test_interrupted_write_leaves_no_store(tmp_path, monkeypatch):
    target = tmp_path / "c.zarr"

    def boom(self, store, *a, **k):
        (tmp_path / "c.zarr.tmp-partial").mkdir()  # a real half-written temp dir would look like this
        raise KeyboardInterrupt

    monkeypatch.setattr(xr.Dataset, "to_zarr", boom)
    with pytest.raises(KeyboardInterrupt):
        st.write_store(sample(), target, {"stage": "x"}, {}, "cpu")
    assert not target.exists()
