"""What a config costs before it runs: ``depthlab plan CONFIG`` (``make plan CONFIG=...``) and ``--calibrate``.

For every study and stage: the number of jobs (and how many of them have no store yet in the config's
results folder), the estimated peak memory of the largest job (each spec's ``memory()``, the same
estimate the validator uses), and the estimated runtime of a job on one CPU core, from a cost model:

    seconds(job) = overhead(stage) + calls(job) x call_s(stage) + work(job) / rate(stage)

``work()`` is each spec's element-operation count from its shapes (epochs x examples x parameters for a
training stage, n^3 / 3 for a Cholesky, ...; 0 for a job whose time is its start-up), ``calls()`` the framework calls
of its training loop (optimiser steps x layers; 0 without one), and the constants per stage are *measured*: ``depthlab plan --calibrate RESULTS`` fits them to the runtimes a
finished run recorded (``RESULTS/benchmarks/**.tsv``, one row per job, matched to the spec its store
records), with every stage's total unbiased (:func:`fit`), and writes ``workflow/depthlab/costs.json``.  A stage with no
measured jobs falls back to the median rate of the calibrated stages and says so (``modelled``).

The GPU column comes from a second calibration, ``costs_gpu.json``, fitted the same way to runs whose jobs ran on
CUDA (``depthlab plan --calibrate RESULTS --costs workflow/depthlab/costs_gpu.json``; the file records the device and
how the run shared it).  It is printed for the stages that can use a GPU, marked ``measured`` where that stage's jobs
were timed on the GPU and ``modelled`` where its rate is borrowed; a stage with no GPU timing says ``not measured``.
``--measure RESULTS`` prints a run's timings as JSON, which ``--calibrate`` accepts in place of a results folder
(for runs whose results stay on another machine).
"""

from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Any

from . import safeio

COSTS = Path(__file__).with_name("costs.json")
COSTS_GPU = Path(__file__).with_name("costs_gpu.json")
GPU_TIMED = ("measured", "extrapolated", "modelled", "throughput model")  # the GPU column's labels with a runtime


@dataclass
class StageCost:
    overhead_s: float
    rate: float | None  # work units per second; None: work does not matter (all jobs took their overhead)
    jobs: int  # measured jobs the fit used
    calibrated: bool = True
    max_work: float = 0.0  # the largest work among them: within it, a stage without a rate is all start-up
    fraction: float = (
        1.0  # the share of its planned work (whole epoch budgets) its jobs really trained, learned (Spec.trained)
    )
    call_s: float = 0.0  # seconds per framework call of a training loop (calls_of): what a small net's step costs
    call_fraction: float = 1.0  # ... and the share of its planned calls its jobs really made (the calls-weighted share)

    def beyond(self, work: float) -> bool:
        """Whether a job of ``work`` lies beyond the sizes this calibration timed (over 10x the largest): there its
        fitted times are extrapolated, not measured."""
        return work > 10 * self.max_work


def _stores(results: Path):
    """(store path relative to results, record) of every store below ``results`` with a readable record."""
    from .results import ResultsError, store_record, stores_below

    for study_dir in sorted(p for p in results.iterdir() if p.is_dir() and p.name not in ("logs", "benchmarks")):
        for path in stores_below(study_dir):
            try:
                yield path.relative_to(results), store_record(path)
            except ResultsError:
                continue


MAX_SECONDS = 1e8  # about three years: a timing beyond it (or negative, or not finite) is a damaged file, not a job


def _plausible(seconds: float, where: str) -> float:
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_SECONDS):
        raise SystemExit(
            f"error: {where}: {seconds!r} seconds is not a job's time (a finite number of seconds from 0 to "
            f"{MAX_SECONDS:g}); depthlab will not fit a cost model to it"
        )
    return seconds


def _seconds(tsv: Path) -> float | None:
    """The seconds a Snakemake benchmark file recorded (None if it is missing or not a benchmark file); a timing that
    cannot be a job's is refused, naming the file."""
    try:
        head, row = safeio.read_text(tsv, 1 << 20).splitlines()[:2]
        secs = float(dict(zip(head.split("\t"), row.split("\t")))["s"])
    except safeio.UnsafeFile as e:
        raise SystemExit(f"error: {e}") from None
    except (OSError, ValueError, KeyError):
        return None
    return _plausible(secs, str(tsv))


def _trained(path: Path, spec: Any) -> float | None:
    """The share of its planned work a finished store's job really trained (``Spec.trained``); None when its store does
    not say (or cannot be read: the timing still counts, at its whole budget)."""
    from .storage import _open
    from .study import Spec

    if type(spec).trained is Spec.trained:
        return None
    try:
        with _open(path) as ds:
            f = spec.trained(ds)
    except Exception:
        return None
    return float(f) if f is not None and math.isfinite(f) and f >= 0 else None


def measurements(results: str | Path, devices: set[str] | None = None) -> dict[str, list[tuple]]:
    """{'study/stage': [(work, seconds, trained share or None, calls), ...]} from a finished run's stores and benchmark files;
    the devices the stores record are added to ``devices`` when given."""
    from .studies import get_study

    from .fork import forked_benchmarks

    results = Path(results)
    forked = forked_benchmarks(results)  # a fork's copies of its base's timings: the base measured them, not this run
    out: dict[str, list[tuple[float, float]]] = {}
    for rel, rec in _stores(results):
        tsv = results / "benchmarks" / Path(*rel.parts).with_suffix(".tsv")
        if str(tsv.relative_to(results)) in forked:
            continue
        secs = _seconds(tsv)
        if secs is None:
            continue
        try:
            spec = get_study(rec["study"]).spec_from_dict(rec["spec"])
        except Exception:  # a store from other code: its spec no longer parses
            continue
        if devices is not None:
            devices.add(str(rec.get("device", "unknown")))
        out.setdefault(f"{rec['study']}/{rec['stage']}", []).append(
            (spec.work(), secs, _trained(results / rel, spec), calls_of(spec))
        )
    for kind in ("figures", "claims"):
        for tsv in results.glob(f"benchmarks/*/{kind}/*.tsv" if kind == "figures" else "benchmarks/*/claims.tsv"):
            if str(tsv.relative_to(results)) in forked:
                continue
            secs = _seconds(tsv)
            if secs is not None:
                work = _figure_inputs(results, tsv) if kind == "figures" else 0.0
                out.setdefault(f"*/{'figure' if kind == 'figures' else 'claims'}", []).append((work, secs, None, 0.0))
    return out


START_UP_CAP_S = 5.0  # a job's fixed cost is its start-up: imports (torch, xarray, zarr) ~3-4 s, reads and writes


def _figure_inputs(results: Path, tsv: Path) -> float:
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
# 2.5 s of start-up, and the smoke run was planned at 1.56x; scaled, 1.20x (docs/performance.md).
START_UP_PROBE_S = 0.066


def fit(points: list[tuple], cap: float = START_UP_CAP_S, floor: float = START_UP_FLOOR_S) -> StageCost:
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
    from .studies import get_study

    study, _, stage = key.partition("/")
    try:
        return TORCH_START_UP_S if get_study(study).stage(stage).gpu else START_UP_FLOOR_S
    except Exception:  # '*/figure', '*/claims', a study not installed here
        return START_UP_FLOOR_S


def start_up_scale(probe_s: float | None) -> float:
    """What the start-up cap and floors (seconds of the machine whose probe read ``START_UP_PROBE_S``) become on a
    machine whose probe reads ``probe_s``: their ratio (1 without a probe, or with one that cannot be read)."""
    from . import probe

    return probe.ratio(probe_s, START_UP_PROBE_S)


def _probe_of(sources: list[str | Path]) -> float | None:
    """The median speed probe of the runs behind ``sources``: a results folder's ``logs/probe.json``, or the ``probe_s``
    that ``--measure`` saved with a run's timings (checked: untrusted input; None when none has one)."""
    import statistics

    from . import probe

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
    from . import provenance as prov

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
        + "; seconds = overhead_s + call_fraction x calls x call_s + fraction x work / rate"
        + f"; the start-up's cap and floors scaled by this probe over {START_UP_PROBE_S} s: x{scale:.2f}",
        "device": cuda[0] if cuda else "cpu",
        "stages": stages,
    }
    from . import storage

    text = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
    if out is not None:  # a path the user named: never inside a results folder (it would replace a file the run wrote)
        storage.write_user_file(
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
        from . import gpumodel

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
    from . import gpumodel
    from .studies import get_study

    results = Path(results)
    gpu_costs = gpu_calibration()[0] if gpu_costs is None else gpu_costs
    rows = []
    for rel, rec in _stores(results):
        if not str(rec.get("device", "")).startswith("cuda"):
            continue
        secs = _seconds(results / "benchmarks" / Path(*rel.parts).with_suffix(".tsv"))
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
    null, calls], ...]}."""
    from . import probe

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
    for v in out.values():
        for row in v:
            _plausible(row[1], str(source))
    return out


def _measured_row(row: Any) -> tuple:
    """One job of a ``--measure`` file: [work, seconds] (files before the trained share), [work, seconds, trained
    share or null] (before its per-step term: no calls, 0) or [work, seconds, trained share or null, calls]."""
    if not isinstance(row, (list, tuple)) or len(row) not in (2, 3, 4):
        raise ValueError(
            f"a job is [work, seconds], [work, seconds, trained share] or [work, seconds, trained share, "
            f"calls], not {row!r}"
        )
    share = row[2] if len(row) >= 3 else None
    return (
        float(row[0]),
        float(row[1]),
        None if share is None else float(share),
        float(row[3]) if len(row) == 4 else 0.0,
    )


def gpu_calibration(path: str | Path = COSTS_GPU) -> tuple[dict[str, StageCost], str, str]:
    """The GPU calibration's stages, device and note; no stages when there is none."""
    try:
        doc = safeio.read_json(path)
    except (OSError, ValueError):
        return {}, "", ""
    if not str(doc.get("device", "")).startswith("cuda"):
        return {}, "", ""
    return load_costs(path), str(doc["device"]), str(doc.get("note", ""))


def calibration_probe(path: str | Path = COSTS) -> float | None:
    """The speed probe of the machine a calibration was measured on (``probe_s``; None when it has none)."""
    try:
        v = safeio.read_json(path).get("probe_s")
        v = float(v) if v is not None else None
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return v if v is not None and math.isfinite(v) and v > 0 else None


class CostsError(ValueError):
    """A cost file that does not follow its schema: one line naming the file and the key."""


MIN_RATE = 1e-3  # work units per second below which a rate is damage (1e-300 planned 'inf' core-hours)
_FIELDS = {  # StageCost's fields: (kind, lower bound, upper bound) of a value; kind "rate" may be null
    "overhead_s": ("num", 0.0, 1e6),
    "rate": ("rate", MIN_RATE, 1e30),
    "jobs": ("int", 0, 10**9),
    "calibrated": ("bool", None, None),
    "max_work": ("num", 0.0, 1e30),
    "fraction": ("num", 0.0, 100.0),
    "call_s": ("num", 0.0, 1e3),
    "call_fraction": ("num", 0.0, 100.0),
}  # a share of the planned calls: above 1 when a
# stage's jobs make more calls than planned (the CNNs' stacks: 2.0 in a smoke calibration)


def validate_costs(doc: Any, path: str | Path) -> dict[str, StageCost]:
    """The stages of a cost file, checked: a mapping with a non-empty ``stages`` mapping of stage -> fields, each field
    known (``StageCost``'s), a finite number in its range (a rate positive and at least ``MIN_RATE``, or null; shares in
    [0, 100]; no negative times), ``overhead_s``, ``rate`` and ``jobs`` present.  Raises :class:`CostsError`."""
    where = str(path)
    if not isinstance(doc, dict):
        raise CostsError(f"{where}: not a JSON object with a `stages` mapping")
    stages = doc.get("stages")
    if not isinstance(stages, dict) or not stages:
        raise CostsError(f"{where}: no `stages` mapping (or an empty one): nothing to plan with")
    out = {}
    for name, fields in stages.items():
        if not isinstance(fields, dict):
            raise CostsError(f"{where}: stages.{name}: not a mapping of fields")
        for key in ("overhead_s", "rate", "jobs"):
            if key not in fields:
                raise CostsError(f"{where}: stages.{name}: `{key}` is missing")
        for key, v in fields.items():
            if key not in _FIELDS:
                raise CostsError(
                    f"{where}: stages.{name}.{key}: not a field of a stage's cost (known: {', '.join(_FIELDS)})"
                )
            kind, lo, hi = _FIELDS[key]
            if kind == "bool":
                ok = isinstance(v, bool)
            elif kind == "rate" and v is None:
                ok = True
            elif kind == "int":
                ok = isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi
            else:
                ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and lo <= v <= hi
            if not ok:
                want = {
                    "bool": "true or false",
                    "int": f"a whole number in [{lo}, {hi}]",
                    "rate": f"null or a finite number in [{lo:g}, {hi:g}]",
                }.get(kind, f"a finite number in [{lo:g}, {hi:g}]")
                raise CostsError(f"{where}: stages.{name}.{key} = {v!r}: must be {want}")
        out[str(name)] = StageCost(**fields)
    return out


def load_costs(path: str | Path = COSTS) -> dict[str, StageCost]:
    """A cost file's stages, validated (:func:`validate_costs`); a file that cannot be read or parsed is a
    :class:`CostsError` too, naming it."""
    try:
        doc = safeio.read_json(path)
    except (OSError, ValueError) as e:
        raise CostsError(f"{path}: cannot be read as JSON ({e})") from None
    return validate_costs(doc, path)


def stage_cost(costs: dict[str, StageCost], key: str) -> StageCost:
    if key in costs:
        return costs[key]
    kind = "*/" + key.split("/")[1] if key.split("/")[1] in ("figure", "claims") else None
    if kind in costs:
        return costs[kind]
    overheads = sorted(c.overhead_s for c in costs.values())
    return StageCost(overheads[len(overheads) // 2] if overheads else 3.0, fallback_rate(costs), 0, False)


def figure_work(study: Any, config: dict, figure: str) -> int:
    """A figure job's work in the cost model: the stores it reads (a figure's time is its start-up, matplotlib and
    seaborn, plus the reading and plotting of each input: 3.3 s + 0.2 s per store on the smoke run's 28 figures)."""
    return len(study.figure_inputs(config, figure))


def output_seconds(
    costs: dict[str, StageCost], study: str, kind: str, config: dict, figure: str | None = None
) -> float:
    """The planned seconds of a study's figure job (``kind`` 'figure': by the stores it reads) or its claims job
    ('claims'), as the run's ETA plans them."""
    from .studies import get_study

    st = get_study(study)
    work = float(figure_work(st, config, figure)) if kind == "figure" else 0.0
    return predict(stage_cost(costs, f"{study}/{st.kind_stage(kind).name}"), work)


def fallback_rate(costs: dict[str, StageCost]) -> float | None:
    rates = sorted(c.rate for c in costs.values() if c.rate)
    return rates[len(rates) // 2] if rates else None


def predict(cost: StageCost, work: float, fallback: float | None = None, calls: float = 0.0) -> float:
    """Seconds of one job.  A stage whose calibration runs were all start-up (no measured rate) stays at its start-up
    within ten times the largest work measured, and beyond that uses ``fallback`` (the median rate of the calibrated
    stages) for the work a bigger config gives it.  A stage with a rate charges ``fraction`` of ``work``: the share of
    their epoch budgets its calibration's jobs really trained; and ``call_fraction`` of ``calls`` (:func:`calls_of`) at
    ``call_s`` each, where its fit found a per-step cost."""
    fixed = cost.overhead_s + (cost.call_fraction * calls * cost.call_s if calls > 0 else 0.0)
    if cost.rate:
        return fixed + (cost.fraction * work / cost.rate if work > 0 else 0.0)
    rate = fallback if cost.beyond(work) else None
    return fixed + (work / rate if rate and work > 0 else 0.0)


def batches(n: int, batch_size: int) -> int:
    """Minibatches in one epoch of ``n`` examples (the last one may be short): optimiser steps per epoch."""
    return max(1, -(-int(n) // max(1, int(batch_size))))


def calls_of(spec: Any) -> float:
    """The framework calls of a job's training loop: its spec's ``calls()``, its planned optimiser steps (the stacked nets
    of one step count once) times its layers; 0 for a spec without one (no training loop).  A small net's step costs
    its calls whatever its size, so the cost model charges them apart from ``work()`` (a depth-5 width-10
    fractal net, priced by its arithmetic at 10 s, took 55 s).  Counted at the same budget as ``work``, so the
    store's trained share scales both.  Asked here, not declared on ``depthlab.study.Spec``: that module is in every
    figure's code fingerprint, and the cost model must not rerun figures."""
    f = getattr(spec, "calls", None)
    return float(f()) if callable(f) else 0.0


def spec_seconds(cost: StageCost, spec: Any, fallback: float | None = None) -> float:
    """:func:`predict` for one job's spec: its work and its calls."""
    return predict(cost, spec.work(), fallback, calls_of(spec))


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
) -> list[Row]:
    """Every study's stages: jobs, peak memory, CPU seconds (times ``speed``, this machine's probe over the
    calibration's: depthlab.probe) and the GPU column (``throughput``: the GPU throughput model's file; default the
    package's, see gpumodel.load)."""
    from .config import device_of
    from .study import Ref
    from .studies import get_study

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
                specs = [study.spec(config, st.name, j) for j in study.jobs(config, st.name)]
                there = [(root / name / study.path(Ref(st.name, s.job))).exists() for s in specs]
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
            secs = [speed * predict(cost, w, fallback, n) for w, n in zip(works, calls)]
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
                st.gpu
                and specs
                and all(s is not None and hasattr(s, "gpu_shape") for s in specs)
                and (key not in gpu_costs or any(gpu_costs[key].beyond(w) for w in works))
            ):
                # the batched trainer's stacks beyond the sizes the GPU calibration timed: priced from their own
                # shapes (depthlab.gpumodel), not grown from the start-up-bound smoke and default jobs; within those
                # sizes the calibration's measured times stand (the branch below)
                from . import gpumodel

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
    from . import memory

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
                speed * sum(predict(c, p[0], fallback, p[3]) for p in pts),
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
    from .fork import forked_benchmarks

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
            secs = _seconds(tsv)
            study = tsv.relative_to(results / "benchmarks").parts[0]
            if secs is None or study not in out:
                continue
            work = _figure_inputs(results, tsv) if key == "*/figure" else 0.0
            acc = out[study]
            acc[0] += 1
            acc[1] += speed * predict(c, work, fallback)
            acc[2] += secs
    return [Check(k, int(v[0]), v[1], v[2]) for k, v in sorted(out.items())]


MAX_RUNTIME_MIN = 7 * 24 * 60  # the longest time limit most SLURM partitions allow


def job_seconds(spec: Any, study: str, stage: str, costs: dict[str, StageCost] | None = None) -> float:
    """A job's predicted seconds on one CPU core (the cost model of ``depthlab plan``)."""
    costs = shipped_costs() if costs is None else costs
    return spec_seconds(stage_cost(costs, f"{study}/{stage}"), spec, fallback_rate(costs))


def job_priority(spec: Any, study: str, stage: str, costs: dict[str, StageCost] | None = None) -> int:
    """A job's own predicted seconds (integer); :func:`chain_priorities` adds what waits on it."""
    return int(job_seconds(spec, study, stage, costs))


def chain_priorities(
    config: dict, spec_of: Callable[[str, str, Any], Any] | None = None, costs: dict[str, StageCost] | None = None
) -> dict[tuple[str, Any], int]:
    """The scheduler priority of every store job, keyed ``(study, Ref(stage, job))``: its predicted one-core seconds
    plus the largest priority among the store jobs that read its output (the longest predicted chain that starts with
    it).  Of the jobs ready to run, those that head the longest chains start first, so a long job neither starts last
    and runs alone while the other cores idle (in the default run of 94ba28c a wide fractal net ran alone for the last
    25 minutes) nor waits behind short jobs for the few seconds of data set it needs.  ``spec_of(study, stage, job)``
    builds a job's spec (default: the study's own)."""
    from .study import Ref
    from .studies import get_study

    costs = shipped_costs() if costs is None else costs
    own: dict[tuple[str, Any], int] = {}
    readers: dict[tuple[str, Any], list[tuple[str, Any]]] = {}
    for name in sorted(config["studies"]):
        study = get_study(name)
        for st in study.store_stages():
            for job in study.jobs(config, st.name):
                spec = spec_of(name, st.name, job) if spec_of is not None else study.spec(config, st.name, job)
                key = (name, Ref(st.name, job))
                own[key] = job_priority(spec, name, st.name, costs)
                for ref in spec.inputs().values():
                    readers.setdefault((name, ref), []).append(key)
    total: dict[tuple[str, Any], int] = {}

    def chain(key: tuple[str, Any]) -> int:
        if key not in total:
            total[key] = own[key] + max((chain(r) for r in readers.get(key, ()) if r in own), default=0)
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


@functools.lru_cache(maxsize=1)
def shipped_gpu_costs() -> dict[str, StageCost]:
    """The package's GPU calibration (none when it is absent or was not measured on CUDA), read once per process;
    $DEPTHLAB_COSTS_GPU names another file (one that does not exist: no calibration, so no job is moved to the CPU)."""
    return gpu_calibration(os.environ.get("DEPTHLAB_COSTS_GPU") or COSTS_GPU)[0]


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


@functools.lru_cache(maxsize=1)
def shipped_costs() -> dict[str, StageCost]:
    """The package's calibration, read once per process (Snakemake asks for every job's resources)."""
    return load_costs()
