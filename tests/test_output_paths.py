"""Every command and script option that writes where a user says goes through the same checks (storage.check_user_file
for a file, storage.check_output_folder for a folder of its own): never the file system's root, never inside a run's
results folder, no folders created outside one; refused in one line before any work, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers import snapshot

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def _results_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / ".depthlab.config.json").write_text("{}")
    return path


def test_paper_check_refuses_an_out_that_leads_to_the_root_or_into_a_run(tmp_path):
    link = tmp_path / "LINK"
    link.symlink_to("/")
    before = sorted(p.name for p in Path("/").iterdir())
    p = _run(["-m", "depthlab", "paper-check", str(ROOT / "config" / "paper.yaml"), "--out", str(link)], tmp_path)
    assert p.returncode == 2 and "root" in p.stderr and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert sorted(q.name for q in Path("/").iterdir()) == before
    run = _results_folder(tmp_path / "run")
    p = _run(["-m", "depthlab", "paper-check", str(ROOT / "config" / "paper.yaml"), "--out", str(run / "pc")], tmp_path)
    assert p.returncode == 2 and "results folder" in p.stderr, p.stderr[-2000:]
    assert sorted(q.name for q in run.iterdir()) == [".depthlab.config.json"]


def test_plan_calibrate_and_publish_run_never_replace_a_file_of_a_run(smoke_run, tmp_path):
    built = snapshot(smoke_run.results)
    report = smoke_run.results / "mori_ueda" / "claims.md"
    p = _run(["-m", "depthlab", "plan", "--calibrate", str(smoke_run.results), "--costs", str(report)], tmp_path)
    assert p.returncode != 0 and "inside the results folder" in (p.stdout + p.stderr), p.stdout + p.stderr[-2000:]
    p = _run(
        [str(ROOT / "docs" / "publish_run.py"), str(smoke_run.results), str(smoke_run.config_path), str(report)],
        tmp_path,
    )
    assert p.returncode != 0 and "inside the results folder" in p.stderr, p.stderr[-2000:]
    p = _run(
        [
            "-m",
            "depthlab",
            "plan",
            "--calibrate",
            str(smoke_run.results),
            "--costs",
            str(tmp_path / "no" / "such" / "costs.json"),
        ],
        tmp_path,
    )
    assert p.returncode != 0 and "does not exist" in (p.stdout + p.stderr) and "Traceback" not in p.stderr
    assert snapshot(smoke_run.results) == built


@pytest.mark.parametrize(
    "argv",
    [
        ["benchmarks/search_halving.py", "--stores", "{run_parent}", "--config", "config/smoke.yaml"],
        ["benchmarks/search_halving.py", "--out", "{tmp}/a/b/c/d.json", "--config", "config/smoke.yaml"],
        ["benchmarks/step_vs_stack.py", "--out", "{tmp}/a/b.json", "--config", "config/smoke.yaml"],
        ["benchmarks/step_vs_stack.py", "--out", "{run}/t.json", "--config", "config/smoke.yaml"],
    ],
)
def test_the_benchmarks_outputs_are_checked_before_any_work(tmp_path, argv):
    parent = tmp_path / "X"
    run = _results_folder(parent / "pruned")  # X/pruned is a run's folder: --stores X would replace its stores
    args = [a.format(run_parent=parent, tmp=tmp_path, run=run) for a in argv]
    p = _run([str(ROOT / args[0]), *args[1:]], ROOT, timeout=120)
    assert p.returncode != 0 and "error:" in p.stderr and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert not (tmp_path / "a").exists()
    assert sorted(q.name for q in run.iterdir()) == [".depthlab.config.json"]


def test_paper_check_with_every_stage_skipped_exits_non_zero_and_says_why(tmp_path):
    p = _run(
        [
            "-m",
            "depthlab",
            "paper-check",
            str(ROOT / "config" / "paper.yaml"),
            "--out",
            str(tmp_path / "pc"),
            "--max-minutes",
            "0",
        ],
        tmp_path,
    )
    assert p.returncode == 1 and "nothing was checked" in p.stderr, p.stdout[-2000:] + p.stderr[-2000:]


def test_a_fifo_as_a_benchmark_file_is_never_opened(tmp_path):
    import os
    import sys as _sys

    from depthlab import papercheck

    fifo = tmp_path / "job.tsv"
    os.mkfifo(fifo)
    assert papercheck._tsv(fifo) == (None, None)  # read_text would block here for ever
    _sys.path.insert(0, str(ROOT / "docs"))
    try:
        import publish_run
    finally:
        _sys.path.pop(0)
    assert publish_run._seconds(fifo) is None
    huge = tmp_path / "huge.tsv"
    huge.write_text("s\th:m:s\n1e308\t0\n")
    assert publish_run._seconds(huge) is None  # "inf core-min" no more


@pytest.mark.parametrize("factor", ["nan", "-1", "1", "inf"])
def test_plan_check_refuses_a_factor_that_is_not_a_finite_ratio_above_one(tmp_path, factor):
    p = _run(["-m", "depthlab", "plan", "--check", str(tmp_path), "--factor", factor], tmp_path)
    assert p.returncode == 2 and "--factor" in p.stderr and "Traceback" not in p.stderr, p.stderr
