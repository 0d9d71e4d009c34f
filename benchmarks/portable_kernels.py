"""What ``cpu_kernels: portable`` costs: the same work in native and in portable kernel mode, side by side in one run.

Portable mode pins MKL's reproducible path (MKL_CBWR=COMPATIBLE), ATen's scalar kernels (ATEN_CPU_CAPABILITY=default)
and OpenBLAS's Prescott core before the libraries load (depthlab.machine), so each side runs in a child process of
its own, alternating, each on one torch thread with every BLAS pool pinned to one thread (threadpoolctl); numba is
not used.  The work:

* ``fractal``: the fractal trainer (hinge loss, Adam, batch 100) at the default's costliest shape, depth 5, width 200,
  a stack of 4 nets (2 rates x 2 seeds), on 2-D inputs;
* ``mori_ueda``: the Mori & Ueda trainer (MSE, SGD) at Fig. 2's shape, d = 30, a stack of 6 nets;
* ``kernel``: float64 linear algebra as the kernel stages do it (numpy matmul, Cholesky and a symmetric eigensolve of
  a 1 500 x 1 500 kernel matrix).

    python benchmarks/portable_kernels.py [--repeat 3] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, {workflow!r})
from depthlab.machine import apply_portable, describe
apply_portable()
for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[v] = "1"
import numpy as np, torch
from threadpoolctl import threadpool_limits
from depthlab.core.device import set_threads
from depthlab.core.losses.hinge import Hinge
from depthlab.core.losses.mse import MSE
from depthlab.core.mlp import init_params
from depthlab.core.optim.adam import Adam
from depthlab.core.optim.sgd import SGD
from depthlab.core.shapes import layer_sizes
from depthlab.core.trainer import TrainSettings, train
set_threads(1)
out = {{}}
rng = np.random.default_rng(0)
with threadpool_limits(limits=1):
    def trainer(d, width, depth, M, n, loss, opt, epochs):
        x = rng.normal(size=(n, d)).astype(np.float32)
        y = np.sign(x[:, 0] * x[:, -1] + 0.1).astype(np.float32)
        s = TrainSettings(loss=loss, optimizer=opt, batch_size=100, check_every=epochs, max_epochs=epochs, device="cpu")
        init = init_params(layer_sizes(d, width, depth), np.arange(M))
        t0 = time.perf_counter()
        train(x, y, np.tile(np.arange(n), (M, 1)), np.full(M, 1e-3), init, np.arange(M), s)
        return time.perf_counter() - t0
    out["fractal"] = trainer(2, 200, 5, 4, 10000, Hinge(), Adam(), 2)
    out["mori_ueda"] = trainer(30, 100, 4, 6, 4000, MSE(), SGD(), 3)
    a = rng.normal(size=(1500, 60))
    t0 = time.perf_counter()
    K = a @ a.T + 1500 * np.eye(1500)
    np.linalg.cholesky(K)
    np.linalg.eigh(K)
    out["kernel"] = time.perf_counter() - t0
    m = describe("cpu")
print(json.dumps({{"seconds": out, "capability": m["torch_cpu_capability"], "mode": m["cpu_kernels"],
                  "blas": m["blas"], "MKL_CBWR": os.environ.get("MKL_CBWR")}}))
"""


def side(mode: str) -> dict:
    env = {**os.environ, "DEPTHLAB_CPU_KERNELS": mode}
    p = subprocess.run(
        [sys.executable, "-c", CHILD.format(workflow=str(ROOT / "workflow"))],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    if p.returncode != 0:
        raise SystemExit(f"the {mode} side failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs of each side (the fastest is kept)")
    ap.add_argument("--out", default=None, help="write the table as JSON here")
    a = ap.parse_args(argv)
    if a.repeat < 1:
        raise SystemExit("error: --repeat must be at least 1")
    from depthlab import outputs

    if a.out:
        try:
            outputs.user_file(a.out, what="--out")
        except outputs.OutputRefused as e:
            raise SystemExit(f"error: {e}") from None
    best: dict[str, dict[str, float]] = {"native": {}, "portable": {}}
    info = {}
    for r in range(a.repeat):
        for mode in ("native", "portable") if r % 2 == 0 else ("portable", "native"):
            got = side(mode)
            info[mode] = {k: got[k] for k in ("capability", "mode", "MKL_CBWR")}
            for k, v in got["seconds"].items():
                best[mode][k] = min(v, best[mode].get(k, float("inf")))
    print(
        "one torch thread, every BLAS pool pinned to one thread (threadpoolctl); numba unused; best of "
        f"{a.repeat} alternating runs per side"
    )
    for mode in best:
        print(f"{mode}: torch capability {info[mode]['capability']}, MKL_CBWR={info[mode]['MKL_CBWR']}")
    ratios = {}
    for k in best["native"]:
        ratios[k] = best["portable"][k] / best["native"][k]
        print(
            f"{k:<10} native {best['native'][k]:7.2f} s   portable {best['portable'][k]:7.2f} s   "
            f"portable / native x{ratios[k]:.2f}"
        )
    if a.out:
        outputs.write_user_file(
            json.dumps({"seconds": best, "ratio": ratios, "sides": info}, indent=1).encode(), a.out, what="--out"
        )


if __name__ == "__main__":
    main()
