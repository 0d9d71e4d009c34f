"""open_results, `depthlab ls` and the worked example, on the smoke run: one Dataset per stage equals its stores opened
one by one; it reads only metadata until asked; bad folders give errors naming the path; plain xr.open_zarr on every
store opens without a warning; docs/explore.py runs and agrees with fig2.csv."""

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import depthlab
from depthlab import storage
from depthlab.results import ResultsError, open_results
from depthlab.studies import get_study
from depthlab.study import Ref

ROOT = Path(__file__).resolve().parents[1]


def stage_stores(run, study):
    s = get_study(study)
    for st in s.store_stages():
        for job in s.jobs(run.config, st.name):
            yield st.name, job, run.results / study / s.path(Ref(st.name, job))


def test_every_store_opens_with_plain_xr_open_zarr_and_no_warning(smoke_run):
    n = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for study in smoke_run.config["studies"]:
            for _, _, path in stage_stores(smoke_run, study):
                with xr.open_zarr(path) as ds:
                    assert ds.attrs[storage.RECORD_ATTR]
                n += 1
    on_disk = [
        p for p in smoke_run.results.rglob("*.zarr") if (p / "zarr.json").is_file() and ".zarr" not in p.parent.name
    ]
    assert n == len(on_disk) > 50, (n, len(on_disk))  # every store the run wrote, none missed


def _same(combined: xr.Dataset, job: dict, store: xr.Dataset) -> None:
    """Every variable of ``store`` equals the combined Dataset at ``job``, over the store's own coordinates."""
    part = combined.sel(job) if job else combined
    for name, var in store.data_vars.items():
        got = part[name]
        for d in var.dims:
            got = got.sel({d: store[d].values}) if d in store.coords else got.isel({d: slice(0, store.sizes[d])})
        got = got.transpose(*var.dims).values
        want = var.values
        if want.dtype.kind in "OUST":
            assert [str(v) for v in np.ravel(got)] == [str(v) for v in np.ravel(want)], name
        else:
            np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64), err_msg=name)


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_open_results_equals_the_stores_opened_one_by_one_for_every_stage(smoke_run):
    for study in smoke_run.config["studies"]:
        s = get_study(study)
        tree = open_results(smoke_run.results, study)  # the study as one DataTree: a node per stage (or per figure)
        for st in s.store_stages():
            node = tree[st.name]
            parts = [node.to_dataset()] if not node.children else [c.to_dataset() for c in node.children.values()]
            parts = [p.load() for p in parts]  # small here; lazy in general
            jobs = s.jobs(smoke_run.config, st.name)
            assert sum(p.attrs["stores"] for p in parts) == len(jobs)
            for job in jobs:
                coords = job.values()
                ds = next(p for p in parts if all(v in p[k].values for k, v in coords.items()))
                path = smoke_run.results / study / s.path(Ref(st.name, job))
                _same(ds, coords, storage.read_store(path))
                assert str(ds.record_hash.sel(coords).values) == storage.read_record(path)["record_hash"]
                assert str(ds.store.sel(coords).values) == f"{study}/{s.path(Ref(st.name, job))}"


def test_open_results_labels_jobs_from_records_and_narrows_by_selection(smoke_run):
    train = open_results(smoke_run.results, "mori_ueda", "train", figure="fig2")
    assert list(train.dims)[:3] == ["figure", "target", "depth"]
    assert train.figure.values.tolist() == ["fig2"]
    fig2 = smoke_run.config["studies"]["mori_ueda"]["figures"]["fig2"]
    assert sorted(train.depth.values.tolist()) == sorted(fig2["depths"])
    one = open_results(smoke_run.results, "mori_ueda", "train", figure="fig2", depth=fig2["depths"][0], seed=0)
    assert one.sizes["depth"] == 1 and "seed" not in one.dims
    frac = open_results(smoke_run.results, "fractals", "train")
    assert list(frac.dims)[:5] == ["fractal", "n", "pdeg", "depth", "width"]
    assert np.isnan(frac.best_accuracy.values).any(), "jobs not in the grid are NaN-padded"


def test_open_results_reads_arrays_only_when_asked(smoke_run, tmp_path):
    """Corrupt one chunk of the predictions: opening the stage still works (it read only metadata and the small index
    coordinates); reading that array fails."""
    res = tmp_path / "results"
    shutil.copytree(smoke_run.results, res)
    store = next(p for st, _, p in stage_stores(smoke_run, "mori_ueda") if st == "train").relative_to(smoke_run.results)
    chunks = [p for p in (res / store / "prediction").rglob("*") if p.is_file() and p.name != "zarr.json"]
    for c in chunks:
        c.write_bytes(b"not a zstd frame")
    with pytest.raises(ResultsError, match="holds jobs of different kinds.*open one figure at a time"):
        open_results(res, "mori_ueda", "train")  # fig3's lr sweep beside the other figures' chosen rates
    ds = open_results(res, "mori_ueda", "train", figure=str(store).split("/")[1])
    ds.test_error.load()  # other arrays read fine
    with pytest.raises(Exception):  # noqa: B017 (the codec's own error type: any error, so long as none of it is read)
        ds.prediction.load()


def test_bad_folders_give_errors_naming_the_path(smoke_run, tmp_path):
    res = tmp_path / "results"
    shutil.copytree(smoke_run.results, res)
    s = get_study("mori_ueda")
    jobs = s.jobs(smoke_run.config, "train")
    a, b = (f"mori_ueda/{s.path(Ref('train', j))}" for j in jobs[:2])
    # empty selection, unknown stage, the figure stage
    with pytest.raises(ResultsError, match=r"no mori_ueda/train store has \{'figure': 'nope'\}"):
        open_results(res, "mori_ueda", "train", figure="nope")
    with pytest.raises(ResultsError, match="no stage 'trian'"):
        open_results(res, "mori_ueda", "trian")
    with pytest.raises(ResultsError, match="figure stage"):
        open_results(res, "mori_ueda", "figure")
    with pytest.raises(ResultsError, match="no such results folder"):
        open_results(tmp_path / "nothing", "mori_ueda", "train")
    # an extra store: a config that asks for fewer jobs
    fewer = json.loads(json.dumps(smoke_run.config))
    del fewer["studies"]["mori_ueda"]["figures"]["fig2"]
    with pytest.raises(ResultsError, match="does not ask for, e.g. .*fig2/train"):
        open_results(res, "mori_ueda", "train", config=fewer)
    fig4 = [j for j in jobs if j.figure == "fig4"]
    assert open_results(res, "mori_ueda", "train", config=fewer, complete=False, figure="fig4").attrs["stores"] == len(
        fig4
    )
    # a store of another stage in this stage's place
    shutil.rmtree(res / a)
    shutil.copytree(res / a.replace("/train/", "/ntk/"), res / a)
    with pytest.raises(
        ResultsError, match=f"{res / a}: a store of mori_ueda/ntk where a mori_ueda/train store belongs"
    ):
        open_results(res, "mori_ueda", "train")
    # a missing store
    shutil.rmtree(res / a)
    with pytest.raises(ResultsError, match=f"missing, e.g. {res / a}"):
        open_results(res, "mori_ueda", "train")
    # a store moved to another job's place
    shutil.move(res / b, res / a)
    with pytest.raises(ResultsError, match=f"{res / a}: its record says it was written as <results>/{b}"):
        open_results(res, "mori_ueda", "train", complete=False)


def test_verify_runs_the_audit_first(smoke_run, tmp_path):
    res = tmp_path / "results"
    shutil.copytree(smoke_run.results, res)
    assert open_results(res, "spectra", "krr", verify=True).attrs["stores"] > 0
    krr = next(p for st, _, p in stage_stores(smoke_run, "spectra") if st == "krr").relative_to(smoke_run.results)
    meta = res / krr / "zarr.json"
    data = json.loads(meta.read_text())
    data["attributes"]["kernel_note"] = "forged"
    meta.write_text(json.dumps(data))
    with pytest.raises(ResultsError, match="attributes differ"):
        open_results(res, "spectra", "krr", verify=True)


def test_the_audit_checks_the_consolidated_metadata_that_xr_open_zarr_reads(smoke_run, tmp_path):
    from depthlab import audit

    res = tmp_path / "results"
    shutil.copytree(smoke_run.results, res)
    store = next(p for st, _, p in stage_stores(smoke_run, "spectra") if st == "krr").relative_to(smoke_run.results)
    meta = res / store / "zarr.json"
    data = json.loads(meta.read_text())
    name = sorted(data["consolidated_metadata"]["metadata"])[0]
    data["consolidated_metadata"]["metadata"][name]["attributes"]["units"] = "forged"
    meta.write_text(json.dumps(data))
    a = audit.run(str(res / store), None)
    assert any("consolidated metadata" in p and name in p for p in a.problems), a.problems


def test_ls_lists_jobs_sizes_and_which_figures_are_up_to_date(smoke_run, tmp_path):
    res = tmp_path / "results"
    shutil.copytree(smoke_run.results, res)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    out = subprocess.run(["depthlab", "ls", str(res)], capture_output=True, text=True, env=env, check=True).stdout
    n_train = len(get_study("mori_ueda").jobs(smoke_run.config, "train"))
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("train ") and "figure [" in ln)
    assert f"{n_train} store(s)" in line and "kB" in line
    assert "figure fig2" in out and "stale" not in out and "edited" not in out
    # rewrite one fig2 store (another test error, a consistent new record): fig2 is stale, the others stay up to date
    s = get_study("mori_ueda")
    job = next(j for j in s.jobs(smoke_run.config, "train") if j.figure == "fig2")
    path = res / "mori_ueda" / s.path(Ref("train", job))
    rec = storage.read_record(path)
    ds = storage.read_store(path)
    ds["test_error"] = ds.test_error * 2
    storage.write_store(
        ds, path, {k: v for k, v in rec.items() if k not in ("record_hash", "created", "content_hash", "attrs")}
    )
    (res / "mori_ueda/figures/fig3.csv").write_text("edited\n")
    out = depthlab.list_results(res)
    fig2 = next(ln for ln in out.splitlines() if "figure fig2 " in ln)
    assert "stale: 1 of" in fig2
    assert "csv edited" in next(ln for ln in out.splitlines() if "figure fig3 " in ln)
    p = subprocess.run(["depthlab", "ls", str(tmp_path / "none")], capture_output=True, text=True, env=env)
    assert p.returncode == 2 and "no such results folder" in p.stderr


def test_open_results_does_not_import_torch(smoke_run):
    code = (
        "import sys, depthlab; depthlab.open_results(sys.argv[1], 'fractals', 'train'); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code, str(smoke_run.results)], check=True, cwd="/")


def test_the_worked_example_runs_on_the_smoke_results_and_agrees_with_the_csv(smoke_run, tmp_path):
    env = {
        **os.environ,
        "DEPTHLAB_RESULTS": str(smoke_run.results),
        "DEPTHLAB_EXPLORE_OUT": str(tmp_path / "out"),
        "MPLBACKEND": "Agg",
    }
    p = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", str(ROOT / "docs" / "explore.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "fig2.csv agrees with the stores" in p.stdout
    assert sorted(f.name for f in (tmp_path / "out").iterdir()) == [
        "fig2_from_stores.png",
        "lr_search.png",
        "training_history.png",
    ]
    text = (ROOT / "docs" / "explore.py").read_text()
    assert text.startswith("# %%") and text.count("# %%") >= 6  # percent format: cells


def test_a_study_opens_as_one_datatree_and_the_readme_example_has_no_nan(smoke_run):
    """`open_results(results, study)` is an xarray.DataTree of the study's stages; the README's example
    returned 6 of 8 values as NaN (each job's chosen lr was a dimension); `converged` stays bool."""
    import depthlab

    tree = depthlab.open_results(smoke_run.results, "mori_ueda")
    assert set(tree.children) == {"data", "lrsearch", "train", "ntk", "entk"}
    assert {"fig2", "fig3"} <= set(tree["train"].children), "depth sweeps and lr sweeps: one child per figure"
    train = tree["train/fig2"].to_dataset()
    assert "lr" not in train.test_error.dims and train.lr.dims == ("figure", "target", "depth")
    assert "lr" in tree["train/fig3"].to_dataset().test_error.dims
    fig2 = depthlab.open_results(smoke_run.results, "mori_ueda", "train", figure="fig2")
    example = fig2.test_error.sel(target="2-local").mean("seed")
    assert int(example.isnull().sum()) == 0 and example.size >= 2, example
    assert fig2.converged.dtype == bool
