"""Stores: content hashes survive the zarr round trip, writes are atomic, the provenance record is complete."""

import numpy as np
import pytest
import xarray as xr

import depthlab.storage as st
from depthlab import render
from depthlab.provenance import record_hash


def sample() -> xr.Dataset:
    return xr.Dataset(
        {
            "test_error": (("seed",), np.array([0.1, 0.2])),
            "diverged": (("seed",), np.array([False, True])),
            "best_lr": ((), 0.05),
        },
        coords={"seed": [0, 1], "depth": 3},
        attrs={"n_params": np.int64(123)},
    )


def record(**kw):
    return {
        "study": "s",
        "stage": "train",
        "job": {"depth": 3},
        "path": "a.zarr",
        "spec": {"stage": "train"},
        "inputs": {},
        **kw,
    }


def test_round_trip_keeps_content_hash_and_record(tmp_path):
    rec = st.write_store(sample(), tmp_path / "a.zarr", record())
    back = st.read_store(tmp_path / "a.zarr")
    assert st.content_hash(back) == rec["content_hash"] == st.content_hash(sample())
    on_disk = st.read_record(tmp_path / "a.zarr")
    assert on_disk == rec and on_disk["attrs"] == {"n_params": 123} == st.plain_attrs(back.attrs)
    assert record_hash(on_disk) == on_disk["record_hash"]
    assert st.RECORD_ATTR not in back.attrs


def test_content_hash_sees_a_changed_value():
    other = sample().copy(deep=True)
    other["test_error"][0] = 0.1000001
    assert st.content_hash(sample()) != st.content_hash(other)


def test_record_hash_sees_an_edited_field(tmp_path):
    rec = st.write_store(sample(), tmp_path / "a.zarr", record())
    for field, value in (("attrs", {"n_params": 124}), ("inputs", {"data": {"path": "x"}}), ("spec", {"stage": "ntk"})):
        assert record_hash({**rec, field: value}) != rec["record_hash"], field
    assert record_hash({**rec, "created": "another time"}) == rec["record_hash"], "wall-clock time is not hashed"


def test_inputs_are_recorded_relative_to_the_results_root(tmp_path):
    st.write_store(sample(), tmp_path / "s" / "a.zarr", record(path="s/a.zarr"))
    inp = st.input_record(tmp_path / "s" / "a.zarr", tmp_path)
    a = st.read_record(tmp_path / "s" / "a.zarr")
    assert inp == {"path": "s/a.zarr", "content_hash": a["content_hash"], "record_hash": a["record_hash"]}


def test_interrupted_write_leaves_no_store_and_the_next_write_removes_the_leftover(tmp_path, monkeypatch):
    target = tmp_path / "c.zarr"

    def boom(self, store, *a, **k):
        (tmp_path / "c.zarr.tmp-99999").mkdir()  # a real half-written temp dir of a killed process would look like this
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(xr.Dataset, "to_zarr", boom)
        with pytest.raises(KeyboardInterrupt):
            st.write_store(sample(), target, record())
    assert not target.exists() and (tmp_path / "c.zarr.tmp-99999").exists()
    st.write_store(sample(), target, record())
    assert target.exists() and not list(tmp_path.glob("c.zarr.tmp-*"))


def test_png_pixel_hash_ignores_chunks_but_sees_pixels():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    a = render.figure_png(fig)
    b = render.png_with_text(a, {"depthlab-provenance": "x \u2192 \u00e9"})
    assert a != b and st.png_pixels_hash(a) == st.png_pixels_hash(b)
    assert st.png_text(b, "depthlab-provenance") == "x \u2192 \u00e9", "the chunk reads back (PIL checks its CRC)"
    ax.plot([0, 1], [1, 0])
    assert st.png_pixels_hash(render.figure_png(fig)) != st.png_pixels_hash(a)
    assert render.figure_png(fig) == render.figure_png(fig), "no timestamps: identical bytes on a rerun"


def test_the_slurm_tests_store_walk_survives_folders_that_vanish_under_it_and_never_enters_a_temporary_store(
    tmp_path, monkeypatch
):
    """The chaos SLURM test reads every store's version while jobs write (CI of 358a57c failed there: pathlib's rglob
    listed a temporary store's folder after its job had renamed it into place).  Here a folder is removed just before the
    walk lists it, as a job does: the walk (``depthlab.results``'s, which the test's ``store_versions`` uses) skips it,
    reports the whole stores, and never lists a temporary store."""
    import os
    import shutil

    from helpers import store_versions

    res = tmp_path / "results"
    for store in ("a/b/L1.zarr", "a/c/L2.zarr", "a/b/L3.zarr.tmp-7-host-1/cv_lr"):
        (res / store).mkdir(parents=True)
        (res / store / "zarr.json").write_text("{}")
    (res / "a/b/L1.zarr/cv_lr").mkdir()
    gone, real, listed = res / "a" / "c", os.scandir, []

    def scandir(path="."):
        if isinstance(path, int):  # rmtree's own listing, by file descriptor
            return real(path)
        listed.append(os.path.basename(os.fspath(path)))
        if os.fspath(path) == os.fspath(gone):
            shutil.rmtree(gone)  # a job removed it between its parent's listing and this one
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert store_versions(res) == {
        "a/b/L1.zarr": (
            (res / "a/b/L1.zarr/zarr.json").stat().st_ino,
            (res / "a/b/L1.zarr/zarr.json").stat().st_mtime_ns,
        )
    }
    assert "c" in listed, "the vanishing folder was listed (the race happened)"
    assert not [n for n in listed if ".zarr" in n], f"the walk entered a store: {listed}"
    # pathlib's rglob, which the test used before, fails on the same race
    (res / "a/c/L2.zarr").mkdir(parents=True)
    with pytest.raises(FileNotFoundError):
        list(res.rglob("*.zarr/zarr.json"))
