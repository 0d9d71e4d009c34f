"""Fitting the cost model to what finished runs measured: ``depthlab plan --calibrate RESULTS`` and ``--measure``.

A run's benchmark files (``RESULTS/benchmarks/**.tsv``, one row per job) are matched to the spec each store records;
:func:`fit` gives every stage's constants with its total unbiased; :func:`calibrate` writes them (``costs.json``, or
``costs_gpu.json`` for jobs that ran on CUDA) where the user says, never into the package.  A GPU run's stacks also
refit the throughput model (:mod:`depthlab.gpumodel`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .. import outputs, safeio
from .model import StageCost, calls_of, gpu_calibration, plausible_seconds, shape_seconds


def stores_with_records(results: Path):
    """(store path relative to results, record) of every store below ``results`` with a readable record."""
    from ..records import RecordError, store_record, stores_below

    for study_dir in sorted(p for p in results.iterdir() if p.is_dir() and p.name not in ("logs", "benchmarks")):
        for path in stores_below(study_dir):
            try:
                yield path.relative_to(results), store_record(path)
            except RecordError:
                continue


def tsv_seconds(tsv: Path) -> float | None:
    """The seconds a Snakemake benchmark file recorded (None if it is missing or not a benchmark file); a timing that
    cannot be a job's is refused, naming the file."""
    try:
        head, row = safeio.read_text(tsv, 1 << 20).splitlines()[:2]
        secs = float(dict(zip(head.split("\t"), row.split("\t")))["s"])
    except safeio.UnsafeFile as e:
        raise SystemExit(f"error: {e}") from None
    except (OSError, ValueError, KeyError):
        return None
    return plausible_seconds(secs, str(tsv))


def _trained(path: Path, spec: Any) -> float | None:
    """The share of its planned work a finished store's job really trained (``Spec.trained``); None when its store does
    not say (or cannot be read: the timing still counts, at its whole budget)."""
    from ..storage import open_store
    from ..study import Spec

    if type(spec).trained is Spec.trained:
        return None
    try:
        with open_store(path) as ds:
            f = spec.trained(ds)
    except Exception:
        return None
    return float(f) if f is not None and math.isfinite(f) and f >= 0 else None


def measurements(results: str | Path, devices: set[str] | None = None) -> dict[str, list[tuple]]:
    """{'study/stage': [(work, seconds, trained share or None, calls, shape seconds or None), ...]} from a finished run's
    stores and benchmark files (shape seconds: :func:`depthlab.costs.model.shape_seconds` of the job's whole budget);
    the devices the stores record are added to ``devices`` when given."""
    from ..studies import get_study

    from ..fork import forked_benchmarks

    results = Path(results)
    forked = forked_benchmarks(results)  # a fork's copies of its base's timings: the base measured them, not this run
    out: dict[str, list[tuple[float, float]]] = {}
    for rel, rec in stores_with_records(results):
        tsv = results / "benchmarks" / Path(*rel.parts).with_suffix(".tsv")
        if str(tsv.relative_to(results)) in forked:
            continue
        secs = tsv_seconds(tsv)
        if secs is None:
            continue
        try:
            spec = get_study(rec["study"]).spec_from_dict(rec["spec"])
        except Exception:  # a store from other code: its spec no longer parses
            continue
        if devices is not None:
            devices.add(str(rec.get("device", "unknown")))
        out.setdefault(f"{rec['study']}/{rec['stage']}", []).append(
            (spec.work(), secs, _trained(results / rel, spec), calls_of(spec), shape_seconds(spec))
        )
    for kind in ("figures", "claims"):
        for tsv in results.glob(f"benchmarks/*/{kind}/*.tsv" if kind == "figures" else "benchmarks/*/claims.tsv"):
            if str(tsv.relative_to(results)) in forked:
                continue
            secs = tsv_seconds(tsv)
            if secs is not None:
                work = figure_input_seconds(results, tsv) if kind == "figures" else 0.0
                key = f"*/{'figure' if kind == 'figures' else 'claims'}"
                out.setdefault(key, []).append((work, secs, None, 0.0, None))
    return out


START_UP_CAP_S = 5.0  # a job's fixed cost is its start-up: imports (torch, xarray, zarr) ~3-4 s, reads and writes


def figure_input_seconds(results: Path, tsv: Path) -> float:
    """The number of stores a finished figure read (its provenance record's inputs; 0 when it cannot be read)."""
    rel = tsv.relative_to(results / "benchmarks").with_suffix(".provenance.json")
    try:
        doc = safeio.read_json(results / rel)
        return float(len(doc.get("inputs", {}))) if isinstance(doc, dict) else 0.0
    except (OSError, ValueError, TypeError):
        return 0.0


START_UP_FLOOR_S = 1.0  # ... and at least this where work sets the rest: python, numpy and depthlab's config, ~1 s
TORCH_START_UP_S = 2.5  # the floor of a stage that trains (it can use a GPU): `import torch` alone is ~2 s here
# The machine those three were measured on: its speed probe (depthlab.probe; 2026-11-27).  A calibration on another
# machine scales them by its own probe over this one, since a start-up is seconds of *that* machine: refitted on a
# run whose probe read 0.038 s with the floors unscaled, a smoke training job (1.2-1.5 s there in all) was charged
# 2.5 s of start-up, and the smoke run was planned at 1.56x; scaled, 1.20x (docs/performance.md as of dd4e062: git show dd4e062:docs/performance.md).
START_UP_PROBE_S = 0.066


def fit(points: list[tuple], cap: float = START_UP_CAP_S, floor: float = START_UP_FLOOR_S) -> StageCost:
    """:func:`fit_line`, and where every job has shape seconds (a training stage: the CPU throughput model's seconds of
    its whole budget, :mod:`depthlab.costs.shapes`) the stage's ``shape_factor``: the seconds its jobs took beyond the
    start-up over ``fraction`` x their shape seconds, so that priced by shape the stage's predicted total is its
    measured total too (the ratio of totals: the quasi-Poisson fit of a one-constant proportional model)."""
    line = fit_line(points, cap, floor)
    shaped = [p[4] if len(p) > 4 else None for p in points]
    if not points or any(x is None or x <= 0 for x in shaped):
        return line
    busy = sum(max(0.0, float(p[1]) - line.overhead_s) for p in points)
    line.shape_factor = min(1e6, max(1e-6, busy / (line.fraction * sum(shaped)))) if busy > 0 else 1e-6
    return line


def fit_line(points: list[tuple], cap: float = START_UP_CAP_S, floor: float = START_UP_FLOOR_S) -> StageCost:
    """overhead + call_fraction x calls x call_s + fraction x work / rate, fitted so that a stage's predicted total is
    unbiased.

    ``points``: (planned work, seconds[, trained share[, planned calls]]).  The calls (:func:`calls_of`: a training
    loop's optimiser steps x layers) are the per-step term: a small net's step costs a framework call
    whatever its size, so within a stage its seconds follow its steps, not its arithmetic.  They are scaled by the
    same trained share as the work, and ``call_fraction`` is their calls-weighted share.  A stage without calls (no
    training loop) fits the two constants alone.  Planned work charges every net its whole epoch budget; the
    trained share (``Spec.trained``, from the job's store; None or absent: 1) says how much of it the job really did
    (nets that stop early).  The rate is fitted per unit of work really done, and the stage's ``fraction`` is
    the work-weighted mean share, sum(share x work) / sum(work): the plan charges a job ``fraction`` of its budget, and
    in sample the stage's predicted total is unchanged by the split.

    Runtimes span decades, so each job's squared error is divided by its *predicted* seconds (a quasi-Poisson fit,
    variance proportional to the mean, by iteratively reweighted non-negative least squares).  Its first equation
    makes the relative errors average zero, so neither the many short jobs nor the few long ones dominate.  With
    seconds = a + c * calls + b * work and the constants positive, their weighted sum of the equations reads
    sum(measured - predicted) = 0: in sample, a stage's predicted total is its measured total.
    Dividing by the *measured* seconds instead, as this fit did before, gives the jobs that happened to run short the
    most weight and puts a stage's level near the harmonic mean of its jobs, below their average: its totals came
    out low.  A stage whose work does not vary gets the mean of its runtimes (the same fit with no rate).

    The fixed term is at most ``cap``, a job's start-up: a stage calibrated on jobs that are all large (the
    default's fractal nets, 2-7 minutes each) could otherwise put most of their time into the intercept, and charge a
    smoke-scale job of the same stage minutes it never takes.  Above the cap the rate is refitted with the fixed term
    at the cap, again with the stage's measured total unbiased.  Likewise a stage whose time grows with its work has a
    fixed term of at least ``floor`` (the shipped fit of the Mori & Ueda rate search had 0 s, and planned a smoke-scale
    search at a millisecond: it takes 5 s)."""
    import numpy as np

    budget = np.array([p[0] for p in points], float)
    share = np.array([1.0 if len(p) < 3 or p[2] is None else float(p[2]) for p in points], float)
    planned_calls = np.array([float(p[3]) if len(p) > 3 and p[3] is not None else 0.0 for p in points], float)
    w = budget * share  # the work really done
    k = planned_calls * share  # ... and the calls really made
    fraction = float(w.sum() / budget.sum()) if budget.sum() > 0 else 1.0
    call_fraction = float(k.sum() / planned_calls.sum()) if planned_calls.sum() > 0 else 1.0
    s = np.maximum(np.array([p[1] for p in points], float), 1e-3)
    top = float(budget.max())
    X = np.stack([k, w], axis=1) if k.any() else w[:, None]  # the terms beside the fixed one: [calls,] work

    def cost(a: float, coef: np.ndarray) -> StageCost:
        c, b = (float(coef[0]), float(coef[1])) if X.shape[1] == 2 else (0.0, float(coef[0]))
        return StageCost(
            float(a),
            1 / b if b > 0 else None,
            len(points),
            max_work=top,
            fraction=fraction if b > 0 else 1.0,
            call_s=c,
            call_fraction=call_fraction if c > 0 else 1.0,
        )

    def fixed_at(
        a0: float,
    ) -> StageCost:  # the fixed term set to a0, the rest refitted and scaled to the measured total
        coef = _irls(X, s, a0)
        done = float(X.sum(0) @ coef)
        if done <= 0:  # nothing to fit beyond the fixed term: the work carries the rest, as a rate
            coef = np.zeros(X.shape[1])
            coef[-1], done = 1.0, float(w.sum())
        return cost(a0, coef * (s.sum() - a0 * len(s)) / done)

    if (np.ptp(w) <= 0 and np.ptp(k) <= 0) or len(points) < 3:  # work does not vary: its time is what was measured
        if s.mean() > cap and w.sum() > 0:
            return fixed_at(cap)
        return StageCost(float(s.mean()), None, len(points), max_work=top)
    coef = _irls(np.concatenate([np.ones((len(s), 1)), X], axis=1), s)
    a = coef[0]
    if a > cap and w.sum() > 0 and s.sum() > cap * len(s):
        return fixed_at(cap)
    if a < floor and coef[1:].any() and w.sum() > 0 and s.sum() > floor * len(s):  # ~0 s charged a small job nothing
        return fixed_at(floor)
    return cost(a, coef[1:])


def _irls(X: Any, s: Any, offset: float = 0.0) -> Any:
    """Non-negative coefficients of seconds = offset + X @ coef, each job's squared error divided by its predicted
    seconds (quasi-Poisson; iteratively reweighted, from a flat start)."""
    import numpy as np
    from scipy.optimize import nnls

    mu = np.full_like(s, s.mean())
    coef = np.zeros(X.shape[1])
    for _ in range(100):
        coef, _ = nnls(X / np.sqrt(mu)[:, None], (s - offset) / np.sqrt(mu))
        new = np.maximum(offset + X @ coef, 1e-3)
        done = np.allclose(new, mu, rtol=1e-10, atol=0)
        mu = new
        if done:
            break
    return coef


def default_output(results: list[str | Path], gpu: bool) -> Path:
    """Where a calibration goes without ``--costs``: into the first source's folder (a results folder, or the folder of
    a --measure file), never into the package (that would mark the checkout dirty, and every later store +dirty)."""
    first = Path(results[0])
    folder = first if first.is_dir() else first.parent
    return folder / ("costs_gpu.json" if gpu else "costs.json")


def _floor(key: str) -> float:
    """The least fixed term of a stage's fit: a training stage (one that can use a GPU) imports torch."""
    from ..studies import get_study

    study, _, stage = key.partition("/")
    try:
        return TORCH_START_UP_S if get_study(study).stage(stage).gpu else START_UP_FLOOR_S
    except Exception:  # '*/figure', '*/claims', a study not installed here
        return START_UP_FLOOR_S


def start_up_scale(probe_s: float | None) -> float:
    """What the start-up cap and floors (seconds of the machine whose probe read ``START_UP_PROBE_S``) become on a
    machine whose probe reads ``probe_s``: their ratio (1 without a probe, or with one that cannot be read)."""
    from .. import probe

    return probe.ratio(probe_s, START_UP_PROBE_S)


def _probe_of(sources: list[str | Path]) -> float | None:
    """The median speed probe of the runs behind ``sources``: a results folder's ``logs/probe.json``, or the ``probe_s``
    that ``--measure`` saved with a run's timings (checked: untrusted input; None when none has one)."""
    import statistics

    from .. import probe

    vals = []
    for src in sources:
        if Path(src).is_dir():
            vals += [r["probe_s"] for r in probe.recorded(src)]
            continue
        try:
            v = probe.plausible(safeio.read_json(src).get("probe_s"))
        except (OSError, ValueError, AttributeError):
            continue
        if v is not None:
            vals.append(v)
    return float(statistics.median(vals)) if vals else None


def calibrate(results: list[str | Path], out: str | Path | None = None) -> dict[str, Any]:
    """Fit every stage's constants to the jobs of one or more finished runs (a small and a large scale together pin
    both the start-up and the rate) and write them to ``out`` (default: :func:`default_output`).  The shipped
    calibration is refitted only by naming it (``--costs workflow/depthlab/costs.json``)."""
    from .. import provenance as prov

    data: dict[str, list[tuple[float, float]]] = {}
    devices: set[str] = set()
    for r in results:
        for k, v in read_measurements(r, devices).items():
            data.setdefault(k, []).extend(v)
    if not data:
        raise SystemExit(f"no measured jobs under {', '.join(map(str, results))} (benchmarks/**.tsv of a finished run)")
    probe_s = _probe_of(results)  # the speed probe those runs took at their start (depthlab.probe)
    scale = start_up_scale(probe_s)
    stages = {k: vars(fit(v, cap=START_UP_CAP_S * scale, floor=_floor(k) * scale)) for k, v in sorted(data.items())}
    cuda = sorted(d for d in devices if d.startswith("cuda"))

    doc = {
        "measured_from": [str(r) for r in results],
        "code_version": prov.code_version(),
        "probe_s": probe_s,
        "note": (
            "jobs of the GPU stages on " + ", ".join(cuda) + ", as many jobs at once as the run's cores, sharing "
            "it; the other stages on that machine's CPU cores"
            if cuda
            else "one CPU core per job (the default profile)"
        )
        + "; seconds = overhead_s + call_fraction x calls x call_s + fraction x work / rate, or for a stage with a"
        " shape_factor overhead_s + fraction x shape_factor x the CPU throughput model's seconds (costs.shapes)"
        + f"; the start-up's cap and floors scaled by this probe over {START_UP_PROBE_S} s: x{scale:.2f}",
        "device": cuda[0] if cuda else "cpu",
        "stages": stages,
    }
    from .. import storage

    text = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
    if out is not None:  # a path the user named: never inside a results folder (it would replace a file the run wrote)
        outputs.write_user_file(
            text, out, protect=tuple(r for r in results if Path(r).is_dir()), what="plan --calibrate --costs"
        )
    else:
        out = default_output(results, bool(cuda))
        inside = Path(out).resolve()
        if prov.PACKAGE_DIR in inside.parents:  # a timings file or results folder in the package: never write there
            raise SystemExit(
                f"depthlab plan --calibrate: the default destination {out} lies inside the package "
                f"({prov.PACKAGE_DIR}), which ships the calibration; refitting it takes --costs naming the "
                "file, and anything else belongs outside the code"
            )
        storage.write_bytes(text, out)
    extra = {}
    if cuda:  # a GPU run: its timed training stacks refit the throughput model too (depthlab.gpumodel)
        from .. import gpumodel

        fitted = {k: StageCost(**v) for k, v in stages.items()}  # each stage's start-up, from this very run
        pts = [p for r in results if Path(r).is_dir() for p in gpu_points(r, fitted)]
        if sum(not p["adam"] for p in pts) >= 3:
            model = gpumodel.fit(pts, cuda[0])
            where = Path(out).with_name(gpumodel.THROUGHPUT.name)
            gpumodel.save(model, where)
            extra = {"throughput_written_to": str(where), "throughput_points": len(pts)}
    return {**doc, "written_to": str(out), **extra}


def gpu_points(results: str | Path, gpu_costs: dict[str, StageCost] | None = None) -> list[dict]:
    """Timed points for depthlab.gpumodel from a finished run whose jobs ran on CUDA: each store whose record names a
    CUDA device and whose spec has ``gpu_shape()``, its benchmark seconds less the stage's start-up in the GPU
    calibration (`make paper-check` on a GPU machine, then `depthlab plan --calibrate` refits the model)."""
    from .. import gpumodel
    from ..studies import get_study

    results = Path(results)
    gpu_costs = gpu_calibration()[0] if gpu_costs is None else gpu_costs
    rows = []
    for rel, rec in stores_with_records(results):
        if not str(rec.get("device", "")).startswith("cuda"):
            continue
        secs = tsv_seconds(results / "benchmarks" / Path(*rel.parts).with_suffix(".tsv"))
        if secs is None:
            continue
        try:
            spec = get_study(rec["study"]).spec_from_dict(rec["spec"])
        except Exception:
            continue
        key = f"{rec['study']}/{rec['stage']}"
        over = gpu_costs[key].overhead_s if key in gpu_costs else 0.0
        rows.append((spec, secs - over))
    return gpumodel.points_of(rows)


def measure(results: str | Path) -> dict[str, Any]:
    """A run's timings, as ``--measure`` prints them and ``--calibrate`` reads them back: the devices its stores
    record, its speed probe (``probe_s``, null when it took none) and {'study/stage': [[work, seconds, trained share or
    null, calls, shape seconds or null], ...]}."""
    from .. import probe

    devices: set[str] = set()
    stages = measurements(results, devices)
    return {
        "devices": sorted(devices),
        "probe_s": probe.of_runs([results]),
        "stages": {k: [list(p) for p in v] for k, v in sorted(stages.items())},
    }


def read_measurements(source: str | Path, devices: set[str]) -> dict[str, list[tuple]]:
    """The timings of a results folder, or of a JSON file that ``--measure`` wrote (checked: untrusted input)."""
    source = Path(source)
    if source.is_dir():
        return measurements(source, devices)
    try:
        doc = safeio.read_json(source)
        out = {str(k): [_measured_row(row) for row in v] for k, v in doc["stages"].items()}
        devices.update(str(d) for d in doc["devices"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise SystemExit(
            f"error: {source} is neither a results folder nor a file that `depthlab plan --measure` wrote "
            f"({type(e).__name__}: {e})"
        ) from None
    if any(not (math.isfinite(row[0]) and row[0] >= 0) for v in out.values() for row in v):
        raise SystemExit(f"error: {source}: every work value must be a finite number >= 0")
    if any(row[2] is not None and not (math.isfinite(row[2]) and row[2] >= 0) for v in out.values() for row in v):
        raise SystemExit(f"error: {source}: every trained share must be null or a finite number >= 0")
    if any(not (math.isfinite(row[3]) and row[3] >= 0) for v in out.values() for row in v):
        raise SystemExit(f"error: {source}: every calls value must be a finite number >= 0")
    if any(row[4] is not None and not (math.isfinite(row[4]) and row[4] > 0) for v in out.values() for row in v):
        raise SystemExit(f"error: {source}: every shape seconds value must be null or a finite number > 0")
    for v in out.values():
        for row in v:
            plausible_seconds(row[1], str(source))
    return out


def _measured_row(row: Any) -> tuple:
    """One job of a ``--measure`` file: [work, seconds] (files before the trained share), [work, seconds, trained
    share or null] (before its per-step term: no calls, 0), [work, seconds, trained share or null, calls] (before the
    shape model: no shape seconds) or [work, seconds, trained share or null, calls, shape seconds or null]."""
    if not isinstance(row, (list, tuple)) or len(row) not in (2, 3, 4, 5):
        raise ValueError(
            f"a job is [work, seconds], [work, seconds, trained share], [work, seconds, trained share, calls] or "
            f"[work, seconds, trained share, calls, shape seconds], not {row!r}"
        )
    share = row[2] if len(row) >= 3 else None
    shaped = row[4] if len(row) == 5 else None
    return (
        float(row[0]),
        float(row[1]),
        None if share is None else float(share),
        float(row[3]) if len(row) >= 4 else 0.0,
        None if shaped is None else float(shaped),
    )


def shape_factors_from_line(costs: dict[str, StageCost], configs: list[dict], cpu: Any = "shipped") -> dict[str, float]:
    """Each training stage's ``shape_factor`` from a line calibration, without its run's timings: the line fit's
    seconds beyond the start-up over ``fraction`` x the shape seconds, summed over the jobs of ``configs`` (those the
    calibration timed).  The line fit's predicted stage total is its measured total in sample (:func:`fit_line`), so
    on the calibration's own jobs this is the factor :func:`fit` would give them.  Stages the line did not calibrate,
    or with a job of no shape, get none."""
    from ..jobs import JobGraph
    from .model import predict, stage_cost

    busy: dict[str, float] = {}
    shaped: dict[str, float] = {}
    skip: set[str] = set()
    for config in configs:
        for node in JobGraph(config):
            key = f"{node.study}/{node.stage}"
            cost = stage_cost(costs, key)
            if key not in costs or not cost.calibrated or key in skip:
                continue
            sh = shape_seconds(node.spec, cpu)
            if sh is None or sh <= 0:
                skip.add(key)
                continue
            line = predict(cost, node.spec.work(), None, calls_of(node.spec)) - cost.overhead_s
            busy[key] = busy.get(key, 0.0) + line
            shaped[key] = shaped.get(key, 0.0) + cost.fraction * sh
    return {k: busy[k] / shaped[k] for k in busy if k not in skip and shaped[k] > 0 and busy[k] > 0}
