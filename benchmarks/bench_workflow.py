"""The workflow's own overhead, side by side: ``python benchmarks/bench_workflow.py [--config config/smoke.yaml]``.

Runs the same pipeline from scratch twice (each in its own scratch folder, same cores), once with Snakemake's
scheduler as shipped (``DEPTHLAB_STOCK_SCHEDULER=1``) and once with depthlab's coalesced re-evaluations
(:mod:`depthlab.scheduler`), and prints for each the CPU seconds of the Snakemake process itself (its
``RUSAGE_SELF``: every thread of it, none of the jobs it runs), the number of scheduler passes, the wall
time, and the ratios.  It also times a dry run of ``--dry-config`` (every job planned, nothing built).

Threads: every job runs with torch, BLAS and numba pinned to 1 thread (the profile's ``set-threads: 1`` and
``DEPTHLAB_THREADS=1``; ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and
``NUMBA_NUM_THREADS`` are set to 1 for every process); Snakemake runs ``--cores`` jobs at a time.
Speeds are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from depthlab import outputs

ROOT = Path(__file__).resolve().parents[1]
# A `scontrol` that fails at once: where slurm-wlm is installed with no controller running, the SLURM plugin's probe
# would otherwise add ~9 s to every Snakemake start (tests/shims/scontrol).
SHIMS = ROOT / "tests" / "shims"
PINNED = {
    k: "1"
    for k in ("DEPTHLAB_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
}

# Runs Snakemake's CLI in this process, counts the scheduler's passes and writes the process's own CPU time at exit.
_WRAPPER = r"""
import atexit, json, resource, sys, time
out = sys.argv.pop(1)
t0 = time.perf_counter()
passes = [0]
try:
    from snakemake.scheduling import job_scheduler as _js
    _orig = _js.JobScheduler.job_selector
    def _counted(self, jobs):
        passes[0] += 1
        return _orig(self, jobs)
    _js.JobScheduler.job_selector = _counted
except Exception:  # another Snakemake: no pass count
    passes[0] = None
def _write():
    r = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, "w") as f:
        json.dump({"cpu_s": r.ru_utime + r.ru_stime, "wall_s": time.perf_counter() - t0, "passes": passes[0]}, f)
atexit.register(_write)
sys.argv[0] = "snakemake"
from snakemake.cli import main
main()
"""


def tool_env(extra: dict | None = None) -> dict:
    """The environment of a Snakemake launch: the venv's tools on PATH, the SLURM probe shim first."""
    path = f"{SHIMS}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, **(extra or {}), "PATH": path}


def _snakemake_cmd(config: str, workdir: str, cores: int, extra: list[str]) -> list[str]:
    return [
        "-s",
        str(ROOT / "Snakefile"),
        "--directory",
        workdir,
        "--workflow-profile",
        str(ROOT / "workflow/profiles/default"),
        "--configfile",
        str(ROOT / config),
        "--cores",
        str(cores),
        "--quiet",
        *extra,
    ]


def run_once(config: str, cores: int, stock: bool) -> dict:
    env = tool_env(PINNED)
    env.pop("DEPTHLAB_STOCK_SCHEDULER", None)
    if stock:
        env["DEPTHLAB_STOCK_SCHEDULER"] = "1"
    with tempfile.TemporaryDirectory(prefix="depthlab-bench-wf-") as scratch:
        out = Path(scratch) / "usage.json"
        work = Path(scratch) / "work"
        work.mkdir()
        cmd = [sys.executable, "-c", _WRAPPER, str(out), *_snakemake_cmd(config, str(work), cores, [])]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"snakemake failed ({'stock' if stock else 'coalesced'}):\n{proc.stderr[-4000:]}")
        jobs = (
            sum(1 for _ in (work / "results" / "benchmarks").rglob("*.tsv"))
            if (work / "results" / "benchmarks").exists()
            else None
        )
        res = json.loads(out.read_text())
    res.update(scheduler="stock" if stock else "coalesced", jobs_benchmarked=jobs)
    return res


def dry_run(config: str) -> float:
    with tempfile.TemporaryDirectory(prefix="depthlab-bench-dry-") as scratch:
        cmd = [str(Path(sys.executable).parent / "snakemake"), *_snakemake_cmd(config, scratch, 1, ["--dry-run"])]
        t = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, env=tool_env(), capture_output=True, text=True, check=True)
        return time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python benchmarks/bench_workflow.py", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--config", default="config/smoke.yaml", help="config run from scratch, twice (default: %(default)s)"
    )
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument(
        "--dry-config", default="config/config.yaml", help="config whose dry run is timed (default: %(default)s)"
    )
    ap.add_argument("--out", default="results/bench/bench_workflow.json")
    args = ap.parse_args(argv)
    try:  # before any work
        outputs.bench_file(args.out)
    except outputs.OutputRefused as e:
        raise SystemExit(f"error: {e}") from None
    print(
        f"threads: every job 1 (torch, BLAS, numba pinned); {args.cores} jobs at a time; config {args.config}",
        flush=True,
    )
    rows = []
    for stock in (True, False):
        r = run_once(args.config, args.cores, stock)
        rows.append(r)
        print(
            f"  {r['scheduler']:<9}  Snakemake process CPU {r['cpu_s']:7.1f} s  scheduler passes {r['passes']}  "
            f"wall {r['wall_s']:6.1f} s  jobs {r['jobs_benchmarked']}",
            flush=True,
        )
    stock, ours = rows
    ratio_cpu = stock["cpu_s"] / ours["cpu_s"]
    ratio_wall = stock["wall_s"] / ours["wall_s"]
    print(f"  stock / coalesced: Snakemake CPU {ratio_cpu:.2f}x, wall {ratio_wall:.2f}x", flush=True)
    dry = dry_run(args.dry_config)
    print(f"  dry run of {args.dry_config}: {dry:.2f} s", flush=True)
    outputs.write_bench(
        json.dumps(
            {
                "config": args.config,
                "cores": args.cores,
                "runs": rows,
                "cpu_ratio": ratio_cpu,
                "wall_ratio": ratio_wall,
                "dry_run_config": args.dry_config,
                "dry_run_s": dry,
            },
            indent=1,
        )
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
