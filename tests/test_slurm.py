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
from helpers import smoke_mori_ueda_fig2

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
        "--default-resources", "slurm_partition=debug", "runtime=10", "mem_mb=1000",
        # a submission asks for at most the node's 2 CPUs (the profile's `cores` is 4): its jobs beyond run in turn
        "--cores", "2", "--configfile", str(cfg_path), "--config", "device=cpu", "--", "mori_ueda_fig2",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log[-6000:]
    # the terminal shows one line per finished job; Snakemake's full output is in <results>/logs/snakemake/
    log += "".join(f.read_text() for f in sorted((tmp_path / "results" / "smoke" / "logs" / "snakemake").glob("*.log")))
    submitted = [line for line in log.splitlines() if "has been submitted with SLURM jobid" in line]
    groups = [line for line in log.splitlines() if "Group job depthlab_stores" in line]
    # issue 40 item 4: the store jobs go as group jobs (the profile packs 2 chains into one sbatch); figures, claims and
    # the index run on this host
    assert 1 <= len(submitted) == len(groups) <= 2, submitted + groups
    assert "localrule figure" in log
    assert (tmp_path / "results" / "smoke" / "mori_ueda" / "figures" / "fig2.png").stat().st_size > 0  # results/<config name>
    rec = st.read_record(tmp_path / "results" / "smoke" / "mori_ueda" / "fig2" / "train" / "2-local" / "L1.zarr")
    assert rec["stage"] == "train" and rec["device"].startswith("cpu")


# ---- issue 41: what a cluster throws at a run ------------------------------------------------------------------------


def _queue() -> list[tuple[str, str, str]]:
    """(job id, state, comment) of every job in the queue."""
    out = subprocess.run(["squeue", "-h", "-o", "%i|%T|%k"], capture_output=True, text=True).stdout
    return [tuple(line.split("|", 2)) for line in out.splitlines() if line.count("|") >= 2]


def _chaos_config(tmp_path: Path) -> Path:
    """Fig. 2 of the smoke config, its nets made long enough to be hit while they run (a budget of 4 000 epochs and no
    early stop: each trains about a minute), into results/chaos."""
    cfg = smoke_mori_ueda_fig2()
    cfg["studies"]["mori_ueda"]["training"].update(max_epochs=4000, loss_threshold=1.0e-12, patience=100000)
    cfg["device"] = "cpu"
    path = tmp_path / "chaos.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.chaos
def test_cancelled_requeued_timed_out_jobs_and_a_killed_submit_host_end_with_the_bits_of_a_local_run(cluster, tmp_path):
    """Issue 41 items 1 and 2 on the one-node cluster, with a fault schedule seeded and printed: `scancel` one running
    training job, `scontrol requeue` another, cut a third's time limit to one minute (SLURM kills it at TIMEOUT and the
    profile's retry resumes it from its checkpoint), then `kill -9` the submit host's Snakemake while jobs are queued or
    running and restart it as the README says.  The restart may submit a second job for a store whose first job still
    runs: the store's lock makes the second wait and keep what the first wrote.  At the end: complete, `audit --strict`
    passes, every store equals a local uninterrupted run's, and no temporary store, checkpoint or lock is left."""
    import random
    import signal

    local = tmp_path / "local"
    local.mkdir()
    cfg_path = _chaos_config(tmp_path)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    base = [str(BIN / "snakemake"), "-s", str(ROOT / "Snakefile"), "--configfile", str(cfg_path)]
    ref = subprocess.run([*base, "--directory", str(local), "--workflow-profile", str(ROOT / "workflow/profiles/default"),
                          "--cores", "2"], capture_output=True, text=True, env=env, timeout=1800)
    assert ref.returncode == 0, ref.stderr[-3000:]
    work = tmp_path / "cluster"
    work.mkdir()
    slurm = [*base, "--directory", str(work), "--profile", str(ROOT / "workflow/profiles/slurm"),
             "--workflow-profile", str(ROOT / "workflow/profiles/default"), "--slurm-status-command", "squeue",
             "--slurm-init-seconds-before-status-checks", "1", "--seconds-between-status-checks", "2",
             "--default-resources", "slurm_partition=debug", "runtime=10", "mem_mb=1000", "--cores", "2", "--jobs", "4",
             "--group-components", "depthlab_stores=1"]
    rng = random.Random(int(os.environ.get("DEPTHLAB_CHAOS_SEED", "11")))
    faults = ["scancel", "requeue", "timelimit"]
    rng.shuffle(faults)
    print(f"\nSLURM chaos schedule: {faults}, then kill -9 of the submit host's Snakemake")
    p = subprocess.Popen(slurm, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    done, t0, hit = [], time.time(), set()
    while faults and p.poll() is None and time.time() - t0 < 1200:
        # store jobs go as group jobs (one chain of Fig. 2's store jobs each): hit one while its nets train
        running = [(j, c) for j, s, c in _queue() if s == "RUNNING" and "depthlab_stores" in c and j not in hit]
        if running:
            job, comment = running[0]
            fault = faults.pop(0)
            hit.add(job)
            cmd = {"scancel": ["scancel", job], "requeue": ["scontrol", "requeue", job],
                   "timelimit": ["scontrol", "update", f"jobid={job}", "TimeLimit=1"]}[fault]
            time.sleep(rng.uniform(5, 15))  # into its training: a checkpoint exists
            r = subprocess.run(cmd, capture_output=True, text=True)
            done.append((round(time.time() - t0), fault, job, comment, r.returncode))
            print(f"  t={done[-1][0]} s: {fault} job {job} ({comment}): exit {r.returncode}")
        time.sleep(1)
    assert not faults, f"the run ended before every fault was dealt: {done}"
    while not any(s in ("RUNNING", "PENDING") for _, s, _ in _queue()) and p.poll() is None:
        time.sleep(1)
    os.killpg(p.pid, signal.SIGKILL)  # the submit host dies; its SLURM jobs go on
    p.wait()
    left_running = [j for j, s, _ in _queue() if s in ("RUNNING", "PENDING")]
    print(f"  t={round(time.time() - t0)} s: kill -9 of Snakemake with {len(left_running)} job(s) still in SLURM: {left_running}")
    subprocess.run([*slurm, "--unlock"], env=env, capture_output=True, check=True)
    again = subprocess.run(slurm, env=env, capture_output=True, text=True, timeout=2400)
    assert again.returncode == 0, again.stdout[-6000:] + again.stderr[-3000:]
    results, ref_results = work / "results" / "chaos", local / "results" / "chaos"
    stores = sorted(results.rglob("*.zarr"))
    assert len(stores) == len(list(ref_results.rglob("*.zarr"))) > 10
    for s in stores:
        rel = s.relative_to(results)
        assert st.read_record(s)["content_hash"] == st.read_record(ref_results / rel)["content_hash"], rel
    left = [q for q in results.rglob("*") if any(m in q.name for m in (".tmp-", ".old-", ".ckpt", ".zarr.lock"))]
    assert not left, left
    audit = subprocess.run([sys.executable, "-m", "depthlab", "audit", str(results / "claims.md"), "--strict"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert audit.returncode == 0, audit.stderr[-3000:]
    # no store written twice at once: a job that found its store's lock held waited, then kept what the holder wrote
    logs = "\n".join(q.read_text(errors="replace") for q in (results / "logs").rglob("*.log"))
    print(f"  jobs that waited on a lock: {logs.count('waiting: ')}, kept the holder's store: "
          f"{logs.count('was written by the job that held its lock')}; {len(stores)} stores equal to the local run's; "
          f"{round(time.time() - t0)} s in all")
