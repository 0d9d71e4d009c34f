"""The smoke pipeline through a real one-node SLURM cluster on localhost (slurm-wlm + munge, started by the test)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import depthlab.storage as st

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]
DAEMONS = ("munged", "slurmctld", "slurmd")

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0 or shutil.which("apt-get") is None,
                                 reason="needs root and apt-get to bring up a local SLURM cluster")]


def running(name: str) -> bool:
    return subprocess.run(["pgrep", "-x", name], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def cluster():
    before = {d for d in DAEMONS if running(d)}
    p = subprocess.run(["bash", str(ROOT / "tests" / "slurm" / "start_slurm.sh")], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    yield p.stdout
    # stop what this test started (a cluster that was already up is left as it was found)
    for d in reversed(DAEMONS):
        if d not in before:
            subprocess.run(["pkill", "-x", d], capture_output=True)
    deadline = time.time() + 30
    while any(running(d) for d in DAEMONS if d not in before) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(running(d) for d in DAEMONS if d not in before), "the SLURM daemons this test started must stop"


def test_smoke_figure_runs_through_slurm(cluster, tmp_path):
    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    cfg["studies"] = {"mori_ueda": cfg["studies"]["mori_ueda"]}
    cfg_path = tmp_path / "smoke.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd = [
        str(BIN / "snakemake"), "-s", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
        "--profile", str(ROOT / "workflow" / "profiles" / "slurm"),
        "--workflow-profile", str(ROOT / "workflow" / "profiles" / "default"),
        # this one-node test cluster has no accounting (sacct) and no GPUs: query squeue; `device: cpu` makes the
        # workflow ask for no GPU (store jobs' mem_mb/runtime come from their specs: depthlab.plan.job_resources)
        "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "1",
        "--seconds-between-status-checks", "2",
        "--default-resources", "slurm_partition=debug", "runtime=10", "mem_mb=1000", "cpus_per_task=1",
        "--configfile", str(cfg_path), "--config", "device=cpu", "--", "mori_ueda_fig2",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log[-6000:]
    submitted = [line for line in log.splitlines() if "has been submitted with SLURM jobid" in line]
    assert len(submitted) >= 14, "every job except the local target rule goes through sbatch"
    assert (tmp_path / "results" / "mori_ueda" / "figures" / "fig2.png").stat().st_size > 0
    rec = st.read_record(tmp_path / "results" / "mori_ueda" / "fig2" / "train" / "2-local" / "L1.zarr")
    assert rec["stage"] == "train" and rec["device"].startswith("cpu")
