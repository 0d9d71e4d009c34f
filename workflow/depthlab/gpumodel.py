"""A throughput model of the batched trainer on a GPU, from the paper's own shapes.

The GPU column of ``depthlab plan`` came from ``costs_gpu.json``: seconds = overhead + work / rate, a rate fitted on smoke
and default jobs, which are start-up-bound, and grown linearly to paper shapes (``extrapolated``).  A GPU's throughput
grows with the job, so that overstated the paper's rate search about 40-fold.  This model prices one *model-epoch* (one
net of a stack through its N training points once) from what dominates it at each size:

    t = 6 P N / R(h)  +  (N / B) (L + 1) c / M          (x ``adam`` for Adam)

* 6 P N: the forward and backward multiply-adds of P parameters over N points;
* R(h) = R_max h / (h + h0): the matmul rate at hidden width h (narrow layers leave the GPU idle);
* (N / B)(L + 1) c / M: every minibatch step launches kernels per layer, shared by the M models of the stack.

Three constants (R_max, h0, c) are fitted to the timed points in ``gpu_points.json`` (the batched trainer on one H200 at
the papers' Fig. 1 and Fig. 2 shapes, measured) by least squares on log t; ``adam`` to the fractal net's
point.  :func:`check` says how close the fit comes to each point (within 25 % is the goal).  A job's time is its
start-up (the GPU calibration's ``overhead_s``) plus its model-epochs times t.  ``depthlab plan --calibrate`` on a run
whose jobs ran on CUDA refits it from that run's timed jobs (:func:`points_of`), into ``gpu_throughput.json``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .studies import stage_of

POINTS = Path(__file__).with_name("gpu_points.json")
THROUGHPUT = Path(__file__).with_name("gpu_throughput.json")
GOAL = 1.25  # each timed point reproduced within this factor


@dataclass(frozen=True)
class Shape:
    """One stack's training: inputs d, N points per epoch, P parameters per net, L hidden layers of width h, M nets,
    minibatch B; Adam or SGD."""

    d: int
    n: int
    P: float
    L: int
    h: float
    M: int
    B: int
    adam: bool = False


@dataclass(frozen=True)
class Throughput:
    r_max: float  # FLOP/s of wide layers
    h0: float  # the width at which half of r_max is reached
    step_s: float  # seconds per minibatch step and layer, shared by the stack
    adam: float = 1.0  # Adam's time over SGD's
    device: str = ""
    points: tuple = field(default=())  # the timed points it was fitted to (for the plan's note)

    def model_epoch_s(self, s: Shape) -> float:
        t = 6.0 * s.P * s.n / (self.r_max * s.h / (s.h + self.h0)) + (s.n / s.B) * (s.L + 1) * self.step_s / max(1, s.M)
        return t * (self.adam if s.adam else 1.0)


def shape_of(p: dict) -> Shape:
    """A stack shape from a spec's ``gpu_shape()`` dict or a timed point."""
    return Shape(**{k: p[k] for k in ("d", "n", "P", "L", "h", "M", "B")}, adam=bool(p.get("adam", False)))


def fit(points: list[dict], device: str = "") -> Throughput:
    """The three constants by least squares on log(seconds per model-epoch) over the SGD points, Adam's factor as the
    median ratio of the Adam points to the SGD model.  A point: a shape and ``model_epochs_per_s``."""
    import numpy as np
    from scipy.optimize import least_squares

    sgd = [p for p in points if not p.get("adam")]
    if len(sgd) < 3:
        raise ValueError(f"the throughput model needs at least 3 timed SGD points, got {len(sgd)}")

    def resid(th):
        m = Throughput(*np.exp(th))
        return [math.log(m.model_epoch_s(shape_of(p))) + math.log(p["model_epochs_per_s"]) for p in sgd]

    r = least_squares(resid, np.log([3e13, 500.0, 1e-5]))
    base = Throughput(*(float(v) for v in np.exp(r.x)))
    adams = [
        1.0 / p["model_epochs_per_s"] / base.model_epoch_s(shape_of({**p, "adam": False}))
        for p in points
        if p.get("adam")
    ]
    return Throughput(
        base.r_max, base.h0, base.step_s, float(np.median(adams)) if adams else 1.0, device, tuple(points)
    )


def check(model: Throughput, points: list[dict] | None = None) -> list[tuple[str, float, float, float]]:
    """(label, measured, modelled model-epochs/s, modelled / measured) per point."""
    out = []
    for p in points if points is not None else model.points:
        got = 1.0 / model.model_epoch_s(shape_of(p))
        out.append((str(p.get("label", "")), float(p["model_epochs_per_s"]), got, got / float(p["model_epochs_per_s"])))
    return out


def load_points(path: str | Path = POINTS) -> tuple[list[dict], str]:
    from . import safeio

    doc = safeio.read_json(path)
    return list(doc["points"]), str(doc.get("device", ""))


def load(path: str | Path | None = None) -> Throughput:
    """The refitted model of a GPU run (``gpu_throughput.json``) if there is one, else the fit to the shipped points."""
    from . import safeio

    path = Path(path) if path is not None else THROUGHPUT
    if path.is_file():
        try:
            doc = safeio.read_json(path)  # NaN and infinities are refused here: a damaged file, one line
        except (OSError, ValueError) as e:
            raise ThroughputError(f"{path}: unreadable ({str(e).splitlines()[0][:200]})") from None
        if not isinstance(doc, dict):
            raise ThroughputError(f"{path}: not a JSON object")
        vals = {k: _bounded(path, doc, k, lo, hi) for k, (lo, hi) in BOUNDS.items()}
        pts = doc.get("points", [])
        return Throughput(
            vals["r_max"],
            vals["h0"],
            vals["step_s"],
            vals["adam"],
            str(doc.get("device", "")),
            tuple(pts) if isinstance(pts, list) else (),
        )
    points, device = load_points()
    return fit(points, device)


class ThroughputError(ValueError):
    """A refitted GPU throughput model (``gpu_throughput.json``) that is damaged; the message names the file and key."""


# what a refitted model may say: a matmul rate, the half-rate width, a step's launch cost per layer, and Adam's factor
# over SGD (wide enough for a refit on a slow device: a CPU run played as a GPU fits r_max near 2e7); outside these a
# file is damaged or hand-edited (0 divided, a negative made a plan negative,
# 1e-300 made it infinite, adam 0 made it free)
# h0 and step_s may fit to ~0 (on start-up-bound smoke stacks a refit gave h0 1e-7 and step_s 9e-13: the rate saturated
# at every width timed, no per-step cost left), and neither divides, so only a negative one is refused
BOUNDS = {"r_max": (1e3, 1e18), "h0": (0.0, 1e9), "step_s": (0.0, 100.0), "adam": (0.01, 100.0)}


def _bounded(path: Path, doc: dict, key: str, lo: float, hi: float) -> float:
    v = doc.get(key, 1.0 if key == "adam" else None)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
        raise ThroughputError(
            f"{path}: {key} is {v!r}; a refitted GPU throughput model needs a number in [{lo:g}, {hi:g}] "
            "(refit it with depthlab plan --calibrate, or remove the file)"
        )
    return float(v)


def save(model: Throughput, path: str | Path) -> None:
    from . import storage

    storage.write_text(
        json.dumps({**asdict(model), "points": list(model.points)}, indent=1, sort_keys=True) + "\n", path
    )


def job_seconds(model: Throughput, shape: Shape, model_epochs: float, overhead_s: float) -> float:
    """A job's seconds on the GPU: its start-up plus its model-epochs at the stack's rate."""
    return overhead_s + model_epochs * model.model_epoch_s(shape)


def points_of(rows: list[tuple[Any, float]]) -> list[dict]:
    """Timed points from a GPU run's jobs: (spec, seconds) of stores whose spec has ``gpu_shape()``; each point's rate is
    its planned model-epochs over its seconds less the start-up (``gpu_shape()['overhead_s']`` when known, else 0)."""
    out = []
    for spec, secs in rows:
        st = stage_of(spec)
        if st is None or not st.step:  # a stage without a training step (Stage.step) has no stack shape
            continue
        shape, epochs = spec.gpu_shape()
        busy = secs - float(shape.get("overhead_s", 0.0))
        if epochs > 0 and busy > 0:
            out.append(
                {
                    **{k: shape[k] for k in ("d", "n", "P", "L", "h", "M", "B")},
                    "adam": bool(shape.get("adam")),
                    "model_epochs_per_s": epochs / busy,
                    "label": str(getattr(spec, "job", "")),
                }
            )
    return out
