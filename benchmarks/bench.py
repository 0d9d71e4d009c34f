"""Side-by-side benchmark: ``python benchmarks/bench.py [--quick] [--out results/bench/bench.json]`` (or ``make bench``).

Everything is measured in one run on one machine and printed as ratios:

* trainer: depthlab's batched SGD vs a plain PyTorch loop (shuffled DataLoader,
  nn.Sequential, torch.optim.SGD, one model at a time) on the same models and
  data, in model-epochs per second, at the default-config and the paper's
  Figure 2 shapes; plus the fraction of the measured matmul peak each reaches;
* NTK: Gram + Cholesky + blocked test prediction for every depth 1..10, seconds
  and peak RSS (each case in a fresh process), against a dense numpy version
  where that fits;
* pipeline: the Snakemake no-op rerun on the default config and the start-up
  cost of one job.

Speeds are reported, never asserted (shared, noisy machines).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from depthlab.core.device import describe, resolve_device, set_threads  # noqa: E402
from depthlab.core.kernels import kernel_regression  # noqa: E402
from depthlab.core.losses import MSE  # noqa: E402
from depthlab.core.mlp import init_params, layer_sizes  # noqa: E402
from depthlab.core.optim import SGD  # noqa: E402
from depthlab.studies.mori_ueda.targets import sample_inputs, target  # noqa: E402
from depthlab.studies.mori_ueda.widths import width_for_budget  # noqa: E402


# ---- matmul peak ------------------------------------------------------------------


def matmul_peak(dev: torch.device, n: int = 2048, reps: int = 5) -> float:
    """Measured float32 GEMM throughput in FLOP/s (best of ``reps``)."""
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    best = float("inf")
    for _ in range(reps + 1):
        _sync(dev)
        t = time.perf_counter()
        a @ b
        _sync(dev)
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


# ---- trainer: batched vs plain --------------------------------------------------------


def _flops_per_model_step(d: int, h: int, depth: int, B: int) -> float:
    """~6 FLOPs per weight per example: forward 2, backward 4 (activations' and weights' grads)."""
    weights = d * h + (depth - 1) * h * h + h
    return 6.0 * weights * B


def batched_rate(x, y, depth, h, M, steps, dev, B=50) -> float:
    """Model-steps per second of depthlab's batched step loop (gather + sgd_step), as in trainer.train."""
    params = [(W.to(dev), b.to(dev)) for W, b in init_params(layer_sizes(x.shape[1], h, depth), np.arange(M))]
    sgd, mse = SGD(), MSE()
    X = torch.as_tensor(x, dtype=torch.float32, device=dev)
    Y = torch.as_tensor(y, dtype=torch.float32, device=dev)
    lr = torch.full((M,), 1e-3, device=dev)
    n = x.shape[0]
    rows = torch.stack([torch.randperm(n) for _ in range(M)]).to(dev)

    def run(k):
        for s in range(k):
            st = (s * B) % (n - B)
            j = rows[:, st : st + B]
            sgd.step(params, {}, X[j], Y[j], lr, mse)

    with torch.no_grad():
        run(3)  # warm-up
        _sync(dev)
        t = time.perf_counter()
        run(steps)
        _sync(dev)
    return M * steps / (time.perf_counter() - t)


def plain_rate(x, y, depth, h, models, steps, dev, B=50) -> float:
    """Model-steps per second of the textbook loop: DataLoader(shuffle) + nn.Sequential + optim.SGD, one model at a time."""
    ds = torch.utils.data.TensorDataset(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32))
    total_t, total_steps = 0.0, 0
    for m in range(models):
        torch.manual_seed(m)
        layers = []
        sizes = [x.shape[1]] + [h] * depth + [1]
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            lin = torch.nn.Linear(a, b)
            torch.nn.init.xavier_uniform_(lin.weight)
            torch.nn.init.zeros_(lin.bias)
            layers += [lin] + ([torch.nn.ReLU()] if i < depth else [])
        net = torch.nn.Sequential(*layers).to(dev)
        opt = torch.optim.SGD(net.parameters(), lr=1e-3)
        loader = torch.utils.data.DataLoader(ds, batch_size=B, shuffle=True)
        it = iter(loader)
        done = 0
        t = None
        while done < steps + 3:
            try:
                xb, yb = next(it)
            except StopIteration:
                it = iter(loader)
                continue
            if done == 3:  # warm-up excluded
                _sync(dev)
                t = time.perf_counter()
            xb, yb = xb.to(dev), yb.to(dev)
            loss = torch.mean((net(xb).squeeze(-1) - yb) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            done += 1
        _sync(dev)
        total_t += time.perf_counter() - t
        total_steps += steps
    return total_steps / total_t


def trainer_case(name: str, d: int, n: int, budget: float, depth: int, M: int, steps: int, plain_models: int, dev: torch.device, peak: float) -> dict:
    h, _ = width_for_budget(d, budget, depth)
    x = sample_inputs(n, d, 0).astype(np.float32)
    y = target(x, 2, "local").astype(np.float32)
    b = batched_rate(x, y, depth, h, M, steps, dev)
    p = plain_rate(x, y, depth, h, plain_models, steps, dev)
    steps_per_epoch = int(np.ceil(n / 50))
    f = _flops_per_model_step(d, h, depth, 50)
    row = {
        "case": name, "d": d, "n_train": n, "budget": budget, "depth": depth, "width": h, "models_batched": M,
        "batched_model_epochs_per_s": b / steps_per_epoch, "plain_model_epochs_per_s": p / steps_per_epoch,
        "speedup": b / p, "batched_peak_fraction": b * f / peak, "plain_peak_fraction": p * f / peak,
    }
    print(f"  {name:<28} L={depth} h={h:<5} M={M:<3} batched {row['batched_model_epochs_per_s']:9.3f}  "
          f"plain {row['plain_model_epochs_per_s']:9.3f} model-epochs/s  speedup {row['speedup']:5.2f}x  "
          f"peak {row['batched_peak_fraction']:.0%} vs {row['plain_peak_fraction']:.0%}", flush=True)
    return row


# ---- NTK ------------------------------------------------------------------------------


def _ntk_child(kind: str, n: int, n_test: int, d: int, depths: list[int], q: mp.Queue) -> None:
    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"
    x = sample_inputs(n, d, 0)
    y = target(x, 2, "local")
    xt = sample_inputs(n_test, d, 1)
    t = time.perf_counter()
    if kind == "depthlab":
        fit = kernel_regression(x, y, xt, depths, device="cpu")
        pred = fit.prediction[0]
    else:
        pred = dense_numpy_ntk_regression(x, y, xt, depths)
    q.put({"seconds": time.perf_counter() - t, "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
           "checksum": float(np.sum(pred))})


def dense_numpy_ntk_regression(x, y, xt, depths, beta=0.1):
    """Plain dense reference: full train and test kernels per depth via np.arctan2, then np.linalg.solve."""
    d = x.shape[1]
    out = []
    for L in depths:
        mats = []
        for a, b in ((x, x), (xt, x)):
            na, nb = (a * a).sum(1) / d, (b * b).sum(1) / d
            sig = a @ b.T / d + beta**2
            theta = sig.copy()
            for ell in range(1, L + 1):
                s1, s2 = na + ell * beta**2, nb + ell * beta**2
                sd = np.sqrt(np.clip(np.outer(s1, s2) - sig**2, 0, None))
                ph = np.arctan2(sig, sd)
                dot = 0.5 + ph / np.pi
                sig = sd / np.pi + sig * (ph + np.pi / 2) / np.pi + beta**2
                theta = theta * dot + sig
            mats.append(theta)
        out.append(mats[1] @ np.linalg.solve(mats[0], y))
    return np.stack(out)


def ntk_case(kind: str, n: int, n_test: int, d: int, depths: list[int]) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_ntk_child, args=(kind, n, n_test, d, depths, q))
    p.start()
    res = q.get()
    p.join()
    row = {"impl": kind, "n_train": n, "n_test": n_test, "depths": f"1..{max(depths)}", **res}
    print(f"  NTK {kind:<9} N={n:<6} N_test={n_test:<7} depths 1..{max(depths)}: {res['seconds']:8.1f}s  "
          f"peak RSS {res['peak_rss_gib']:.2f} GiB", flush=True)
    return row


# ---- pipeline overhead ----------------------------------------------------------------


def pipeline_overhead() -> dict:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import depthlab.cli, depthlab.studies.mori_ueda.training"], check=True, env=env)
    startup = time.perf_counter() - t
    smk = Path(sys.executable).parent / "snakemake"
    cmd = [str(smk), "--workflow-profile", "workflow/profiles/default", "--configfile", "config/config.yaml", "--dry-run", "--quiet"]
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    noop = time.perf_counter() - t
    out = {"job_startup_seconds": startup, "snakemake_dry_run_seconds": noop,
           "default_results_complete": "Nothing to be done" in p.stdout + p.stderr}
    print(f"  one job's Python start-up (imports) {startup:.2f}s; snakemake dry run on config.yaml {noop:.2f}s "
          f"({'no-op: results complete' if out['default_results_complete'] else 'results incomplete: this is the DAG build time'})")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python benchmarks/bench.py")
    ap.add_argument("--quick", action="store_true", help="tiny sizes: checks that the benchmark runs (CI)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "bench.json"))
    ap.add_argument("--device", default="auto")
    ap.add_argument("--skip-ntk", action="store_true")
    args = ap.parse_args(argv)
    set_threads()
    dev = resolve_device(args.device)
    print(f"depthlab bench on {describe(dev)} ({platform.processor() or platform.machine()}), quick={args.quick}")
    peak = matmul_peak(dev, 512 if args.quick else 2048)
    print(f"  float32 matmul peak (measured): {peak / 1e9:.1f} GFLOP/s")
    out: dict = {"device": describe(dev), "quick": args.quick, "matmul_peak_gflops": peak / 1e9, "trainer": [], "ntk": []}
    if args.quick:
        cases = [("default", 20, 400, 2e3, 2, 4, 5, 1)]
    else:
        cases = [("default (fig2 2-local, CV fold)", 100, 2667, 1e5, 2, 30, 200, 2),
                 ("default (fig2 2-local, CV fold)", 100, 2667, 1e5, 4, 30, 200, 2),
                 ("paper fig2 2-local", 500, 18000, 1e6, 2, 40, 10 if dev.type == "cpu" else 200, 1),
                 ("paper fig2 2-local", 500, 18000, 1e6, 4, 40, 10 if dev.type == "cpu" else 200, 1)]
    print("trainer (model-epochs/s; one epoch = ceil(N/50) steps):")
    for c in cases:
        out["trainer"].append(trainer_case(*c, dev=dev, peak=peak))
    default_rows = [r for r in out["trainer"] if r["case"].startswith("default")]
    out["trainer_speedup_vs_plain"] = float(np.mean([r["speedup"] for r in default_rows]))
    paper_rows = [r for r in out["trainer"] if r["case"].startswith("paper")]
    if paper_rows:
        out["trainer_speedup_vs_plain_paper_shapes"] = float(np.mean([r["speedup"] for r in paper_rows]))
    if not args.skip_ntk:
        print("NTK (Gram + Cholesky + blocked prediction, every depth; one CPU thread, fresh process each):")
        depths = list(range(1, 4)) if args.quick else list(range(1, 11))
        sizes = [(300, 1000)] if args.quick else [(5000, 100_000), (20000, 100_000)]
        for n, nt in sizes:
            out["ntk"].append(ntk_case("depthlab", n, nt, 100, depths))
        # dense numpy holds the whole test kernel (and ~5 temporaries): compare where that fits in RAM
        pair = (300, 1000) if args.quick else (5000, 10_000)
        ours = out["ntk"][0] if args.quick else ntk_case("depthlab", *pair, 100, depths)
        if not args.quick:
            out["ntk"].append(ours)
        dense = ntk_case("numpy", *pair, 100, depths)
        out["ntk"].append(dense)
        big = out["ntk"][len(sizes) - 1]
        out["ntk_seconds_n20000" if not args.quick else "ntk_seconds_quick"] = big["seconds"]
        out["ntk_peak_rss_gib"] = big["peak_rss_gib"]
        out["ntk_speedup_vs_dense_numpy"] = dense["seconds"] / ours["seconds"]
        dense_n = pair[0]
        print(f"  depthlab vs dense numpy at N={dense_n}: {out['ntk_speedup_vs_dense_numpy']:.2f}x")
    print("pipeline:")
    out["pipeline"] = pipeline_overhead()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
