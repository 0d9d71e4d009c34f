"""The benchmark runs (quick mode) and writes the keys the README's Performance section quotes. Never asserts speed."""

import json
import subprocess
import sys


def test_bench_quick_runs_and_writes_json(tmp_path, root):
    out = tmp_path / "bench.json"
    p = subprocess.run([sys.executable, str(root / "benchmarks" / "bench.py"), "--quick", "--out", str(out)], cwd=root,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads(out.read_text())
    for key in ("trainer_speedup_vs_plain", "ntk_seconds_quick", "ntk_peak_rss_gib", "matmul_peak_gflops", "pipeline"):
        assert key in data, key
    assert data["trainer"][0]["batched_model_epochs_per_s"] > 0 and data["trainer"][0]["plain_model_epochs_per_s"] > 0
    assert "speedup" in p.stdout
