"""SIGTERM, as `timeout`, `scancel` or a batch system's time limit sends it: a stage unwinds (no output lock, no temporary
store left; its checkpoint stays for the next run), and a command that runs Snakemake (sweep, paper-check) passes the
signal on and waits, so no Snakemake runs on unattended."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from depthlab import storage as st
from depthlab.provenance import canonical_json

ROOT = Path(__file__).resolve().parents[1]


def _wait(cond, proc: subprocess.Popen, timeout: float = 120) -> None:
    end = time.time() + timeout
    while not cond():
        assert proc.poll() is None, "the process ended first: " + (proc.stderr.read() if proc.stderr else "")[-2000:]
        assert time.time() < end, "timed out"
        time.sleep(0.02)


def test_a_terminated_stage_leaves_no_lock_and_no_temporary_store_and_keeps_its_checkpoint(smoke_run, tmp_path):
    rec = st.read_record(smoke_run.results / "mori_ueda/fig2/train/2-local/L2.zarr")
    spec = copy.deepcopy(rec["spec"])
    spec["training"].update(max_epochs=3000, patience=None, loss_threshold=1e-12)  # long enough to be caught running
    inputs = {k: str(smoke_run.results / v["path"]) for k, v in rec["inputs"].items()}
    out = tmp_path / "L2.zarr"
    cmd = [
        sys.executable,
        "-m",
        "depthlab",
        "stage",
        "--spec",
        canonical_json(spec),
        "--inputs",
        canonical_json(inputs),
        "--output",
        str(out),
        "--results",
        str(tmp_path),
        "--device",
        "cpu",
    ]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ckpt = Path(f"{out}.ckpt")
    _wait(ckpt.exists, p)
    assert Path(f"{out}.lock").exists()
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=60) == 128 + signal.SIGTERM
    left = sorted(q.name for q in tmp_path.iterdir())
    assert not Path(f"{out}.lock").exists() and not out.exists(), left
    assert all(n.startswith("L2.zarr.ckpt") and ".tmp-" not in n for n in left), left
    assert ckpt.is_file()


CHILD = """
import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(120)
"""

PARENT = """
import sys
sys.path.insert(0, {workflow!r})
from depthlab.sweep import run_child
run_child([sys.executable, "-c", {child!r}, {pidfile!r}], dict(__import__("os").environ))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purpose (it has exited); /proc says which
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False


def test_a_terminated_sweep_or_paper_check_passes_the_signal_to_its_snakemake(tmp_path):
    """``run_child`` is how sweep and paper-check run Snakemake; here its child stands in for Snakemake."""
    pidfile = tmp_path / "child.pid"
    code = textwrap.dedent(PARENT.format(workflow=str(ROOT / "workflow"), child=CHILD, pidfile=str(pidfile)))
    p = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    _wait(lambda: pidfile.exists() and pidfile.read_text().strip(), p)
    child = int(pidfile.read_text())
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 128 + signal.SIGTERM
    end = time.time() + 10
    while _alive(child) and time.time() < end:
        time.sleep(0.05)
    assert not _alive(child), "the child ran on after its parent was terminated"


def test_sweep_and_paper_check_run_snakemake_through_run_child():
    for mod in ("sweep", "papercheck"):
        text = (ROOT / "workflow" / "depthlab" / f"{mod}.py").read_text()
        assert "run_child(cmd" in text and "subprocess.run(cmd" not in text, mod


def test_a_watched_command_may_run_long_while_it_progresses_and_is_killed_only_when_it_stalls(tmp_path):
    """The suite's Snakemake launches (helpers.smk, the shared smoke run among them) are limited by progress, not by
    total time: a command that keeps printing runs past its stall limit three times over; one that goes quiet is
    killed after the limit."""
    from helpers import run_watched

    busy = [sys.executable, "-c", "import time\nfor i in range(12):\n    print(i, flush=True); time.sleep(0.25)"]
    p = run_watched(busy, env=dict(os.environ), stall=1.0, poll=0.1)
    assert p.returncode == 0 and p.stdout.split() == [str(i) for i in range(12)]
    quiet = [sys.executable, "-c", "import time; print('start', flush=True); time.sleep(60)"]
    t = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired, match="no progress|timed out"):
        run_watched(quiet, env=dict(os.environ), stall=1.0, poll=0.1)
    assert time.monotonic() - t < 30
    # files written below the watched folder count as progress too
    writer = [
        sys.executable,
        "-c",
        f"import time, pathlib\nfor i in range(8):\n    pathlib.Path({str(tmp_path)!r}, f'f{{i}}').write_text('x'); "
        "time.sleep(0.3)",
    ]
    assert run_watched(writer, env=dict(os.environ), stall=1.0, poll=0.1, watch=tmp_path).returncode == 0
