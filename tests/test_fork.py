"""depthlab fork (issue 54): a new config's folder starts from a finished run's stores by hard links; its run recomputes
exactly what the changed knob touches, and the base's files keep their bytes and mtimes."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import subprocess
import sys

import yaml

from helpers import BIN, smk


def _files(root):
    """path -> (bytes' sha256, size, mtime_ns) of every file below ``root``."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            st = p.stat()
            out[str(p.relative_to(root))] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns)
    return out


def _jobs(text: str) -> dict[str, int]:
    """Snakemake's job-stats table (rule -> count) from a dry run's output."""
    m = re.search(r"Job stats:\njob\s+count\n[- ]+\n(.*?)\ntotal\s+(\d+)", text, re.S)
    assert m, text[-3000:]
    return {ln.split()[0]: int(ln.split()[1]) for ln in m.group(1).splitlines() if ln.strip()}


def test_a_fork_with_one_depth_added_reruns_that_depth_alone_and_leaves_the_base_as_it_was(smoke_run, tmp_path):
    base = smoke_run.results
    before = _files(base)
    cfg = copy.deepcopy(smoke_run.config)
    fig2 = cfg["studies"]["mori_ueda"]["figures"]["fig2"]
    fig2["depths"] = sorted(set(fig2["depths"]) | {max(fig2["depths"]) + 1})
    new_depth = max(fig2["depths"])
    cfg["results"] = str(tmp_path / "new")
    new_cfg = tmp_path / "new.yaml"
    new_cfg.write_text(yaml.safe_dump(cfg))
    p = subprocess.run([str(BIN / "depthlab"), "fork", str(base), str(new_cfg)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "hard-linked" in p.stdout and "next: make run" in p.stdout, p.stdout
    rec = json.loads((tmp_path / "new" / ".depthlab.fork.json").read_text())
    assert rec["base"] == str(base.resolve()) and rec["stores_taken"] > 50 and rec["stores_differing"] == 0, rec
    assert not (tmp_path / "new" / "config.used.yaml").exists()  # NEW's own, from its run
    some_chunk = next(f for f in before if ".zarr/" in f and "zarr.json" not in f)
    assert os.stat(base / some_chunk).st_ino == os.stat(tmp_path / "new" / some_chunk).st_ino  # a link, not a copy
    # the dry run: exactly the new depth's rate searches, nets and kernels (one per target), the figure, the claims
    targets = len(fig2["targets"])
    dry = smk(tmp_path, "--configfile", str(new_cfg), "-n", env={"DEPTHLAB_VERBOSE": "1"})
    jobs = _jobs(dry.stdout + dry.stderr)
    assert jobs.pop("mori_ueda_lrsearch") == jobs.pop("mori_ueda_train") == jobs.pop("mori_ueda_ntk") == targets, jobs
    assert jobs == {"figure": 1, "claims": 1, "claims_index": 1, "config_snapshot": 1, "all": 1}, jobs
    assert f"fig2/train/{next(iter(fig2['targets']))}/L{new_depth}.zarr" in dry.stdout + dry.stderr
    # the run, then: every file of BASE as it was, bytes and mtime; NEW has the new depth
    smk(tmp_path, "--configfile", str(new_cfg))
    assert _files(base) == before, "a run of the fork changed a file of its base"
    assert (tmp_path / "new" / "mori_ueda" / "fig2" / "train" / next(iter(fig2["targets"])) / f"L{new_depth}.zarr").is_dir()
    # depthlab diff of the two runs: the new stores are NEW's alone, the changed key is named
    d = subprocess.run([str(BIN / "depthlab"), "diff", str(base), str(tmp_path / "new"), "--json"], capture_output=True,
                       text=True, timeout=300)
    assert d.returncode == 0, d.stderr
    out = json.loads(d.stdout)
    assert [c["key"] for c in out["config"]] == ["studies.mori_ueda.figures.fig2.depths"], out["config"]
    for stage in ("mori_ueda/lrsearch", "mori_ueda/train", "mori_ueda/ntk"):
        assert out["stores"][stage]["only_b"] == targets and out["stores"][stage]["only_a"] == 0, out["stores"][stage]
    assert all(c["different"] == 0 for c in out["stores"].values()), out["stores"]  # every shared store: the same bits


def test_a_changed_knob_leaves_its_stores_to_the_new_run_and_fork_refuses_a_busy_or_nested_folder(smoke_run, tmp_path):
    """A store at one of NEW's paths whose spec differs (a training budget changed) is not taken: Snakemake, which has no
    rerun record for NEW's paths, would otherwise keep it.  NEW's folder must be new, and outside BASE's."""
    cfg = copy.deepcopy(smoke_run.config)
    cfg["studies"]["mori_ueda"]["training"]["max_epochs"] += 1
    cfg["results"] = str(tmp_path / "new")
    new_cfg = tmp_path / "new.yaml"
    new_cfg.write_text(yaml.safe_dump(cfg))
    p = subprocess.run([sys.executable, "-m", "depthlab", "fork", str(smoke_run.results), str(new_cfg)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rec = json.loads((tmp_path / "new" / ".depthlab.fork.json").read_text())
    # every net of the depth sweeps reads training.max_epochs; Fig. 3's lr sweep has a budget of its own
    trains = [p for p in (smoke_run.results / "mori_ueda").glob("*/train/*/*.zarr") if p.parts[-4] != "fig3"]
    assert rec["stores_differing"] == len(trains) > 0, rec
    assert {p.parts[-4] for p in (tmp_path / "new" / "mori_ueda").glob("*/train/*/*.zarr")} <= {"fig3"}
    assert list((tmp_path / "new" / "mori_ueda").glob("*/lrsearch/*/*.zarr"))  # the rate searches do not read max_epochs
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    for results, say in ((busy, "not empty"), (smoke_run.results / "inner", "outside")):
        cfg["results"] = str(results)
        new_cfg.write_text(yaml.safe_dump(cfg))
        p = subprocess.run([sys.executable, "-m", "depthlab", "fork", str(smoke_run.results), str(new_cfg)],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 2 and say in p.stderr, p.stderr
    assert not (smoke_run.results / "inner").exists()
