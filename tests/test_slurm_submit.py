"""SLURM submission without shell expansion: a fake `sbatch` on PATH records what the executor plugin hands it.

With the profile's `slurm-pass-command-as-script`, each job's command goes to sbatch as a script on stdin, in which
every argument is single-quoted; `$(...)` in a `--config` value or in the config file's path reaches no shell as
code, neither on the submit host nor when the script runs.  (The real one-node cluster test is tests/test_slurm.py.)
"""

from __future__ import annotations

import os
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


def test_dollar_parens_in_a_config_value_and_the_config_path_reach_no_shell(tmp_path):
    fake, log, work = tmp_path / "bin", tmp_path / "log", tmp_path / "work"
    for d in (fake, log, work):
        d.mkdir()
    (fake / "sbatch").write_text(SBATCH)
    for tool in ("sacct", "sacctmgr", "sshare", "squeue", "scontrol", "sinfo", "scancel"):
        (fake / tool).write_text(OTHER)
    for f in fake.iterdir():
        f.chmod(0o755)
    cfg_dir = work / "c$(touch pwned_path)"
    cfg_dir.mkdir()
    (cfg_dir / "c.yaml").write_text("device: cpu\nseed: 0\nstudies:\n  tiny:\n    sizes: [5, 100000000]\n")
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}", "FAKE_SLURM_LOG": str(log),
           "DEPTHLAB_STUDY_PATH": str(ROOT / "docs" / "example_study")}
    cmd = [str(BIN / "snakemake"), "-s", str(ROOT / "Snakefile"), "--profile", str(ROOT / "workflow/profiles/slurm"),
           "--workflow-profile", str(ROOT / "workflow/profiles/default"), "--default-resources", "slurm_partition=debug",
           "--configfile", str(cfg_dir / "c.yaml"), "--config", "results=r$(touch pwned_value)"]
    p = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 120
    while not list(log.glob("stdin.*")) and time.time() < deadline and p.poll() is None:
        time.sleep(0.2)
    time.sleep(1)
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
    out = p.communicate()[0].decode(errors="replace")
    scripts = sorted(log.glob("stdin.*"))
    assert scripts, out[-3000:]
    assert not list(tmp_path.rglob("pwned*")), "the submit host's shell ran the $(...)"
    for script in scripts:
        argv = (log / script.name.replace("stdin", "argv")).read_text().splitlines()
        assert argv[-1] == "/dev/stdin" and not any(a.startswith("--wrap") for a in argv), argv
        text = script.read_text()
        assert "r$(touch pwned_value)" in text and "c$(touch pwned_path)" in text
        # run the script as the compute node's shell would, with the job's program replaced by one that prints its
        # arguments: they arrive literally, and nothing is executed
        lines = text.splitlines()
        program = lines[1].split()[0]
        shown = subprocess.run(["sh", "-c", "\n".join(lines[1:]).replace(program, "printf '%s\\n'", 1)], cwd=work,
                               capture_output=True, text=True)
        args = shown.stdout.splitlines()
        assert "results=r$(touch pwned_value)" in args, shown.stdout[-2000:] + shown.stderr
        assert str(cfg_dir / "c.yaml") in args
    assert not list(tmp_path.rglob("pwned*")), "the job script's shell ran the $(...)"
    # per-job requests from the spec's estimates (depthlab.plan.job_resources): the 10^8-draw job asks for more memory
    mems = {}
    for argv_file in log.glob("argv.*"):
        argv = argv_file.read_text().splitlines()
        comment = argv[argv.index("--comment") + 1] if "--comment" in argv else ""
        if "tiny_draws" in comment:
            mems[argv[argv.index("--mem") + 1]] = argv
    assert len(mems) == 2, f"two draws jobs with different --mem requests: {sorted(mems)}"
