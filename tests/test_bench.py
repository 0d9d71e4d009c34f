"""The benchmark runs (quick mode) and writes the keys the README's Performance section quotes. Never asserts speed."""

import json
import subprocess
import sys

import pytest

from helpers import tool_env


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_bench_quick_runs_and_writes_json(tmp_path, root):
    out = tmp_path / "bench.json"
    p = subprocess.run([sys.executable, str(root / "benchmarks" / "bench.py"), "--quick", "--out", str(out)], cwd=root,
                       capture_output=True, text=True, timeout=600, env=tool_env())
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads(out.read_text())
    for key in ("trainer_speedup_vs_plain", "trainer_speedup_vs_torch_func", "ntk_seconds_quick_1thread",
                "ntk_cholesky_seconds_quick_1thread", "ntk_over_cholesky_quick_1thread", "ntk_over_cholesky_quick_2thread",
                "ntk_peak_rss_gib", "ntk_speedup_vs_previous", "matmul_peak_gflops", "pipeline", "threads_trainer"):
        assert key in data, key
    # every side states its threads, and pinning took: one thread per library in the 1-thread runs
    for row in data["ntk"]:
        want = 1 if row in data["ntk"][:2] else None
        assert row["threads"]["torch"] >= 1
        if want == 1:
            assert all(v in (1, None) for v in row["threads"].values()), row["threads"]
    assert all(v in (1, None) for v in data["threads_trainer"].values()), data["threads_trainer"]
    for row in data["trainer"]:
        assert min(row["batched_model_epochs_per_s"], row["plain_model_epochs_per_s"], row["torch_func_model_epochs_per_s"]) > 0
    assert {r["optimizer"] for r in data["trainer"]} == {"sgd", "adam"}
    assert "vs torch.func" in p.stdout and "goal <= 1.3" in p.stdout and "threads: torch 1" in p.stdout


def test_bench_workflow_parses_its_arguments(root):
    """The workflow-overhead benchmark runs the smoke pipeline twice (minutes): here only its command line is checked."""
    p = subprocess.run([sys.executable, str(root / "benchmarks" / "bench_workflow.py"), "--help"], cwd=root,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "--config" in p.stdout and "--dry-config" in p.stdout


def test_adam_layout_benchmark_runs_and_finds_the_foreach_update_bit_identical(root):
    """benchmarks/adam_layout.py at its smallest (one shape, a lone model, 5 timed steps): it pins and prints its
    threads, and its own bit check finds depthlab's foreach update equal to the per-tensor one after 400 steps."""
    p = subprocess.run([sys.executable, str(root / "benchmarks" / "adam_layout.py"), "--shapes", "depth 1 width 10",
                        "--models", "1", "--steps", "5"], cwd=root, capture_output=True, text=True, timeout=300,
                       env=tool_env())
    assert p.returncode == 0, p.stdout + p.stderr
    assert "'torch': 1" in p.stdout and "depth 1 width 10   M=1: per tensor" in p.stdout, p.stdout
    assert "same bits as per tensor: depthlab yes" in p.stdout, p.stdout
