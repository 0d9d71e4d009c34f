"""Where a job runs and what it asks for: the device rule, a store job's SLURM resources, the scheduler's priorities
and the GPUs a machine offers.  One module for both sides: the workflow's rules (which resources a job asks for) and
the job itself (depthlab.runner: where it runs), so that the two never disagree."""

from __future__ import annotations

import json
import math
import os
from typing import Any

from .config import DEVICES
from .costs.model import (
    StageCost,
    calls_of,
    fallback_rate,
    predict,
    shipped_costs,
    shipped_gpu_costs,
    spec_seconds,
    stage_cost,
)

MAX_RUNTIME_MIN = 7 * 24 * 60  # the longest time limit most SLURM partitions allow


def job_seconds(spec: Any, study: str, stage: str, costs: dict[str, StageCost] | None = None) -> float:
    """A job's predicted seconds on one CPU core (the cost model of ``depthlab plan``)."""
    costs = shipped_costs() if costs is None else costs
    return spec_seconds(stage_cost(costs, f"{study}/{stage}"), spec, fallback_rate(costs))


def job_priority(spec: Any, study: str, stage: str, costs: dict[str, StageCost] | None = None) -> int:
    """A job's own predicted seconds (integer); :func:`chain_priorities` adds what waits on it."""
    return int(job_seconds(spec, study, stage, costs))


def chain_priorities(
    config: dict, graph: Any = None, costs: dict[str, StageCost] | None = None
) -> dict[tuple[str, Any], int]:
    """The scheduler priority of every store job, keyed ``(study, Ref(stage, job))``: its predicted one-core seconds
    plus the largest priority among the store jobs that read its output (the longest predicted chain that starts with
    it).  Of the jobs ready to run, those that head the longest chains start first, so a long job neither starts last
    and runs alone while the other cores idle (in the default run of 94ba28c a wide fractal net ran alone for the last
    25 minutes) nor waits behind short jobs for the few seconds of data set it needs.  ``graph``: the config's
    :class:`depthlab.jobs.JobGraph` (default: a new one)."""
    from .jobs import JobGraph

    graph = JobGraph(config) if graph is None else graph
    costs = shipped_costs() if costs is None else costs
    own = {n.key: job_priority(n.spec, n.study, n.stage, costs) for n in graph}
    total: dict[tuple[str, Any], int] = {}

    def chain(key: tuple[str, Any]) -> int:
        if key not in total:
            node = graph.node(*key)
            total[key] = own[key] + max((chain(r.key) for r in graph.readers(node) if r.key in own), default=0)
        return total[key]

    for key in own:
        chain(key)
    return total


def job_resources(
    spec: Any,
    study: str,
    stage: str,
    gpu: bool,
    device: str,
    attempt: int = 1,
    costs: dict[str, StageCost] | None = None,
    gpu_costs: dict[str, StageCost] | None = None,
) -> dict[str, int]:
    """A job's cluster request from the same estimates as ``depthlab plan``: ``mem_mb`` = 1.5 x the spec's peak-memory
    estimate + 1 GB (Python, torch), ``runtime`` (minutes) = 3 x the one-core estimate, at least 10, both multiplied by
    ``attempt`` (a job killed for time or memory asks for more when it is retried; its checkpoint keeps the work done);
    ``gpu`` = 1 for a stage that can use one unless ``device`` (the config's ``device_by_study`` entry for the study,
    else its ``device``: :func:`depthlab.config.device_of`) is ``cpu``, or is ``auto`` and the GPU calibration says
    this job is slower on the GPU than on one CPU core (:func:`cpu_is_faster`): such a job asks for no GPU and runs
    on the CPU."""
    costs = shipped_costs() if costs is None else costs
    need_mb = sum(spec.memory().values()) / 2**20
    work = spec.work()
    secs = job_seconds(spec, study, stage, costs)
    wants_gpu = (
        gpu
        and device != "cpu"
        and not (device == "auto" and cpu_is_faster(study, stage, work, costs, gpu_costs, calls_of(spec)))
    )
    return {
        "mem_mb": int(math.ceil((1.5 * need_mb + 1000) * attempt)),
        "runtime": int(min(MAX_RUNTIME_MIN, max(10, math.ceil(3 * secs / 60)) * attempt)),
        "gpu": int(wants_gpu),
    }


def cpu_is_faster(
    study: str,
    stage: str,
    work: float,
    costs: dict[str, StageCost] | None = None,
    gpu_costs: dict[str, StageCost] | None = None,
    calls: float = 0.0,
) -> bool:
    """Whether a job of ``work`` in ``study/stage`` is predicted slower on the GPU than on one CPU core, by the two
    calibrations (``costs.json``, ``costs_gpu.json``).  Only where the GPU calibration timed that stage at this size
    (within 10x the largest job it timed): beyond it the GPU estimate is an upper bound (a GPU's throughput grows with
    the job), and a stage it never timed is left to the GPU."""
    costs = shipped_costs() if costs is None else costs
    gpu_costs = shipped_gpu_costs() if gpu_costs is None else gpu_costs
    key = f"{study}/{stage}"
    if key not in gpu_costs or key not in costs:
        return False
    g = gpu_costs[key]
    if g.beyond(work):
        return False
    return predict(g, work, fallback_rate(gpu_costs), calls) > predict(costs[key], work, fallback_rate(costs), calls)


def local_gpus(env: dict | None = None) -> int:
    """GPUs this machine offers its jobs: the entries of $CUDA_VISIBLE_DEVICES when it is set (empty or -1: none),
    else the GPU lines of ``nvidia-smi -L``; 0 when neither answers.  Imports no torch (the workflow asks at start-up)."""
    import subprocess

    env = os.environ if env is None else env
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        return 0 if not ids or ids[0] == "-1" else len(ids)
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(line.startswith("GPU ") for line in p.stdout.splitlines()) if p.returncode == 0 else 0


def job_device(device: str, study: str, gpu_stage: bool, cpu_faster: bool = False) -> str:
    """Where a store job runs: the CPU for a stage that does not declare it can use a GPU (its cluster request asks for
    none, and small models ran slower on one); else the study's entry in $DEPTHLAB_DEVICE_BY_STUDY (the config's
    ``device_by_study``, set by the workflow), else ``device``; and the CPU when that is ``auto`` and the calibrations
    predict this job faster on one CPU core than on the GPU (``cpu_faster``: :func:`cpu_is_faster`, the
    same rule by which the workflow asks no GPU for it)."""
    if not gpu_stage:
        return "cpu"
    raw = os.environ.get("DEPTHLAB_DEVICE_BY_STUDY") or "{}"
    try:
        by_study = json.loads(raw)
    except ValueError:
        by_study = None
    if not isinstance(by_study, dict) or any(v not in DEVICES for v in by_study.values()):
        raise SystemExit(
            f"error: $DEPTHLAB_DEVICE_BY_STUDY must map study names to one of {', '.join(DEVICES)}; got {raw[:200]!r}"
        )
    chosen = by_study.get(study, device)
    return "cpu" if chosen == "auto" and cpu_faster else chosen


def spec_cpu_faster(study: str, spec) -> bool:
    """cpu_is_faster for one job's spec (its stage, work and calls)."""
    return cpu_is_faster(study, spec.STAGE, spec.work(), calls=calls_of(spec))
