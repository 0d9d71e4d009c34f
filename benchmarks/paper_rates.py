"""The cost model at the papers' shapes: what one epoch of the costliest paper jobs' training stacks costs here,
measured, against what ``depthlab plan`` charges that epoch.

``make paper-check`` runs every stage's largest paper job with its budgets capped to one epoch, so the start-up, the
data and the test predictions weigh as much as the epoch, and the plan charges that epoch only its stage's *trained
share* (``fraction``: the default's nets stop early).  Neither says what an epoch costs.  This script times the
trainer's own step (``core.trainer.step_in_groups``, as the stage runs it: the models stacked, in groups of
``trainer.models_per_step``) on the job's shapes (input dimension, widths, depth, batch, optimiser, loss) for about
``--seconds`` per case, and prints beside it the plan's per-epoch charge, with and without the trained share:

    planned epoch = fraction x d(work)/rate + call_fraction x d(calls) x call_s      (d: one more epoch of the budget)

where the derivative is taken on the job's own spec (its ``work()`` and ``calls()`` at ``max_epochs`` and one more).
A stack too large for this machine (the P = 1e8 nets) is timed on fewer models and scaled by the models (a stack's
step is linear in its models: each has its own rows and weights).  The full-set checks (every ``check_every``
epochs) and the test predictions are not in the timed epoch.

Threads: torch, every BLAS pool and numba pinned to 1, as every job of the default profile runs.  Nothing is asserted;
it prints the ratios it measured side by side and writes them as JSON (``--out``).

    python benchmarks/paper_rates.py [--config config/paper.yaml] [--seconds 60] [--max-gib 6] [--out FILE]
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
from depthlab import outputs  # noqa: E402
from depthlab.config import load  # noqa: E402
from depthlab.core.device import set_threads  # noqa: E402
from depthlab.core.mlp import init_params  # noqa: E402
from depthlab.core.shapes import layer_sizes  # noqa: E402
from depthlab.core.trainer import models_per_step, step_in_groups  # noqa: E402
from depthlab.costs.model import calls_of, fallback_rate, load_costs, stage_cost  # noqa: E402
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
        steps, t0 = 0, time.perf_counter()
        while True:
            step_in_groups(opt, params, state, *_batch(x, y, M, B, dev, steps + 1), lr, loss, per)
            steps += 1
            el = time.perf_counter() - t0
            if el >= seconds or (steps >= 3 and el * (steps + 1) / steps > 3 * seconds):
                break
    return el / steps, steps


def planned_epoch(node, stack, costs) -> dict:
    """The plan's charge for one more epoch of the budget: with the stage's trained share and without."""
    cost = stage_cost(costs, f"{node.study}/{node.stage}")
    rate = cost.rate or fallback_rate(costs)
    dwork = stack["longer"].work() - stack["spec"].work()
    dcalls = calls_of(stack["longer"]) - calls_of(stack["spec"])
    bare = dwork / rate + dcalls * cost.call_s
    shared = cost.fraction * dwork / rate + cost.call_fraction * dcalls * cost.call_s
    return {
        "bare": bare,
        "with_share": shared,
        "fraction": cost.fraction,
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
        if (node.study, node.stage) not in (("mori_ueda", "lrsearch"), ("mori_ueda", "train"), ("fractals", "train")):
            continue
        s = job_seconds(node.spec, node.study, node.stage)
        keys = [f"{node.study}/{node.stage}"]
        if node.study == "mori_ueda" and node.spec.shape.n_params <= 2e6:
            keys.append(f"{node.study}/{node.stage} (P <= 1e6)")
        for k in keys:
            if s > best.get(k, (-1.0, None))[0]:
                best[k] = (s, node)
    return [(k, best[k][1]) for k in sorted(best)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/paper_rates.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(ROOT / "config" / "paper.yaml"))
    ap.add_argument("--seconds", type=float, default=60.0, help="timing per case (default 60)")
    ap.add_argument("--max-gib", type=float, default=6.0, help="largest stack timed; larger ones on fewer models")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "paper_rates.json"))
    args = ap.parse_args(argv)
    try:  # before any work: a file of its own, never inside a run's folder
        outputs.bench_file(args.out)
    except outputs.OutputRefused as e:
        raise SystemExit(f"error: {e}") from None
    set_threads()
    threads = pin_threads(1)
    config = load(args.config)
    costs = load_costs()
    print(f"paper_rates on {platform.processor() or platform.machine()}; threads: {threads}; config {args.config}")
    rows = []
    for label, node in cases(config):
        st = _stack(node)
        m = max(1, min(st["M"], int(args.max_gib * GIB // _bytes_per_model(st["sizes"], st["B"]))))
        step_s, steps = time_step(st["sizes"], m, st["n"], st["B"], st["opt"], st["loss"], args.seconds)
        spe = math.ceil(st["n"] / st["B"])
        measured = step_s * spe * st["M"] / m
        plan = planned_epoch(node, st, costs)
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
            "planned_epoch_s": plan["bare"],
            "planned_epoch_with_share_s": plan["with_share"],
            "fraction": plan["fraction"],
            "planned_over_measured": plan["bare"] / measured,
            "with_share_over_measured": plan["with_share"] / measured,
            "shipped_rate": plan["rate"],
            # the work rate that would make the bare charge equal the measurement, the per-call term kept
            "rate_that_fits": plan["dwork"] / max(measured - plan["dcalls"] * plan["call_s"], 1e-9),
        }
        rows.append(row)
        print(
            f"  {label:<32} {node.path:<48} {st['M']:>3} models (timed {m}), {spe} steps/epoch: measured "
            f"{measured:10.1f} s/epoch; planned {plan['bare']:10.1f} (x{row['planned_over_measured']:.2f}), with the "
            f"trained share {plan['fraction']:.2f} {plan['with_share']:10.1f} (x{row['with_share_over_measured']:.2f})",
            flush=True,
        )
    outputs.write_bench(json.dumps({"threads": threads, "config": args.config, "rows": rows}, indent=1), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
