"""Special files (a FIFO, /dev/zero, a directory) and malformed files in a results folder or a
config path, for every tool outside the audit (which tests/test_hostile.py covers): each answers within a time limit,
naming the file, with no traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

import depthlab.lock as lock
from depthlab.results import ResultsError, list_results, open_results

TINY_STUDIES = ROOT / "docs" / "example_study"

DEPTHLAB = [sys.executable, "-m", "depthlab"]
STORE = "mori_ueda/fig2/train/2-local/L1.zarr"
FIG = "mori_ueda/figures/fig2"


@pytest.fixture
def copy_run(smoke_run, tmp_path):
    dst = tmp_path / "results"
    shutil.copytree(smoke_run.results, dst)
    return dst


def fifo(path: Path) -> Path:
    path.unlink()
    os.mkfifo(path)
    return path


def tool(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """A depthlab command under a time limit: a hang fails the test instead of stalling it."""
    p = subprocess.run(
        [*DEPTHLAB, *args], capture_output=True, text=True, timeout=60, cwd=cwd, env={**os.environ, **(env or {})}
    )
    assert "Traceback" not in p.stdout + p.stderr, p.stderr[-3000:]
    return p


def test_a_fifo_for_a_stores_metadata_is_named_by_ls_and_open_results(copy_run, tmp_path):
    f = fifo(copy_run / STORE / "zarr.json")
    p = tool("ls", str(copy_run), cwd=tmp_path)
    assert str(f) in p.stdout and "a FIFO, not a regular file" in p.stdout, p.stdout[-2000:]
    for verify in (False, True):
        with pytest.raises(ResultsError, match="a FIFO, not a regular file"):
            open_results(copy_run, "mori_ueda", "train", verify=verify)


def test_a_fifo_for_a_figures_provenance_or_a_json_list_there_is_named_by_ls(copy_run):
    fifo(copy_run / f"{FIG}.provenance.json")
    assert "fig2" in list_results(copy_run) and "unreadable provenance" in list_results(copy_run)
    (copy_run / f"{FIG}.provenance.json").unlink()
    (copy_run / f"{FIG}.provenance.json").write_text("[1, 2]")
    assert "is a JSON list, not a record" in list_results(copy_run)


def test_a_fifo_for_config_used_is_named_by_open_results(copy_run):
    fifo(copy_run / "config.used.yaml")
    for verify in (False, True):
        with pytest.raises(ResultsError, match=r"config.used.yaml.*a FIFO, not a regular file"):
            open_results(copy_run, "mori_ueda", "train", verify=verify)


@pytest.mark.parametrize("mode", ["calibrate", "check", "measure"])
def test_a_fifo_benchmark_file_stops_plan_naming_it(copy_run, tmp_path, mode):
    tsv = next((copy_run / "benchmarks" / "mori_ueda").rglob("*.tsv"))
    fifo(tsv)
    args = {
        "calibrate": ["--calibrate", str(copy_run), "--costs", str(tmp_path / "c.json")],
        "check": ["--check", str(copy_run)],
        "measure": ["--measure", str(copy_run)],
    }[mode]
    p = tool("plan", *args, cwd=tmp_path)
    assert p.returncode != 0 and str(tsv) in p.stderr and "a FIFO, not a regular file" in p.stderr, p.stderr[-2000:]


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "dir"])
def test_validate_refuses_a_special_config_path_in_one_line(tmp_path, special):
    if special == "fifo":
        path = tmp_path / "c.yaml"
        os.mkfifo(path)
    elif special == "dir":
        path = tmp_path / "c.yaml"
        path.mkdir()
    else:
        path = Path(special)
    p = tool("validate", str(path), cwd=tmp_path)
    assert p.returncode == 2 and str(path) in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


@pytest.mark.parametrize("kind", ["dir", "fifo"])
def test_a_lock_file_that_is_a_directory_or_a_fifo_is_named(tmp_path, kind):
    results = tmp_path / "r"
    results.mkdir()
    (results / lock.LOCK_NAME).mkdir() if kind == "dir" else os.mkfifo(results / lock.LOCK_NAME)
    with pytest.raises(lock.ResultsInUse, match=r"\.depthlab\.lock"):
        lock.acquire(results)


def test_nan_in_a_provenance_file_is_a_one_line_audit_failure(copy_run, tmp_path):
    prov = copy_run / f"{FIG}.provenance.json"
    rec = json.loads(prov.read_text())
    prov.write_text(json.dumps(rec).replace('"code_version"', '"nan_field": NaN, "code_version"', 1))
    p = tool("audit", str(copy_run / f"{FIG}.png"), cwd=tmp_path)
    assert p.returncode == 1 and "provenance.json" in p.stderr and "NaN is not a JSON value" in p.stderr, p.stderr[
        -2000:
    ]


def test_a_study_path_repeating_a_builtin_name_is_one_line_and_the_builtin_folder_itself_is_fine(tmp_path):
    clash = tmp_path / "studies" / "mori_ueda"
    shutil.copytree(ROOT / "docs" / "example_study" / "tiny", clash)
    p = tool(
        "validate",
        str(ROOT / "config" / "smoke.yaml"),
        cwd=tmp_path,
        env={"DEPTHLAB_STUDY_PATH": str(tmp_path / "studies")},
    )
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"the study folder {clash} has the name of a built-in study" in p.stderr
    builtin = ROOT / "workflow" / "depthlab" / "studies"
    p = tool("validate", str(ROOT / "config" / "smoke.yaml"), cwd=tmp_path, env={"DEPTHLAB_STUDY_PATH": str(builtin)})
    assert p.returncode == 0, p.stderr


def test_a_results_subfolder_linked_out_of_the_results_is_refused_before_any_job(tmp_path):
    """results/tiny linked to a folder outside the results: the run wrote the study's stores and claims there (a
    probe of the hostile round); now it stops before any job, naming the link, and writes nothing through it.  A link
    inside the results folder, and the results folder itself being a link, are fine."""
    import yaml
    from helpers import smk

    from depthlab import outputs

    outside, res = tmp_path / "outside", tmp_path / "r"
    outside.mkdir()
    res.mkdir()
    (res / "tiny").symlink_to(outside)
    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    cfg.update(results=str(res), studies={"tiny": {"sizes": [5]}})
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    p = smk(tmp_path, "--configfile", str(path), check=False, env={"DEPTHLAB_STUDY_PATH": str(TINY_STUDIES)})
    assert p.returncode != 0 and "holds links out of it" in p.stdout + p.stderr, (p.stdout + p.stderr)[-3000:]
    assert not any(outside.iterdir())
    assert outputs.links_leaving(res) == [f"{res / 'tiny'} -> {outside}"]
    (res / "tiny").unlink()
    (res / "inner").mkdir()
    (res / "tiny").symlink_to(res / "inner")
    linked = tmp_path / "linked"
    linked.symlink_to(res)
    assert outputs.links_leaving(res) == [] and outputs.links_leaving(linked) == []
    assert outputs.inside(res / "tiny" / "x.zarr", res) and not outputs.inside(res / "tiny" / "x", tmp_path / "other")
