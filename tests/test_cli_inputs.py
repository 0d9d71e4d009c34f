"""each item's probe, failing on the code before the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import BIN, ROOT

DEPTHLAB = [sys.executable, "-m", "depthlab"]


def _run(*args, env=None, cwd=None, timeout=600):
    return subprocess.run(
        [*DEPTHLAB, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


@pytest.mark.parametrize(
    "doc, key",
    [
        ('{"stages": {"x": {"overhead_s": NaN, "rate": 1, "jobs": 1}}}', "not valid JSON"),
        ("{}", "no `stages`"),
        ('{"note": "x"}', "no `stages`"),
        ('{"stages": {"x": {"overhead_s": -1, "rate": 1, "jobs": 1}}}', "stages.x.overhead_s"),
        ('{"stages": {"x": {"overhead_s": 1, "rate": -2, "jobs": 1}}}', "stages.x.rate"),
        ('{"stages": {"x": {"overhead_s": 1, "rate": 1e-300, "jobs": 1}}}', "stages.x.rate"),
        ('{"stages": {"x": {"overhead_s": "3", "rate": 1, "jobs": 1}}}', "stages.x.overhead_s"),
        ('{"stages": {"x": {"overhead_s": 1, "rate": 1, "jobs": 1, "extra": 2}}}', "stages.x.extra"),
        ('{"stages": {"x": [1, 2]}}', "stages.x"),
        ('{"stages": {"x": {"overhead_s": 1, "jobs": 1}}}', "`rate` is missing"),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_a_cost_file_off_its_schema_is_refused_in_one_line_naming_the_key(tmp_path, doc, key):
    """NaN, {} or no `stages` were silently ignored; a negative overhead gave negative core-hours, 1e-300 'inf', and a
    string, an extra key or a list a traceback; a bad package costs.json failed every run."""
    from depthlab.costs import model as cost_model

    f = tmp_path / "costs.json"
    f.write_text(doc)
    with pytest.raises(cost_model.CostsError, match=key.replace("`", ".").replace("(", r"\(")):
        cost_model.load_costs(f)
    p = _run("plan", ROOT / "config" / "smoke.yaml", "--costs", f, "--no-probe")
    assert p.returncode == 2 and "Traceback" not in p.stderr and str(f) in p.stderr, p.stderr[-2000:]
    assert len(p.stderr.strip().splitlines()) == 1


def test_the_packaged_calibrations_follow_their_schema():
    from depthlab.costs import model as cost_model

    assert cost_model.load_costs() and cost_model.validate_costs(
        json.loads(cost_model.COSTS.read_text()), cost_model.COSTS
    )
    if cost_model.COSTS_GPU.is_file():
        cost_model.validate_costs(json.loads(cost_model.COSTS_GPU.read_text()), cost_model.COSTS_GPU)


def test_plan_names_a_missing_results_folder_in_one_line(tmp_path):
    """plan --check /nonexistent and plan --measure FILE ended in tracebacks."""
    (tmp_path / "f.json").write_text("")
    for args in (("--check", "/nonexistent"), ("--measure", tmp_path / "f.json"), ("--measure", tmp_path / "nope")):
        p = _run("plan", *args)
        assert p.returncode == 2 and "Traceback" not in p.stderr and "is not a results folder" in p.stderr, p.stderr


def test_sweep_and_paper_check_refuse_zero_cores_and_a_bad_minute_count(tmp_path):
    """sweep --cores 0 hung (Snakemake waited for a core that never came)."""
    p = _run("sweep", ROOT / "config" / "smoke.yaml", "--set", "seed=1,2", "--cores", "0", "--no-run")
    assert p.returncode == 2 and "at least 1 core" in p.stderr, p.stderr
    p = _run("paper-check", "--max-minutes", "nan", "--out", tmp_path / "pc")
    assert p.returncode == 2 and "finite number of minutes" in p.stderr, p.stderr


def test_paper_check_with_every_stage_skipped_runs_nothing(tmp_path):
    """--max-minutes 0 printed '22 stages, 22 skipped', then started Snakemake with no targets, which built `all`."""
    out = tmp_path / "pc"
    p = _run("paper-check", ROOT / "config" / "paper.yaml", "--max-minutes", "0", "--out", out, cwd=ROOT, timeout=900)
    assert "nothing to run: every stage skipped" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]
    assert "Snakemake ended" not in p.stdout and not (out / "results" / "logs").exists()
    assert (out / "paper-check.md").is_file()


def test_paper_check_says_one_line_when_its_folder_cannot_be_written(tmp_path):
    """paper-check --out on a read-only file system ended in a traceback."""
    ro = tmp_path / "pc"
    (ro / "paper-check.yaml").mkdir(parents=True)  # unwritable as a file, as root too (a read-only mount, say)
    p = _run("paper-check", ROOT / "config" / "paper.yaml", "--max-minutes", "0", "--out", ro, cwd=ROOT, timeout=900)
    assert p.returncode == 2 and "Traceback" not in p.stderr and "cannot write" in p.stderr, p.stderr[-3000:]


def test_a_child_snakemake_finds_depthlab_without_the_venv_on_path(monkeypatch):
    """make paper-check and .venv/bin/depthlab sweep started Snakemake without the venv's bin/ on PATH, so every job
    failed with 'depthlab: command not found'.  The child's PATH starts with this interpreter's folder."""
    from depthlab.sweep import child_env

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    env = child_env()
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    found = subprocess.run(["sh", "-c", "command -v depthlab"], capture_output=True, text=True, env=env)
    assert found.returncode == 0 and found.stdout.strip() == str(BIN / "depthlab")


def test_a_sweep_out_folder_must_be_its_own(tmp_path):
    """--out / wrote at the file system's root; reusing an --out with other values mixed two sweeps."""
    from depthlab import sweep

    cfg = ROOT / "config" / "smoke.yaml"
    with pytest.raises(sweep.SweepError, match="root"):
        sweep.prepare(cfg, "seed=1,2", "/")
    other = tmp_path / "busy"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(sweep.SweepError, match="not a sweep's folder"):
        sweep.prepare(cfg, "seed=1,2", other)
    out = tmp_path / "sw"
    first = sweep.prepare(cfg, "seed=1,2", out)
    sweep.write_configs(first)
    assert sweep.prepare(cfg, "seed=1,2", out).values  # the same sweep again: resumed
    with pytest.raises(sweep.SweepError, match="another sweep"):
        sweep.prepare(cfg, "seed=3,4", out)


def test_a_dry_run_into_a_folder_of_another_config_stops_as_the_real_run_does(tmp_path):
    """N4: a dry run of a second smoke.yaml (other values) into the first one's folder listed 11 jobs and said nothing;
    the real run stops, naming the differing keys.  Now the dry run stops the same way."""
    import yaml

    from depthlab import config as dlc
    from depthlab import folder
    from helpers import smk

    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    res = tmp_path / "results" / "smoke"
    cfg["results"] = str(res)
    a, b = tmp_path / "a" / "smoke.yaml", tmp_path / "b" / "smoke.yaml"
    a.parent.mkdir()
    b.parent.mkdir()
    a.write_text(yaml.safe_dump(cfg))
    folder.claim(res, dlc.validate(yaml.safe_load(a.read_text()), memory=False, source=a), a)
    b.write_text(yaml.safe_dump({**cfg, "seed": 5}))
    p = smk(tmp_path, "--configfile", str(b), "-n", check=False)
    assert p.returncode != 0 and "differs from it at: seed" in p.stdout + p.stderr, (p.stdout + p.stderr)[-3000:]
