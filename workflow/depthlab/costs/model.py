"""The cost model: a stage's constants (StageCost), the calibration files' schema, and a job's predicted seconds.

    seconds(job) = overhead(stage) + calls(job) x call_s(stage) + work(job) / rate(stage)

``work()`` is each spec's element-operation count from its shapes, ``calls()`` the framework calls of its training
loop; the constants per stage are fitted by :mod:`depthlab.costs.calibrate` and shipped as the package's
``costs.json`` (CPU) and ``costs_gpu.json`` (GPU).  A CPU stage whose calibration has a ``shape_factor`` prices its
training by shape instead (:mod:`depthlab.costs.shapes`, one core's cost of a model-epoch at the stack's shapes):

    seconds(job) = overhead(stage) + fraction(stage) x shape_factor(stage) x model_epochs(job) x t(shape(job))  Every file read here is untrusted: :func:`validate_costs` refuses a
value off its schema in one line naming the key.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import safeio
from ..studies import stage_of
from ..core.shapes import batches  # noqa: F401 (its home is the core; the plan re-exports it)

COSTS = Path(__file__).resolve().parents[1] / "costs.json"  # package data, beside the modules
COSTS_GPU = Path(__file__).resolve().parents[1] / "costs_gpu.json"
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
    # A stage priced by shape (costs.shapes): its jobs' measured seconds beyond the start-up over the model's seconds of
    # the epochs they trained (the fraction of their budgets).  It absorbs what the timed step leaves out: the checks,
    # the test predictions, and for the rate search (which records no trained share) how early its nets stop.
    shape_factor: float | None = None

    def beyond(self, work: float) -> bool:
        """Whether a job of ``work`` lies beyond the sizes this calibration timed (over 10x the largest): there its
        fitted times are extrapolated, not measured."""
        return work > 10 * self.max_work


MAX_SECONDS = 1e8  # about three years: a timing beyond it (or negative, or not finite) is a damaged file, not a job


def plausible_seconds(seconds: float, where: str) -> float:
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_SECONDS):
        raise SystemExit(
            f"error: {where}: {seconds!r} seconds is not a job's time (a finite number of seconds from 0 to "
            f"{MAX_SECONDS:g}); depthlab will not fit a cost model to it"
        )
    return seconds


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
COST_FIELDS = {  # StageCost's fields: (kind, lower bound, upper bound) of a value; kind "rate" may be null
    "overhead_s": ("num", 0.0, 1e6),
    "rate": ("rate", MIN_RATE, 1e30),
    "jobs": ("int", 0, 10**9),
    "calibrated": ("bool", None, None),
    "max_work": ("num", 0.0, 1e30),
    "fraction": ("num", 0.0, 100.0),
    "call_s": ("num", 0.0, 1e3),
    "call_fraction": ("num", 0.0, 100.0),
    "shape_factor": ("rate", 1e-6, 1e6),
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
            if key not in COST_FIELDS:
                raise CostsError(
                    f"{where}: stages.{name}.{key}: not a field of a stage's cost (known: {', '.join(COST_FIELDS)})"
                )
            kind, lo, hi = COST_FIELDS[key]
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


def calls_of(spec: Any) -> float:
    """The framework calls of a job's training loop: its spec's ``calls()``, its planned optimiser steps (the stacked nets
    of one step count once) times its layers; 0 for a spec without one (no training loop).  A small net's step costs
    its calls whatever its size, so the cost model charges them apart from ``work()`` (a depth-5 width-10
    fractal net, priced by its arithmetic at 10 s, took 55 s).  Counted at the same budget as ``work``, so the
    store's trained share scales both.  A stage that counts them says so (``Stage.calls``); its spec has ``calls()``."""
    st = stage_of(spec)
    return float(spec.calls()) if st is not None and st.calls else 0.0


def spec_seconds(cost: StageCost, spec: Any, fallback: float | None = None, cpu: Any = "shipped") -> float:
    """One job's seconds: by its stack's shapes where its stage has a ``shape_factor`` and its spec a stack shape
    (``cpu``: the CPU throughput model, :func:`shipped_cpu_model` by default; None: the line fit alone), else
    :func:`predict` on its work and its calls."""
    if cost.shape_factor is not None:
        shaped = shape_seconds(spec, cpu)
        if shaped is not None:
            return cost.overhead_s + cost.fraction * cost.shape_factor * shaped
    return predict(cost, spec.work(), fallback, calls_of(spec))


def shape_seconds(spec: Any, cpu: Any = "shipped") -> float | None:
    """The CPU throughput model's seconds of a job's whole budget of model-epochs (None: no stack shape, or no
    model): the regressor a stage's ``shape_factor`` multiplies."""
    from . import shapes

    model = shipped_cpu_model() if cpu == "shipped" else cpu
    at = shapes.spec_shape(spec) if model is not None else None
    return None if at is None else at[1] * model.model_epoch_s(at[0])


def point_seconds(cost: StageCost, point: tuple, fallback: float | None = None) -> float:
    """A measured job's predicted seconds from its measurement row (work, seconds, share, calls[, shape seconds])."""
    shaped = point[4] if len(point) > 4 else None
    if cost.shape_factor is not None and shaped is not None:
        return cost.overhead_s + cost.fraction * cost.shape_factor * shaped
    return predict(cost, point[0], fallback, point[3] if len(point) > 3 else 0.0)


@functools.lru_cache(maxsize=1)
def shipped_cpu_model() -> Any:
    """The CPU throughput model fitted to the package's timed steps (``cpu_points.json``), in seconds of the machine
    the shipped CPU calibration was measured on (its probe); None when the points are missing."""
    from . import shapes

    try:
        return shapes.load(shapes.POINTS, to_probe=calibration_probe(COSTS))
    except shapes.ShapesError as e:  # damaged package data: one line naming the file and key, as for costs.json
        raise CostsError(str(e)) from None


@functools.lru_cache(maxsize=1)
def shipped_gpu_costs() -> dict[str, StageCost]:
    """The package's GPU calibration (none when it is absent or was not measured on CUDA), read once per process;
    $DEPTHLAB_COSTS_GPU names another file (one that does not exist: no calibration, so no job is moved to the CPU)."""
    return gpu_calibration(os.environ.get("DEPTHLAB_COSTS_GPU") or COSTS_GPU)[0]


@functools.lru_cache(maxsize=1)
def shipped_costs() -> dict[str, StageCost]:
    """The package's calibration, read once per process (Snakemake asks for every job's resources), with its CPU
    throughput points (a damaged ``cpu_points.json`` is a :class:`CostsError` here, before any job)."""
    costs = load_costs()
    shipped_cpu_model()
    return costs
