"""The fractal claims read the table the way the paper reads its runs: mean over seeds, best lr, best width."""

import pandas as pd
import pytest

from depthlab.studies.fractals.claims import m2, m3, m4
from depthlab.studies.fractals.plots import best, curve_table


def _table(rows):
    return pd.DataFrame(rows, columns=["pdeg", "depth", "width", "lr", "seed", "best_accuracy", "P3", "P4"])


def test_best_averages_seeds_then_takes_the_best_lr_and_the_best_width():
    t = _table([
        # pdeg 0: width 50 is best (lr 0.01: mean of 0.9 and 0.7 = 0.8 beats lr 0.001's 0.6)
        (0, 5, 50, 0.01, 0, 0.9, 0.8, 0.9), (0, 5, 50, 0.01, 1, 0.7, 0.8, 0.9),
        (0, 5, 50, 0.001, 0, 0.6, 0.8, 0.9), (0, 5, 50, 0.001, 1, 0.6, 0.8, 0.9),
        (0, 5, 200, 0.01, 0, 0.5, 0.8, 0.9), (0, 5, 200, 0.01, 1, 0.5, 0.8, 0.9),
    ])
    per_width = best(t, ["pdeg", "width"]).set_index("width").best_accuracy
    assert per_width[50] == pytest.approx(0.8) and per_width[200] == pytest.approx(0.5)
    assert curve_table(t).best_accuracy.iloc[0] == pytest.approx(0.8)   # not the 0.65 mean over widths


def test_m2_ranks_the_best_width_per_curve():
    # the narrow net learns the coarse curve, the wide one learns nothing anywhere: averaging widths would
    # flatten the coarse curve to a tie with the middle one and the ranking would change
    rows = []
    for pdeg, acc50, p3 in [(0, 0.98, 0.9), (5, 0.74, 0.8), (10, 0.5, 0.5)]:
        rows += [(pdeg, 5, 50, 0.005, 0, acc50, p3, p3), (pdeg, 5, 200, 0.005, 0, 0.5 if pdeg == 0 else 0.74, p3, p3)]
    (v3, v4) = m2(_table(rows))
    assert v3.holds and "pdeg 0: acc 0.980" in v3.evidence
    rows_bad = [(p, 5, 50, 0.005, 0, a, p3, p3) for p, a, p3 in [(0, 0.5, 0.9), (5, 0.7, 0.8), (10, 0.9, 0.5)]]
    assert not m2(_table(rows_bad))[0].holds


def test_m3_fails_when_any_architecture_beats_chance():
    near = [(10, T, 100, 0.005, 0, 0.51, 0.5, 0.5) for T in (1, 3, 5)]
    assert m3(_table(near), 0.6, "fig6", "x").holds
    assert not m3(_table(near + [(10, 3, 20, 0.005, 0, 0.72, 0.5, 0.5)]), 0.6, "fig6", "x").holds


def test_best_reports_the_winning_rate_and_takes_the_best_along_the_run_first():
    """By hand: per (depth, width) the mean over seeds of each rate's best-along-the-run accuracy, then the best rate."""
    t = _table([
        (0, 5, 50, 0.001, 0, 0.92, 0.8, 0.9), (0, 5, 50, 0.001, 1, 0.88, 0.8, 0.9),   # mean 0.90
        (0, 5, 50, 0.005, 0, 0.74, 0.8, 0.9), (0, 5, 50, 0.005, 1, 0.76, 0.8, 0.9),   # mean 0.75
        (0, 1, 50, 0.001, 0, 0.60, 0.8, 0.9), (0, 1, 50, 0.005, 0, 0.64, 0.8, 0.9),
    ])
    b = best(t, ["depth", "width"]).set_index("depth")
    assert b.loc[5, "best_accuracy"] == pytest.approx(0.90) and b.loc[5, "lr"] == 0.001
    assert b.loc[1, "best_accuracy"] == pytest.approx(0.64) and b.loc[1, "lr"] == 0.005


def _cnn(rows):
    return pd.DataFrame(rows, columns=["dataset", "depth", "width", "lr", "seed", "best_accuracy"])


def test_m4_holds_when_depth_helps_gradually_and_fails_when_it_helps_sharply_or_not_at_all():
    gradual = _cnn([("digits", 1, 8, 1e-3, 0, 0.95), ("digits", 1, 16, 1e-3, 0, 0.96), ("digits", 2, 16, 1e-3, 0, 0.98),
                    ("digits", 3, 16, 3e-3, 0, 0.985)])
    v = m4(gradual, 0.05)
    assert v.holds and "best depth 3" in v.evidence
    sharp = _cnn([("digits", 1, 8, 1e-3, 0, 0.60), ("digits", 2, 8, 1e-3, 0, 0.90), ("digits", 3, 8, 1e-3, 0, 0.97)])
    assert m4(sharp, 0.05).holds is False
    flat = _cnn([("digits", 1, 8, 1e-3, 0, 0.97), ("digits", 2, 8, 1e-3, 0, 0.95)])
    assert m4(flat, 0.05).holds is False, "the best net must be deeper than one layer"
