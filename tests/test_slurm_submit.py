"""SLURM submission without shell expansion: a fake `sbatch` on PATH records what the executor plugin hands it.

With the profile's `slurm-pass-command-as-script`, each job's command goes to sbatch as a script on stdin.  Snakemake
quotes its arguments with Python's repr, which is shell quoting only for values holding no quote, backslash, `$` or
backtick: depthlab refuses those in config values and (under a cluster executor) in the working directory and config
paths, so the rest of the shell's syntax (`;`, `&`, `|`, parentheses, spaces) arrives literally.  (The real one-node cluster test is tests/test_slurm.py.)
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import ROOT

BIN = Path(sys.executable).parent

SBATCH = """#!/bin/sh
# fake sbatch: record the arguments and the script on stdin, answer with a job id
printf '%s\\n' "$@" > "$FAKE_SLURM_LOG/argv.$$"
cat > "$FAKE_SLURM_LOG/stdin.$$"
echo 4242
"""
OTHER = """#!/bin/sh
echo "$0 $*" >> "$FAKE_SLURM_LOG/calls"
case "$0 $*" in *sacct*JobIdRaw*) echo "4242|FAILED";; esac
exit 0
"""


def _fake_slurm(tmp_path: Path) -> tuple[Path, Path, dict]:
    fake, log = tmp_path / "bin", tmp_path / "log"
    for d in (fake, log):
        d.mkdir()
    (fake / "sbatch").write_text(SBATCH)
    for tool in ("sacct", "sacctmgr", "sshare", "squeue", "scontrol", "sinfo", "scancel"):
        (fake / tool).write_text(OTHER)
    for f in fake.iterdir():
        f.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}", "FAKE_SLURM_LOG": str(log),
           "DEPTHLAB_STUDY_PATH": str(ROOT / "docs" / "example_study")}
    return fake, log, env


def _submit(work: Path, env: dict, log: Path, config_path: Path, *config: str, wait: bool = True) -> str:
    """Snakemake on the SLURM profile with the fake sbatch; stops once a job script was submitted (or Snakemake exits)."""
    cmd = [str(BIN / "snakemake"), "-s", str(ROOT / "Snakefile"), "--profile", str(ROOT / "workflow/profiles/slurm"),
           "--workflow-profile", str(ROOT / "workflow/profiles/default"), "--default-resources", "slurm_partition=debug",
           "--configfile", str(config_path), *(("--config", *config) if config else ())]
    p = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 120
    while wait and not list(log.glob("stdin.*")) and time.time() < deadline and p.poll() is None:
        time.sleep(0.2)
    if wait:
        time.sleep(1)
    if p.poll() is None and wait:
        os.killpg(p.pid, signal.SIGKILL)
    try:
        return p.communicate(timeout=120)[0].decode(errors="replace")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)


CONFIG = "results: r\ndevice: cpu\nseed: 0\nstudies:\n  tiny:\n    sizes: [5, 100000000]\n"


def test_a_quote_in_a_config_value_or_the_working_directory_never_reaches_a_job_script(tmp_path):
    """Issue 42 item 1.  The executor puts --config values on the job's command line quoted with Python's repr:
    results=r'$(touch x)' arrives as "results=r'$(touch x)'", whose $(...) the compute node's shell runs.  Such a value
    is refused by the validator before anything is submitted, and so is a working directory holding a quote (it reaches
    the script through --wait-for-files)."""
    fake, log, env = _fake_slurm(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "c.yaml").write_text(CONFIG)
    out = _submit(work, env, log, work / "c.yaml", f"results=r'$(touch {tmp_path}/pwned_value)'", wait=False)
    assert re.search(r"config error at results: .* holds \"'\", which a cluster job's shell could run as code", out), out[-3000:]
    assert not list(log.glob("stdin.*")) and not list(tmp_path.rglob("pwned*"))
    quoted = tmp_path / "it's here"
    quoted.mkdir()
    (quoted / "c.yaml").write_text(CONFIG)
    out = _submit(quoted, env, log, quoted / "c.yaml", wait=False)
    assert "depthlab: the working directory" in out and "holds \"'\"" in out and "reaches the job script's shell" in out, out[-3000:]
    assert not list(log.glob("stdin.*")), "a job was submitted from a working directory holding a quote"
    assert "Traceback" not in out


def test_shell_syntax_in_a_config_value_and_the_config_path_reaches_no_shell(tmp_path):
    fake, log, env = _fake_slurm(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    cfg_dir = work / "c; touch pwned_path & (x)"
    cfg_dir.mkdir()
    (cfg_dir / "c.yaml").write_text(CONFIG)
    value = "r; touch pwned_value | (y) & z"
    out = _submit(work, env, log, cfg_dir / "c.yaml", f"results={value}")
    scripts = sorted(log.glob("stdin.*"))
    assert scripts, out[-3000:]
    assert not list(tmp_path.rglob("pwned*")), "the submit host's shell ran the value"
    for script in scripts:
        argv = (log / script.name.replace("stdin", "argv")).read_text().splitlines()
        assert argv[-1] == "/dev/stdin" and not any(a.startswith("--wrap") for a in argv), argv
        text = script.read_text()
        assert value in text and str(cfg_dir) in text
        # run the script as the compute node's shell would, with the job's program replaced by one that prints its
        # arguments: they arrive literally, and nothing is executed
        lines = text.splitlines()
        program = lines[1].split()[0]
        shown = subprocess.run(["sh", "-c", "\n".join(lines[1:]).replace(program, "printf '%s\\n'", 1)], cwd=work,
                               capture_output=True, text=True)
        args = shown.stdout.splitlines()
        assert f"results={value}" in args, shown.stdout[-2000:] + shown.stderr
        assert str(cfg_dir / "c.yaml") in args
    assert not list(tmp_path.rglob("pwned*")), "the job script's shell ran the value"
    # per-job requests from the spec's estimates (depthlab.plan.job_resources): the 10^8-draw job asks for more memory
    mems = {}
    for argv_file in log.glob("argv.*"):
        argv = argv_file.read_text().splitlines()
        comment = argv[argv.index("--comment") + 1] if "--comment" in argv else ""
        if "tiny_draws" in comment:
            mems[argv[argv.index("--mem") + 1]] = argv
    assert len(mems) == 2, f"two draws jobs with different --mem requests: {sorted(mems)}"
