"""The batched trainer's epoch time against the number of stacked models, at the default rate search's shapes.

    python benchmarks/step_vs_stack.py [--config config/config.yaml] [--figure fig2] [--target 2-local]
                                       [--stacks 1,2,3,4,6,9,12] [--epochs 5] [--out FILE]

Why: the pruned rate search trains 2.5x fewer candidate x fold epochs than the full one but ran only about
2.2x faster.  Its stacks are smaller (2-6 models instead of 9-12), so if a step has a part that does not shrink with the
stack, the seconds lag the epochs.  This prints, per depth of the config's (figure, target), the seconds of one epoch of
the trainer's inner loop (the data order, the gather, ``step_in_groups`` over every minibatch: what
``core.trainer.train`` runs between two checks) for each stack size M, and the least-squares line t(M) = a + b M with
its fixed share a / t(M) at M = 3 and M = 12.  The shapes are the search's: d, the width the parameter budget gives
at that depth, the training rows of one fold ((folds - 1) / folds of n_train), the batch size, SGD and the MSE loss.

One process, one torch thread (``core.device.set_threads(1)``), BLAS pinned to one thread (threadpoolctl), numba not
used; the threads are printed and written to the JSON.  Each (depth, M) runs ``--epochs`` epochs after one warm-up
epoch and reports the median.  Speeds are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "config" / "config.yaml"))
    ap.add_argument("--figure", default="fig2")
    ap.add_argument("--target", default="2-local")
    ap.add_argument("--stacks", default="1,2,3,4,6,9,12")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    from depthlab import outputs

    if a.out:
        try:
            outputs.user_file(a.out, what="--out")
        except outputs.OutputRefused as e:
            raise SystemExit(f"error: {e}") from None

    import numpy as np
    import torch
    from threadpoolctl import threadpool_info, threadpool_limits

    from depthlab.config import load
    from depthlab.core.device import set_threads
    from depthlab.core.losses.mse import MSE
    from depthlab.core.mlp import init_params
    from depthlab.core.optim.sgd import SGD
    from depthlab.core.shapes import layer_sizes, width_for_hidden_weights
    from depthlab.core.trainer import epoch_order, models_per_step, step_in_groups

    from depthlab.config import ConfigError

    try:  # one line naming the option, never a traceback
        cfg = load(a.config)
    except (ConfigError, OSError) as e:
        raise SystemExit(f"error: --config {a.config}: {e}") from None
    mu = cfg["studies"].get("mori_ueda")
    if mu is None:
        raise SystemExit(f"error: --config {a.config} builds no mori_ueda study")
    if a.figure not in mu["figures"]:
        raise SystemExit(f"error: --figure {a.figure!r}: the config's figures are {', '.join(sorted(mu['figures']))}")
    fig = mu["figures"][a.figure]
    if a.target not in fig["targets"]:
        raise SystemExit(f"error: --target {a.target!r}: {a.figure}'s targets are {', '.join(sorted(fig['targets']))}")
    t = fig["targets"][a.target]
    folds = mu["lrsearch"]["folds"]
    B = mu["training"]["batch_size"]
    d, N = int(t["d"]), int(t["n_train"])
    n = N * (folds - 1) // folds
    try:
        stacks = [int(s) for s in a.stacks.split(",")]
    except ValueError:
        stacks = []
    if not stacks or min(stacks) < 1 or a.epochs < 1:
        raise SystemExit(
            f"error: --stacks {a.stacks!r} must list whole numbers of at least 1 (e.g. 1,2,6) and --epochs "
            "be at least 1"
        )
    set_threads(1)
    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.standard_normal((N, d)), dtype=torch.float32)
    Y = torch.as_tensor(rng.standard_normal(N), dtype=torch.float32)
    opt, loss = SGD(), MSE()
    out: dict = {"figure": a.figure, "target": a.target, "d": d, "n": n, "batch": B, "depths": {}}
    with threadpool_limits(limits=1), torch.no_grad():
        out["threads"] = {
            "torch": torch.get_num_threads(),
            "blas": sorted({f"{i['internal_api']}:{i['num_threads']}" for i in threadpool_info()}),
        }
        print(f"{a.figure} {a.target}: d = {d}, {n} rows per fold, B = {B}; threads {out['threads']}")
        for L in fig["depths"]:
            h = width_for_hidden_weights(d=d, depth=L, budget=fig["budget"])
            row = {}
            for M in stacks:
                params = init_params(layer_sizes(d, h, L), np.arange(M))
                state = opt.init_state(params)
                idx_all = torch.as_tensor(np.stack([rng.permutation(N)[:n] for _ in range(M)]))
                lr = torch.full((M,), 1e-3)
                per = models_per_step(params, state)
                times = []
                for e in range(max(1, a.epochs) + 1):
                    t0 = time.perf_counter()
                    order = np.stack([epoch_order(m, e + 1, n) for m in range(M)])
                    rows = torch.gather(idx_all, 1, torch.as_tensor(order))
                    for s in range(0, n, B):
                        j = rows[:, s : s + B]
                        step_in_groups(opt, params, state, X[j], Y[j], lr, loss, per)
                    times.append(time.perf_counter() - t0)
                row[M] = float(np.median(times[1:]))
            Ms = np.array(list(row), dtype=float)
            ts = np.array(list(row.values()))
            b, a0 = np.polyfit(Ms, ts, 1)
            share = {m: a0 / (a0 + b * m) for m in (3, 12)}
            out["depths"][L] = {
                "width": h,
                "seconds_per_epoch": {str(k): v for k, v in row.items()},
                "fixed_s": float(a0),
                "per_model_s": float(b),
                "fixed_share": {str(k): float(v) for k, v in share.items()},
            }
            cells = "  ".join(f"M={m}: {1e3 * v:.1f}" for m, v in row.items())
            print(f"L = {L}, width {h}: ms/epoch {cells}")
            lo, hi = min((m for m in row if m >= 2), default=min(row)), max(row)
            print(
                f"   t(M) = {1e3 * a0:.1f} + {1e3 * b:.2f} M ms; fixed share {share[3]:.0%} at M = 3, "
                f"{share[12]:.0%} at M = 12; per model-epoch M={lo} / M={hi}: "
                f"{(row[lo] / lo) / (row[hi] / hi):.2f}x"
            )
    if a.out:
        outputs.write_user_file(json.dumps(out, indent=1).encode(), a.out, what="--out")


if __name__ == "__main__":
    main()
