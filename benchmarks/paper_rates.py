"""The cost model at the papers' shapes: what one epoch of the costliest paper jobs' training stacks costs here,
measured, against what ``depthlab plan`` charges that epoch; and the timed grid the CPU throughput model is fitted to.

``make paper-check`` runs every stage's largest paper job with its budgets capped to one epoch, so the start-up, the
data and the test predictions weigh as much as the epoch, and the plan charges that epoch only its stage's *trained
share* (``fraction``: the default's nets stop early).  Neither says what an epoch costs.  This script times the
trainer's own step (``core.trainer.step_in_groups``, as the stage runs it: the models stacked, in groups of
``trainer.models_per_step``; the RZG23 learner's own full-batch ``net_step``) at the job's shapes (input dimension,
widths, depth, batch, optimiser, loss) for about ``--seconds`` per case.  Beside it, per epoch (the learner: per step):

* the shape model: :mod:`depthlab.costs.shapes` fitted to this run's grid (:data:`GRID`, :data:`LEARNER_GRID`: other
  shapes over the papers' ranges, timed first for ``--grid-seconds`` each; the paper cases are not among them, so
  this checks the fit out of sample);
* the plan's charge for one more epoch of the budget, without and with the stage's trained share (``fraction`` x
  ``shape_factor`` for a stage priced by shape, ``fraction`` for one priced by its line);
* the line fit's charge (``d(work)/rate + d(calls) x call_s``), which priced every stage before the shape model;

each derivative taken on the job's own spec (its budget and one more epoch), the line's seconds scaled by this
machine's probe over the calibration's, as ``depthlab plan`` scales them.  A stack too large for this machine (the
P = 1e8 nets) is timed on fewer models and scaled by the models (a stack's step is linear in its models: each has its
own rows and weights).  The full-set checks (every ``check_every`` epochs) and the test predictions are not in the
timed epoch.  The grid goes to ``--points-out``; copied over ``workflow/depthlab/cpu_points.json`` it is what the
plan prices by.

Threads: torch, every BLAS pool and numba pinned to 1, as every job of the default profile runs.  Nothing is asserted;
it prints the ratios it measured side by side and writes them as JSON (``--out``).

    python benchmarks/paper_rates.py [--config config/paper.yaml] [--seconds 60] [--grid-seconds 3] [--no-grid]
                                     [--max-gib 6] [--out FILE] [--points-out FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench import LOSSES, OPTIMIZERS, _batch, pin_threads  # noqa: E402
from depthlab import outputs, probe  # noqa: E402
from depthlab.config import load  # noqa: E402
from depthlab.core.device import set_threads  # noqa: E402
from depthlab.core.mlp import init_params  # noqa: E402
from depthlab.core.shapes import layer_sizes  # noqa: E402
from depthlab.core.trainer import models_per_step, step_in_groups  # noqa: E402
from depthlab.costs import shapes  # noqa: E402
from depthlab.costs.model import (  # noqa: E402
    calibration_probe,
    calls_of,
    fallback_rate,
    load_costs,
    shape_seconds,
    stage_cost,
)
from depthlab.jobs import JobGraph  # noqa: E402
from depthlab.placement import job_seconds  # noqa: E402

GIB = 2**30


def _stack(node) -> dict:
    """The training stack one epoch of ``node`` runs: sizes, models, training points per epoch, batch, optimiser, loss;
    and the spec with a budget one epoch longer (for the plan's derivative)."""
    spec = node.spec
    if node.study == "mori_ueda":
        d, t = spec.data.target.d, spec.training
        sizes = spec.shape.sizes(d)
        loss = "mse" if spec.data.task == "regression" else "logistic"
        if node.stage == "lrsearch":
            s = spec.search
            C = max(s.init_points, s.candidates_per_round)
            # one round of C candidates x K folds, every one to the budget: halving off, no further rounds
            flat = dataclasses.replace(spec, search=dataclasses.replace(s, halving_eta=0, rounds=0, init_points=C))
            return dict(
                sizes=sizes,
                M=C * s.folds,
                n=spec.data.target.n_train * (s.folds - 1) // s.folds,
                B=t.batch_size,
                opt="sgd",
                loss=loss,
                spec=flat,
                longer=dataclasses.replace(flat, training=dataclasses.replace(t, max_epochs=t.max_epochs + 1)),
            )
        M = (len(spec.lrs) if spec.lrs is not None else 1) * len(spec.seeds)
        return dict(
            sizes=sizes,
            M=M,
            n=spec.data.target.n_train,
            B=t.batch_size,
            opt="sgd",
            loss=loss,
            spec=spec,
            longer=dataclasses.replace(spec, training=dataclasses.replace(t, max_epochs=t.max_epochs + 1)),
        )
    if node.study == "fractals" and node.stage == "train":
        t = spec.training
        d = 1 if node.job.fractal == "cantor1d" else 2
        return dict(
            sizes=layer_sizes(d, node.job.width, node.job.depth),
            M=len(spec.lrs) * len(spec.seeds),
            n=spec.data.n_train,
            B=t.batch_size,
            opt="adam",
            loss="hinge",
            spec=spec,
            longer=dataclasses.replace(spec, training=dataclasses.replace(t, max_epochs=t.max_epochs + 1)),
        )
    if node.study == "separation" and node.stage == "learner":
        n = min(spec.n_train or spec.data.n_train, spec.data.n_train)
        M = len(spec.seeds) * max(len(spec.lrs), len(spec.flow_lrs))
        return dict(
            learner=(node.job.d, node.job.width, spec.second_width),
            sizes=[node.job.d, node.job.width, spec.second_width, 1],
            M=M,
            n=n,
            B=n,
            opt="sgd",
            loss="mse",
            spec=spec,
            longer=dataclasses.replace(spec, steps=spec.steps + 1),
        )
    raise ValueError(f"{node.study}/{node.stage}: no training stack known here")


def _bytes_per_model(sizes: list[int], B: int) -> float:
    """Weights, gradients, the optimiser's two moments and the batch's activations of one model, float32."""
    P = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    return 4.0 * (4 * P + 3 * B * sum(sizes))


def time_step(sizes, M, n, B, opt_name, loss_name, seconds: float) -> tuple[float, int]:
    """Seconds of one optimiser step of an M-model stack (after one warm-up step), over about ``seconds``."""
    d = sizes[0]
    g = torch.Generator().manual_seed(0)
    rows = min(n, 4096)  # the step reads B rows per model: a smaller pool of inputs costs the same per step
    x = torch.randn(rows, d, generator=g)
    y = torch.randn(rows, generator=g)
    if loss_name == "hinge":
        y = torch.sign(y)
    params = [(W, b) for W, b in init_params(sizes, np.arange(M), "glorot_uniform")]
    opt, loss = OPTIMIZERS[opt_name], LOSSES.get(loss_name, LOSSES["mse"])
    state = opt.init_state(params)
    lr = torch.full((M,), 1e-3)
    per = models_per_step(params, state)
    dev = torch.device("cpu")
    with torch.no_grad():
        step_in_groups(opt, params, state, *_batch(x, y, M, B, dev, 0), lr, loss, per)
        return _fastest_window(
            lambda k: step_in_groups(opt, params, state, *_batch(x, y, M, B, dev, k + 1), lr, loss, per), seconds
        )


WINDOWS = 5


def _fastest_window(step, seconds: float, least: int = WINDOWS) -> tuple[float, int]:
    """Seconds per call of ``step`` in the fastest of :data:`WINDOWS` consecutive windows of the calls made in about
    ``seconds`` (at least ``least`` calls; no more after 3x ``seconds``), and the calls made.  The fastest window, as
    the speed probe keeps its fastest run: a virtual machine's host takes cycles in bursts (``top`` showed 33 % steal
    here), and one epoch's grid and cases timed as means moved 25-45 % between runs (a fractal epoch 36.8, 40.2 and
    54.2 s)."""
    times, t0 = [], time.perf_counter()
    while True:
        t = time.perf_counter()
        step(len(times))
        times.append(time.perf_counter() - t)
        el = time.perf_counter() - t0
        if (el >= seconds and len(times) >= least) or (len(times) >= 2 and el > 3 * seconds):
            break
    k = max(1, len(times) // WINDOWS)
    windows = [times[i : i + k] for i in range(0, len(times) - k + 1, k)]
    return min(sum(w) / len(w) for w in windows), len(times)


def time_learner_step(d: int, m: int, m2: int, M: int, n: int, seconds: float) -> tuple[float, int]:
    """Seconds of one full-batch mean-field step of the RZG23 learner (its own ``net_step``), M models of m neurons."""
    from depthlab.studies.separation import meanfield as L

    g = torch.Generator().manual_seed(0)
    X = torch.randn(n, d, generator=g)
    y = torch.randn(n, generator=g)
    V, w, b = L.init(M, m, m2, d, g)
    lr = torch.full((M,), 0.5)
    with torch.no_grad():
        L.net_step(V, w, b, X, y, lr)
        return _fastest_window(lambda k: L.net_step(V, w, b, X, y, lr), seconds)


def planned_epoch(node, stack, costs, cpu) -> dict:
    """The plan's charge for one more epoch of the budget (one more step of the RZG23 learner): without the stage's
    trained share and with it; priced by shape (``cpu``, the stage's ``shape_factor``) where the stage has one, and
    by the line fit (``work / rate`` and the calls) as ``line``."""
    cost = stage_cost(costs, f"{node.study}/{node.stage}")
    rate = cost.rate or fallback_rate(costs)
    dwork = stack["longer"].work() - stack["spec"].work()
    dcalls = calls_of(stack["longer"]) - calls_of(stack["spec"])
    line = dwork / rate + dcalls * cost.call_s
    line_shared = cost.fraction * dwork / rate + cost.call_fraction * dcalls * cost.call_s
    if cost.shape_factor is not None:
        d = shape_seconds(stack["longer"], cpu) - shape_seconds(stack["spec"], cpu)
        bare, shared = cost.shape_factor * d, cost.fraction * cost.shape_factor * d
    else:
        bare, shared = line, line_shared
    return {
        "bare": bare,
        "with_share": shared,
        "line": line,
        "fraction": cost.fraction,
        "shape_factor": cost.shape_factor,
        "rate": rate,
        "call_s": cost.call_s,
        "dwork": dwork,
        "dcalls": dcalls,
    }


def cases(config: dict) -> list:
    """Per stage, the job the plan prices highest, and for Mori & Ueda also the highest at P <= 1e6 (Fig. 2's scale)."""
    graph = JobGraph(config)
    best: dict[str, tuple[float, object]] = {}
    for node in graph:
        if (node.study, node.stage) not in (
            ("mori_ueda", "lrsearch"),
            ("mori_ueda", "train"),
            ("fractals", "train"),
            ("separation", "learner"),
        ):
            continue
        s = job_seconds(node.spec, node.study, node.stage)
        keys = [f"{node.study}/{node.stage}"]
        if node.study == "mori_ueda" and node.spec.shape.n_params <= 2e6:
            keys.append(f"{node.study}/{node.stage} (P <= 1e6)")
        for k in keys:
            if s > best.get(k, (-1.0, None))[0]:
                best[k] = (s, node)
    return [(k, best[k][1]) for k in sorted(best)]


# The shapes the CPU throughput model (depthlab.costs.shapes) is fitted to: the batched trainer's step over the
# papers' ranges of input dimension, width, depth, batch, stack and optimiser, and the RZG23 learner's full-batch step,
# each small enough to time in seconds.  The paper cases above are *not* among them: they check the fit out of sample.
GRID = (
    # (label, d, widths of the hidden layers, B, M, optimiser); SGD at Mori & Ueda's B = 50
    *(
        (f"sgd d{d} h{h} L{L} M{M}", d, [h] * L, 50, M, "sgd")
        for d, h, L, M in (
            (30, 3000, 1, 10),
            (30, 12000, 1, 10),
            (40, 1000, 3, 10),
            (100, 300, 1, 50),
            (100, 1000, 1, 50),
            (100, 5000, 1, 10),
            (100, 300, 5, 30),
            (100, 100, 10, 30),
            (100, 1500, 3, 5),
            (200, 3000, 2, 3),
            (500, 2000, 1, 10),
            (500, 300, 5, 30),
            (500, 1000, 5, 3),
            (1000, 1000, 1, 20),
            (1000, 10000, 1, 2),
            (1000, 3000, 3, 2),
            (40, 3000, 8, 2),
            # stacks whose weights or activations outgrow the cache (the papers' are far larger)
            (30, 20000, 1, 20),
            (100, 5000, 1, 24),
            (100, 2000, 3, 8),
            (500, 2000, 1, 30),
            (1000, 5000, 1, 6),
            (100, 1000, 5, 12),
            (30, 25000, 1, 10),
            (30, 40000, 1, 4),
            # thin and wide, around Fig. 6's d = 30, h = 33 333 (M = 3 and 50): the cache term's edge for its groups'
            # activations (aligned widths: their step grew in step with h here; the unaligned ones are below)
            (30, 30000, 1, 10),
            (30, 36000, 1, 20),
            (40, 30000, 1, 4),
            (100, 30000, 1, 4),
            (200, 16000, 1, 6),
            # square hidden layers of Fig. 3's kind (h = 5 000 is the paper's; these are other widths)
            (100, 3000, 3, 3),
            (100, 5000, 2, 3),
            (100, 4000, 4, 2),
            # widths that are not a multiple of 8 floats (the kernels' aligned rows), as Mori & Ueda's fixed-count
            # widths are (Fig. 6's is 33 333): each costs 1.3-1.45x its aligned neighbour's step
            (30, 3333, 1, 10),
            (30, 20001, 1, 10),
            (40, 25001, 1, 4),
            (100, 4999, 1, 10),
            (100, 1999, 3, 3),
            (200, 4999, 2, 3),
            (1000, 9999, 1, 2),
        )
    ),
    # Adam at the fractal nets' B = 100 (d = 1, 2) and the radial nets' (d up to 128)
    *(
        (f"adam d{d} h{h} L{L} M{M}", d, [h] * L, B, M, "adam")
        for d, h, L, M, B in (
            (2, 10, 1, 9, 100),
            (2, 50, 3, 9, 100),
            (2, 100, 5, 9, 100),
            (2, 200, 2, 9, 100),
            (1, 400, 3, 9, 100),
            (2, 400, 5, 3, 100),
            (2, 300, 5, 9, 100),
            (2, 400, 4, 9, 100),
            (1, 200, 5, 9, 100),
            (16, 64, 2, 12, 100),
            (128, 512, 3, 12, 100),
        )
    ),
)
LEARNER_GRID = (  # (label, d, m, m2, M, n)
    ("learner d16 m256", 16, 256, 64, 9, 4000),
    ("learner d64 m1024", 64, 1024, 64, 3, 8000),
    ("learner d128 m2048", 128, 2048, 64, 2, 8000),
    # wider and over more points, toward the paper's m = 8 192 (its case is d = 128 at n = 50 000)
    ("learner d128 m4096", 128, 4096, 64, 1, 16000),
    ("learner d96 m8192", 96, 8192, 64, 1, 12000),
)


def grid_points(seconds: float) -> list[dict]:
    """Every :data:`GRID` and :data:`LEARNER_GRID` shape timed: its shape (as a spec's ``gpu_shape()`` gives it) and
    ``step_s``."""
    pts = []
    for label, d, hidden, B, M, opt in GRID:
        sizes = [d, *hidden, 1]
        step_s, steps = time_step(sizes, M, 4096, B, opt, "mse" if opt == "sgd" else "hinge", seconds)
        P = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
        pts.append(
            dict(label=label, d=d, n=4096, P=float(P), L=len(hidden), h=float(max(hidden)), M=M, B=B)
            | dict(adam=opt == "adam", kind="mlp", step_s=step_s, steps_timed=steps)
        )
        print(f"  grid {label:<28} P {P:>10.3g}: {step_s * 1e3:9.3f} ms/step ({steps} steps)", flush=True)
    for label, d, m, m2, M, n in LEARNER_GRID:
        step_s, steps = time_learner_step(d, m, m2, M, n, seconds)
        pts.append(
            dict(label=label, d=d, n=n, P=float(m * d + 2 * m2), L=2, h=float(m), M=M, B=n)
            | dict(adam=False, kind="learner", step_s=step_s, steps_timed=steps)
        )
        print(f"  grid {label:<28} n {n}: {step_s * 1e3:9.3f} ms/step ({steps} steps)", flush=True)
    return pts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/paper_rates.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(ROOT / "config" / "paper.yaml"))
    ap.add_argument("--seconds", type=float, default=60.0, help="timing per paper case (default 60)")
    ap.add_argument("--grid-seconds", type=float, default=3.0, help="timing per grid shape (default 3)")
    ap.add_argument("--no-grid", action="store_true", help="fit the shipped cpu_points.json instead of timing the grid")
    ap.add_argument("--max-gib", type=float, default=6.0, help="largest stack timed; larger ones on fewer models")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "paper_rates.json"))
    ap.add_argument(
        "--points-out",
        default=str(ROOT / "results" / "bench" / "cpu_points.json"),
        help="where the timed grid goes (copy it over workflow/depthlab/cpu_points.json to ship it)",
    )
    args = ap.parse_args(argv)
    try:  # before any work: files of their own, never inside a run's folder
        outputs.bench_file(args.out)
        outputs.bench_file(args.points_out, what="--points-out")
    except outputs.OutputRefused as e:
        raise SystemExit(f"error: {e}") from None
    set_threads()
    threads = pin_threads(1)
    config = load(args.config)
    costs = load_costs()
    probe_s = probe.measure()
    print(
        f"paper_rates on {platform.processor() or platform.machine()}; threads: {threads}; config {args.config}; "
        f"probe {probe_s:.4f} s (the CPU calibration's {calibration_probe()})"
    )
    if args.no_grid:
        points, probe_s, cache = shapes.load_points()
    else:
        points, cache = grid_points(args.grid_seconds), shapes.cache_bytes()
        doc = {"machine": platform.processor() or platform.machine(), "threads": threads, "probe_s": probe_s}
        doc["cache_bytes"] = cache
        outputs.write_bench(json.dumps({**doc, "points": points}, indent=1), args.points_out, what="--points-out")
        print(f"wrote {args.points_out}")
    model = shapes.fit(points, probe_s, cache)
    worst = max(abs(math.log(r)) for *_, r in shapes.check(model, points))
    print(f"the throughput model fitted to {len(points)} grid steps: {model}; worst in sample x{math.exp(worst):.2f}")
    speed = probe_s / calibration_probe() if calibration_probe() else 1.0
    rows = []
    for label, node in cases(config):
        st = _stack(node)
        if "learner" in st:
            d, m_, m2 = st["learner"]
            m = max(1, min(st["M"], int(args.max_gib * GIB // (4.0 * 6 * d * m_ * min(st["n"], 4096)))))
            step_s, steps = time_learner_step(d, m_, m2, m, st["n"], args.seconds)
            spe = 1
            kind = "learner"
        else:
            m = max(1, min(st["M"], int(args.max_gib * GIB // _bytes_per_model(st["sizes"], st["B"]))))
            step_s, steps = time_step(st["sizes"], m, st["n"], st["B"], st["opt"], st["loss"], args.seconds)
            spe = math.ceil(st["n"] / st["B"])
            kind = "mlp"
        measured = step_s * spe * st["M"] / m
        sizes = st["sizes"]
        P = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:])) if kind == "mlp" else d * m_ + 2 * m2
        at = shapes.StepShape(
            d=sizes[0], n=st["n"], P=float(P), L=len(sizes) - 2, h=float(max(sizes[1:-1])), M=m, B=st["B"]
        )
        at = dataclasses.replace(at, adam=st["opt"] == "adam", kind=kind)
        modelled = model.step_s(at) * spe * st["M"] / m
        plan = planned_epoch(node, st, costs, model)
        # the line fit's seconds are the calibration machine's: scaled by the probes, as `depthlab plan` prints them here
        plan["line"] *= speed
        row = {
            "case": label,
            "job": node.path,
            "sizes": st["sizes"][:3] + (["..."] if len(st["sizes"]) > 3 else []),
            "depth": len(st["sizes"]) - 2,
            "models": st["M"],
            "models_timed": m,
            "steps_per_epoch": spe,
            "steps_timed": steps,
            "measured_epoch_s": measured,
            "shape_model_epoch_s": modelled,
            "shape_model_over_measured": modelled / measured,
            "planned_epoch_s": plan["bare"],
            "planned_epoch_with_share_s": plan["with_share"],
            "fraction": plan["fraction"],
            "planned_over_measured": plan["bare"] / measured,
            "with_share_over_measured": plan["with_share"] / measured,
            "line_planned_epoch_s": plan["line"],
            "line_over_measured": plan["line"] / measured,
        }
        rows.append(row)
        print(
            f"  {label:<34} {node.path:<48} {st['M']:>3} models (timed {m}), {spe} steps/epoch: measured "
            f"{measured:10.1f} s/epoch; the shape model {modelled:10.1f} (x{modelled / measured:.2f}); the plan "
            f"{plan['bare']:10.1f} (x{row['planned_over_measured']:.2f}), with the trained share "
            f"{plan['fraction']:.2f} {plan['with_share']:10.1f}; the line fit alone {plan['line']:10.1f} "
            f"(x{row['line_over_measured']:.2f})",
            flush=True,
        )
    out = {"threads": threads, "config": args.config, "probe_s": probe_s, "model": dataclasses.asdict(model)}
    outputs.write_bench(json.dumps({**out, "rows": rows}, indent=1), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
