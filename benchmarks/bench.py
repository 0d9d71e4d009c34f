"""Side-by-side benchmark: ``python benchmarks/bench.py [--quick] [--out results/bench/bench.json]`` (``make bench``).

Everything is measured in one run on one machine and printed as ratios:

* trainer: depthlab's batched step (hand-written backward pass) against a plain PyTorch loop
  (nn.Sequential + torch.optim + autograd, one model at a time) and against ``torch.func``
  ensembling (``stack_module_state`` + ``vmap(grad(functional_call))``, the library's own way
  to train an ensemble), on the same models, in model-epochs per second and as a fraction of
  the measured matmul peak; SGD + MSE at the Mori & Ueda shapes, Adam + hinge at the fractal ones;
* NTK: kernel regression (Gram, Cholesky, test predictions) for every depth 1..10 against
  the bare float64 Choleskys it cannot avoid, at the same N, each in a fresh process (peak RSS),
  with both sides on 1 thread and again on every core: torch, the BLAS library (threadpoolctl)
  and numba are all pinned in each process, and the threads each library reports are printed
  and written to the JSON; and the previous torch recursion (the CUDA path) beside the fused CPU
  one at N = 5000;
* pipeline: one job's start-up and a Snakemake dry run of the default config.

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

from depthlab import outputs  # noqa: E402
from depthlab.core.device import describe, resolve_device, set_threads  # noqa: E402
from depthlab.core.losses.hinge import Hinge  # noqa: E402
from depthlab.core.losses.mse import MSE  # noqa: E402
from depthlab.core.mlp import init_params  # noqa: E402
from depthlab.core.optim.adam import Adam  # noqa: E402
from depthlab.core.optim.sgd import SGD  # noqa: E402
from depthlab.core.shapes import layer_sizes, width_for_hidden_weights  # noqa: E402
from depthlab.core.trainer import models_per_step, step_in_groups  # noqa: E402
from depthlab.studies.mori_ueda.targets import sample_inputs, target  # noqa: E402

LOSSES = {"mse": MSE(), "hinge": Hinge()}


OPTIMIZERS = {"sgd": SGD(), "adam": Adam()}

GIB = 1024**3


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def matmul_peak(dev: torch.device, n: int = 2048, reps: int = 5) -> float:
    """Measured float32 GEMM throughput in FLOP/s (best of ``reps``)."""
    a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    best = float("inf")
    for _ in range(reps + 1):
        _sync(dev)
        t = time.perf_counter()
        a @ b
        _sync(dev)
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


# ---- trainer: batched vs plain vs torch.func ------------------------------------------------


def _flops_per_model_step(sizes: list[int], B: int) -> float:
    """~6 FLOPs per weight per example: forward 2, backward 4 (activations' and weights' gradients)."""
    return 6.0 * sum(a * b for a, b in zip(sizes[:-1], sizes[1:])) * B


def _batch(x, y, M, B, dev, step):
    """Minibatch ``step`` of every model: [M, B, d], [M, B] (each model its own rows)."""
    n = x.shape[0]
    rows = (torch.arange(M, device=dev)[:, None] * 7919 + step * B + torch.arange(B, device=dev)) % n
    return x[rows], y[rows]


def batched_rate(x, y, sizes, M, steps, dev, opt_name, loss_name, B, group: int | None = None) -> tuple[float, int]:
    """Model-steps per second of depthlab's step (as trainer.train runs it: per-model rows, in-place update, the models
    stepped in groups of ``trainer.models_per_step``, or of ``group`` when given), and the group size it used."""
    params = [(W.to(dev), b.to(dev)) for W, b in init_params(sizes, np.arange(M), "glorot_uniform")]
    opt, loss = OPTIMIZERS[opt_name], LOSSES[loss_name]
    state = opt.init_state(params)
    lr = torch.full((M,), 1e-3, device=dev)
    per = models_per_step(params, state) if group is None else group
    with torch.no_grad():
        for s in range(3):
            step_in_groups(opt, params, state, *_batch(x, y, M, B, dev, s), lr, loss, per)
        _sync(dev)
        t = time.perf_counter()
        for s in range(steps):
            step_in_groups(opt, params, state, *_batch(x, y, M, B, dev, s), lr, loss, per)
        _sync(dev)
    return M * steps / (time.perf_counter() - t), per


def compiled_vs_eager(name, d, n, sizes, M, steps, dev, opt_name, loss_name, B) -> dict:
    """depthlab's own step (``trainer.step_in_groups``: the stacked models, the hand-written backward, the fused Adam)
    eager against ``torch.compile`` of the same call (inductor; on the CPU it builds C++ kernels with gcc), side by
    side in this process on the same thread settings, each from the same initial parameters.  The compile's warm-up
    (its first call) is timed apart from the steady step.  Also: whether two compiled runs give the same bits, and how
    far compiled parameters drift from eager ones after the same steps (fused kernels may round differently)."""
    x = torch.as_tensor(sample_inputs(n, d, 0), dtype=torch.float32, device=dev)
    y = torch.as_tensor(target(sample_inputs(n, d, 0), 1 if d < 2 else 2, "local"), dtype=torch.float32, device=dev)
    loss = LOSSES[loss_name]
    if loss.task == "classification":
        y = torch.sign(y)

    def run(compiled: bool):
        opt = OPTIMIZERS[opt_name]
        torch._dynamo.reset()
        params = [(W.to(dev), b.to(dev)) for W, b in init_params(sizes, np.arange(M), "glorot_uniform")]
        state = opt.init_state(params)
        lr = torch.full((M,), 1e-3, device=dev)
        per = models_per_step(params, state)

        def one(xb, yb):
            step_in_groups(opt, params, state, xb, yb, lr, loss, per)

        fn = torch.compile(one, dynamic=False) if compiled else one
        with torch.no_grad():
            t = time.perf_counter()
            fn(*_batch(x, y, M, B, dev, 0))
            _sync(dev)
            warm = time.perf_counter() - t
            for s in range(1, 3):
                fn(*_batch(x, y, M, B, dev, s))
            _sync(dev)
            t = time.perf_counter()
            for s in range(3, 3 + steps):
                fn(*_batch(x, y, M, B, dev, s))
            _sync(dev)
            el = time.perf_counter() - t
        return warm, el / steps, [t.detach().clone() for W, b in params for t in (W, b)]

    try:
        we, se, pe = run(False)
        wc, sc, pc = run(True)
        _, _, pc2 = run(True)
        err = None
    except Exception as e:  # no compiler, or a graph inductor cannot build: the eager step stands
        we, se, pe = run(False)
        wc = sc = float("nan")
        pc = pc2 = None
        err = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    row = {
        "case": name,
        "sizes": sizes,
        "models": M,
        "batch": B,
        "optimizer": opt_name,
        "loss": loss_name,
        "eager_ms_per_step": se * 1e3,
        "compiled_ms_per_step": sc * 1e3,
        "compile_warmup_s": wc,
        "eager_first_step_s": we,
        "speedup": se / sc if sc == sc else float("nan"),
        "error": err,
    }
    if pc is not None:
        row["compiled_runs_bit_identical"] = all(torch.equal(a, b) for a, b in zip(pc, pc2))
        row["compiled_vs_eager_max_abs"] = max(float((a - b).abs().max()) for a, b in zip(pc, pe))
    print(
        f"  {name:<34} depth {len(sizes) - 2} width {sizes[1]:<4} M={M:<3} {opt_name}+{loss_name}" + ": eager "
        f"{row['eager_ms_per_step']:.3f} ms/step, compiled {row['compiled_ms_per_step']:.3f} ms/step = "
        f"x{row['speedup']:.2f}"
        + (
            f"; compile failed ({err}), eager kept"
            if err
            else f"; compiled twice: {'same bits' if row['compiled_runs_bit_identical'] else 'DIFFERENT bits'}, "
            f"vs eager max |diff| {row['compiled_vs_eager_max_abs']:.2e}"
        ),
        flush=True,
    )
    if not err:
        print(f"  {'':<34} warm-up (first compiled call, inductor building its kernels): {wc:.1f} s", flush=True)
    return row


def _sequential(sizes):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers += [torch.nn.Linear(a, b)] + ([torch.nn.ReLU()] if i < len(sizes) - 2 else [])
    return torch.nn.Sequential(*layers)


def _reference_loss(name):
    return {
        "mse": lambda o, y: torch.mean((o - y) ** 2),
        "hinge": lambda o, y: torch.mean(torch.relu(1 - y * o)),
        "logistic": lambda o, y: torch.nn.functional.soft_margin_loss(o, y),
    }[name]


def plain_rate(x, y, sizes, models, steps, dev, opt_name, loss_name, B) -> float:
    """Model-steps per second of the textbook loop: nn.Sequential + torch.optim + autograd, one model at a time."""
    lf = _reference_loss(loss_name)
    total_t, total = 0.0, 0
    for m in range(models):
        torch.manual_seed(m)
        net = _sequential(sizes).to(dev)
        opt = (torch.optim.SGD if opt_name == "sgd" else torch.optim.Adam)(net.parameters(), lr=1e-3)
        for s in range(steps + 3):
            if s == 3:
                _sync(dev)
                t = time.perf_counter()
            xb, yb = _batch(x, y, 1, B, dev, s)
            loss = lf(net(xb[0]).squeeze(-1), yb[0])
            opt.zero_grad()
            loss.backward()
            opt.step()
        _sync(dev)
        total_t += time.perf_counter() - t
        total += steps
    return total / total_t


def func_rate(x, y, sizes, M, steps, dev, opt_name, loss_name, B) -> float:
    """Model-steps per second of torch.func ensembling: stack_module_state + vmap(grad(functional_call)), then the update."""
    import copy

    from torch.func import functional_call, grad, stack_module_state, vmap

    models = [_sequential(sizes).to(dev) for _ in range(M)]
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    lf = _reference_loss(loss_name)

    def loss_fn(p, b, xb, yb):
        return lf(functional_call(base, (p, b), (xb,)).squeeze(-1), yb)

    g_fn = vmap(grad(loss_fn))
    lr = torch.full((M,), 1e-3, device=dev)
    moments = {k: (torch.zeros_like(v), torch.zeros_like(v)) for k, v in params.items()}

    def step(s):
        g = g_fn(params, buffers, *_batch(x, y, M, B, dev, s))
        with torch.no_grad():
            for k, p in params.items():
                scale = lr.view(-1, *[1] * (p.dim() - 1))
                if opt_name == "sgd":
                    p.sub_(scale * g[k])
                else:  # Adam, the same update as torch.optim.Adam (bias correction of a fixed step for timing)
                    m1, m2 = moments[k]
                    m1.lerp_(g[k], 0.1)
                    m2.mul_(0.999).addcmul_(g[k], g[k], value=0.001)
                    p.addcdiv_(m1 * (-scale), m2.sqrt().add_(1e-8))

    for s in range(3):
        step(s)
    _sync(dev)
    t = time.perf_counter()
    for s in range(steps):
        step(s)
    _sync(dev)
    return M * steps / (time.perf_counter() - t)


def trainer_case(
    name: str,
    d: int,
    n: int,
    sizes: list[int],
    M: int,
    steps: int,
    plain_models: int,
    dev: torch.device,
    peak: float,
    opt_name: str,
    loss_name: str,
    B: int,
) -> dict:
    x = torch.as_tensor(sample_inputs(n, d, 0), dtype=torch.float32, device=dev)
    y = torch.as_tensor(target(sample_inputs(n, d, 0), 1 if d < 2 else 2, "local"), dtype=torch.float32, device=dev)
    if LOSSES[loss_name].task == "classification":
        y = torch.sign(y)
    b, per = batched_rate(x, y, sizes, M, steps, dev, opt_name, loss_name, B)
    whole = batched_rate(x, y, sizes, M, steps, dev, opt_name, loss_name, B, group=M)[0] if per < M - 1 else b
    f = func_rate(x, y, sizes, M, steps, dev, opt_name, loss_name, B)
    p = plain_rate(x, y, sizes, plain_models, steps, dev, opt_name, loss_name, B)
    spe = int(np.ceil(n / B))
    fl = _flops_per_model_step(sizes, B)
    row = {
        "case": name,
        "optimizer": opt_name,
        "loss": loss_name,
        "d": d,
        "n_train": n,
        "sizes": sizes,
        "models_batched": M,
        "batched_model_epochs_per_s": b / spe,
        "torch_func_model_epochs_per_s": f / spe,
        "plain_model_epochs_per_s": p / spe,
        "models_per_group": per,
        "all_at_once_model_epochs_per_s": whole / spe,
        "groups_vs_all_at_once": b / whole,
        "speedup_vs_plain": b / p,
        "speedup_vs_torch_func": b / f,
        "batched_peak_fraction": b * fl / peak,
        "torch_func_peak_fraction": f * fl / peak,
        "plain_peak_fraction": p * fl / peak,
    }
    print(
        f"  {name:<34} {opt_name}+{loss_name:<8} depth {len(sizes) - 2} width {sizes[1]:<5} M={M:<3} depthlab "
        f"{row['batched_model_epochs_per_s']:8.3f}  torch.func {row['torch_func_model_epochs_per_s']:8.3f}  plain "
        f"{row['plain_model_epochs_per_s']:8.3f} model-epochs/s  x{row['speedup_vs_plain']:.2f} vs plain, "
        f"x{row['speedup_vs_torch_func']:.2f} vs torch.func; peak {row['batched_peak_fraction']:.0%} / "
        f"{row['torch_func_peak_fraction']:.0%} / {row['plain_peak_fraction']:.0%}"
        + (f"; groups of {per}: x{b / whole:.2f} the step over all {M} at once" if per < M - 1 else ""),
        flush=True,
    )
    return row


# ---- NTK --------------------------------------------------------------------------------


def pin_threads(n: int) -> dict:
    """Pin torch, every BLAS/OpenMP pool (threadpoolctl) and numba to ``n`` threads; returns what each reports.
    numba is imported first: a library loaded after the limits were set would not be pinned."""
    try:
        import numba
    except ImportError:
        numba = None
    from threadpoolctl import threadpool_info, threadpool_limits

    torch.set_num_threads(n)
    if numba is not None:
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    if any(pool.get("num_threads") != n for pool in threadpool_info()):  # only a pool the environment did not pin
        threadpool_limits(n)
    out = {"torch": torch.get_num_threads(), "numba": numba.get_num_threads() if numba is not None else None}
    for pool in threadpool_info():
        out[f"{pool['user_api']}:{pool['internal_api']}"] = pool["num_threads"]
    return out


def _ntk_child(kind: str, n: int, n_test: int, d: int, depths: list[int], threads: int, q: mp.Queue) -> None:
    from depthlab.core import kernel_regression as K  # imports numba and the BLAS first, so that pinning reaches them

    pinned = pin_threads(threads)

    x = sample_inputs(n, d, 0)
    y = target(x, 2, "local")
    xt = sample_inputs(n_test, d, 1)
    t = time.perf_counter()
    out: dict = {}
    if kind == "fused":
        fit = K.kernel_regression(x, y, xt, depths, device="cpu")
        out["checksum"] = float(np.sum(fit.prediction))
    elif kind == "torch":  # the previous recursion (kept as the CUDA path), here on the CPU
        fit = K._regression_torch(x, y, xt, depths, 0.1, 2048, torch.device("cpu"), ("ntk",))
        out["checksum"] = float(np.sum(fit.prediction))
    elif kind == "cuda":  # the CUDA path (torch tiles on the GPU, float64); returns numpy, so the GPU is done by then
        torch.zeros(1, device="cuda").sum().item()  # the CUDA context, outside the timing
        t = time.perf_counter()
        fit = K.kernel_regression(x, y, xt, depths, device="cuda")
        out["checksum"] = float(np.sum(fit.prediction))
        out["gpu_peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
    elif kind == "cuda-cholesky":  # bare float64 Choleskys on the GPU, one per depth (cuSOLVER through torch)
        G = torch.as_tensor(x @ x.T / d + 0.01 + n * 1e-3 * np.eye(n), device="cuda")
        torch.linalg.cholesky(G[:256, :256])  # the solver's start-up, outside the timing
        torch.cuda.synchronize()
        t = time.perf_counter()
        out["factor_seconds"] = 0.0
        for _ in depths:
            t0 = time.perf_counter()
            C, info = torch.linalg.cholesky_ex(G)
            torch.cuda.synchronize()
            out["factor_seconds"] += time.perf_counter() - t0
            assert int(info) == 0
            del C
        out["gpu_peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
    else:  # bare in-place float64 Choleskys of an n x n SPD matrix, one per depth
        from scipy.linalg import lapack

        G = np.asfortranarray(x @ x.T / d + 0.01) + n * 1e-3 * np.eye(n)
        F = np.empty_like(G, order="F")
        t = time.perf_counter()
        for _ in depths:
            F[...] = G
            t0 = time.perf_counter()
            _, info = lapack.dpotrf(F, lower=1, clean=0, overwrite_a=1)
            out.setdefault("factor_seconds", 0.0)
            out["factor_seconds"] += time.perf_counter() - t0
            assert info == 0
    out.update(
        {
            "seconds": time.perf_counter() - t,
            "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "threads": pinned,
        }
    )
    q.put(out)


def recursion_rate(n2: int = 4096, reps: int = 400) -> float:
    """Nanoseconds per element and layer of the fused layer step (depthlab.core.fused.step_row) on one thread, on a
    row that stays in cache: the vector rate the test-side recursion of the NTK regression cannot beat."""
    import numba

    from depthlab.core import fused

    @numba.njit(cache=False, nogil=True, fastmath={"contract"}, error_model="numpy")
    def layers(s, th, q2, reps):
        for r in range(reps):
            fused.step_row(s, th, q2, 1.0 + 0.01 * (r % 10), 0.01 * (r % 10), 0.01)
            for j in range(s.shape[0]):  # keep the values in range: restart from Sigma^(0) every 10 layers
                if r % 10 == 9:
                    s[j] = 0.3
                    th[j] = 0.3

    rng = np.random.default_rng(0)
    s0, q2 = rng.uniform(-0.5, 0.5, n2), rng.uniform(0.8, 1.2, n2)
    layers(s0.copy(), s0.copy(), q2, 2)  # compile
    best = np.inf
    for _ in range(3):
        s, th = s0.copy(), s0.copy()
        t = time.perf_counter()
        layers(s, th, q2, reps)
        best = min(best, time.perf_counter() - t)
    return best / (reps * n2) * 1e9


def roofline(n: int, n_test: int, max_depth: int, ns_per_step: float, cholesky_seconds: float, threads: int) -> dict:
    """Lower bound of the NTK regression from its recursion alone: every (test, train) pair and every training pair
    advanced through every layer at the in-cache vector rate, split over ``threads``; plus the Choleskys it cannot avoid."""
    steps = (n_test * n + n * n / 2) * max_depth
    rec = steps * ns_per_step * 1e-9 / threads
    return {
        "element_layers": steps,
        "ns_per_step": ns_per_step,
        "recursion_seconds": rec,
        "cholesky_seconds": cholesky_seconds,
        "best_ratio": (cholesky_seconds + rec) / cholesky_seconds,
    }


class ChildDied(RuntimeError):
    """A benchmark child process ended without a result (a crash: a signal, or an exception it printed)."""


def child_result(p, q, what: str, poll: float = 1.0):
    """The result ``p`` puts on ``q``; :class:`ChildDied`, naming its exit signal or code, when it ends without one
    (a child killed by SIGSEGV left the parent waiting on ``q.get()`` for ever)."""
    import queue
    import signal

    while True:
        try:
            return q.get(timeout=poll)
        except queue.Empty:
            if not p.is_alive():
                try:
                    return q.get(timeout=poll)  # it may have put its result just before it exited
                except queue.Empty:
                    code = p.exitcode
                    how = (
                        f"killed by {signal.Signals(-code).name}"
                        if code is not None and code < 0
                        else f"exit code {code}"
                    )
                    raise ChildDied(f"{what}: the child process ended without a result ({how})") from None


def ntk_case(kind: str, n: int, n_test: int, d: int, depths: list[int], threads: int = 1) -> dict:
    from depthlab._launch import POOLS

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_ntk_child, args=(kind, n, n_test, d, depths, threads, q))
    # the child's BLAS and OpenMP pools get their threads from the environment as they load (as a pipeline job's do,
    # depthlab._launch.pin_pools), not switched at run time: that switch crashed scipy's dpotrf at N = 20 000
    saved = {v: os.environ.get(v) for v in POOLS}
    os.environ.update({v: str(threads) for v in POOLS})
    try:
        p.start()
    finally:
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = old
    try:
        res = child_result(p, q, f"NTK {kind} N={n} on {threads} thread(s)")
    finally:
        p.join()
    row = {"impl": kind, "n_train": n, "n_test": n_test, "depths": f"1..{max(depths)}", **res}
    secs = res.get("factor_seconds", res["seconds"])
    shown = ", ".join(f"{k} {v}" for k, v in res["threads"].items())
    print(
        f"  NTK {kind:<9} N={n:<6} N_test={n_test:<7} depths 1..{max(depths)}: {secs:8.1f}s  peak RSS {res['peak_rss_gib']:.2f} GiB"
        f"  threads: {shown}",
        flush=True,
    )
    return row


def record_ntk_pair(out: dict, ours: dict, chol: dict, tag: str) -> float:
    """Both rows of an NTK-vs-Cholesky case into ``out``, with its seconds and ratio under ``tag``; returns the ratio."""
    ratio = ours["seconds"] / chol["factor_seconds"]
    out["ntk"] += [ours, chol]
    out[f"ntk_seconds_{tag}"] = ours["seconds"]
    out[f"ntk_cholesky_seconds_{tag}"] = chol["factor_seconds"]
    out[f"ntk_over_cholesky_{tag}"] = ratio
    return ratio


# ---- pipeline overhead ----------------------------------------------------------------------


def pipeline_overhead(config: str = "config/config.yaml") -> dict:
    """One job's import start-up, and a Snakemake dry run of ``config`` (from a scratch folder: nothing is built)."""
    from bench_workflow import dry_run, tool_env  # beside this file

    t = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, 'workflow'); import depthlab.cli, depthlab.studies.mori_ueda.train",
        ],
        check=True,
        env=tool_env(),
        cwd=ROOT,
    )
    startup = time.perf_counter() - t
    dry = dry_run(config)
    out = {"job_startup_seconds": startup, "snakemake_dry_run_seconds": dry, "dry_run_config": config}
    print(
        f"  one job's Python start-up (imports) {startup:.2f}s; snakemake dry run (every job planned) of {config} {dry:.2f}s"
    )
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python benchmarks/bench.py")
    ap.add_argument("--quick", action="store_true", help="tiny sizes: checks that the benchmark runs (CI)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "bench.json"))
    ap.add_argument("--device", default="auto")
    ap.add_argument("--skip-ntk", action="store_true")
    ap.add_argument("--skip-trainer", action="store_true")
    ap.add_argument("--ntk-n", type=int, nargs="+", default=[5000, 20000], help="training-set sizes N of the NTK cases")
    ap.add_argument(
        "--ntk-threads",
        type=int,
        nargs="+",
        default=sorted({1, os.cpu_count() or 1}),
        help="threads of both sides of the NTK cases (default: 1 and every core)",
    )
    ap.add_argument("--skip-previous", action="store_true", help="skip the previous torch recursion (83 s at N = 5000)")
    ap.add_argument("--skip-pipeline", action="store_true", help="skip the start-up and dry-run timings")
    ap.add_argument(
        "--skip-compiled", action="store_true", help="skip torch.compile of the trainer's step against eager"
    )
    ap.add_argument("--only-compiled", action="store_true", help="only the compiled-vs-eager trainer step")
    args = ap.parse_args(argv)
    try:  # before any work: a file of its own, never inside a run's folder
        outputs.bench_file(args.out)
    except outputs.OutputRefused as e:
        raise SystemExit(f"error: {e}") from None
    set_threads()
    main_threads = pin_threads(1)  # the trainer cases: one thread for torch, BLAS and numba alike
    dev = resolve_device(args.device)
    print(f"depthlab bench on {describe(dev)} ({platform.processor() or platform.machine()}), quick={args.quick}")
    peak = matmul_peak(dev, 512 if args.quick else 2048)
    print(f"  float32 matmul peak (measured): {peak / 1e9:.1f} GFLOP/s")
    print(f"  threads of this process (trainer cases): {', '.join(f'{k} {v}' for k, v in main_threads.items())}")
    out: dict = {
        "device": describe(dev),
        "quick": args.quick,
        "matmul_peak_gflops": peak / 1e9,
        "trainer": [],
        "ntk": [],
        "threads_trainer": main_threads,
    }
    if not args.skip_trainer and not args.only_compiled:
        cpu = dev.type == "cpu"
        if args.quick:
            cases = [
                ("default", 20, 400, layer_sizes(20, 16, 2), 4, 5, 1, "sgd", "mse", 50),
                ("fractals", 2, 400, layer_sizes(2, 16, 3), 2, 5, 1, "adam", "hinge", 100),
            ]
        else:
            h2, h4 = (
                width_for_hidden_weights(d=100, depth=2, budget=1e5),
                width_for_hidden_weights(d=100, depth=4, budget=1e5),
            )
            p2, p4 = (
                width_for_hidden_weights(d=500, depth=2, budget=1e6),
                width_for_hidden_weights(d=500, depth=4, budget=1e6),
            )
            cases = [
                ("default (fig2 2-local, CV fold)", 100, 2667, layer_sizes(100, h2, 2), 30, 200, 2, "sgd", "mse", 50),
                ("default (fig2 2-local, CV fold)", 100, 2667, layer_sizes(100, h4, 4), 30, 200, 2, "sgd", "mse", 50),
                (
                    "paper fig2 2-local",
                    500,
                    18000,
                    layer_sizes(500, p2, 2),
                    40,
                    10 if cpu else 200,
                    1,
                    "sgd",
                    "mse",
                    50,
                ),
                (
                    "paper fig2 2-local",
                    500,
                    18000,
                    layer_sizes(500, p4, 4),
                    40,
                    10 if cpu else 200,
                    1,
                    "sgd",
                    "mse",
                    50,
                ),
                ("fractals fig4 (cantor, depth 5)", 2, 50000, layer_sizes(2, 100, 5), 6, 200, 2, "adam", "hinge", 100),
                ("fractals fig4 (cantor, depth 5)", 2, 50000, layer_sizes(2, 400, 5), 6, 50, 1, "adam", "hinge", 100),
            ]
        print("trainer (model-epochs/s; one epoch = ceil(N/B) steps):")
        for c in cases:
            out["trainer"].append(trainer_case(*c[:7], dev=dev, peak=peak, opt_name=c[7], loss_name=c[8], B=c[9]))
        default = [r for r in out["trainer"] if r["case"].startswith("default")]
        out["trainer_speedup_vs_plain"] = float(np.mean([r["speedup_vs_plain"] for r in default]))
        out["trainer_speedup_vs_torch_func"] = float(np.mean([r["speedup_vs_torch_func"] for r in default]))
        for tag in ("paper", "fractals"):
            rows = [r for r in out["trainer"] if r["case"].startswith(tag)]
            if rows:
                out[f"trainer_speedup_vs_plain_{tag}"] = float(np.mean([r["speedup_vs_plain"] for r in rows]))
                out[f"trainer_speedup_vs_torch_func_{tag}"] = float(np.mean([r["speedup_vs_torch_func"] for r in rows]))
    if not args.skip_compiled:
        print(
            f"trainer step, torch.compile (inductor) against eager; threads: {', '.join(f'{k} {v}' for k, v in main_threads.items())}:"
        )
        if args.quick:
            ccases = [
                ("fractals (quick)", 2, 400, layer_sizes(2, 16, 3), 2, 5, dev, "adam", "hinge", 100),
            ]
        else:
            h2, h4 = (
                width_for_hidden_weights(d=100, depth=2, budget=1e5),
                width_for_hidden_weights(d=100, depth=4, budget=1e5),
            )
            # the fractal jobs of the default train 2 rates at once, then the one left (and a grown rate) alone
            ccases = [
                (
                    "fractals fig4 (depth 5, width 100)",
                    2,
                    50000,
                    layer_sizes(2, 100, 5),
                    6,
                    300,
                    dev,
                    "adam",
                    "hinge",
                    100,
                ),
                (
                    "fractals fig4 (depth 5, width 100)",
                    2,
                    50000,
                    layer_sizes(2, 100, 5),
                    2,
                    600,
                    dev,
                    "adam",
                    "hinge",
                    100,
                ),
                (
                    "fractals fig4 (depth 5, width 100)",
                    2,
                    50000,
                    layer_sizes(2, 100, 5),
                    1,
                    600,
                    dev,
                    "adam",
                    "hinge",
                    100,
                ),
                (
                    "fractals fig4 (depth 5, width 200)",
                    2,
                    50000,
                    layer_sizes(2, 200, 5),
                    2,
                    300,
                    dev,
                    "adam",
                    "hinge",
                    100,
                ),
                (
                    "fractals fig4 (depth 5, width 200)",
                    2,
                    50000,
                    layer_sizes(2, 200, 5),
                    1,
                    300,
                    dev,
                    "adam",
                    "hinge",
                    100,
                ),
                (
                    "mori_ueda default (fig2, depth 2)",
                    100,
                    2667,
                    layer_sizes(100, h2, 2),
                    30,
                    100,
                    dev,
                    "sgd",
                    "mse",
                    50,
                ),
                (
                    "mori_ueda default (fig2, depth 4)",
                    100,
                    2667,
                    layer_sizes(100, h4, 4),
                    30,
                    100,
                    dev,
                    "sgd",
                    "mse",
                    50,
                ),
            ]
        out["compiled"] = [compiled_vs_eager(*c) for c in ccases]
        ok = [r for r in out["compiled"] if not r["error"]]
        if ok:
            low = min(r["speedup"] for r in ok)
            print(
                f"goal: compiled >= 1.3x eager at the fractal depth-5 and Mori & Ueda default shapes: lowest "
                f"x{low:.2f} -> {'adopt where the warm-up repays' if low >= 1.3 else 'keep eager'}"
            )
    if args.only_compiled:
        outputs.write_bench(json.dumps(out, indent=2) + "\n", args.out)
        print(f"wrote {args.out}")
        return
    if not args.skip_ntk:
        print(
            "NTK regression (Gram + Cholesky + predictions, every depth; a fresh process each, both sides pinned to the "
            "same threads: torch, BLAS and numba):"
        )
        depths = list(range(1, 4)) if args.quick else list(range(1, 11))
        sizes = [(300, 1000)] if args.quick else [(n, 100_000) for n in args.ntk_n]
        rate = recursion_rate(n2=512 if args.quick else 4096, reps=20 if args.quick else 400)
        out["recursion_ns_per_element_layer"] = rate
        print(f"  fused layer step in cache (one thread): {rate:.2f} ns per element and layer")
        if dev.type == "cuda":  # the GPU path against bare cuSOLVER Choleskys, both float64 on the same GPU
            for n, nt in sizes:
                ours, chol = ntk_case("cuda", n, nt, 100, depths), ntk_case("cuda-cholesky", n, nt, 100, depths)
                ratio = record_ntk_pair(out, ours, chol, ("quick" if args.quick else f"n{n}") + "_cuda")
                print(
                    f"  N={n} on {describe(dev)}: NTK total {ours['seconds']:.2f} s (GPU peak {ours['gpu_peak_gib']:.1f} GiB) "
                    f"/ bare Choleskys {chol['factor_seconds']:.2f} s = {ratio:.2f}",
                    flush=True,
                )
        for threads in args.ntk_threads:
            for n, nt in sizes:
                ours = ntk_case("fused", n, nt, 100, depths, threads)
                chol = ntk_case("cholesky", n, nt, 100, depths, threads)
                tag = ("quick" if args.quick else f"n{n}") + f"_{threads}thread"
                ratio = record_ntk_pair(out, ours, chol, tag)
                out["ntk_peak_rss_gib"] = max(out.get("ntk_peak_rss_gib", 0.0), ours["peak_rss_gib"])
                goal = 1.3 if threads == 1 else 1.5
                out[f"ntk_goal_{tag}"] = goal
                print(
                    f"  N={n}, {threads} thread(s) each side: NTK total / bare Choleskys = {ratio:.2f} (goal <= {goal}); "
                    f"peak RSS {ours['peak_rss_gib']:.2f} GiB (goal <= 8)"
                )
                floor = roofline(n, nt, max(depths), rate, chol["factor_seconds"], threads)
                out[f"ntk_roofline_{tag}"] = floor
                print(
                    f"    roofline: {floor['element_layers']:.3g} element-layer steps (test rows x N + N^2/2, x {max(depths)} layers) "
                    f"at {rate:.2f} ns on {threads} thread(s) = {floor['recursion_seconds']:.1f} s beside the Choleskys' "
                    f"{chol['factor_seconds']:.1f} s: no NTK regression with this recursion can beat {floor['best_ratio']:.2f}; "
                    f"measured excess {ours['seconds'] - chol['factor_seconds']:.1f} s",
                    flush=True,
                )
        if not args.skip_previous:
            n, nt = (300, 1000) if args.quick else (5000, 100_000)
            before = ntk_case("torch", n, nt, 100, depths)
            out["ntk"].append(before)
            fused = next((r for r in out["ntk"] if r["impl"] == "fused" and r["n_train"] == n), None)
            if fused is not None:
                out["ntk_speedup_vs_previous"] = before["seconds"] / fused["seconds"]
                print(f"  fused vs the previous torch recursion at N={n}: x{out['ntk_speedup_vs_previous']:.2f}")
    if not args.skip_trainer:
        rows = out["trainer"]
        default = [r for r in rows if r["case"].startswith("default")]
        lowest_plain = min(r["speedup_vs_plain"] for r in rows)
        lowest_func = min(r["speedup_vs_torch_func"] for r in rows)
        peaks = ", ".join(format(r["batched_peak_fraction"], ".0%") for r in default)
        print(
            f"goals: trainer >= 1.0x the plain loop at every shape: lowest x{lowest_plain:.2f}; "
            f">= 85% of the matmul peak at the default shapes: {peaks}; no slower than torch.func: lowest x{lowest_func:.2f}"
        )
    if not args.skip_pipeline:
        print("pipeline:")
        out["pipeline"] = pipeline_overhead("config/smoke.yaml" if args.quick else "config/config.yaml")
    outputs.write_bench(json.dumps(out, indent=2) + "\n", args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
