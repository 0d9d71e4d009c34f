"""depthlab sweep: one knob or several over several values, a fork and a run per value sharing every store the
knob does not touch, then one table of claim x value."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest
import yaml

from helpers import ROOT, SHIMS, tool_env
from depthlab import sweep


def test_values_split_on_top_level_commas_only_and_parse_as_yaml():
    assert sweep.split_values("0.1, [1, 2],{a: 1, b: 2}, 'x,y'") == ["0.1", "[1, 2]", "{a: 1, b: 2}", "'x,y'"]
    key, values, written = sweep.parse_set("a.b=0,1.0e-3,[1,2],true")
    assert key == "a.b" and values == [0, 0.001, [1, 2], True] and written == ["0", "1.0e-3", "[1,2]", "true"]
    for bad, say in (
        ("a.b=[1,2", "unclosed bracket"),
        ("a.b=1,,2", "empty value"),
        ("a.b", "KEY=V1,V2"),
        ("a.b=1,1", "given twice"),
        ("a.b=1]", "closing"),
    ):
        with pytest.raises(sweep.SweepError, match=say):
            sweep.parse_set(bad)
    assert sweep.slug(0, "[1, 2]") == "v1-1_2" and sweep.slug(2, "../x") == "v3-x"


def test_a_bad_key_or_value_is_refused_before_anything_is_written(tmp_path):
    cfg = tmp_path / "smoke.yaml"
    cfg.write_text((ROOT / "config" / "smoke.yaml").read_text())
    out = tmp_path / "sw"
    cases = (
        ("studies.spectra.krr.treshold=0.5,0.6", "no key 'treshold'; its keys: d, fit_n_min"),
        ("studies.nosuch.x=1,2", "has no key 'nosuch'"),
        ("results=a,b", "the sweep's to choose"),
        ("studies.spectra.krr.threshold=0.5,abc", "threshold=abc"),
        ("studies.spectra.krr.n_test=10,-3", "n_test=-3"),
    )
    for arg, say in cases:
        p = subprocess.run(
            [sys.executable, "-m", "depthlab", "sweep", str(cfg), "--set", arg, "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert p.returncode == 2 and say in p.stderr and "Traceback" not in p.stderr, (arg, p.stderr)
    assert not out.exists()


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_a_sweep_over_two_values_shares_the_stores_the_knob_does_not_touch_and_tabulates_both(smoke_run, tmp_path):
    cfg = copy.deepcopy(smoke_run.config)
    cfg["results"] = str(smoke_run.results)  # the base: the finished smoke run (read only: the sweep forks from it)
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump(cfg))
    before = cfg["studies"]["spectra"]["krr"]["threshold"]
    key = "studies.spectra.krr.threshold"
    out = tmp_path / "sweep"
    # from a shell without the venv on PATH: the sweep gives its runs the venv's bin/ itself
    bare = {**tool_env(), "PATH": f"{SHIMS}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "depthlab",
            "sweep",
            str(base),
            "--set",
            f"{key}={before},0.5",
            "--out",
            str(out),
            "--cores",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=tmp_path,
        env=bare,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-5000:]
    rec = json.loads((out / "sweep.json").read_text())
    stores = len(list(smoke_run.results.rglob("*.zarr")))
    # what the bump threshold touches: the KRR data, its learning curves and their eigenlearning predictions
    krr = sum(len(list((smoke_run.results / "spectra").glob(f"{stage}/**/*.zarr"))) for stage in ("krr", "theory"))
    first, second = rec["values"]
    assert krr > 0 and first["stores"] == second["stores"] == stores, rec
    assert first["computed"] == 0 and first["shared_with_previous"] == stores, first  # the base's value: all linked
    assert second["computed"] == krr and second["shared_with_previous"] == stores - krr, second  # only those
    # a shared store is one inode in all three folders
    some = next(p for p in sorted(smoke_run.results.rglob("*.zarr")) if "/spectra/" not in str(p)) / "zarr.json"
    rel = some.relative_to(smoke_run.results)
    assert {os.stat(f / rel).st_ino for f in (smoke_run.results, out / f"v1-{before}", out / "v2-0.5")} == {
        some.stat().st_ino
    }
    md = (out / "sweep.md").read_text()
    assert f"| study | claim | subject (figure) | {before} (the config's own) | 0.5 |" in md
    assert f"| the config's own (not swept) | {before} |" in md
    rows = [ln for ln in (out / "sweep.csv").read_text().splitlines()[1:]]
    claims = sum(len(json.loads((smoke_run.results / s / "claims.json").read_text())) for s in cfg["studies"])
    assert len(rows) == 2 * claims  # every claim row of every study, at both values
    assert (out / "sweep.png").read_bytes().startswith(b"\x89PNG")
    assert "computed" in p.stdout and "wrote" in p.stdout
    # run again: nothing to fork, nothing to compute (the runs go on from where they are: done)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "depthlab",
            "sweep",
            str(base),
            "--set",
            f"{key}={before},0.5",
            "--out",
            str(out),
            "--cores",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
        env=tool_env(),
    )
    assert p.returncode == 0 and p.stdout.count("has begun") == 2, p.stdout[-3000:] + p.stderr[-3000:]
    assert "Nothing to be done" in p.stdout + p.stderr
    ran = json.loads((out / "sweep.json").read_text())["values"]
    # --table-only runs nothing and recounts the same stores, computed and shared, keeping each value's run time
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "depthlab",
            "sweep",
            str(base),
            "--set",
            f"{key}={before},0.5",
            "--out",
            str(out),
            "--table-only",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
        env=tool_env(),
    )
    assert p.returncode == 0 and "running" not in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]
    again = json.loads((out / "sweep.json").read_text())["values"]
    assert [(v["stores"], v["computed"], v["shared_with_previous"], v["run_seconds"]) for v in again] == [
        (v["stores"], v["computed"], v["shared_with_previous"], v["run_seconds"]) for v in ran
    ], (again, ran)
    assert again[1]["computed"] == krr and again[1]["run_seconds"] is not None


def _sweep_cli(*extra, out):
    return subprocess.run(
        [sys.executable, "-m", "depthlab", "sweep", str(ROOT / "config" / "smoke.yaml"), *extra, "--no-run"]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=tool_env(),
    )


def _combos(folder):
    return sorted(
        (c["seed"], c["studies"]["mori_ueda"]["lrsearch"]["folds"])
        for c in (yaml.safe_load(f.read_text()) for f in (folder / "configs").glob("*.yaml"))
    )


def test_two_set_options_sweep_their_grid_and_zip_pairs_them(tmp_path):
    """``--set seed=0,1 --set studies.mori_ueda.lrsearch.folds=2,3``: the grid of 2 x 2 combinations, each config with
    both keys set (``--no-run`` lists the 4 commands); with ``--zip`` the 2 pairs; a key given twice, or zipped lists of
    unequal length, are one-line errors before anything is written."""
    sets = ["--set", "seed=0,1", "--set", "studies.mori_ueda.lrsearch.folds=2,3"]
    p = _sweep_cli(*sets, out=tmp_path / "grid")
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("make run CONFIG=") == 4, p.stdout
    assert _combos(tmp_path / "grid") == [(0, 2), (0, 3), (1, 2), (1, 3)]
    p = _sweep_cli(*sets, "--zip", out=tmp_path / "zip")
    assert p.returncode == 0 and p.stdout.count("make run CONFIG=") == 2, p.stdout + p.stderr
    assert _combos(tmp_path / "zip") == [(0, 2), (1, 3)]
    p = _sweep_cli("--set", "seed=0,1", "--set", "studies.mori_ueda.lrsearch.folds=2,3,4", "--zip", out=tmp_path / "z")
    assert p.returncode == 2 and "seed has 2" in p.stderr and "folds has 3" in p.stderr, p.stderr
    p = _sweep_cli("--set", "seed=0,1", "--set", "seed=2", out=tmp_path / "twice")
    assert p.returncode == 2 and "seed: given twice" in p.stderr, p.stderr
    assert not (tmp_path / "z").exists() and not (tmp_path / "twice").exists()


def test_sweep_md_gives_each_combination_with_the_base_values_in_their_own_column(tmp_path):
    from depthlab import sweep, sweep_table

    cfg = tmp_path / "c.yaml"
    cfg.write_text((ROOT / "config" / "smoke.yaml").read_text())
    sw = sweep.prepare(cfg, ["studies.spectra.krr.threshold=0.5,0.7", "seed=0,3"], tmp_path / "sw")
    assert [v.values for v in sw.values] == [
        {"studies.spectra.krr.threshold": t, "seed": s} for t in (0.5, 0.7) for s in (0, 3)
    ]
    key = ("spectra", "B2", "a statement", "krr", "a subject")
    row = {"verdict": "holds", "effect": 0.1, "stderr": 0.01}
    md = sweep_table.markdown(sw, [key], [{key: row}] * 4)
    head = next(line for line in md.splitlines() if line.startswith("| value |"))
    assert "| studies.spectra.krr.threshold | seed |" in head
    own = next(line for line in md.splitlines() if line.startswith("| the config's own"))
    assert f"| {sw.base_values['studies.spectra.krr.threshold']} | {sw.base_values['seed']} |" in own
    assert "| threshold=0.7, seed=3 | 0.7 | 3 |" in md
    # one key: the value the config has is marked in both tables
    one = sweep.prepare(cfg, f"seed={sw.base_values['seed']},7", tmp_path / "sw1")
    md = sweep_table.markdown(one, [key], [{key: row}] * 2)
    assert md.count("(the config's own)") == 2
