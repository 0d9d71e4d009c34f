"""The Snakemake workflow end to end on config/smoke.yaml: run, no-op rerun, partial rerun, lint."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import depthlab.storage as st

BIN = Path(sys.executable).parent


def smk(root: Path, workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd = [str(BIN / "snakemake"), "-s", str(root / "Snakefile"), "--directory", str(workdir),
           "--workflow-profile", str(root / "workflow" / "profiles" / "default"), "--cores", "2", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if check and p.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({p.returncode}):\n{p.stdout[-4000:]}\n{p.stderr[-6000:]}")
    return p


def stores(results: Path) -> dict[str, float]:
    """mtime of every store and figure file under results/ (by relative path)."""
    out = {}
    for p in list(results.glob("fig*/**/*.zarr")) + list(results.glob("figures/*")) + list(results.glob("claims.md")):
        out[str(p.relative_to(results))] = p.stat().st_mtime_ns
    return out


@pytest.fixture(scope="module")
def run(root, tmp_path_factory):
    work = tmp_path_factory.mktemp("smoke")
    cfg = yaml.safe_load((root / "config" / "smoke.yaml").read_text())
    cfg_path = work / "smoke.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    smk(root, work, "--configfile", str(cfg_path))
    return root, work, cfg, cfg_path


def test_run_produces_figure_and_stores(run):
    root, work, cfg, _ = run
    res = work / "results"
    for ext in ("png", "pdf", "csv", "provenance.json"):
        assert (res / "figures" / f"fig2.{ext}").stat().st_size > 0
    for t in cfg["figures"]["fig2"]["targets"]:
        for L in cfg["figures"]["fig2"]["depths"]:
            for kind in ("lrsearch", "train", "ntk"):
                a = st.read_attrs(res / "fig2" / kind / t / f"L{L}.zarr")
                assert a["depthlab_spec"]["depth"] == L and a["config_hash"] and a["code_version"]
                assert "data" in a["inputs"]
            # the recorded content hash is the hash of what is on disk
            ds = st.read_store(res / "fig2" / "train" / t / f"L{L}.zarr")
            assert st.content_hash(ds) == ds.attrs["content_hash"]
            assert ds.test_error.dims == ("seed",)
    table = (res / "figures" / "fig2.csv").read_text().splitlines()
    assert len(table) == 1 + len(cfg["figures"]["fig2"]["targets"]) * len(cfg["figures"]["fig2"]["depths"]) * len(cfg["figures"]["fig2"]["seeds"])
    assert not list(res.rglob("*.tmp-*")), "no temporary store may survive a finished run"


def test_every_figure_target_and_the_claims_report(run):
    root, work, cfg, _ = run
    res = work / "results"
    for name, fig in cfg["figures"].items():
        for ext in ("png", "pdf", "csv", "provenance.json"):
            assert (res / "figures" / f"{name}.{ext}").stat().st_size > 0, name
    sweep = st.read_store(next((res / "fig3" / "sweep").glob("*/L1.zarr")))
    assert sweep.test_error.dims == ("lr", "seed") and "max_converged_lr" in sweep
    claims = (res / "claims.md").read_text()
    assert "| claim | figure |" in claims and "fig2" in claims
    # the report is computed from the stores: its fig2 numbers are the csv's
    import pandas as pd

    t = pd.read_csv(res / "figures" / "fig2.csv")
    v = t[(t.target == "2-local") & (t.depth == 1)].nn_test_error.mean()
    assert f"L=1: {v:.4g}" in claims


def audit(work: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "depthlab"), "audit", *args], cwd=work, capture_output=True, text=True, timeout=300)


def test_audit_traces_figure_to_data_and_passes(run):
    root, work, _, cfg_path = run
    p = audit(work, "results/figures/fig2.png", "--configfile", str(cfg_path))
    assert p.returncode == 0, p.stdout + p.stderr
    for needle in ("figure results/figures/fig2", "results/fig2/train/2-local/L1.zarr", "results/fig2/lrsearch/2-local/L1.zarr",
                   "results/fig2/ntk/2-global/L2.zarr", "results/fig2/data/2-local.zarr", "audit OK"):
        assert needle in p.stdout


def test_audit_catches_a_modified_store_and_a_changed_config(run, tmp_path):
    import zarr

    root, work, cfg, cfg_path = run
    copy = tmp_path / "w"
    shutil.copytree(work / "results", copy / "results")
    z = zarr.open_array(str(copy / "results/fig2/data/2-local.zarr/y_test"), mode="r+")
    z[0] = z[0] + 1.0
    p = audit(copy, "results/figures/fig2.pdf")
    assert p.returncode != 0
    assert "results/fig2/data/2-local.zarr: arrays on disk" in p.stderr
    # a config with another seed made none of these stores
    other = yaml.safe_load(cfg_path.read_text())
    other["seed"] = 99
    other_path = tmp_path / "other.yaml"
    other_path.write_text(yaml.safe_dump(other))
    p = audit(work, "results/fig2/train/2-global/L1.zarr", "--configfile", str(other_path))
    assert p.returncode != 0 and "made by a different config (differs in: data)" in p.stderr
    # a missing input is named
    shutil.rmtree(copy / "results/fig2/ntk/2-global/L2.zarr")
    p = audit(copy, "results/figures/fig2.csv")
    assert "results/fig2/ntk/2-global/L2.zarr: missing" in p.stderr


def test_html_report_has_every_figure_the_claims_and_the_config(run):
    root, work, cfg, cfg_path = run
    smk(root, work, "--configfile", str(cfg_path), "--report", str(work / "report.html"))
    html = (work / "report.html").read_text()
    for name in cfg["figures"]:
        assert f"Mori &amp; Ueda {name}" in html, name
    assert "claims.md" in html and "config.used.yaml" in html


def test_rerun_has_nothing_to_do(run):
    root, work, _, cfg_path = run
    p = smk(root, work, "--configfile", str(cfg_path), "--dry-run")
    assert "Nothing to be done" in p.stdout + p.stderr


def test_changing_one_depth_reruns_only_that_depth_and_the_figure(run):
    root, work, cfg, cfg_path = run
    res = work / "results"
    before = stores(res)
    changed = yaml.safe_load(cfg_path.read_text())
    old = sorted(changed["figures"]["fig2"]["depths"])
    changed["figures"]["fig2"]["depths"] = [old[0], 3]
    new_cfg = cfg_path.with_name("changed.yaml")
    new_cfg.write_text(yaml.safe_dump(changed))
    smk(root, work, "--configfile", str(new_cfg))
    after = stores(res)
    rerun = {k for k in after if after[k] != before.get(k)}
    targets = sorted(cfg["figures"]["fig2"]["targets"])
    expected = {f"fig2/{kind}/{t}/L3.zarr" for t in targets for kind in ("lrsearch", "train", "ntk")}
    expected |= {f"figures/fig2.{ext}" for ext in ("png", "pdf", "csv", "provenance.json")} | {"claims.md"}
    assert rerun == expected
    # and the first depth's stores are byte-for-byte the ones from before
    for t in targets:
        assert after[f"fig2/train/{t}/L{old[0]}.zarr"] == before[f"fig2/train/{t}/L{old[0]}.zarr"]
    # restore the original config for any later test in this module
    smk(root, work, "--configfile", str(cfg_path))


def test_killed_run_recovers_with_the_documented_commands(run, tmp_path):
    """SIGKILL the whole Snakemake process group mid-run; --unlock + rerun finishes with the same arrays."""
    import signal
    import time

    root, work, cfg, cfg_path = run
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    base = [str(BIN / "snakemake"), "-s", str(root / "Snakefile"), "--directory", str(tmp_path),
            "--workflow-profile", str(root / "workflow" / "profiles" / "default"), "--cores", "2", "--configfile", str(cfg_path), "--"]
    p = subprocess.Popen([*base, "fig2"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while not list((tmp_path / "results" / "fig2" / "lrsearch").glob("*/*.zarr")):
        assert p.poll() is None and time.time() < deadline, "the run ended before it could be killed"
        time.sleep(0.1)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    subprocess.run([*base[:-1], "--unlock"], env=env, check=True, capture_output=True)
    done = subprocess.run([*base, "fig2"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    assert not list((tmp_path / "results").rglob("*.tmp-*")) and not list((tmp_path / "results").rglob("*.ckpt*"))
    for t in cfg["figures"]["fig2"]["targets"]:
        for L in cfg["figures"]["fig2"]["depths"]:
            a = st.read_attrs(tmp_path / f"results/fig2/train/{t}/L{L}.zarr")["content_hash"]
            assert a == st.read_attrs(work / f"results/fig2/train/{t}/L{L}.zarr")["content_hash"], "same config, same arrays"


def test_lint_passes(root, tmp_path):
    p = smk(root, tmp_path, "--configfile", str(root / "config" / "smoke.yaml"), "--lint", check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "good condition" in p.stdout + p.stderr


@pytest.mark.parametrize("mutate,needle", [
    (lambda c: c.update(colour="red"), "'colour' was unexpected"),
    (lambda c: c["figures"]["fig2"]["targets"]["2-local"].update(k=9), "figures.fig2.targets.2-local.k"),
    (lambda c: c["figures"]["fig2"].update(depths=[]), "figures.fig2.depths"),
])
def test_bad_config_fails_before_any_job(root, tmp_path, mutate, needle):
    cfg = yaml.safe_load((root / "config" / "smoke.yaml").read_text())
    mutate(cfg)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    p = smk(root, tmp_path, "--configfile", str(path), check=False)
    assert p.returncode != 0
    assert needle in p.stdout + p.stderr
    assert not (tmp_path / "results").exists(), "no job may run on a bad config"


def test_profile_runs_one_thread_per_job(root):
    prof = yaml.safe_load((root / "workflow" / "profiles" / "default" / "config.yaml").read_text())
    assert set(prof["set-threads"].values()) == {1}
