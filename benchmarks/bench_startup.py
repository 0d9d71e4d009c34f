"""A pipeline job's start-up, side by side: ``python benchmarks/bench_startup.py [--reps 5]``.

Builds Mori & Ueda's Fig. 1 on the smoke config in a scratch folder (data, lr search, training, NTK, figure: 9 jobs),
then reruns one job of each of those stages, writing to a fresh output each time, with two entry points alternated:

- ``gc on``: ``depthlab.cli:main`` called directly, the collector on throughout (the entry point before 2026-11-23);
- ``launcher``: the ``depthlab`` command (``depthlab._launch``): the collector off while the job's modules load,
  then ``gc.freeze()`` and back on for the job itself.

It prints each stage's median wall time per job on both sides and their ratio.  At smoke scale a job is mostly
start-up (imports of torch, xarray, zarr, matplotlib), so the difference is what every job of every run saves.

Threads: every job runs with torch pinned to 1 thread (``--threads 1``) and ``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and ``NUMBA_NUM_THREADS`` set to 1, one job at a time.
Speeds are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_workflow import PINNED, ROOT, _snakemake_cmd, tool_env  # noqa: E402

from depthlab import outputs  # noqa: E402

TARGET = "results/mori_ueda/figures/fig1.png"
SIDES = {
    "gc on": [sys.executable, "-c", "import sys; sys.argv[0] = 'depthlab'; from depthlab.cli import main; main()"],
    "launcher": [str(Path(sys.executable).parent / "depthlab")],
}


def _jobs(work: Path) -> dict[str, list[str]]:
    """One ``depthlab stage`` argument list per stage of the target's jobs (from a forced dry run's shell commands)."""
    cmd = [
        str(Path(sys.executable).parent / "snakemake"),
        *_snakemake_cmd(
            "config/smoke.yaml", str(work), 1, ["--dry-run", "--printshellcmds", "--forceall", "--", TARGET]
        ),
    ]
    cmd.remove("--quiet")
    out = subprocess.run(cmd, cwd=ROOT, env=tool_env(PINNED), capture_output=True, text=True, check=True).stdout
    jobs: dict[str, list[str]] = {}
    for line in out.splitlines():
        line = line.strip().removeprefix("Shell command:").strip()
        if line.startswith("depthlab stage "):
            args = shlex.split(line.split(" > ")[0])[1:]
            spec = json.loads(args[args.index("--spec") + 1])
            jobs.setdefault(spec["stage"], args)
    return jobs


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python benchmarks/bench_startup.py", description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="runs of each job on each side (default: %(default)s)")
    ap.add_argument("--out", default="results/bench/bench_startup.json")
    args = ap.parse_args(argv)
    try:  # before any work
        outputs.bench_file(args.out)
    except outputs.OutputRefused as e:
        raise SystemExit(f"error: {e}") from None
    print("threads: every job 1 (torch, BLAS, numba pinned); one job at a time", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="depthlab-bench-startup-") as scratch:
        work = Path(scratch)
        build = [
            str(Path(sys.executable).parent / "snakemake"),
            *_snakemake_cmd("config/smoke.yaml", str(work), 2, ["--", TARGET]),
        ]
        subprocess.run(build, cwd=ROOT, env=tool_env(PINNED), capture_output=True, text=True, check=True)
        for stage, job in sorted(_jobs(work).items()):
            o = job.index("--output") + 1
            suffix = ".zarr" if job[o].endswith(".zarr") else ""
            times: dict[str, list[float]] = {side: [] for side in SIDES}
            for _r in range(args.reps):
                for side, entry in SIDES.items():
                    scratch_out = work / "results" / "_bench" / f"{stage}{suffix}"
                    shutil.rmtree(scratch_out.parent, ignore_errors=True)
                    scratch_out.parent.mkdir(parents=True)
                    run = [*entry, *job[:o], str(scratch_out.relative_to(work)), *job[o + 1 :]]
                    t = time.perf_counter()
                    subprocess.run(run, cwd=work, env=tool_env(PINNED), capture_output=True, text=True, check=True)
                    times[side].append(time.perf_counter() - t)
            med = {side: statistics.median(v) for side, v in times.items()}
            rows.append({"stage": stage, "reps": args.reps, "median_s": med, "ratio": med["gc on"] / med["launcher"]})
            print(
                f"  {stage:<9} gc on {med['gc on']:5.2f} s   launcher {med['launcher']:5.2f} s   "
                f"ratio {med['gc on'] / med['launcher']:.2f}x   saved {med['gc on'] - med['launcher']:.2f} s per job",
                flush=True,
            )
    if not rows:
        raise SystemExit("no `depthlab stage` command found in the dry run's output")
    total = {side: sum(r["median_s"][side] for r in rows) for side in SIDES}
    print(
        f"  sum over stages: gc on {total['gc on']:.2f} s, launcher {total['launcher']:.2f} s, "
        f"ratio {total['gc on'] / total['launcher']:.2f}x",
        flush=True,
    )
    outputs.write_bench(json.dumps({"target": TARGET, "stages": rows, "sum_s": total}, indent=1), args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
