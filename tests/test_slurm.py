"""The smoke pipeline through a real one-node SLURM cluster on localhost (slurm-wlm + munge, started by the test)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import depthlab.storage as st

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0 or shutil.which("apt-get") is None,
                                reason="needs root and apt-get to bring up a local SLURM cluster")


@pytest.fixture(scope="module")
def cluster():
    p = subprocess.run(["bash", str(ROOT / "tests" / "slurm" / "start_slurm.sh")], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_smoke_figure_runs_through_slurm(cluster, tmp_path):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd = [
        str(BIN / "snakemake"), "-s", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
        "--profile", str(ROOT / "workflow" / "profiles" / "slurm"),
        "--workflow-profile", str(ROOT / "workflow" / "profiles" / "default"),
        "--configfile", str(ROOT / "config" / "smoke.yaml"),
        # this one-node test cluster has no accounting (sacct) and no GPUs: query squeue, ask for no GPU
        "--slurm-status-command", "squeue",
        "--default-resources", "slurm_partition=debug", "runtime=10", "mem_mb=1000", "cpus_per_task=1",
        "--set-resources", *[f"{r}:{k}" for r in ("lrsearch", "train", "sweep", "ntk") for k in ("gpu=0", "mem_mb=1000")],
        "--", "fig2",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log[-6000:]
    submitted = [line for line in log.splitlines() if "has been submitted with SLURM jobid" in line]
    assert len(submitted) >= 14, "every job except the local target rule goes through sbatch"
    assert (tmp_path / "results" / "figures" / "fig2.png").stat().st_size > 0
    a = st.read_attrs(tmp_path / "results" / "fig2" / "train" / "2-local" / "L1.zarr")
    assert a["depthlab_spec"]["stage"] == "train"
