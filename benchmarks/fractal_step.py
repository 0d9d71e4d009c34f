"""One fractal job's work, three ways side by side: ``python benchmarks/fractal_step.py [--reps 7] [--steps 40]``.

The shapes of the default's fractal nets (``config/config.yaml``): depth 5, widths 100 and 200, 2 rates x 2 seeds
stacked (M = 4), batch 100, 2-D inputs, 50 000 training rows, hinge loss, Adam.  Three sides, each timed on the same
pinned thread (torch, every BLAS pool and numba at 1; printed), interleaved and repeated ``--reps`` times:

* **shipped**: ``core.trainer``'s epoch loop as it runs today (``epoch_batches``: the epoch gathered once, batches are
  views; ``step_in_groups``; the fused Adam of ``core.optim.adam``, one kernel call per rate);
* **reference**: the trainer before this change, kept here as it was: one gather per minibatch and the eight-pass
  ``torch._foreach_*`` Adam (:class:`ForeachAdam`, the package's step up to 1b01947);
* **plain**: a plain PyTorch loop, one ``nn.Sequential`` per model, autograd and ``torch.optim.Adam``.

Per width it prints ms per step (min and median over the repetitions) and the ratios reference / shipped and plain /
shipped; then the check: every ``check_every`` epochs (4) the trainer measured the training loss on all 50 000 rows,
and now on a fixed subsample of 5 000 (``fractals.train.CHECK_ROWS``); the job-level ratio adds each side's check,
per check interval.  Speeds are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench import pin_threads  # noqa: E402
from depthlab import outputs  # noqa: E402
from depthlab.core.losses.hinge import Hinge  # noqa: E402
from depthlab.core.mlp import init_params  # noqa: E402
from depthlab.core.optim.adam import Adam  # noqa: E402
from depthlab.core.optim.backprop import forward_backward  # noqa: E402
from depthlab.core.shapes import layer_sizes  # noqa: E402
from depthlab.core.trainer import _full_pass, epoch_batches, epoch_order, models_per_step, step_in_groups  # noqa: E402
from depthlab.studies.fractals.train import CHECK_ROWS  # noqa: E402


@dataclass(frozen=True)
class ForeachAdam(Adam):
    """The package's Adam step up to 1b01947: the same update as eight ``torch._foreach_*`` passes over parameters and
    moments (plus a temporary), the bias correction read to the host as Python floats."""

    def step(self, params, state, x, y, lr, loss):
        state["step"] += 1
        t = float(state["step"])
        bc1, bc2_sqrt = 1.0 - self.beta1**t, (1.0 - self.beta2**t) ** 0.5
        neg_step = (-lr / bc1).view(-1, 1, 1)
        ps, grads, ms, vs = [], [], [], []

        def record(ell, a_prev, g):
            W, b = params[ell]
            ps.extend((W, b))
            grads.extend((torch.bmm(a_prev.transpose(1, 2), g), g.sum(1, keepdim=True)))
            ms.extend((state[f"m_W{ell}"], state[f"m_b{ell}"]))
            vs.extend((state[f"v_W{ell}"], state[f"v_b{ell}"]))

        batch_loss = forward_backward(params, x, y, loss, record)
        torch._foreach_lerp_(ms, grads, 1.0 - self.beta1)
        torch._foreach_mul_(vs, self.beta2)
        torch._foreach_addcmul_(vs, grads, grads, value=1.0 - self.beta2)
        denom = torch._foreach_sqrt(vs)
        torch._foreach_div_(denom, bc2_sqrt)
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(ps, torch._foreach_mul(ms, [neg_step] * len(ms)), denom)
        return batch_loss


D, DEPTH, B, N, M, RATES = 2, 5, 100, 50_000, 4, (1e-3, 5e-3)


def _problem(width: int):
    g = torch.Generator().manual_seed(0)
    X = torch.rand(N, D, generator=g) * 2 - 1
    Y = torch.sign(X[:, 0] * X[:, 1]) + (X[:, 0] * X[:, 1] == 0)
    sizes = layer_sizes(D, width, DEPTH)
    init = init_params(sizes, np.arange(2), "truncated_normal")
    init = [(torch.cat([W, W]), torch.cat([b, b])) for W, b in init]  # rate-major: (rate, seed) = m // 2, m % 2
    lr = torch.tensor([r for r in RATES for _ in range(2)])
    rows = torch.as_tensor(np.stack([epoch_order(m, 1, N) for m in range(M)]))
    return X, Y, sizes, init, lr, rows


def time_trainer(opt, per_step_gather: bool, X, Y, init, lr, rows, steps: int) -> float:
    """Seconds per step of the trainer's inner loop (what ``core.trainer.train`` runs between checks)."""
    params = [(W.clone(), b.clone()) for W, b in init]
    state = opt.init_state(params)
    per = models_per_step(params, state)
    loss = Hinge()
    if per_step_gather:
        batches = ((X[j], Y[j]) for j in (rows[:, a : a + B] for a in range(0, N, B)))
    else:
        batches = epoch_batches(X, Y, rows, B)
    it = iter(batches)
    with torch.no_grad():
        for _ in range(3):  # warm-up
            step_in_groups(opt, params, state, *next(it), lr, loss, per)
        t = time.perf_counter()
        for _ in range(steps):
            step_in_groups(opt, params, state, *next(it), lr, loss, per)
        return (time.perf_counter() - t) / steps


def time_plain(sizes, X, Y, init, lr, rows, steps: int) -> float:
    """Seconds per step of M plain ``nn.Sequential`` nets, one after another, autograd and ``torch.optim.Adam``."""
    nets, opts = [], []
    for m in range(M):
        layers = []
        for i, (W, b) in enumerate(init):
            lin = torch.nn.Linear(sizes[i], sizes[i + 1])
            with torch.no_grad():
                lin.weight.copy_(W[m].T)
                lin.bias.copy_(b[m, 0])
            layers += [lin, torch.nn.ReLU()]
        nets.append(torch.nn.Sequential(*layers[:-1]))
        opts.append(torch.optim.Adam(nets[-1].parameters(), lr=float(lr[m])))

    def step(s):
        for m in range(M):
            j = rows[m, s * B : (s + 1) * B]
            out = nets[m](X[j]).squeeze(-1)
            loss = torch.relu(1.0 - Y[j] * out).mean()
            opts[m].zero_grad()
            loss.backward()
            opts[m].step()

    for s in range(3):
        step(s)
    t = time.perf_counter()
    for s in range(3, 3 + steps):
        step(s)
    return (time.perf_counter() - t) / steps


def time_check(init, X, Y, rows_kept: int, reps: int = 3) -> float:
    idx = torch.arange(N).expand(M, N)[:, :rows_kept]
    best = np.inf
    for _ in range(reps):
        t = time.perf_counter()
        _full_pass(init, X, Y, idx, Hinge(), 4096)
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7, help="interleaved repetitions of each side (default 7)")
    ap.add_argument("--steps", type=int, default=40, help="steps per timed repetition (default 40)")
    ap.add_argument("--widths", default="100,200")
    ap.add_argument("--check-every", type=int, default=4, help="epochs between checks (config.yaml's fractals: 4)")
    ap.add_argument("--out", default=None, help="write the numbers as JSON here")
    a = ap.parse_args(argv)
    if a.out:
        try:
            outputs.user_file(a.out, what="--out")
        except outputs.OutputRefused as e:
            raise SystemExit(f"error: {e}") from None
    threads = pin_threads(1)
    print("threads: " + ", ".join(f"{k} {v}" for k, v in threads.items()), flush=True)
    steps_per_epoch = N // B
    out = {"threads": threads, "reps": a.reps, "steps": a.steps, "widths": {}}
    for width in (int(w) for w in a.widths.split(",")):
        X, Y, sizes, init, lr, rows = _problem(width)
        sides = {
            "shipped": (time_trainer, Adam(), False),
            "reference": (time_trainer, ForeachAdam(), True),
            "plain": (time_plain, sizes),
        }
        ms = {k: [] for k in sides}
        for _ in range(a.reps):  # interleaved: a slow spell of the machine falls on every side alike
            for k, (fn, *how) in sides.items():
                ms[k].append(fn(*how, X, Y, init, lr, rows, a.steps) * 1e3)
        check = {"all rows": time_check(init, X, Y, N), f"{CHECK_ROWS} rows": time_check(init, X, Y, CHECK_ROWS)}
        med = {k: float(np.median(v)) for k, v in ms.items()}
        per_check = a.check_every * steps_per_epoch
        job_ref = med["reference"] * per_check + check["all rows"] * 1e3
        job_new = med["shipped"] * per_check + check[f"{CHECK_ROWS} rows"] * 1e3
        print(f"depth {DEPTH}, width {width}, M = {M} (2 rates x 2 seeds), batch {B}:", flush=True)
        for k, v in ms.items():
            print(f"  {k:<9} {min(v):7.3f} ms/step min, {med[k]:7.3f} median")
        print(
            f"  step ratio reference / shipped: x{min(ms['reference']) / min(ms['shipped']):.2f} (min), "
            f"x{med['reference'] / med['shipped']:.2f} (median); plain / shipped: x{med['plain'] / med['shipped']:.2f}"
        )
        print(
            f"  check: all {N} rows {check['all rows'] * 1e3:.0f} ms, {CHECK_ROWS} rows "
            f"{check[f'{CHECK_ROWS} rows'] * 1e3:.0f} ms; per {a.check_every}-epoch interval (steps + check) "
            f"reference / shipped: x{job_ref / job_new:.2f} (median steps)",
            flush=True,
        )
        out["widths"][str(width)] = {
            "ms_per_step": ms,
            "check_ms": {k: v * 1e3 for k, v in check.items()},
            "step_ratio_median": med["reference"] / med["shipped"],
            "interval_ratio_median": job_ref / job_new,
            "plain_ratio_median": med["plain"] / med["shipped"],
        }
    if a.out:
        outputs.write_user_file(json.dumps(out, indent=1).encode(), a.out, what="--out")


if __name__ == "__main__":
    main()
