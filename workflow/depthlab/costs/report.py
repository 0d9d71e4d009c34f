"""What a config costs, as a table: ``depthlab plan CONFIG`` (rows, render) and ``plan --check`` (the model against
a finished run's measured times, per stage)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..placement import cpu_is_faster
from .calibrate import figure_input_seconds, tsv_seconds, measurements
from .model import (
    COSTS,
    COSTS_GPU,
    GPU_TIMED,
    StageCost,
    calls_of,
    fallback_rate,
    gpu_calibration,
    load_costs,
    point_seconds,
    predict,
    spec_seconds,
    stage_cost,
)


def figure_work(study: Any, config: dict, figure: str) -> int:
    """A figure job's work in the cost model: the stores it reads (a figure's time is its start-up, matplotlib and
    seaborn, plus the reading and plotting of each input: 3.3 s + 0.2 s per store on the smoke run's 28 figures)."""
    return len(study.figure_inputs(config, figure))


def output_seconds(
    costs: dict[str, StageCost], study: str, kind: str, config: dict, figure: str | None = None
) -> float:
    """The planned seconds of a study's figure job (``kind`` 'figure': by the stores it reads) or its claims job
    ('claims'), as the run's ETA plans them."""
    from ..studies import get_study

    st = get_study(study)
    work = float(figure_work(st, config, figure)) if kind == "figure" else 0.0
    return predict(stage_cost(costs, f"{study}/{st.kind_stage(kind).name}"), work)


@dataclass
class Row:
    study: str
    stage: str
    jobs: int
    missing: int | None
    peak_bytes: int
    seconds_max: float
    seconds_total: float
    seconds_missing: float
    calibrated: bool
    gpu: str = "CPU stage"  # 'CPU stage', 'device: cpu', 'not measured', 'measured', 'extrapolated' or 'modelled'
    gpu_seconds_max: float = 0.0
    gpu_seconds_total: float = 0.0
    auto_cpu: int = (
        0  # jobs that run on the CPU under device: auto, the calibrations predicting it faster (cpu_is_faster)
    )
    gpu_hours_auto: float = (
        0.0  # GPU seconds of the jobs that take a GPU under device: auto (the others run on the CPU)
    )
    cpu_hours_auto: float = 0.0  # ... and CPU seconds of the ones that run on the CPU instead


def plan(
    config: dict,
    costs: dict[str, StageCost] | None = None,
    results: str | Path | None = None,
    gpu_costs: dict[str, StageCost] | None = None,
    speed: float = 1.0,
    throughput: str | Path | None = None,
    per_job: dict[str, float] | None = None,
) -> list[Row]:
    """Every study's stages: jobs, peak memory, CPU seconds (times ``speed``, this machine's probe over the
    calibration's: depthlab.probe) and the GPU column (``throughput``: the GPU throughput model's file; default the
    package's, see gpumodel.load).  ``per_job``, when given, gets each job's planned CPU seconds under a key that
    names what the job computes: a store job's path and spec, a figure or claims job's study section of the config
    (so two configs' keys differ exactly where a job would run again)."""
    from ..config import device_of
    from ..jobs import JobGraph
    from ..studies import get_study

    graph = JobGraph(config)
    costs = load_costs() if costs is None else costs
    gpu_costs = gpu_calibration()[0] if gpu_costs is None else gpu_costs
    fallback = fallback_rate(costs)
    gpu_fallback = fallback_rate(gpu_costs)
    root = Path(results if results is not None else config["results"])
    rows = []
    for name in sorted(config["studies"]):
        study = get_study(name)
        for st in study.stages:
            key = f"{name}/{st.name}"
            cost = stage_cost(costs, key)
            if st.kind == "store":
                nodes = graph.stage(name, st.name)
                specs = [n.spec for n in nodes]
                there = [(root / n.path).exists() for n in nodes]
            else:
                n = len(study.figures(config)) if st.kind == "figure" else 1
                specs, there = (
                    [None] * n,
                    [(root / name / "claims.md").exists()] * n
                    if st.kind == "claims"
                    else [(root / name / "figures" / f"{f}.png").exists() for f in study.figures(config)],
                )
            works = (
                [float(figure_work(study, config, f)) for f in study.figures(config)]
                if st.kind == "figure"
                else [s.work() if s is not None else 0.0 for s in specs]
            )
            calls = [calls_of(s) if s is not None else 0.0 for s in specs]
            secs = [
                speed * (spec_seconds(cost, s, fallback) if s is not None else predict(cost, w, fallback, n))
                for s, w, n in zip(specs, works, calls)
            ]
            if per_job is not None:
                section = json.dumps(config["studies"][name], sort_keys=True, default=str)
                names = (
                    [f"{n.path}\0{s.to_json()}" for n, s in zip(nodes, specs)]
                    if st.kind == "store"
                    else [f"{key}/{f}\0{section}" for f in (study.figures(config) if st.kind == "figure" else [""])]
                )
                per_job.update(zip(names, secs))
            modelled = not cost.calibrated or (cost.rate is None and any(cost.beyond(w) for w in works))
            peak = max((sum(s.memory().values()) for s in specs if s is not None), default=0)
            row = Row(
                name,
                st.name,
                len(specs),
                sum(not t for t in there),
                peak,
                max(secs, default=0.0),
                sum(secs),
                sum(x for x, t in zip(secs, there) if not t),
                not modelled,
            )
            if st.gpu and device_of(config, name) == "cpu":
                row.gpu = "device: cpu"
            elif (
                st.gpu and specs and st.step and (key not in gpu_costs or any(gpu_costs[key].beyond(w) for w in works))
            ):
                # the batched trainer's stacks beyond the sizes the GPU calibration timed: priced from their own
                # shapes (depthlab.gpumodel), not grown from the start-up-bound smoke and default jobs; within those
                # sizes the calibration's measured times stand (the branch below)
                from .. import gpumodel

                tp = gpumodel.load(throughput)
                over = gpu_costs[key].overhead_s if key in gpu_costs else stage_cost(gpu_costs or costs, key).overhead_s
                share = cost.fraction if cost.rate else 1.0  # the share of the budget its nets trained (calibration)
                gsecs = []
                for s in specs:
                    shape, epochs = s.gpu_shape()
                    gsecs.append(gpumodel.job_seconds(tp, gpumodel.Shape(**shape), share * epochs, over))
                row.gpu_seconds_max, row.gpu_seconds_total = max(gsecs, default=0.0), sum(gsecs)
                row.gpu = "throughput model"
                row.gpu_hours_auto = row.gpu_seconds_total
            elif st.gpu and key not in gpu_costs:
                row.gpu = "not measured"
            elif st.gpu:
                g = gpu_costs[key]
                gsecs = [predict(g, w, gpu_fallback, n) for w, n in zip(works, calls)]
                row.gpu_seconds_max, row.gpu_seconds_total = max(gsecs, default=0.0), sum(gsecs)
                beyond = any(g.beyond(w) for w in works)
                row.gpu = ("modelled" if g.rate is None else "extrapolated") if beyond else "measured"
                on_cpu = [
                    device_of(config, name) == "auto" and cpu_is_faster(name, st.name, w, costs, gpu_costs, n)
                    for w, n in zip(works, calls)
                ]
                row.auto_cpu = sum(on_cpu)
                row.gpu_hours_auto = sum(g_ for g_, c in zip(gsecs, on_cpu) if not c)
                row.cpu_hours_auto = sum(x for x, c in zip(secs, on_cpu) if c)
            rows.append(row)
    return rows


def _dur(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def _gpu_cell(r: Row) -> str:
    if r.gpu in GPU_TIMED:
        return f"{_dur(r.gpu_seconds_max)} / {_dur(r.gpu_seconds_total)} ({r.gpu})" + (
            f"; auto: {'all' if r.auto_cpu == r.jobs else r.auto_cpu} on the CPU" if r.auto_cpu else ""
        )
    return r.gpu


def render(rows: list[Row], config_name: str, gpu_device: str = "", gpu_note: str = "") -> str:
    from .. import memory

    lines = [
        f"plan for {config_name} (one CPU core per job; cost model calibrated in {COSTS.name}):",
        "",
        f"{'study':<13}{'stage':<15}{'jobs':>6}{'to run':>8}{'peak mem (largest job)':>24}{'CPU: largest job':>18}"
        f"{'CPU: all jobs':>15}{'CPU: to run':>13}  GPU: largest job / all jobs",
    ]
    for r in rows:
        lines.append(
            f"{r.study:<13}{r.stage:<15}{r.jobs:>6}{r.missing:>8}{memory.gib(r.peak_bytes) if r.peak_bytes else '-':>24}"
            f"{_dur(r.seconds_max):>18}{_dur(r.seconds_total):>15}{_dur(r.seconds_missing):>13}  {_gpu_cell(r)}"
            + ("" if r.calibrated else "  (CPU rate modelled: not measured for this stage)")
        )
    lines.append("")
    for study in sorted({r.study for r in rows}):
        tot = sum(r.seconds_total for r in rows if r.study == study)
        miss = sum(r.seconds_missing for r in rows if r.study == study)
        lines.append(
            f"{study:<13} {sum(r.jobs for r in rows if r.study == study):>5} jobs  {tot / 3600:8.2f} core-hours"
            f"  (to run: {miss / 3600:.2f})"
        )
    tot = sum(r.seconds_total for r in rows)
    cores = os.cpu_count() or 1
    lines.append(
        f"{'total':<13} {sum(r.jobs for r in rows):>5} jobs  {tot / 3600:8.2f} core-hours  (to run: "
        f"{sum(r.seconds_missing for r in rows) / 3600:.2f}); about {_dur(tot / cores)} of wall time on this "
        f"machine's {cores} cores if every core stays busy"
    )
    lines.append(
        "Runtimes are per job on one CPU core; a training stage charges each net the share of its epoch budget"
    )
    lines.append(
        "that its nets trained in the calibration's runs (`trained: plan` in --check), so a run whose nets stop"
    )
    lines.append("earlier or later than those finishes sooner or later.")
    gpu = [r for r in rows if r.gpu in GPU_TIMED]
    if gpu:
        if gpu_device:
            lines.append(f"GPU: per job, for the stages that can use one, from {COSTS_GPU.name}: {gpu_device}.")
            lines.append(f"  How it was measured: {gpu_note}.")
        else:
            lines.append(
                "GPU: no calibration measured on a GPU is installed, so only the stages the throughput model "
                "prices have a GPU runtime."
            )
        lines.append(
            f"  These {sum(r.jobs for r in gpu)} jobs: {sum(r.gpu_seconds_total for r in gpu) / 3600:.2f} job-hours "
            f"on the GPU against {sum(r.seconds_total for r in gpu) / 3600:.2f} on one CPU core each; under "
            f"device: auto (the jobs the calibrations time faster on one core run there) "
            f"{sum(r.gpu_hours_auto for r in gpu) / 3600:.2f} GPU job-hours and "
            f"{sum(r.cpu_hours_auto for r in gpu) / 3600:.2f} CPU core-hours."
        )
        lines.append(
            "  'measured': jobs of that stage and size were timed on the GPU. 'extrapolated': some jobs are over 10x"
        )
        lines.append(
            "  the largest timed, and a GPU's throughput grows with the job while the fitted rate does not, so"
        )
        lines.append(
            "  these are upper bounds (README, 'GPU'). 'modelled': the rate is the median of the timed stages'."
        )
        lines.append(
            "  'throughput model': the batched trainer's stacks priced from their shapes (depthlab.gpumodel: matmul"
        )
        lines.append(
            "  rate by width, per-step launches shared by the stack), fitted to timed points at the papers' own"
        )
        lines.append(
            "  shapes (workflow/depthlab/gpu_points.json, or a GPU run's gpu_throughput.json), times the share of"
        )
        lines.append("  the budget the calibration's nets trained.")
        lines.append("  A job's time on a shared GPU depends on how many jobs share it. 'CPU stage': runs on the CPU")
        lines.append(
            "  whatever the device. 'auto: N on the CPU': under device: auto, N jobs whose measured GPU time is"
        )
        lines.append(
            "  above their time on one CPU core (small nets: a GPU step costs more than the arithmetic) ask for"
        )
        lines.append("  no GPU and run on the CPU; `device: cuda` keeps them on the GPU.")
        lines.append("  Locally at most as many GPU jobs run at once as GPUs are found (--resources gpu=N sets it).")
    else:
        lines.append("GPU: no calibration measured on a GPU is installed, so no GPU runtime is estimated.")
    return "\n".join(lines)


@dataclass
class Check:
    stage: str  # 'study/stage', or '*/figure', '*/claims'
    jobs: int
    predicted_s: float
    measured_s: float
    fraction_planned: float = 1.0  # the share of the epoch budgets the calibration charges this stage's jobs
    fraction_run: float | None = None  # ... and the share this run's jobs trained (None: their stores do not say)

    @property
    def ratio(self) -> float:
        return self.predicted_s / self.measured_s if self.measured_s > 0 else math.inf

    def within(self, factor: float) -> bool:
        return 1 / factor <= self.ratio <= factor


def check(results: str | Path, costs: dict[str, StageCost] | None = None, speed: float = 1.0) -> list[Check]:
    """Per stage of a finished run: the cost model's predicted core-seconds for the jobs it ran (times ``speed``, the
    run's probe over the calibration's) against the seconds its ``benchmarks/**.tsv`` measured (one core per job, so
    wall seconds are core-seconds)."""
    costs = load_costs() if costs is None else costs
    fallback = fallback_rate(costs)
    out = []
    for key, pts in sorted(measurements(results).items()):
        c = stage_cost(costs, key)
        known = [(p[0], p[2]) for p in pts if p[2] is not None]
        budget = sum(w for w, _ in known)
        out.append(
            Check(
                key,
                len(pts),
                speed * sum(point_seconds(c, p, fallback) for p in pts),
                sum(p[1] for p in pts),
                c.fraction if c.rate else 1.0,
                sum(w * f for w, f in known) / budget if known and budget > 0 else None,
            )
        )
    if not out:
        raise SystemExit(f"no measured jobs under {results} (benchmarks/**.tsv of a finished run)")
    return out


def render_check(
    rows: list[Check], results: str, costs_name: str, factor: float = 2.0, studies: list[Check] | None = None
) -> str:
    """The table of :func:`check`, each stage marked when its prediction is off by more than ``factor``.  'trained':
    the share of the epoch budgets the plan charged the stage's jobs (learned from the calibration's stores), and the
    share this run's stores record ('-': they do not say).  ``studies`` (:func:`check_studies`): the same per study."""
    lines = [
        f"predicted ({costs_name}) vs measured ({results}) core-minutes per stage; '!' = off by more than {factor:g}x",
        "",
        f"{'stage':<26}{'jobs':>6}{'predicted':>12}{'measured':>12}{'pred/meas':>11}{'trained: plan':>15}{'run':>7}",
    ]
    for r in rows:
        run = f"{r.fraction_run:.2f}" if r.fraction_run is not None else "-"
        lines.append(
            f"{r.stage:<26}{r.jobs:>6}{r.predicted_s / 60:>12.1f}{r.measured_s / 60:>12.1f}{r.ratio:>11.2f}"
            f"{r.fraction_planned:>15.2f}{run:>7}" + ("" if r.within(factor) else "  !")
        )
    p, m = sum(r.predicted_s for r in rows), sum(r.measured_s for r in rows)
    n_off = sum(not r.within(factor) for r in rows)
    lines += [
        "",
        f"{'total':<26}{sum(r.jobs for r in rows):>6}{p / 60:>12.1f}{m / 60:>12.1f}{p / m if m else math.inf:>11.2f}",
        f"{len(rows) - n_off} of {len(rows)} stages within {factor:g}x",
    ]
    if studies:
        lines += [
            "",
            f"{'study (its figures and claims too)':<36}{'jobs':>6}{'predicted':>12}{'measured':>12}{'pred/meas':>11}",
        ]
        for r in studies:
            lines.append(
                f"{r.stage:<36}{r.jobs:>6}{r.predicted_s / 60:>12.1f}{r.measured_s / 60:>12.1f}{r.ratio:>11.2f}"
                + ("" if r.within(factor) else "  !")
            )
        lines.append(f"{sum(r.within(factor) for r in studies)} of {len(studies)} studies within {factor:g}x")
    return "\n".join(lines)


def check_studies(
    results: str | Path, rows: list[Check], costs: dict[str, StageCost] | None = None, speed: float = 1.0
) -> list[Check]:
    """:func:`check`'s rows summed per study, each study's figures and claims counted with it (their benchmark files lie
    under ``benchmarks/<study>/``): the goal is every study within 15 %."""
    from ..fork import forked_benchmarks

    costs = load_costs() if costs is None else costs
    fallback = fallback_rate(costs)
    results = Path(results)
    forked = forked_benchmarks(results)
    out: dict[str, list[float]] = {}
    for r in rows:
        study = r.stage.split("/")[0]
        if study != "*":
            acc = out.setdefault(study, [0, 0.0, 0.0])
            acc[0] += r.jobs
            acc[1] += r.predicted_s
            acc[2] += r.measured_s
    for kind, key in (("figures/*.tsv", "*/figure"), ("claims.tsv", "*/claims")):
        c = stage_cost(costs, key)
        for tsv in sorted(results.glob(f"benchmarks/*/{kind}")):
            if str(tsv.relative_to(results)) in forked:
                continue
            secs = tsv_seconds(tsv)
            study = tsv.relative_to(results / "benchmarks").parts[0]
            if secs is None or study not in out:
                continue
            work = figure_input_seconds(results, tsv) if key == "*/figure" else 0.0
            acc = out[study]
            acc[0] += 1
            acc[1] += speed * predict(c, work, fallback)
            acc[2] += secs
    return [Check(k, int(v[0]), v[1], v[2]) for k, v in sorted(out.items())]
