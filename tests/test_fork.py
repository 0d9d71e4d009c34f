"""depthlab fork: a new config's folder starts from a finished run's stores by hard links; its run recomputes
exactly what the changed knob touches, and the base's files keep their bytes and mtimes."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest
import yaml
from pathlib import Path

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
    p = subprocess.run(
        [str(BIN / "depthlab"), "fork", str(base), str(new_cfg)], capture_output=True, text=True, timeout=300
    )
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
    assert (
        tmp_path / "new" / "mori_ueda" / "fig2" / "train" / next(iter(fig2["targets"])) / f"L{new_depth}.zarr"
    ).is_dir()
    # depthlab diff of the two runs: the new stores are NEW's alone, the changed key is named
    d = subprocess.run(
        [str(BIN / "depthlab"), "diff", str(base), str(tmp_path / "new"), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
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
    p = subprocess.run(
        [sys.executable, "-m", "depthlab", "fork", str(smoke_run.results), str(new_cfg)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    rec = json.loads((tmp_path / "new" / ".depthlab.fork.json").read_text())
    # every net of the depth sweeps reads training.max_epochs; Fig. 3's lr sweep has a budget of its own
    trains = [p for p in (smoke_run.results / "mori_ueda").glob("*/train/*/*.zarr") if p.parts[-4] != "fig3"]
    assert rec["stores_differing"] == len(trains) > 0, rec
    assert {p.parts[-4] for p in (tmp_path / "new" / "mori_ueda").glob("*/train/*/*.zarr")} <= {"fig3"}
    assert list(
        (tmp_path / "new" / "mori_ueda").glob("*/lrsearch/*/*.zarr")
    )  # the rate searches do not read max_epochs
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    for results, say in ((busy, "not empty"), (smoke_run.results / "inner", "outside")):
        cfg["results"] = str(results)
        new_cfg.write_text(yaml.safe_dump(cfg))
        p = subprocess.run(
            [sys.executable, "-m", "depthlab", "fork", str(smoke_run.results), str(new_cfg)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 2 and say in p.stderr, p.stderr
    assert not (smoke_run.results / "inner").exists()


def _stores_of(root):
    """store path -> {file relative to the store: inode} of every store below ``root``."""
    from depthlab.records import stores_below

    return {
        str(s.relative_to(root)): {str(f.relative_to(s)): f.stat().st_ino for f in s.rglob("*") if f.is_file()}
        for s in stores_below(root)
    }


def _fork(base, new_cfg, kill=None):
    env = {**os.environ, **({"DEPTHLAB_TEST_FORK_KILL_AFTER": str(kill)} if kill else {})}
    env.pop("DEPTHLAB_TEST_FORK_KILL_AFTER", None) if not kill else None
    return subprocess.run(
        [str(BIN / "depthlab"), "fork", str(base), str(new_cfg)], capture_output=True, text=True, timeout=300, env=env
    )


# a killed run and its resume (timed faults): in the slow set, so that `make test` stays under 10 minutes on 2 cores
@pytest.mark.slow
def test_a_fork_killed_at_ten_points_leaves_only_whole_stores_and_resumes_to_the_bases(smoke_run, tmp_path):
    """The fork linked a store's zarr.json before its chunks, so a kill -9 part way left stores with some of
    their files, which the next run took as finished (zarr returned fill values).  Now each store is linked into a
    temporary folder and renamed into place, and the same command resumes.  Killed ten times (each resume killed again
    further on), every store present is whole at every point, a dry run of NEW lists only what is missing, and the last
    resume leaves every store identical to the base's (the same inodes) and the claims the same bytes."""
    base = smoke_run.results
    cfg = copy.deepcopy(smoke_run.config)
    cfg["results"] = str(tmp_path / "new")
    new_cfg = tmp_path / "new.yaml"
    new_cfg.write_text(yaml.safe_dump(cfg))
    want = _stores_of(base)
    new = tmp_path / "new"
    for i, kill in enumerate((1, 3, 7, 15, 31, 60, 120, 240, 480, 960)):
        p = _fork(base, new_cfg, kill)
        if p.returncode == 0:  # fewer files left than the kill point: it finished
            break
        assert p.returncode == -9, p.stdout + p.stderr
        rec = json.loads((new / ".depthlab.fork.json").read_text())
        assert rec["complete"] is False
        got = _stores_of(new)
        for s, files in got.items():  # every store present is whole: all its files, the base's inodes
            assert files == want[s], f"kill {i} after {kill} files: {s} is partial"
        if i == 2:  # NEW run without the resume: Snakemake plans exactly the stores not taken, never a partial one
            dry = smk(tmp_path, "--configfile", str(new_cfg), "-n", env={"DEPTHLAB_VERBOSE": "1"})
            planned = {
                str(Path(p) if p.startswith("/") else tmp_path / p)
                for p in re.findall(r"(?:^|\s)(\S+\.zarr)(?=\s|$)", dry.stdout + dry.stderr, re.M)
            }
            missing = {str(new / s) for s in want} - {str(new / s) for s in got}
            assert planned == missing, (sorted(planned - missing)[:3], sorted(missing - planned)[:3])
    p = _fork(base, new_cfg)
    assert p.returncode == 0 and "resumed the fork" in p.stdout, p.stdout + p.stderr
    assert json.loads((new / ".depthlab.fork.json").read_text())["complete"] is True
    assert _stores_of(new) == want
    for study in cfg["studies"]:
        assert (new / study / "claims.json").read_bytes() == (base / study / "claims.json").read_bytes()
    assert not [p for p in new.rglob("*") if ".tmp-" in p.name], "a killed fork's temporaries were left behind"


def test_a_fork_copies_small_files_makes_linked_chunks_read_only_and_refuses_a_store_with_a_symlink(
    smoke_run, tmp_path
):
    """Linked claims files shared their inode (an append to the fork's claims.md changed the base's, and
    `snakemake --touch` in the fork moved the base's mtimes); a store whose chunk is a symlink forked into a store
    without that chunk yet counted as taken; the fork's copies of the base's benchmark files were measured again by
    plan --calibrate / --check."""
    from depthlab.costs import calibrate as cost_calibrate
    from depthlab.records import stores_below

    base = tmp_path / "base"
    shutil.copytree(smoke_run.results, base, copy_function=os.link)  # the shared run's inodes, this test's folder
    victim = next(s for s in stores_below(base) if "/spectra/" in str(s))
    chunk = next(f for f in sorted(victim.rglob("*")) if f.is_file() and f.name != "zarr.json")
    real = tmp_path / "annex-object"
    shutil.copy2(chunk, real)
    chunk.unlink()
    chunk.symlink_to(real)  # a results tree restored from git-annex
    cfg = copy.deepcopy(smoke_run.config)
    cfg["results"] = str(tmp_path / "new")
    new_cfg = tmp_path / "new.yaml"
    new_cfg.write_text(yaml.safe_dump(cfg))
    p = _fork(base, new_cfg)
    assert p.returncode == 0 and "1 stores holding a symlink" in p.stdout, p.stdout + p.stderr
    new = tmp_path / "new"
    assert not (new / victim.relative_to(base)).exists()  # left to NEW's run
    claims = new / "mori_ueda" / "claims.md"
    assert os.stat(claims).st_ino != os.stat(base / "mori_ueda" / "claims.md").st_ino
    before = (base / "mori_ueda" / "claims.md").read_bytes()
    with open(claims, "a") as f:
        f.write("note\n")
    assert (base / "mori_ueda" / "claims.md").read_bytes() == before
    some = next(f for f in (new / "mori_ueda").rglob("*.zarr/*") if f.is_file())
    assert not os.stat(some).st_mode & 0o222, "a linked store file is writable"
    assert cost_calibrate.measurements(base) and not cost_calibrate.measurements(new), (
        "the fork's copied timings were measured as NEW's"
    )
    rec = json.loads((new / ".depthlab.fork.json").read_text())
    assert rec["complete"] is True and rec["stores_refused"] == 1 and rec["benchmarks"]


def test_diff_writes_its_files_only_where_it_may(smoke_run, tmp_path):
    """--markdown / --plot replaced whatever their path named (a symlink, /dev/stdout, a results file) and
    created missing folders.  Now a symlink or a device is written in place, a missing folder or a path inside a
    results folder is refused with one line, and nothing is created."""
    a = smoke_run.results

    def run(*extra):
        return subprocess.run(
            [str(BIN / "depthlab"), "diff", str(a), str(a), *extra], capture_output=True, text=True, timeout=300
        )

    target = tmp_path / "target.md"
    target.write_text("old\n")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    p = run("--markdown", str(link))
    assert p.returncode == 0, p.stderr
    assert link.is_symlink() and target.read_text().startswith("#") or "|" in target.read_text()
    p = run("--markdown", "/dev/null")
    assert p.returncode == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode), p.stderr
    p = run("--plot", str(tmp_path / "nonexistent" / "dir" / "p.png"))
    assert p.returncode == 2 and "does not exist" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not (tmp_path / "nonexistent").exists()
    claims = a / "mori_ueda" / "claims.md"
    before = claims.read_bytes()
    p = run("--markdown", str(claims))
    assert p.returncode == 2 and "inside the results folder" in p.stderr, p.stderr
    assert claims.read_bytes() == before
    # a full disk (its error named an empty path): one line naming the file
    p = run("--markdown", "/dev/full")
    assert p.returncode == 2 and "cannot write /dev/full" in p.stderr and "No space left" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


# a killed run and its resume (timed faults): in the slow set, so that `make test` stays under 10 minutes on 2 cores
@pytest.mark.slow
def test_a_sweep_killed_while_forking_resumes_its_forks(smoke_run, tmp_path):
    """A sweep killed part way through a value's fork went on with 'has begun; its run goes on from there'
    on half-linked stores.  Killed at ten points, each resume takes the rest; every store present is whole."""
    cfg = copy.deepcopy(smoke_run.config)
    cfg["results"] = str(smoke_run.results)
    base_cfg = tmp_path / "base.yaml"
    base_cfg.write_text(yaml.safe_dump(cfg))
    before = cfg["studies"]["spectra"]["krr"]["threshold"]
    out = tmp_path / "sweep"
    args = [
        sys.executable,
        "-m",
        "depthlab",
        "sweep",
        str(base_cfg),
        "--set",
        f"studies.spectra.krr.threshold={before},0.5",
        "--out",
        str(out),
        "--no-run",
    ]
    want = _stores_of(smoke_run.results)
    for kill in (1, 3, 5, 10, 20, 40, 80, 160, 300, 700):
        env = {**os.environ, "DEPTHLAB_TEST_FORK_KILL_AFTER": str(kill)}
        p = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
        if p.returncode == 0:
            break
        assert p.returncode == -9, p.stdout + p.stderr
        for v in (out / f"v1-{before}", out / "v2-0.5"):
            for s, files in _stores_of(v).items():
                assert files == want[s], f"{v.name}: {s} is partial after a kill at {kill} files"
    env = {k: v for k, v in os.environ.items() if k != "DEPTHLAB_TEST_FORK_KILL_AFTER"}
    p = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    v1 = out / f"v1-{before}"
    assert json.loads((v1 / ".depthlab.fork.json").read_text())["complete"] is True
    assert _stores_of(v1) == want


def test_fork_set_writes_new_as_base_with_the_change_and_refuses_bad_keys_before_writing(smoke_run, tmp_path):
    """``fork BASE NEW --set K=V``: NEW is BASE's config with K set (and a results folder of its own beside BASE's), the
    same config a user's edited copy would be; a key the schema refuses, two values, or an existing NEW: rc 2, one line,
    nothing written."""
    from depthlab import config as dlc

    # NEW lands beside BASE: fork a copy, so that nothing is written into the shared smoke run's folder while other
    # workers copy or read it (a copy that met NEW's temporary stores there failed)
    base = smoke_run.copy(tmp_path / "w").results
    new_cfg = tmp_path / f"forkset-{tmp_path.name}.yaml"
    fig2 = smoke_run.config["studies"]["mori_ueda"]["figures"]["fig2"]
    depths = sorted(set(fig2["depths"]) | {max(fig2["depths"]) + 1})
    key = "studies.mori_ueda.figures.fig2.depths"

    def fork(*args):
        return subprocess.run(
            [str(BIN / "depthlab"), "fork", str(base), *map(str, args)], capture_output=True, text=True, timeout=300
        )

    for bad, said in (
        (["--set", "studies.mori_ueda.figures.fig2.nope=3"], "nope"),
        (["--set", "seed=1,2"], "seed"),
        (["--set", "seed"], "KEY=VALUE"),
        (["--set", "seed=-1"], "minimum"),
    ):
        p = fork(new_cfg, *bad)
        assert p.returncode == 2 and said in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert not new_cfg.exists()
    try:
        p = fork(new_cfg, "--set", f"{key}={depths}".replace(" ", ""))
        assert p.returncode == 0, p.stdout + p.stderr
        written = dlc.read_yaml(new_cfg)
        by_hand = copy.deepcopy(dlc.read_yaml(base / "config.used.yaml"))
        by_hand["studies"]["mori_ueda"]["figures"]["fig2"]["depths"] = depths
        assert written.pop("results") == str(base.parent / new_cfg.stem)
        by_hand.pop("results")
        assert written == by_hand
        rec = json.loads((base.parent / new_cfg.stem / ".depthlab.fork.json").read_text())
        assert rec["stores_taken"] > 50 and rec["stores_differing"] == 0, (
            rec
        )  # one depth added: every base store is NEW's
        again = fork(new_cfg, "--set", "seed=1")
        assert again.returncode == 2 and "exists" in again.stderr, again.stderr
    finally:
        shutil.rmtree(base.parent / new_cfg.stem, ignore_errors=True)
