"""The UCI loader on a tiny file written here, the optimum of the l_p losses, and the claim checkers where they must fail."""

import numpy as np
import pandas as pd
import pytest

from depthlab.studies.acceleration import datasets
from depthlab.studies.acceleration.claims import baseline_claims, depth_claims, rule_claims
from depthlab.studies.acceleration.figures import best_rates


def test_the_uci_loader_reads_the_ethanol_lines(tmp_path):
    rng = np.random.default_rng(0)
    lines, want = [], []
    for i in range(6):
        cls = 1 if i % 2 == 0 else 3
        feats = rng.normal(size=128)
        lines.append(f"{cls};{10.0 * (i + 1):.6f} " + " ".join(f"{k + 1}:{v:.6f}" for k, v in enumerate(feats)))
        if cls == 1:
            want.append((feats, 10.0 * (i + 1)))
    (tmp_path / "batch1.dat").write_text("\n".join(lines[:4]) + "\n")
    (tmp_path / "batch2.dat").write_text("\n".join(lines[4:]) + "\n")
    x, y = datasets.read_uci(tmp_path)
    fx = np.stack([f for f, _ in want])
    fy = np.array([c for _, c in want])
    np.testing.assert_allclose(x, (np.round(fx, 6) - np.round(fx, 6).mean(0)) / np.round(fx, 6).std(0), rtol=1e-9)
    np.testing.assert_allclose(y, (fy - fy.mean()) / fy.std(), rtol=1e-12)
    (tmp_path / "bad.dat").write_text("1;3.0 1:2.0 2:x\n")
    with pytest.raises(datasets.DataError, match=r"bad.dat, line 1"):
        datasets.read_uci(tmp_path / "bad.dat")
    with pytest.raises(datasets.DataError, match="does not exist"):
        datasets.uci_files(tmp_path / "nope.dat")


@pytest.mark.parametrize("p", [2, 4])
def test_the_optimum_is_a_stationary_point_below_random_points(p):
    rng = np.random.default_rng(1)
    x, y = datasets.synthetic(300, 8, 1.0, 0.3, rng)
    w, best = datasets.optimum(x, y, p)
    r = x @ w - y
    assert np.linalg.norm(x.T @ (np.abs(r) ** (p - 2) * r) / len(y)) < 1e-10
    for _ in range(20):
        v = w + 0.05 * rng.normal(size=8)
        assert np.mean(np.abs(x @ v - y) ** p) / p > best


def _table(rows):
    cols = ["dataset", "p", "init", "depth", "method", "lr", "seed", "to_target", "diverged", "rule_to_target", "max_distance"]
    return pd.DataFrame(rows, columns=cols)


def test_best_rates_take_the_fewest_iterations_and_skip_diverged_rates():
    t = _table([("s", 4, "balanced", 1, "gd", 0.1, 0, 50, False, 50, 0.0), ("s", 4, "balanced", 1, "gd", 0.3, 0, 20, True, 20, 0.0),
                ("s", 4, "balanced", 1, "gd", 0.2, 0, 30, False, 30, 0.0), ("s", 4, "balanced", 1, "gd", 0.2, 1, -1, False, -1, 0.0)])
    b = best_rates(t).iloc[0]
    assert b.lr == 0.1 and b.iterations == 50, "0.3 diverged; 0.2 never reaches it for seed 1"


def _speeds(d1, deep, p=4):
    rows = [("s", p, "balanced", 1, "gd", 0.1, 0, d1, False, d1, 0.0)]
    rows += [("s", p, "balanced", N, "gd", 0.1, 0, it, False, it, 0.05) for N, it in deep.items()]
    return _table(rows)


def test_a1_a2_hold_and_fail_as_their_criteria_say():
    fast = best_rates(_speeds(100, {2: 30, 3: 40}))
    assert depth_claims(fast, 2.0)[0].holds is True
    slow = best_rates(_speeds(100, {2: 30, 3: 120}))
    assert depth_claims(slow, 2.0)[0].holds is False, "depth 3 is slower than depth 1"
    assert depth_claims(best_rates(_speeds(100, {2: 80}, p=2)), 2.0)[0].holds is True
    assert depth_claims(best_rates(_speeds(100, {2: 30}, p=2)), 2.0)[0].holds is False, "x3.3 is not a small gain"


def test_a3_and_a4_fail_where_the_rule_drifts_or_a_baseline_is_faster():
    t = _table([("s", 4, "balanced", 2, "gd", 0.1, 0, 30, False, 60, 0.5), ("s", 4, "balanced", 2, "gd", 0.01, 0, 300, False, 301, 0.02)])
    tracks, speed = rule_claims(t, best_rates(t), 0.1, 1.25)
    assert tracks.holds is False and "the largest rate that tracks within 0.1 and reaches the target: 0.01" in tracks.evidence
    assert speed.holds is False
    base = _table([("s", 4, "balanced", 2, "gd", 0.1, 0, 30, False, 30, 0.0), ("s", 4, "balanced", 1, "adagrad", 0.1, 0, 20, False, -1, np.nan),
                   ("s", 4, "balanced", 1, "adadelta", 0.1, 0, 90, False, -1, np.nan)])
    assert baseline_claims(best_rates(base))[0].holds is False
