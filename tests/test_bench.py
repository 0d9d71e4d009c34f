"""The benchmark runs (quick mode) and writes the keys the README's Performance section quotes. Never asserts speed."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import tool_env


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_bench_quick_runs_and_writes_json(tmp_path, root):
    out = tmp_path / "bench.json"
    p = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "bench.py"), "--quick", "--out", str(out)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=tool_env(),
    )
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads(out.read_text())
    for key in (
        "trainer_speedup_vs_plain",
        "trainer_speedup_vs_torch_func",
        "ntk_seconds_quick_1thread",
        "ntk_cholesky_seconds_quick_1thread",
        "ntk_over_cholesky_quick_1thread",
        "ntk_over_cholesky_quick_2thread",
        "ntk_peak_rss_gib",
        "ntk_speedup_vs_previous",
        "matmul_peak_gflops",
        "pipeline",
        "threads_trainer",
    ):
        assert key in data, key
    # every side states its threads, and pinning took: one thread per library in the 1-thread runs
    for row in data["ntk"]:
        want = 1 if row in data["ntk"][:2] else None
        assert row["threads"]["torch"] >= 1
        if want == 1:
            assert all(v in (1, None) for v in row["threads"].values()), row["threads"]
    assert all(v in (1, None) for v in data["threads_trainer"].values()), data["threads_trainer"]
    for row in data["trainer"]:
        assert (
            min(
                row["batched_model_epochs_per_s"], row["plain_model_epochs_per_s"], row["torch_func_model_epochs_per_s"]
            )
            > 0
        )
    assert {r["optimizer"] for r in data["trainer"]} == {"sgd", "adam"}
    assert "vs torch.func" in p.stdout and "goal <= 1.3" in p.stdout and "threads: torch 1" in p.stdout
    # the compiled step beside the eager one: both timed, the warm-up apart; or eager kept, with the reason
    for row in data["compiled"]:
        assert row["eager_ms_per_step"] > 0
        assert row["error"] or (
            row["compiled_ms_per_step"] > 0
            and row["compile_warmup_s"] > 0
            and row["compiled_runs_bit_identical"] is True
        ), row
    assert "torch.compile (inductor) against eager; threads: torch 1" in p.stdout


def test_bench_workflow_parses_its_arguments(root):
    """The workflow-overhead benchmark runs the smoke pipeline twice (minutes): here only its command line is checked."""
    p = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "bench_workflow.py"), "--help"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    assert "--config" in p.stdout and "--dry-config" in p.stdout


def test_fractal_step_benchmark_runs_all_three_sides_and_prints_their_ratios(root, tmp_path):
    """benchmarks/fractal_step.py at its smallest (width 100, one repetition of 2 steps): it pins and prints its threads,
    times the shipped trainer, today's reference and the plain loop, prints both ratios and the check's, and writes
    them (never asserted: only that every number is there and finite)."""
    out = tmp_path / "b.json"
    p = subprocess.run(
        [
            sys.executable,
            str(root / "benchmarks" / "fractal_step.py"),
            "--widths",
            "100",
            "--reps",
            "1",
            "--steps",
            "2",
            "--out",
            str(out),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env=tool_env(),
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "torch 1" in p.stdout and "step ratio reference / shipped" in p.stdout, p.stdout
    assert "per 4-epoch interval" in p.stdout, p.stdout
    w = json.loads(out.read_text())["widths"]["100"]
    assert set(w["ms_per_step"]) == {"shipped", "reference", "plain"}
    assert all(np.isfinite(v) and v > 0 for v in (w["step_ratio_median"], w["interval_ratio_median"]))


def _segfault(q):
    import os
    import signal

    os.kill(os.getpid(), signal.SIGSEGV)


def _answer(q):
    q.put({"ok": 1})


def test_a_benchmark_child_that_dies_fails_the_parent_naming_its_signal(root):
    """The NTK child died of SIGSEGV and the parent waited on q.get() for ever (`make bench` never
    ended).  Now the parent raises, naming the signal."""
    import multiprocessing as mp

    sys.path.insert(0, str(root / "benchmarks"))
    import bench

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_segfault, args=(q,))
    p.start()
    with pytest.raises(bench.ChildDied, match="killed by SIGSEGV"):
        bench.child_result(p, q, "a child", poll=0.2)
    p.join()
    q = ctx.Queue()
    p = ctx.Process(target=_answer, args=(q,))
    p.start()
    assert bench.child_result(p, q, "a child", poll=0.2) == {"ok": 1}
    p.join()


def test_a_stage_process_gets_its_blas_threads_from_the_environment_and_the_ntk_switches_none(tmp_path):
    """Switching OpenBLAS's thread counts at run time (threadpoolctl over numpy's and scipy's two
    libraries) crashed scipy's dpotrf at N = 20 000, and the limit never reached scipy's library, loaded inside it (a
    '1-thread' NTK ran at 190 % CPU).  A `depthlab stage` process sets the pools' threads in the environment before they
    load, and the CPU NTK path then calls no threadpool_limits: the same call sequence at N = 300 with the switch made
    an error."""
    code = r"""
import sys
sys.argv = ["depthlab", "stage", "--threads", "1"]
from depthlab import _launch
_launch.pin_pools(_launch.stage_threads(sys.argv[1:]))
import numpy as np, threadpoolctl, torch
torch.set_num_threads(1)
def boom(*a, **k):
    raise AssertionError("threadpool_limits called: a run-time switch of the BLAS threads")
threadpoolctl.threadpool_limits = boom
from depthlab.core import kernel_regression as K
import scipy.linalg  # scipy's OpenBLAS loads now, with the environment's count
x = np.random.default_rng(0).standard_normal((300, 5)); y = x[:, 0] * x[:, 1]
fit = K.kernel_regression(x, y, x[:50], [1, 2, 3], device="cpu")
pools = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
assert pools and all(n == 1 for n in pools), pools
print("ok", len(pools), float(np.abs(fit.prediction).sum()) > 0)
"""
    env = {
        k: v for k, v in tool_env().items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("ok"), p.stdout + p.stderr[-3000:]


def test_eta_replay_plans_the_smoke_run_anew_and_replays_what_its_terminal_showed(smoke_run, root):
    """benchmarks/eta_replay.py on the shared smoke run: the log's own plan replays as terminal.replay does, and the
    shipped calibration plans every store, figure and claims job anew (only the jobs the run planned at 0 s, the
    config snapshot, the claims index and the final target, keep the log's plan), with an error printed at each of
    the four points."""
    import re

    from snakemake_logger_plugin_depthlab.terminal import read_jobs_log, replay

    p = subprocess.run(
        [
            sys.executable,
            str(root / "benchmarks" / "eta_replay.py"),
            str(smoke_run.results),
            str(smoke_run.config_path),
        ],
        cwd=smoke_run.work,
        capture_output=True,
        text=True,
        timeout=300,
        env=tool_env(),
    )
    assert p.returncode == 0, p.stdout + p.stderr
    errors = [int(m) for m in re.findall(r"error +([+-]?\d+) %", p.stdout)]
    assert len(errors) == 8, p.stdout
    tsv = sorted((smoke_run.results / "logs" / "snakemake").glob("*.jobs.tsv"))[-1]
    own = [round(100 * (eta / real - 1)) for eta, real in replay(read_jobs_log(tsv), 2).values()]
    assert errors[:4] == own
    kept = int(re.search(r"\((\d+) jobs kept the log's plan\)", p.stdout).group(1))
    rows = read_jobs_log(tsv)
    assert (
        kept
        == sum(r["planned_s"] == 0 for r in rows)
        == sum(r["stage"] in ("config_snapshot", "claims_index", "all") for r in rows)
    ), p.stdout


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_search_halving_benchmark_times_both_searches_of_a_job_side_by_side(tmp_path, root):
    """benchmarks/search_halving.py on the smoke config's first rate search: both searches ran in one process on one
    thread, their seconds, epochs and choices written; the 'full' side is the search with the halving off.  With
    --halving 4,1 the pruned side runs eta 4 and one rung (its store's description says so); --stores writes both
    sides' stores in the results layout, which docs/compare_searches.py reads into one row.  A malformed --halving is
    refused.  Never asserts speed."""
    out, stores = tmp_path / "sh.json", tmp_path / "stores"
    p = subprocess.run(
        [
            sys.executable,
            str(root / "benchmarks" / "search_halving.py"),
            "--config",
            "config/smoke.yaml",
            "--jobs",
            "1",
            "--workers",
            "1",
            "--out",
            str(out),
            "--halving",
            "4,1",
            "--stores",
            str(stores),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env=tool_env(),
    )
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads(out.read_text())
    (row,) = data["rows"]
    assert row["threads"]["torch"] == 1 and all(b.endswith(":1") for b in row["threads"]["blas"])
    assert row["full"]["search"].startswith("full")
    assert row["pruned"]["search"].startswith("successive halving, eta 4, 1 rungs"), row["pruned"]["search"]
    for side in ("full", "pruned"):
        assert row[side]["seconds"] > 0 and row[side]["epochs"] > 0 and row[side]["best_lr"] > 0
    assert set(data["ratio"]) == {"seconds", "epochs"} and "full / pruned:" in p.stdout and data["halving"] == "4,1"
    (full,) = (stores / "full").glob("mori_ueda/*/lrsearch/*/L*.zarr")
    assert (stores / "pruned" / full.relative_to(stores / "full")).is_dir()
    c = subprocess.run(
        [sys.executable, str(root / "docs" / "compare_searches.py"), str(stores / "full"), str(stores / "pruned")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env=tool_env(),
    )
    assert c.returncode == 0, c.stdout + c.stderr
    assert "\n1 searches: " in c.stdout, c.stdout
    bad = subprocess.run(
        [
            sys.executable,
            str(root / "benchmarks" / "search_halving.py"),
            "--config",
            "config/smoke.yaml",
            "--halving",
            "4",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env=tool_env(),
    )
    assert bad.returncode != 0 and "--halving '4': expected ETA,RUNGS" in bad.stderr, bad.stdout + bad.stderr
    if Path("/dev/full").exists():  # a full device: one line after the printed table, no traceback
        full_dev = subprocess.run(
            [
                sys.executable,
                str(root / "benchmarks" / "search_halving.py"),
                "--config",
                "config/smoke.yaml",
                "--jobs",
                "1",
                "--workers",
                "1",
                "--out",
                "/dev/full",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=300,
            env=tool_env(),
        )
        assert full_dev.returncode != 0 and "full / pruned:" in full_dev.stdout, full_dev.stdout + full_dev.stderr
        assert "cannot write it" in full_dev.stderr and "Traceback" not in full_dev.stderr, full_dev.stderr


def test_step_vs_stack_benchmark_times_an_epoch_per_stack_size_and_fits_a_line(tmp_path, root):
    """benchmarks/step_vs_stack.py on the smoke config's Fig. 2 shapes: one epoch per (depth, stack size), on one
    thread, with the fitted fixed and per-model parts written.  Never asserts speed."""
    out = tmp_path / "st.json"
    p = subprocess.run(
        [
            sys.executable,
            str(root / "benchmarks" / "step_vs_stack.py"),
            "--config",
            "config/smoke.yaml",
            "--stacks",
            "1,2,4",
            "--epochs",
            "1",
            "--out",
            str(out),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env=tool_env(),
    )
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads(out.read_text())
    assert data["threads"]["torch"] == 1 and all(b.endswith(":1") for b in data["threads"]["blas"])
    assert data["depths"] and data["n"] == 50  # the smoke Fig. 2 target: one fold of two out of N = 100
    for row in data["depths"].values():
        assert set(row["seconds_per_epoch"]) == {"1", "2", "4"} and min(row["seconds_per_epoch"].values()) > 0
        assert {"fixed_s", "per_model_s", "fixed_share"} <= set(row)
    assert "fixed share" in p.stdout
