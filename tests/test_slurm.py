"""The smoke pipeline through a real one-node SLURM cluster on localhost (slurm-wlm + munge, started by the test)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import depthlab.storage as st
from helpers import smoke_mori_ueda_fig2, store_versions

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]
DAEMONS = ("munged", "slurmctld", "slurmd")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.name != "posix" or os.geteuid() != 0 or shutil.which("apt-get") is None,
        reason="needs root and apt-get to bring up a local SLURM cluster",
    ),
]


def running(name: str) -> bool:
    return subprocess.run(["pgrep", "-x", name], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def cluster():
    before = {d for d in DAEMONS if running(d)}
    p = subprocess.run(
        ["bash", str(ROOT / "tests" / "slurm" / "start_slurm.sh")], capture_output=True, text=True, timeout=900
    )
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
        str(BIN / "snakemake"),
        "-s",
        str(ROOT / "Snakefile"),
        "--directory",
        str(tmp_path),
        "--profile",
        str(ROOT / "workflow" / "profiles" / "slurm"),
        "--workflow-profile",
        str(ROOT / "workflow" / "profiles" / "default"),
        # this one-node test cluster has no accounting (sacct) and no GPUs: query squeue; `device: cpu` makes the
        # workflow ask for no GPU (store jobs' mem_mb/runtime come from their specs: depthlab.placement.job_resources)
        "--slurm-status-command",
        "squeue",
        "--slurm-init-seconds-before-status-checks",
        "1",
        "--seconds-between-status-checks",
        "2",
        "--default-resources",
        "slurm_partition=debug",
        "runtime=10",
        "mem_mb=1000",
        # a submission asks for at most the node's 2 CPUs (the profile's `cores` is 4): its jobs beyond run in turn
        "--cores",
        "2",
        "--configfile",
        str(cfg_path),
        "--config",
        "device=cpu",
        "--",
        "mori_ueda_fig2",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log[-6000:]
    # the terminal shows one line per finished job; Snakemake's full output is in <results>/logs/snakemake/
    log += "".join(f.read_text() for f in sorted((tmp_path / "results" / "smoke" / "logs" / "snakemake").glob("*.log")))
    submitted = [line for line in log.splitlines() if "has been submitted with SLURM jobid" in line]
    groups = [line for line in log.splitlines() if "Group job depthlab_stores" in line]
    # the store jobs go as group jobs (the profile packs 2 chains into one sbatch); figures, claims and
    # the index run on this host
    assert 1 <= len(submitted) == len(groups) <= 2, submitted + groups
    assert "localrule figure" in log
    assert (
        tmp_path / "results" / "smoke" / "mori_ueda" / "figures" / "fig2.png"
    ).stat().st_size > 0  # results/<config name>
    rec = st.read_record(tmp_path / "results" / "smoke" / "mori_ueda" / "fig2" / "train" / "2-local" / "L1.zarr")
    assert rec["stage"] == "train" and rec["device"].startswith("cpu")


# ---- what a cluster throws at a run ------------------------------------------------------------------------


def _queue() -> list[tuple[str, str, str]]:
    """(job id, state, comment) of every job in the queue."""
    out = subprocess.run(["squeue", "-h", "-o", "%i|%T|%k"], capture_output=True, text=True).stdout
    return [tuple(line.split("|", 2)) for line in out.splitlines() if line.count("|") >= 2]


def _chaos_config(tmp_path: Path) -> Path:
    """Fig. 2 of the smoke config, its nets made long enough to be hit while they run (a budget of 100 000 epochs and no
    early stop: each trains about two minutes, past the one-minute time limit the test sets), into results/chaos."""
    cfg = smoke_mori_ueda_fig2()
    cfg["studies"]["mori_ueda"]["training"].update(max_epochs=100000, loss_threshold=1.0e-30, patience=100000)
    cfg["device"] = "cpu"
    path = tmp_path / "chaos.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _job_state(job: str) -> str:
    """SLURM's state of ``job`` (scontrol keeps a finished job for MinJobAge, 300 s by default); '' once forgotten."""
    out = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True).stdout
    for word in out.split():
        if word.startswith("JobState="):
            return word.split("=", 1)[1]
    return ""


def _incomplete_marks(folder: Path) -> set[str]:
    """The SLURM job ids Snakemake's incomplete marks name ('-' for none), read while jobs the killed run left in SLURM
    may still add or remove marks: a mark or folder that vanishes under the walk, or is half written, is skipped."""
    out = set()
    for top, _dirs, files in os.walk(folder):
        for f in files:
            try:
                out.add(json.loads(Path(top, f).read_text()).get("external_jobid") or "-")
            except (OSError, ValueError, AttributeError):
                continue
    return out


@pytest.mark.chaos
def test_cancelled_requeued_timed_out_jobs_and_a_killed_submit_host_end_with_the_bits_of_a_local_run(cluster, tmp_path):
    """On the one-node cluster, with a fault schedule seeded and printed: `scancel` one running
    store job, `scontrol requeue` another, cut a third's time limit to one minute (SLURM kills it at TIMEOUT and the
    profile's retry resumes it from its checkpoint; the test waits for that retry), then `kill -9` the submit host's
    Snakemake while jobs are queued or running and restart it as the README says.  A job the killed run left in SLURM
    either runs on (a store job that the restart submits again waits on the store's lock and keeps what the first wrote)
    or, started only after the restart, does nothing (depthlab.lock.superseded).  At the end, and again once SLURM's
    queue is empty: complete, `audit --strict` passes, every store equals a local uninterrupted run's, no store was
    written twice from the restart on (each is one file version), and no temporary store, checkpoint or lock is left."""
    import random
    import signal

    local = tmp_path / "local"
    local.mkdir()
    cfg_path = _chaos_config(tmp_path)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("DEPTHLAB_TEST_HOLD", None)
    # every job of the cluster run waits after each checkpoint it writes until the test releases it
    # (depthlab.checkpoint._test_hold), so the faults land on running, resumable jobs whatever the machine's speed
    hold = tmp_path / "hold"
    hold.mkdir()
    held_env = {**env, "DEPTHLAB_TEST_HOLD": str(hold)}
    base = [str(BIN / "snakemake"), "-s", str(ROOT / "Snakefile"), "--configfile", str(cfg_path)]
    t_ref = time.time()
    ref = subprocess.run(
        [
            *base,
            "--directory",
            str(local),
            "--workflow-profile",
            str(ROOT / "workflow/profiles/default"),
            "--cores",
            "2",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert ref.returncode == 0, ref.stderr[-3000:]
    print(f"\nlocal uninterrupted reference run: {time.time() - t_ref:.0f} s")
    work = tmp_path / "cluster"
    work.mkdir()
    slurm = [
        *base,
        "--directory",
        str(work),
        "--profile",
        str(ROOT / "workflow/profiles/slurm"),
        "--workflow-profile",
        str(ROOT / "workflow/profiles/default"),
        "--slurm-status-command",
        "squeue",
        "--slurm-init-seconds-before-status-checks",
        "1",
        "--seconds-between-status-checks",
        "2",
        "--default-resources",
        "slurm_partition=debug",
        "runtime=10",
        "mem_mb=1000",
        "--cores",
        "2",
        "--jobs",
        "4",
        "--group-components",
        "depthlab_stores=1",
    ]
    seed = int(os.environ.get("DEPTHLAB_CHAOS_SEED", "11"))
    rng = random.Random(seed)
    faults = ["scancel", "requeue", "timelimit"]
    rng.shuffle(faults)
    print(f"SLURM chaos schedule (DEPTHLAB_CHAOS_SEED={seed}): {faults}, then kill -9 of the submit host's Snakemake")
    first_log, again_log = (
        open(tmp_path / "first.log", "w"),
        open(tmp_path / "restart.log", "w"),
    )  # files: a full pipe blocks
    p = subprocess.Popen(
        slurm, env=held_env, stdout=first_log, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:  # whatever happens below: the holds are released, both Snakemakes stopped, SLURM's queue emptied
        _chaos(p, slurm, hold, held_env, rng, faults, again_log, tmp_path, work, local)
    finally:
        (hold / "release").touch()
        for proc in (p,):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        subprocess.run(
            ["pkill", "-KILL", "-f", str(work)], capture_output=True
        )  # a restart's Snakemake, if one is left
        subprocess.run(["scancel", "--user", "root"], capture_output=True)
        first_log.close()
        again_log.close()


CHAOS_WAIT_S = 600  # the most any one wait of the chaos test may take before it fails, saying what it waited for


def _wait(what: str, done, t0: float, timeout: float = CHAOS_WAIT_S, proc=None) -> None:
    """Wait until ``done()``; fail naming ``what`` after ``timeout`` seconds, or when ``proc`` (the submit host) ended."""
    start = time.time()
    while not done():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(
                f"the run ended (exit {proc.returncode}) while waiting for {what} (t={time.time() - t0:.0f} s)"
            )
        if time.time() - start > timeout:
            raise AssertionError(
                f"waited {timeout:.0f} s for {what} (t={time.time() - t0:.0f} s); SLURM's queue: {_queue()}"
            )
        time.sleep(1)


def _chaos(p, slurm, hold, held_env, rng, faults, again_log, tmp_path, work, local):
    """The chaos test's faults, kill and restart (see the test), every wait bounded by ``CHAOS_WAIT_S``."""
    import signal

    done, t0, hit, timed = [], time.time(), set(), None

    def say(what: str) -> None:
        print(f"  t={time.time() - t0:.0f} s: {what}")

    while faults and p.poll() is None and time.time() - t0 < 1200:
        # store jobs go as group jobs (one chain of Fig. 2's store jobs each): hit one while its nets train
        running = [(j, c) for j, s, c in _queue() if s == "RUNNING" and "depthlab_stores" in c and j not in hit]
        if running:
            job, comment = running[0]
            fault = faults.pop(0)
            hit.add(job)
            cmd = {
                "scancel": ["scancel", job],
                "requeue": ["scontrol", "requeue", job],
                "timelimit": ["scontrol", "update", f"jobid={job}", "TimeLimit=1"],
            }[fault]
            time.sleep(rng.uniform(5, 15))  # into its training: held at a checkpoint
            r = subprocess.run(cmd, capture_output=True, text=True)
            assert r.returncode == 0, (fault, r.stderr)
            done.append(fault)
            say(f"{fault} job {job} ({comment})")
            if fault == "timelimit":
                timed = job
        time.sleep(1)
    assert not faults, f"the run ended before every fault was dealt: {done}"
    # the time limit must really end the job (TIMEOUT), and the profile's retry be submitted before the submit host dies
    _wait(f"job {timed} to reach its time limit", lambda: _job_state(timed) in ("TIMEOUT", ""), t0, proc=p)
    state = _job_state(timed)
    assert state == "TIMEOUT", (
        f"job {timed} ended {state or 'unseen'}, not at its time limit (it was held: see its log)"
    )
    say(f"job {timed} ended at its time limit (TIMEOUT)")
    # its retry: submitted, running, or pending while held jobs fill the node's cores (DEPTHLAB_CHAOS_SEED=3: the
    # requeued job, held at its checkpoint, and the others held too; waiting for a RUNNING retry never ended there)
    _wait(
        f"the profile's retry of job {timed} to be submitted",
        lambda: any(s in ("RUNNING", "PENDING") and int(j) > int(timed) for j, s, _ in _queue()),
        t0,
        proc=p,
    )
    time.sleep(rng.uniform(20, 30))  # into the retry's training: the restart must wait for it and keep what it writes
    assert p.poll() is None, "the run ended before the submit host could be killed"
    os.killpg(p.pid, signal.SIGKILL)  # the submit host dies; its SLURM jobs go on
    p.wait()
    (hold / "release").touch()  # the held jobs train on; the restart holds nothing
    say(f"released {len(list(hold.glob('held-*')))} hold(s)")
    left = [(j, s) for j, s, _ in _queue() if s in ("RUNNING", "PENDING")]
    say(f"kill -9 of Snakemake with {len(left)} job(s) still in SLURM: {left}")
    results, ref_results = work / "results" / "chaos", local / "results" / "chaos"
    before = store_versions(results)
    marks = sorted(_incomplete_marks(work / ".snakemake" / "incomplete"))
    say(f"SLURM jobs named by Snakemake's incomplete marks: {marks}")
    unlock = subprocess.run([*slurm, "--unlock"], env=held_env, capture_output=True, text=True)
    assert unlock.returncode == 0, unlock.stderr[-3000:]
    print(
        "".join(f"    {line}\n" for line in (unlock.stdout + unlock.stderr).splitlines() if "depthlab:" in line), end=""
    )
    again = subprocess.Popen(
        slurm, env=held_env, stdout=again_log, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    seen: dict[str, set] = {}
    while again.poll() is None or any(s in ("RUNNING", "PENDING", "REQUEUED") for _, s, _ in _queue()):
        # every version of every store from the restart on, until the restart is done and SLURM's queue is empty
        for k, v in store_versions(results).items():
            seen.setdefault(k, set()).add(v)
        if time.time() - t0 > 3600:
            os.killpg(again.pid, signal.SIGKILL)
            raise AssertionError(f"the restart and the jobs left in SLURM did not finish within the hour: {_queue()}")
        time.sleep(0.5)
    again_log.flush()
    out = unlock.stdout + unlock.stderr + (tmp_path / "restart.log").read_text(errors="replace")
    out += "".join(q.read_text(errors="replace") for q in sorted((results / "logs" / "snakemake").glob("*.log")))
    assert again.returncode == 0, out[-6000:]
    say(f"the restart finished and SLURM's queue is empty: {len(seen)} stores")
    stores = sorted(results.rglob("*.zarr"))
    assert len(stores) == len(list(ref_results.rglob("*.zarr"))) > 10
    for s in stores:
        rel = s.relative_to(results)
        assert st.read_record(s)["content_hash"] == st.read_record(ref_results / rel)["content_hash"], rel
    # item 2: from the restart on no store was written twice, and none that was whole at the restart was written again
    final = store_versions(results)
    twice = {k: len(v) for k, v in seen.items() if len(v) > 1}
    assert not twice, f"stores written more than once after the restart: {twice}"
    rewritten = [k for k, v in before.items() if final.get(k) != v]
    assert not rewritten, f"stores whole at the restart written again: {rewritten}"
    left = [
        q for q in results.rglob("*") if any(m in q.name for m in (".tmp-", ".old-", ".adopt-", ".ckpt", ".zarr.lock"))
    ]
    assert not left, left
    audit = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(results / "claims.md"), "--strict"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert audit.returncode == 0, audit.stderr[-3000:]
    logs = "\n".join(q.read_text(errors="replace") for q in (results / "logs").rglob("*.log"))
    jobs = "\n".join(q.read_text(errors="replace") for q in (work / ".snakemake" / "slurm_logs").rglob("*.log"))
    print(
        f"  {len(before)} stores whole at the restart, kept; {len(final) - len(before)} written once after it; "
        f"killed run's jobs cancelled / waited for: {out.count('cancelled ')} / {out.count('waiting for ')} message(s); "
        f"stores it finished and the restart kept: {logs.count('kept, not computed again')}; "
        f"jobs that waited on a lock: {logs.count('waiting: ')}; kept the holder's store: "
        f"{logs.count('was written by the job that held its lock')}; jobs of the killed run that did nothing: "
        f"{jobs.count('this job does nothing')}; jobs resumed from a checkpoint: {logs.count('resumed from checkpoint')}; "
        f"{len(stores)} stores equal to the local run's; {time.time() - t0:.0f} s in all"
    )
