"""Every command and script option that writes where a user says goes through the same checks (outputs.user_file
for a file, outputs.user_folder for a folder of its own): never the file system's root, never inside a run's
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


# ---- every option that writes, found by walking the parsers ----------------------------------------------------------
#
# Each option of the CLI's parsers and of the scripts' (benchmarks/*.py, docs/*.py) is listed once: as a writer, with the
# command that must refuse it, or as one that writes nothing at a path its user names.  A new option is unknown until it
# is listed, so a writer cannot be added without its refusal being tested.

WRITERS = {  # (parser, option): (file or folder, argv; {run}: a results folder, {link}: a link to /)
    ("depthlab diff", "--markdown"): ("file", ["-m", "depthlab", "diff", "{run}", "{run}", "--markdown", "{run}/d.md"]),
    ("depthlab diff", "--plot"): ("file", ["-m", "depthlab", "diff", "{run}", "{run}", "--plot", "{run}/d.png"]),
    ("depthlab compare", "--markdown"): (
        "file",
        ["-m", "depthlab", "compare", "{run}", "{run}", "--markdown", "{run}/c.md"],
    ),
    ("depthlab fork", "new"): (
        "file",
        ["-m", "depthlab", "fork", "config/smoke.yaml", "{run}/new.yaml", "--set", "seed=1"],
    ),
    ("depthlab decide", "--out"): (
        "file",
        ["-m", "depthlab", "decide", "{smoke}", "--out", "{run}/d.yaml", "--no-fork"],
    ),
    ("depthlab sweep", "--out"): (
        "folder",
        ["-m", "depthlab", "sweep", "config/smoke.yaml", "--set", "seed=0,1", "--out", "{link}"],
    ),
    ("depthlab paper-check", "--out"): (
        "folder",
        ["-m", "depthlab", "paper-check", "config/paper.yaml", "--out", "{link}"],
    ),
    ("depthlab plan", "--costs"): (
        "file",
        ["-m", "depthlab", "plan", "--calibrate", "{run}", "--costs", "{run}/c.json"],
    ),
    ("benchmarks/bench.py", "--out"): ("file", ["benchmarks/bench.py", "--quick", "--out", "{run}/b.json"]),
    ("benchmarks/bench_startup.py", "--out"): ("file", ["benchmarks/bench_startup.py", "--out", "{run}/b.json"]),
    ("benchmarks/bench_workflow.py", "--out"): ("file", ["benchmarks/bench_workflow.py", "--out", "{run}/b.json"]),
    ("benchmarks/paper_rates.py", "--out"): ("file", ["benchmarks/paper_rates.py", "--out", "{run}/b.json"]),
    ("benchmarks/paper_rates.py", "--points-out"): (
        "file",
        ["benchmarks/paper_rates.py", "--points-out", "{run}/p.json"],
    ),
    ("benchmarks/portable_kernels.py", "--out"): ("file", ["benchmarks/portable_kernels.py", "--out", "{run}/b.json"]),
    ("benchmarks/search_halving.py", "--out"): ("file", ["benchmarks/search_halving.py", "--out", "{run}/b.json"]),
    ("benchmarks/search_halving.py", "--stores"): ("folder", ["benchmarks/search_halving.py", "--stores", "{link}"]),
    ("benchmarks/step_vs_stack.py", "--out"): ("file", ["benchmarks/step_vs_stack.py", "--out", "{run}/b.json"]),
    ("benchmarks/fractal_step.py", "--out"): ("file", ["benchmarks/fractal_step.py", "--out", "{run}/b.json"]),
    ("docs/publish_run.py", "OUT"): ("file", ["docs/publish_run.py", "{run}", "config/smoke.yaml", "{run}/claims.md"]),
}
RUNS_OWN = {
    ("depthlab stage", "--output"),
    ("depthlab index", "--output"),
    ("depthlab snapshot", "--output"),
}  # the rules'
NO_PARSER = {  # scripts that read sys.argv themselves: what each argument is
    "docs/publish_run.py": "RESULTS CONFIG (read), OUT (written: WRITERS)",
    "docs/compare_searches.py": "two results folders, read; prints",
    "docs/rejudge.py": "two results folders and a config, read; prints",
    "docs/verdict_table.py": "a claims.md, read; prints",
    "docs/explore.py": "no arguments: a notebook script that reads $DEPTHLAB_CONFIG's folder",
}
WRITES_NOTHING = {
    "depthlab where": ("config",),
    "depthlab targets": ("config",),
    "depthlab stage": ("--spec", "--inputs", "--results", "--threads", "--device"),
    "depthlab index": ("--inputs", "--results", "--scale"),
    "depthlab snapshot": ("--config-json",),
    "depthlab audit": ("target", "--configfile", "--strict", "--reproduce", "--job", "--seed"),
    "depthlab validate": ("config",),
    "depthlab diff": ("a", "b", "--json", "--fail-on-change", "--plot-every-row"),
    "depthlab fork": ("base", "--set"),
    "depthlab decide": ("run", "--budget", "--study", "--no-fork"),
    "depthlab sweep": ("config", "--set", "--zip", "--cores", "--no-run", "--table-only"),
    "depthlab compare": ("runs",),
    "depthlab paper-check": ("config", "--cores", "--max-minutes"),
    "depthlab ls": ("results", "--config"),
    "depthlab plan": (
        "config",
        "--results",
        "--calibrate",
        "--check",
        "--no-probe",
        "--use-probe",
        "--factor",
        "--gpu-costs",
        "--measure",
    ),
    "depthlab fingerprint": ("study", "stage"),
    "depthlab neutral": ("base", "--config", "--cores", "--keep"),  # writes only into a temporary folder of its own
    "benchmarks/fractal_step.py": ("--reps", "--steps", "--widths", "--check-every"),
    "benchmarks/bench.py": (
        "--quick",
        "--device",
        "--skip-ntk",
        "--skip-trainer",
        "--ntk-n",
        "--ntk-threads",
        "--skip-previous",
        "--skip-pipeline",
        "--skip-compiled",
        "--only-compiled",
    ),
    "benchmarks/bench_startup.py": ("--reps",),
    "benchmarks/bench_workflow.py": ("--config", "--cores", "--dry-config"),
    "benchmarks/eta_replay.py": ("results", "config", "--costs", "--jobs", "--cores"),
    "benchmarks/fractal_stop_replay.py": ("results", "--growth", "--budget"),
    "benchmarks/paper_rates.py": ("--config", "--seconds", "--grid-seconds", "--no-grid", "--max-gib"),
    "docs/config_reference.py": ("--check",),  # it writes config/README.md, the checkout's own file, never a user's
    "benchmarks/portable_kernels.py": ("--repeat",),
    "benchmarks/search_halving.py": ("--config", "--jobs", "--workers", "--halving"),
    "benchmarks/step_vs_stack.py": ("--config", "--figure", "--target", "--stacks", "--epochs"),
}


class _Parsed(Exception):
    def __init__(self, parser):
        self.parser = parser


def _options(parser, name: str, out: set) -> None:
    import argparse

    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub, p in a.choices.items():
                _options(p, f"{name} {sub}", out)
        elif not isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
            out.add((name, a.option_strings[0] if a.option_strings else a.dest))


def test_every_option_of_every_parser_is_known_to_write_or_not(monkeypatch):
    import argparse
    import contextlib
    import io
    import runpy

    def parsed(self, args=None, namespace=None):
        raise _Parsed(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parsed)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", parsed)
    found: set = set()
    from depthlab import cli

    with pytest.raises(_Parsed) as got:
        cli.main(["where"])
    _options(got.value.parser, "depthlab", found)
    scripts = sorted(p.relative_to(ROOT).as_posix() for d in ("benchmarks", "docs") for p in (ROOT / d).glob("*.py"))
    for script in scripts:
        if script in NO_PARSER:
            continue
        monkeypatch.setattr(sys, "argv", [script])
        with pytest.raises(_Parsed) as got, contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(str(ROOT / script), run_name="__main__")
        _options(got.value.parser, script, found)
    listed = {k for k in WRITERS if k[0] not in NO_PARSER} | RUNS_OWN
    listed |= {(p, o) for p, opts in WRITES_NOTHING.items() for o in opts}
    assert found - listed == set(), "options nobody has said whether they write: list them in WRITERS or WRITES_NOTHING"
    assert listed - found == set(), "listed options that no parser has"
    assert set(NO_PARSER) <= set(scripts)


@pytest.mark.parametrize("writer", sorted(WRITERS), ids=lambda w: f"{w[0]} {w[1]}".replace("/", "."))
def test_every_writer_refuses_a_run_folder_and_the_root_before_any_work(request, tmp_path, writer):
    """A file into a run's results folder, a folder through a link to /: refused (rc != 0) with one line naming the
    option, no traceback, nothing written there or at the root."""
    kind, argv = WRITERS[writer]
    run = _results_folder(tmp_path / "run")
    link = tmp_path / "link"
    link.symlink_to("/")
    root = sorted(q.name for q in Path("/").iterdir())
    smoke = request.getfixturevalue("smoke_run").results if "{smoke}" in argv else None  # decide needs a finished run
    args = [a.format(run=run, link=link, smoke=smoke) for a in argv]
    p = _run([args[0] if args[0] == "-m" else str(ROOT / args[0]), *args[1:]], ROOT, timeout=120)
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stdout[-1000:] + p.stderr[-2000:]
    assert len(lines) == 1 and ("results folder" if kind == "file" else "root") in lines[0], p.stderr[-2000:]
    assert sorted(q.name for q in run.iterdir()) == [".depthlab.config.json"]
    assert sorted(q.name for q in Path("/").iterdir()) == root


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


def test_no_writer_writes_into_the_installed_package(tmp_path):
    """plan --calibrate --costs into the package's own costs_gpu.json (the README once said so) would change what every
    later plan prints and mark the checkout dirty: refused, the shipped file untouched."""
    shipped = ROOT / "workflow" / "depthlab" / "costs_gpu.json"
    before = shipped.read_bytes()
    run = _results_folder(tmp_path / "run")
    p = _run(["-m", "depthlab", "plan", "--calibrate", str(run), "--costs", str(shipped)], tmp_path)
    assert p.returncode == 2 and "inside the depthlab package" in p.stderr, p.stderr[-2000:]
    assert shipped.read_bytes() == before
