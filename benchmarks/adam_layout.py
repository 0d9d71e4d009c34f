"""Does Adam's per-tensor update hold back the fractal nets?  ``python benchmarks/adam_layout.py [--steps N]``.

Side by side, in one process, on one thread (torch, every BLAS/OpenMP pool and numba pinned to 1 and printed), at
the Malach & Shalev-Shwartz shapes (input 2, hinge loss, batch 100, M stacked models as the trainer runs them):

* ``per tensor``: Adam as depthlab ran it up to 62563d8 (each layer's W and b updated as soon as its gradient is
  formed: eight Python calls of one elementwise op per tensor);
* ``depthlab``: :class:`depthlab.core.optim.adam.Adam` now, the same arithmetic with one ``torch._foreach_*`` call
  per op over every tensor, after the backward pass;
* ``flat``: gradients written into one layer-major buffer, the two moments kept in one buffer each, so six of the
  eight ops run once over every parameter (the per-model rate and the final ``addcdiv_`` stay per tensor);
* ``no update``: the forward and backward passes and the gradients alone (the floor any Adam layout can reach).

It prints microseconds per step (best of 4 repeats), each variant's speed relative to ``per tensor``, and whether
400 steps of it leave every parameter equal to the bit to ``per tensor``'s (the stores of a run depend on that).
Nothing is asserted: it is a measurement, kept so the numbers in docs/performance.md can be re-measured.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench import pin_threads  # noqa: E402
from depthlab.core.losses.hinge import Hinge  # noqa: E402
from depthlab.core.mlp import init_params  # noqa: E402
from depthlab.core.optim.adam import Adam  # noqa: E402
from depthlab.core.optim.backprop import forward_backward  # noqa: E402

SHAPES = {  # name: layer sizes (Fig. 4 and 5 nets of config/config.yaml, and Fig. 4's width 200 of paper.yaml)
    "depth 1 width 10": [2, 10, 1],
    "depth 1 width 400": [2, 400, 1],
    "depth 5 width 20": [2] + [20] * 5 + [1],
    "depth 5 width 100": [2] + [100] * 5 + [1],
    "depth 5 width 200": [2] + [200] * 5 + [1],
}
B = 100
LRS = [1e-3, 5e-3, 1e-4]


class PerTensorAdam(Adam):
    def step(self, params, state, x, y, lr, loss):
        state["step"] += 1
        t = float(state["step"])
        bc1, bc2_sqrt = 1.0 - self.beta1**t, (1.0 - self.beta2**t) ** 0.5
        neg_step = (-lr / bc1).view(-1, 1, 1)

        def update(p, grad, key):
            m, v = state[f"m_{key}"], state[f"v_{key}"]
            m.lerp_(grad, 1.0 - self.beta1)
            v.mul_(self.beta2).addcmul_(grad, grad, value=1.0 - self.beta2)
            p.addcdiv_(m * neg_step, (v.sqrt() / bc2_sqrt).add_(self.eps))

        def apply(ell, a_prev, g):
            W, b = params[ell]
            update(W, torch.bmm(a_prev.transpose(1, 2), g), f"W{ell}")
            update(b, g.sum(1, keepdim=True), f"b{ell}")

        return forward_backward(params, x, y, loss, apply)


def _views(flat: torch.Tensor, shapes: list[torch.Size]) -> list[torch.Tensor]:
    out, off = [], 0
    for s in shapes:
        n = math.prod(s)
        out.append(flat[off : off + n].view(s))
        off += n
    return out


class FlatAdam(Adam):
    def init_state(self, params):
        total = sum(t.numel() for layer in params for t in layer)
        z = params[0][0].new_zeros(total)
        return {"step": torch.zeros((), dtype=torch.float64), "m": z, "v": z.clone()}

    def step(self, params, state, x, y, lr, loss):
        state["step"] += 1
        t = float(state["step"])
        bc1, bc2_sqrt = 1.0 - self.beta1**t, (1.0 - self.beta2**t) ** 0.5
        neg_step = (-lr / bc1).view(-1, 1, 1)
        shapes = [p.shape for layer in params for p in layer]
        m, v = state["m"], state["v"]
        grad = torch.empty_like(m)
        gv = _views(grad, shapes)

        def apply(ell, a_prev, g):
            torch.bmm(a_prev.transpose(1, 2), g, out=gv[2 * ell])
            torch.sum(g, 1, keepdim=True, out=gv[2 * ell + 1])

        out = forward_backward(params, x, y, loss, apply)
        m.lerp_(grad, 1.0 - self.beta1)
        v.mul_(self.beta2).addcmul_(grad, grad, value=1.0 - self.beta2)
        den = torch.sqrt(v, out=grad).div_(bc2_sqrt).add_(self.eps)
        for p, mi, di in zip([p for layer in params for p in layer], _views(m, shapes), _views(den, shapes)):
            p.addcdiv_(mi * neg_step, di)
        return out


class NoUpdate(Adam):
    def step(self, params, state, x, y, lr, loss):
        def apply(ell, a_prev, g):
            torch.bmm(a_prev.transpose(1, 2), g)
            g.sum(1, keepdim=True)

        return forward_backward(params, x, y, loss, apply)


VARIANTS = {"per tensor": PerTensorAdam(), "depthlab": Adam(), "flat": FlatAdam(), "no update": NoUpdate()}


def run(opt, sizes: list[int], M: int, steps: int):
    """(microseconds per step, final parameters) of ``steps`` steps of M models on a fixed stream of minibatches."""
    params = init_params(sizes, np.arange(M), "truncated_normal")
    state = opt.init_state(params)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(M, 20 * B, sizes[0], generator=g) * 2 - 1
    y = torch.sign(torch.rand(M, 20 * B, generator=g) - 0.5)
    lr, loss = torch.tensor(LRS[:M]), Hinge()
    with torch.no_grad():
        t = time.perf_counter()
        for s in range(steps):
            a = (s % 20) * B
            opt.step(params, state, x[:, a : a + B], y[:, a : a + B], lr, loss)
    return (time.perf_counter() - t) / steps * 1e6, params


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=600, help="timed steps per repeat (default 600)")
    ap.add_argument("--models", type=int, nargs="+", default=[1, 2], help="stacked models M (default: 1 2)")
    ap.add_argument(
        "--shapes",
        nargs="+",
        choices=list(SHAPES),
        default=list(SHAPES),
        metavar="SHAPE",
        help=f"shapes to measure (default: all): {', '.join(repr(k) for k in SHAPES)}",
    )
    args = ap.parse_args(argv)
    print(f"threads: {pin_threads(1)}")
    for name in args.shapes:
        sizes = SHAPES[name]
        for M in args.models:
            ref = run(PerTensorAdam(), sizes, M, 400)[1]
            same = {
                k: all(torch.equal(a, b) for la, lb in zip(ref, run(o, sizes, M, 400)[1]) for a, b in zip(la, lb))
                for k, o in VARIANTS.items()
                if k not in ("per tensor", "no update")
            }
            best = dict.fromkeys(VARIANTS, float("inf"))
            for _ in range(4):  # interleaved, so a slow moment of the machine hits every variant alike
                for k, o in VARIANTS.items():
                    best[k] = min(best[k], run(o, sizes, M, args.steps)[0])
            base = best["per tensor"]
            print(
                f"{name:<18} M={M}: "
                + "  ".join(f"{k} {v:7.0f} us (x{base / v:.2f})" for k, v in best.items())
                + "  | same bits as per tensor: "
                + ", ".join(f"{k} {'yes' if s else 'NO'}" for k, s in same.items()),
                flush=True,
            )


if __name__ == "__main__":
    main()
