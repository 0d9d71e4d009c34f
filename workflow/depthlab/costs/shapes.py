"""What one epoch of a training stack costs on one CPU core, from its shapes: the plan's rate by shape.

One fitted rate per stage (``work / rate``) cannot price the papers' shapes: on the same core a Fig. 6 net (d = 30,
h = 33 000) runs its arithmetic at about 8 GFLOP/s and a Fig. 1 net (P = 1e8) at about 57.  A thin input layer makes
the step memory-bound (every activation is written, rectified and read back for a few multiply-adds), a wide one is
bound by the multiply-adds, a stack whose weights or activations outgrow the cache streams them from memory, and a
small net is bound by the framework's calls.  The trainer steps a large stack in groups of G models
(``core.trainer.models_per_step``: the groups' weights fit the cache), so a step of a stack of M nets is priced by what
each group touches:

    t_step = a 6 B P M  +  b B A M  +  b' B A M [G B A x 12 bytes > K]  +  c' P s M [G P s x 4 bytes > K]
             +  c_adam P M [Adam]  +  e (L + 1) groups  +  (a'' 6 B P M  +  b'' B A M) [h not a multiple of ALIGN]

* 6 B P: the forward and backward multiply-adds of P parameters over a minibatch of B rows (seconds ``a`` each);
* B A: the activations a row makes, A = L h + 1 (hidden and output), written and read around each layer (``b``);
  when a group's do not fit the last-level cache K (three float32 copies: activations, their gradients, the masks)
  each costs ``b'`` more: the step streams them all from memory (at d = 30, B = 50 on the 2-core machine a
  model-step once took 9.4 ms at h = 20 000, 10.4 at 25 000 and 17.6 at 31 250; but 31 250 is unaligned, see below,
  and a later run's aligned widths grew in step with h through 40 000, so this term is small);
* P s: the weights and their gradients (s = 2; Adam's two moments: 4) in float32, streamed at ``c'`` each when a
  group's do not fit the cache;
* P: Adam's update arithmetic on its moments (``c_adam``);
* L + 1: the framework calls of a step, one set per layer and group (``e``).

A model-epoch (one net of the stack through its N points once) is ``ceil(N / B) t_step / M``.  The eight constants are
fitted by non-negative least squares on the relative error of timed steps (``cpu_points.json``: the trainer's own step
at a grid of shapes, timed by ``benchmarks/paper_rates.py``; K is the last-level cache of the machine that timed them,
which the file records).  They are seconds of that machine, whose speed probe the file records too (``probe_s``):
:func:`load` scales them to the CPU calibration's probe, so the plan's probe scaling applies to them as to every other
CPU second.

The stack shape is each training spec's ``gpu_shape()`` (the GPU throughput model, :mod:`depthlab.gpumodel`, reads
the same; the name predates this model, and renaming it would change the specs' code, hence every store's
fingerprint).  The RZG23 learner's full-batch step (``kind: learner``, one group) has its own arithmetic; it is priced
with the same constants times a factor fitted to its own timed points.

A hidden width that is not a multiple of :data:`ALIGN` floats slows the arithmetic and the activations' passes: the
kernels lose their vector-aligned rows.  Timed side by side on one core, 33 333 against 33 336 wide (d = 30, M = 3),
4 999 against 5 000, 1 999 against 2 000 (three layers) and 9 999 against 10 000 (d = 1 000) each cost 1.31-1.45x as
much.  So such a step's multiply-adds and activations are charged twice, the second time at ``a_unaligned`` and
``b_unaligned`` (fitted like the rest; a small net, bound by its calls, barely feels them).  Fig. 6's net
(h = 33 333, P = 1e6) is one, and so are most of Mori & Ueda's fixed-count widths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..gpumodel import Shape, shape_of
from ..studies import stage_of

POINTS = Path(__file__).resolve().parents[1] / "cpu_points.json"
GOAL = 1.25  # each paper-shape case within this factor of its measurement
TERMS = ("a", "b", "b_spill", "c_spill", "c_adam", "e", "a_unaligned", "b_unaligned")
# core.trainer's grouping of a stack on the CPU (copied, not imported: the plan runs in Snakemake's process, which must
# not import torch; tests/test_costs_shapes.py checks they agree)
ALL_AT_ONCE_BYTES = 16 << 20
STEP_CHUNK_BYTES = 4 << 20
CACHE_BYTES = 32 << 20  # the last-level cache assumed when a points file does not say
ALIGN = 8  # floats: a hidden width not a multiple of this pays a_unaligned and b_unaligned


@dataclass(frozen=True)
class StepShape(Shape):
    """The GPU model's stack shape (:class:`depthlab.gpumodel.Shape`: inputs d, N points per epoch, P parameters per
    net, L hidden layers of width h, M nets, batch B, Adam or SGD), and ``kind``: "mlp" (the batched trainer) or
    "learner" (the RZG23 full-batch step)."""

    kind: str = "mlp"

    @classmethod
    def of(cls, shape: dict, kind: str = "mlp") -> "StepShape":
        """From a spec's ``gpu_shape()`` dict (or a timed point)."""
        return cls(**vars(shape_of(shape)), kind=kind)

    def group(self) -> int:
        """Models per step group, as ``core.trainer.models_per_step`` takes them (weights, plus Adam's moments)."""
        M = max(1, self.M)
        if self.kind != "mlp" or M <= 1:
            return M
        per_model = 4.0 * self.P * (3 if self.adam else 1)
        if M * per_model <= ALL_AT_ONCE_BYTES:
            return M
        return int(max(2, min(M, STEP_CHUNK_BYTES // max(per_model, 1))))

    def regressors(self, cache_bytes: float = CACHE_BYTES) -> np.ndarray:
        """The step's counts, in the order of :data:`TERMS`."""
        M, G = max(1, self.M), self.group()
        groups = -(-M // G)
        A = self.B * (self.L * self.h + 1.0)  # activations of one model's minibatch
        s = 4.0 if self.adam else 2.0
        odd = 0.0 if self.kind != "mlp" or int(round(self.h)) % ALIGN == 0 else 1.0
        macs, acts = M * 6.0 * self.B * self.P, M * A
        return np.array(
            [
                macs,
                acts,
                groups * G * A * (12.0 * G * A > cache_bytes),
                groups * G * self.P * s * (4.0 * G * self.P * s > cache_bytes),
                M * self.P * (1.0 if self.adam else 0.0),
                groups * (self.L + 1.0),
                odd * macs,  # an unaligned width pays its arithmetic and activations again
                odd * acts,
            ]
        )

    @property
    def steps_per_epoch(self) -> int:
        return max(1, -(-int(self.n) // max(1, int(self.B))))


@dataclass(frozen=True)
class CpuThroughput:
    a: float  # seconds per multiply-add (6 B P of them per net and step)
    b: float  # seconds per activation element of a minibatch
    b_spill: float  # ... more per element of a group's activations beyond the cache
    c_spill: float  # seconds per float of a group's weights and gradients (and moments) beyond the cache
    c_adam: float  # Adam's extra seconds per parameter
    e: float  # seconds of a step's framework calls per layer and group
    a_unaligned: float  # ... more per multiply-add where a hidden width is not a multiple of ALIGN floats
    b_unaligned: float  # ... more per activation element there
    learner: float = 1.0  # the RZG23 learner's step over the batched trainer's at the same counts
    probe_s: float | None = None  # the speed probe of the machine these seconds are of
    cache_bytes: float = CACHE_BYTES  # that machine's last-level cache

    def step_s(self, s: StepShape) -> float:
        t = float(np.dot([getattr(self, k) for k in TERMS], s.regressors(self.cache_bytes)))
        return t * (self.learner if s.kind == "learner" else 1.0)

    def model_epoch_s(self, s: StepShape) -> float:
        return self.step_s(s) * s.steps_per_epoch / max(1, s.M)

    def scaled(self, factor: float) -> "CpuThroughput":
        """The same model in seconds ``factor`` times as long (another machine's probe over this one's)."""
        return CpuThroughput(
            *(factor * getattr(self, k) for k in TERMS),
            learner=self.learner,
            probe_s=(self.probe_s or 0) * factor,
            cache_bytes=self.cache_bytes,
        )


def cache_bytes() -> float:
    """This machine's last-level cache (Linux's sysfs; :data:`CACHE_BYTES` where it does not say)."""
    best = 0.0
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            t = f.read_text().strip().upper()
            best = max(best, float(t[:-1]) * {"K": 1 << 10, "M": 1 << 20}[t[-1]] if t[-1] in "KM" else float(t))
        except (OSError, ValueError, IndexError):
            continue
    return best or float(CACHE_BYTES)


def shape_of_point(p: dict) -> StepShape:
    return StepShape.of(p, str(p.get("kind", "mlp")))


def fit(points: list[dict], probe_s: float | None = None, cache_bytes: float = CACHE_BYTES) -> CpuThroughput:
    """The eight constants by non-negative least squares on each batched-trainer point's relative error (rows divided
    by the measured step), the learner's factor as the median ratio of its points to that model.  A point: a shape
    (``d n P L h M B adam kind``) and ``step_s``, its measured seconds per step."""
    from scipy.optimize import nnls

    mlp = [p for p in points if p.get("kind", "mlp") == "mlp"]
    if len(mlp) < len(TERMS):
        raise ValueError(f"the CPU throughput model needs at least {len(TERMS)} timed steps, got {len(mlp)}")
    X = np.array([shape_of_point(p).regressors(cache_bytes) / float(p["step_s"]) for p in mlp])
    scale = X.max(axis=0)
    scale[scale == 0] = 1.0  # a term no point exercises (no Adam point) fits to 0
    coef, _ = nnls(X / scale, np.ones(len(mlp)))
    base = CpuThroughput(*(float(v) for v in coef / scale), probe_s=probe_s, cache_bytes=cache_bytes)
    ratios = [
        float(p["step_s"]) / base.step_s(shape_of_point({**p, "kind": "mlp"}))
        for p in points
        if p.get("kind") == "learner"
    ]
    learner = float(np.median(ratios)) if ratios else 1.0
    return CpuThroughput(*(getattr(base, k) for k in TERMS), learner, probe_s, cache_bytes)


def check(model: CpuThroughput, points: list[dict]) -> list[tuple[str, float, float, float]]:
    """(label, measured, modelled seconds per step, modelled / measured) per point."""
    out = []
    for p in points:
        got = model.step_s(shape_of_point(p))
        out.append((str(p.get("label", "")), float(p["step_s"]), got, got / float(p["step_s"])))
    return out


class ShapesError(ValueError):
    """A damaged ``cpu_points.json``: the message names the file and the key
    (:func:`depthlab.costs.model.shipped_cpu_model` reports it as a ``CostsError``, as every damaged cost file is)."""


def _points(doc: Any, where: str) -> tuple[list[dict], float | None, float]:
    if not isinstance(doc, dict) or not isinstance(doc.get("points"), list):
        raise ShapesError(f"{where}: not a JSON object with a `points` list")
    probe = doc.get("probe_s")
    if probe is not None and not (isinstance(probe, (int, float)) and math.isfinite(probe) and 0 < probe < 100):
        raise ShapesError(f"{where}: probe_s = {probe!r}: must be a positive number of seconds below 100, or null")
    cache = doc.get("cache_bytes", CACHE_BYTES)
    if isinstance(cache, bool) or not isinstance(cache, (int, float)) or not 1 << 16 <= cache <= 1 << 34:
        raise ShapesError(f"{where}: cache_bytes = {cache!r}: must be a cache size in bytes, 64 KiB to 16 GiB")
    out = []
    for i, p in enumerate(doc["points"]):
        if not isinstance(p, dict):
            raise ShapesError(f"{where}: points[{i}]: not a mapping")
        for k in ("d", "n", "P", "L", "h", "M", "B", "step_s"):
            v = p.get(k)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 < v < 1e15:
                raise ShapesError(f"{where}: points[{i}].{k} = {v!r}: must be a positive finite number")
        if p.get("kind", "mlp") not in ("mlp", "learner"):
            raise ShapesError(f"{where}: points[{i}].kind = {p.get('kind')!r}: must be mlp or learner")
        out.append(p)
    return out, (float(probe) if probe is not None else None), float(cache)


def load_points(path: str | Path = POINTS) -> tuple[list[dict], float | None, float]:
    """The timed steps, their machine's probe and last-level cache, validated (untrusted: :class:`ShapesError` names the key)."""
    from .. import safeio

    try:
        doc = safeio.read_json(path)
    except (OSError, ValueError) as e:
        raise ShapesError(f"{path}: cannot be read as JSON ({e})") from None
    return _points(doc, str(path))


def load(path: str | Path = POINTS, to_probe: float | None = None) -> CpuThroughput | None:
    """The model fitted to the shipped points (None when there are none), in seconds of a machine whose probe is
    ``to_probe`` (the CPU calibration's; unscaled when either probe is unknown)."""
    if not Path(path).is_file():
        return None
    points, probe, cache = load_points(path)
    model = fit(points, probe, cache)
    return model.scaled(to_probe / probe) if to_probe and probe else model


def spec_shape(spec: Any) -> tuple[StepShape, float] | None:
    """(the stack's step shape, its planned model-epochs at the budget) of a training spec; None for one without."""
    st = stage_of(spec)
    if st is None or not st.step:  # a stage with a step declares it (Stage.step), and its spec has gpu_shape()
        return None
    shape, epochs = spec.gpu_shape()
    return StepShape.of(shape, st.step), float(epochs)
