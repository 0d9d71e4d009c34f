"""Issue 41 item 3: a run killed again and again, at moments drawn from a seeded schedule, ends with the bits of an
uninterrupted run.

A subset of the smoke config runs from scratch; a watcher polls the results folder every few milliseconds and
SIGKILLs the whole Snakemake process group when the scheduled moment comes: while a store is being written (its
``.tmp-`` folder exists), while it is being consolidated (its temporary ``zarr.json`` already carries the consolidated
metadata), while a figure is written, while a study's claims are written, and finally while the claims index is.
After each kill the README's recovery (``--unlock``, then the run again) goes on.  At the end: the run is complete,
``depthlab audit --strict`` passes, every store's content hash equals the same job's in the uninterrupted smoke run, and
no temporary store, checkpoint or lock is left.  The schedule is printed (seeded): a failure can be replayed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers import BIN, ROOT, tool_env

import depthlab.storage as st

pytestmark = [pytest.mark.slow, pytest.mark.chaos]

KINDS = ("store", "consolidation", "figure", "claims")
SEED = int(os.environ.get("DEPTHLAB_CHAOS_SEED", "7"))
K = 11


def _moment(results: Path, kind: str) -> str | None:
    """The path that says the moment ``kind`` is now, or None."""
    if not results.is_dir():
        return None
    for dirpath, dirnames, filenames in os.walk(results):
        here = Path(dirpath)
        for d in dirnames:
            if ".zarr.tmp-" not in d:
                continue
            if kind == "store":
                return str(here / d)
            if kind == "consolidation":  # the last thing written before the temporary store is renamed into place
                try:
                    cm = json.loads((here / d / "zarr.json").read_text()).get("consolidated_metadata")
                except (OSError, ValueError):
                    continue
                if isinstance(cm, dict) and cm.get("metadata"):
                    return str(here / d / "zarr.json")
        for f in filenames:
            if ".tmp-" not in f:
                continue
            if kind == "figure" and here.name == "figures":
                return str(here / f)
            if kind == "claims" and f.startswith("claims.") and here != results:
                return str(here / f)
            if kind == "index" and f.startswith("claims.") and here == results:
                return str(here / f)
    return None


def test_a_run_killed_at_eleven_seeded_moments_ends_with_the_bits_of_an_uninterrupted_run(smoke_run, tmp_path):
    cfg = json.loads(json.dumps(smoke_run.config))
    mu = cfg["studies"]["mori_ueda"]
    mu["figures"] = {k: v for k, v in mu["figures"].items() if k in ("fig2", "fig1")}
    cfg["studies"] = {"mori_ueda": mu, "spectra": cfg["studies"]["spectra"]}
    cfg["results"] = "results/smoke"  # the smoke run's own folder name, so stores compare path for path
    path = tmp_path / "chaos.yaml"
    path.write_text(yaml.safe_dump(cfg))
    results = tmp_path / "results" / "smoke"
    base = [str(BIN / "snakemake"), "-s", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
            "--workflow-profile", str(ROOT / "workflow" / "profiles" / "default"), "--cores", "2", "--configfile", str(path)]
    env = tool_env()
    rng = random.Random(SEED)
    schedule = [rng.choice(KINDS) for _ in range(K - 1 - len(KINDS))] + list(KINDS)
    rng.shuffle(schedule)
    schedule.append("index")  # the index is written last: its kill comes last
    print(f"\nchaos schedule (seed {SEED}): {schedule}")
    reached = []
    t0 = time.time()
    for i, kind in enumerate(schedule):
        p = subprocess.Popen(base, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        hit = None
        while p.poll() is None:
            hit = _moment(results, kind)
            if hit:
                time.sleep(rng.uniform(0.0, 0.02))  # somewhere inside that moment
                os.killpg(p.pid, signal.SIGKILL)
                break
            time.sleep(0.003)
        p.wait()
        reached.append((kind, Path(hit).relative_to(tmp_path).as_posix() if hit else "finished before it came",
                        round(time.time() - t0, 1)))
        print(f"  kill {i + 1}: {reached[-1]}")
        subprocess.run([*base, "--unlock"], env=env, capture_output=True, check=True)
    done = subprocess.run(base, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    killed = {k for k, what, _ in reached if what != "finished before it came"}
    assert killed >= {"store", "figure", "claims", "index"}, reached
    # every store has the bits of the uninterrupted smoke run's same job; nothing half-done is left
    stores = sorted(results.rglob("*.zarr"))
    assert len(stores) > 20
    for s in stores:
        rel = s.relative_to(results)
        assert st.read_record(s)["content_hash"] == st.read_record(smoke_run.results / rel)["content_hash"], rel
    left = [p for p in results.rglob("*") if any(m in p.name for m in (".tmp-", ".old-", ".ckpt", ".lock"))
            and p.name != ".depthlab.lock"]
    assert not left, left
    audit = subprocess.run([sys.executable, "-m", "depthlab", "audit", str(results / "claims.md"), "--strict"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert audit.returncode == 0, audit.stderr[-3000:]
    print(f"chaos: {len(schedule)} kills in {time.time() - t0:.0f} s, moments reached {sorted(killed)}, {len(stores)} stores "
          f"equal to the uninterrupted run's")
