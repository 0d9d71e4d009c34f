"""The fractal claims read the table the way the paper reads its runs: mean over seeds, best lr, best width."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from depthlab.studies.fractals.claims import m2, m3, m4
from depthlab.studies.fractals.plots import best, curve_table

ROOT = Path(__file__).resolve().parents[3]


def _table(rows):
    return pd.DataFrame(rows, columns=["pdeg", "depth", "width", "lr", "seed", "best_accuracy", "P3", "P4"])


def test_best_averages_seeds_then_takes_the_best_lr_and_the_best_width():
    t = _table(
        [
            # pdeg 0: width 50 is best (lr 0.01: mean of 0.9 and 0.7 = 0.8 beats lr 0.001's 0.6)
            (0, 5, 50, 0.01, 0, 0.9, 0.8, 0.9),
            (0, 5, 50, 0.01, 1, 0.7, 0.8, 0.9),
            (0, 5, 50, 0.001, 0, 0.6, 0.8, 0.9),
            (0, 5, 50, 0.001, 1, 0.6, 0.8, 0.9),
            (0, 5, 200, 0.01, 0, 0.5, 0.8, 0.9),
            (0, 5, 200, 0.01, 1, 0.5, 0.8, 0.9),
        ]
    )
    per_width = best(t, ["pdeg", "width"]).set_index("width").best_accuracy
    assert per_width[50] == pytest.approx(0.8) and per_width[200] == pytest.approx(0.5)
    assert curve_table(t).best_accuracy.iloc[0] == pytest.approx(0.8)  # not the 0.65 mean over widths


CURVES = [(0, 0.9), (12, 0.8), (11, 0.7), (5, 0.6), (9, 0.55), (10, 0.5)]  # (pdeg, P(3) = P(4) here), coarse to fine


def test_m2_ranks_the_best_width_per_curve():
    # the narrow net learns the coarse curves, the wide one learns little anywhere: averaging widths (or reading the wide
    # net) would tie the coarse curves with the middle ones and the ranking would change
    rows = []
    for (pdeg, p3), acc50 in zip(CURVES, [0.98, 0.90, 0.80, 0.70, 0.62, 0.52]):
        rows += [(pdeg, 5, 50, 0.005, 0, acc50, p3, p3), (pdeg, 5, 200, 0.005, 0, 0.5 if pdeg == 0 else 0.6, p3, p3)]
    (v3, v4) = m2(_table(rows))
    assert v3.holds and "pdeg 0: acc 0.98 " in v3.evidence and "Spearman = +1.00" in v3.evidence
    rows_bad = [(p, 5, 50, 0.005, 0, a, p3, p3) for (p, p3), a in zip(CURVES, [0.5, 0.6, 0.7, 0.8, 0.9, 0.95])]
    assert m2(_table(rows_bad))[0].holds is False


def test_m2_a_zigzag_fails_although_its_rank_correlation_is_positive():
    """The old checker held M2 whenever Spearman > 0: this zig-zag (coarse, fine, coarse, fine, ...) has Spearman +0.60 and
    passed.  Now it must reach 0.8 with an exact permutation p-value <= 0.05."""
    zig = [(p, 5, 50, 0.005, 0, a, p3, p3) for (p, p3), a in zip(CURVES, [0.95, 0.55, 0.90, 0.60, 0.85, 0.52])]
    v = m2(_table(zig))[0]
    assert v.holds is False and "Spearman = +0.60" in v.evidence and "permutation p" in v.evidence
    from depthlab.studies.fractals.claims import _rho, permutation_p

    a = np.array([0.95, 0.55, 0.90, 0.60, 0.85, 0.50])
    assert _rho(a, np.array([p3 for _, p3 in CURVES])) > 0  # what the old checker tested
    # the exact p-value, checked by hand: a perfect ranking of 6 has p = 1/720, one adjacent swap 6/720
    assert permutation_p(np.arange(6.0), np.arange(6.0)) == pytest.approx(1 / 720)
    assert permutation_p(np.arange(6.0), np.array([0, 1, 2, 3, 5, 4.0])) == pytest.approx(6 / 720)


def test_m2_with_every_net_at_chance_is_inconclusive_not_na():
    flat = [(p, 5, 50, 0.005, 0, a, p3, p3) for (p, p3), a in zip(CURVES, [0.51, 0.505, 0.50, 0.502, 0.50, 0.501])]
    v = m2(_table(flat))[0]
    assert v.holds is None and v.verdict == "inconclusive" and "every net is at chance" in v.reason


def test_m3_fails_when_any_architecture_beats_chance():
    near = [(10, T, 100, 0.005, 0, 0.51, 0.5, 0.5) for T in (1, 3, 5)]
    assert m3(_table(near), 0.6, "fig6", "x").holds
    assert not m3(_table(near + [(10, 3, 20, 0.005, 0, 0.72, 0.5, 0.5)]), 0.6, "fig6", "x").holds


def test_best_reports_the_winning_rate_and_takes_the_best_along_the_run_first():
    """By hand: per (depth, width) the mean over seeds of each rate's best-along-the-run accuracy, then the best rate."""
    t = _table(
        [
            (0, 5, 50, 0.001, 0, 0.92, 0.8, 0.9),
            (0, 5, 50, 0.001, 1, 0.88, 0.8, 0.9),  # mean 0.90
            (0, 5, 50, 0.005, 0, 0.74, 0.8, 0.9),
            (0, 5, 50, 0.005, 1, 0.76, 0.8, 0.9),  # mean 0.75
            (0, 1, 50, 0.001, 0, 0.60, 0.8, 0.9),
            (0, 1, 50, 0.005, 0, 0.64, 0.8, 0.9),
        ]
    )
    b = best(t, ["depth", "width"]).set_index("depth")
    assert b.loc[5, "best_accuracy"] == pytest.approx(0.90) and b.loc[5, "lr"] == 0.001
    assert b.loc[1, "best_accuracy"] == pytest.approx(0.64) and b.loc[1, "lr"] == 0.005


def _cnn(rows):
    return pd.DataFrame(rows, columns=["dataset", "depth", "width", "lr", "seed", "best_accuracy"])


def test_m4_holds_when_depth_helps_gradually_and_fails_when_it_helps_sharply_or_not_at_all():
    gradual = _cnn(
        [
            ("digits", 1, 8, 1e-3, 0, 0.95),
            ("digits", 1, 16, 1e-3, 0, 0.96),
            ("digits", 2, 16, 1e-3, 0, 0.98),
            ("digits", 3, 16, 3e-3, 0, 0.985),
        ]
    )
    v = m4(gradual, 0.05)
    assert v.holds and "best deeper net depth 3" in v.evidence
    sharp = _cnn([("digits", 1, 8, 1e-3, 0, 0.60), ("digits", 2, 8, 1e-3, 0, 0.90), ("digits", 3, 8, 1e-3, 0, 0.97)])
    assert m4(sharp, 0.05, n_test=450).holds is False
    bare = m4(sharp, 0.05)  # no test-set size, one seed: no error bar, so decided on a bare value it is inconclusive
    assert bare.verdict == "inconclusive" and "value alone" in bare.reason
    flat = _cnn([("digits", 1, 8, 1e-3, 0, 0.97), ("digits", 2, 8, 1e-3, 0, 0.90)])
    assert m4(flat, 0.05, n_test=450).holds is False, "the best net must be deeper than one layer"


def test_m4_one_layer_means_depth_1_and_without_it_the_claim_is_inconclusive():
    """The old checker took the shallowest configured depth as 'one layer': with depths 2, 3 it 'held'."""
    no_one = _cnn([("digits", 2, 8, 1e-3, 0, 0.96), ("digits", 3, 8, 1e-3, 0, 0.98)])
    v = m4(no_one, 0.05)
    assert v.holds is None and "depth 1 is not in the config" in v.reason


def test_best_survives_a_net_that_is_nan_everywhere():
    """The old best() crashed (idxmax of an all-NaN group) when a net had no accuracy at all (it diverged before its first
    check); such a net is left out, and a group with nothing else is left out too."""
    t = _table(
        [
            (0, 5, 50, 0.001, 0, np.nan, 0.8, 0.9),
            (0, 5, 50, 0.005, 0, np.nan, 0.8, 0.9),
            (0, 1, 50, 0.001, 0, 0.62, 0.8, 0.9),
            (0, 1, 50, 0.005, 0, np.nan, 0.8, 0.9),
        ]
    )
    b = best(t, ["depth", "width"])
    assert b.depth.tolist() == [1] and b.best_accuracy.iloc[0] == pytest.approx(0.62)
    assert best(t[t.depth == 5], ["depth", "width"]).empty


def _sound(rows, converged, chosen=None, flagged=False):
    t = pd.DataFrame(rows, columns=["pdeg", "depth", "width", "lr", "seed", "best_accuracy", "P3", "P4"])
    return t.assign(
        converged=converged,
        chosen=True if chosen is None else chosen,
        lr_flagged=flagged,
        lr_edge="lower" if flagged else "",
    )


def test_m3_and_m1_read_convergence_in_the_direction_more_training_could_change():
    from depthlab.studies.fractals.claims import m1

    # M3 'holds' (all at chance) while a net was still improving: inconclusive; 'does not hold' (0.72 already reached):
    # more training cannot undo it, so it stands
    near = [(10, T, 100, 0.005, 0, 0.51, 0.5, 0.5) for T in (1, 3, 5)]
    v = m3(_sound(near, [True, True, False]), 0.6, "fig6", "x")
    assert v.holds is None and "did not converge" in v.reason
    beaten = near + [(10, 3, 20, 0.005, 0, 0.72, 0.5, 0.5)]
    assert m3(_sound(beaten, [True, True, False, False]), 0.6, "fig6", "x").holds is False
    # M1 (c): a deepest net below near-perfect that was still improving: inconclusive (the old checker: does not hold)
    rows = [
        (0, T, w, 0.001, 0, a, 0.8, 0.9) for T, w, a in [(1, 10, 0.6), (1, 100, 0.7), (5, 10, 0.75), (5, 100, 0.85)]
    ]
    t = _sound(rows, [True, True, True, False]).assign(n_params=[31, 301, 400, 40000])
    c = [v for v in m1(t, 0.95) if "near-perfect" in v.statement][0]
    assert c.holds is None and "did not converge" in c.reason and "would not hold" in c.reason
    t2 = t.assign(converged=True)
    assert [v for v in m1(t2, 0.95) if "near-perfect" in v.statement][0].holds is False
    # and a flagged rate makes (a) inconclusive
    a = [
        v
        for v in m1(t2.assign(lr_flagged=[False, False, False, True], lr_edge="lower"), 0.95)
        if "equal width" in v.statement
    ][0]
    assert a.holds is None and "sits at the edge of its grid" in a.reason


def test_m1_extra_nets_give_equal_parameter_points_and_widths_one_depth_has_are_not_compared_at_equal_width():
    """fig4.extra_nets: depth 1 at widths 200 and 400 inside depth 5's parameter range.  Without them the ranges do not
    overlap (inconclusive); with them the comparison is made at their counts, interpolated log-linearly in depth 5's
    curve (here by hand: 0.75 at 481 and 0.85 at 40 801).  The old checker compared every width and failed (a) on
    width 200, which only depth 1 has ('deepest beats depth 1' is false for a single net)."""
    from depthlab.studies.fractals.claims import m1

    grid = [(1, 10, 41, 0.60), (1, 100, 401, 0.70), (5, 10, 481, 0.75), (5, 100, 40801, 0.85)]
    extra = [(1, 200, 801, 0.72), (1, 400, 1601, 0.80)]

    def table(nets):
        t = _sound([(0, T, w, 0.001, 0, a, 0.8, 0.9) for T, w, _, a in nets], True)
        return t.assign(n_params=[P for _, _, P, _ in nets])

    def verdict(nets, what):
        return [v for v in m1(table(nets), 0.95) if what in v.statement][0]

    assert (
        verdict(grid, "equal parameter").holds is None and "no overlapping" in verdict(grid, "equal parameter").reason
    )
    v = verdict(grid + extra, "equal parameter")
    at = lambda P: 0.75 + 0.10 * np.log(P / 481) / np.log(40801 / 481)  # noqa: E731
    assert (
        f"at 801 params: {at(801):.3f} vs 0.720" in v.evidence
        and f"at 1601 params: {at(1601):.3f} vs 0.800" in v.evidence
    )
    # depth 1 at 1 601 parameters beats the interpolated depth 5; bare numbers (no test-set size): not decided
    assert at(1601) < 0.80 and v.verdict == "inconclusive" and "value alone" in v.reason
    assert [v for v in m1(table(grid + extra), 0.95, n_test=50000) if "equal parameter" in v.statement][
        0
    ].holds is False
    better = [(1, 200, 801, 0.72), (1, 400, 1601, 0.76)]
    assert verdict(grid + better, "equal parameter").holds is True
    w = verdict(grid + better, "equal width")
    assert w.holds is True and "width 200" not in w.evidence and "width 10" in w.evidence
    assert verdict([(1, 10, 41, 0.6), (1, 100, 401, 0.7)], "equal width").holds is None  # one depth: nothing to compare


def test_extra_nets_must_be_of_a_configured_depth_at_a_new_width():
    import copy

    import yaml

    import depthlab.config as dlc
    from depthlab.config import ConfigError
    from depthlab.studies import get_study
    from depthlab.studies.fractals.specs import TrainJob

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg["studies"] = {"fractals": cfg["studies"]["fractals"]}
    jobs = get_study("fractals").jobs(dlc.validate(copy.deepcopy(cfg)), "train")
    fig4 = {(j.depth, j.width) for j in jobs if j.pdeg == 0 and j.fractal == "cantor"}
    # widths 10, 100, 200 at depths 1 and 5, and the extra nets depth 1 at 400 and depth 5 at 20: not the product
    assert {(1, 200), (5, 200), (1, 400), (5, 20)} <= fig4 and (5, 400) not in fig4 and (1, 20) not in fig4
    assert all(isinstance(j, TrainJob) for j in jobs)
    for bad in ({"depth": 3, "width": 50}, {"depth": 1, "width": 100}):
        c = copy.deepcopy(cfg)
        c["studies"]["fractals"]["fig4"]["extra_nets"] = [bad]
        with pytest.raises(ConfigError, match=r"fractals\.fig4\.extra_nets\[0\]"):
            dlc.validate(c)


def test_m2_and_m4_decided_by_noise_inside_the_binomial_error_bar_are_inconclusive():
    """M2 rested on one seed, a single swap deciding it (pdeg 11 at 0.676 against pdeg 5 at 0.623, on 5 000 test
    examples: 0.053 apart, 7.6 SE; a swap of 0.005 is inside them); M4 was decided by 1.5 of 450 test images (depth 1
    0.9867 against depth 2 0.9833)."""
    swap = [(p, 5, 50, 0.005, 0, a, p3, p3) for (p, p3), a in zip(CURVES, [0.90, 0.95, 0.93, 0.85, 0.80, 0.802])]
    bare = m2(_table(swap))[0]  # Spearman 0.77; with the last two swapped, 0.83
    assert bare.holds is False and "Spearman = +0.77" in bare.evidence  # no error bar: the one swap decides, as before
    v = m2(_table(swap), n_test=5000)[0]
    assert v.verdict == "inconclusive" and "inside the error bars" in v.reason
    digits = _cnn([("digits", 1, 16, 1e-3, 0, 0.9867), ("digits", 2, 16, 1e-3, 0, 0.9833)])
    assert m4(digits, 0.05).verdict == "inconclusive"  # the old verdict on the bare numbers was "does not hold"
    v = m4(digits, 0.05, n_test=450)
    assert v.verdict == "inconclusive" and "inside the error bars" in v.reason and v.stderr > 0.007


def test_m3_resting_on_nets_that_learned_nothing_within_the_budget_is_inconclusive_and_m1c_has_an_error_bar():
    """Fractal nets at chance after 1e5 steps (the paper trains 1e6) were M3's evidence; and M1's near-perfect
    0.9528 against 0.95 is 0.9 SE on 5 000 test examples."""
    from depthlab.studies.fractals.claims import m1

    near = _table([(10, T, 100, 0.005, 0, 0.505, 0.5, 0.5) for T in (1, 3, 5)]).assign(stopped_epoch=200)
    v = m3(near, 0.6, "fig6", "x", n_test=5000, steps_per_epoch=500)
    assert v.verdict == "inconclusive" and "nothing learned within 100000 steps (the paper trains 1e+06)" in v.reason
    assert m3(near.assign(stopped_epoch=2000), 0.6, "fig6", "x", n_test=5000, steps_per_epoch=500).holds is True
    t = _sound([(0, T, w, 0.001, 0, a, 0.8, 0.9) for T, w, a in [(1, 10, 0.6), (5, 10, 0.8), (5, 200, 0.9528)]], True)
    t = t.assign(n_params=[41, 481, 160801])
    top = [v for v in m1(t, 0.95, n_test=5000) if "near-perfect" in v.statement][0]
    assert top.verdict == "inconclusive" and 0.8 < top.z < 1.0
    assert [v for v in m1(t, 0.95) if "near-perfect" in v.statement][0].holds is True  # bare: the old verdict


def test_one_seeds_error_bar_carries_its_last_windows_check_to_check_noise():
    """With one net the SE is the test sample's (binomial) combined with the net's own check-to-check
    fluctuation over its last window.  (a) The window noise of white noise of SD 0.02 around a slow rise is 0.02 (an
    independent estimate: the SD we drew with).  (b) M1's near-perfect 0.96 against 0.95 on 5 000 test examples is 3.6
    binomial SEs (holds); a net whose accuracy swings 0.01 from check to check there is inside its error bars."""
    from depthlab.studies.fractals.claims import m1
    from depthlab.studies.fractals.figures import last_window_noise

    rng = np.random.default_rng(0)
    curve = np.r_[np.full(3, np.nan), np.linspace(0.8, 0.9, 4000) + rng.normal(0, 0.02, 4000), np.full(5, np.nan)]
    assert last_window_noise(curve, checks=4000) == pytest.approx(0.02, rel=0.05)
    assert np.isnan(last_window_noise(np.array([0.5, np.nan, 0.6])))  # fewer than 3 finite checks: no estimate

    t = _sound([(0, T, w, 0.001, 0, a, 0.8, 0.9) for T, w, a in [(1, 10, 0.6), (5, 10, 0.8), (5, 200, 0.96)]], True)
    t = t.assign(n_params=[41, 481, 160801])
    quiet = [v for v in m1(t.assign(window_noise=0.0005), 0.95, n_test=5000) if "near-perfect" in v.statement][0]
    assert quiet.holds is True and quiet.z > 2
    noisy = [v for v in m1(t.assign(window_noise=0.01), 0.95, n_test=5000) if "near-perfect" in v.statement][0]
    assert noisy.verdict == "inconclusive" and "inside the error bars" in noisy.reason
    assert noisy.stderr == pytest.approx(np.hypot(np.sqrt(0.96 * 0.04 / 5000), 0.01), rel=1e-6)


def test_m2_whose_resamples_hold_but_whose_permutation_p_does_not_says_so_not_inside_the_error_bars():
    """The run of 5f96160: M2 against P(3) read 'inside the error bars' with Spearman >= 0.8 in 100 % of resamples: what
    held it back was the exact permutation p (0.167), not the error bars.  Four curves, one adjacent swap, accuracies
    far apart: Spearman 0.8 in every resample, p = 4/24."""
    four = [(p, 5, 50, 0.005, 0, a, p3, p3) for (p, p3), a in zip(CURVES[:4], [0.95, 0.85, 0.90, 0.60])]
    v = m2(_table(four), n_test=5000)[0]
    assert v.verdict == "inconclusive" and "too few curves to tell the ranking from chance" in v.reason
    assert "inside the error bars" not in v.reason and "p = 0.167" in v.reason


def test_a_row_resting_on_one_seed_per_net_is_not_decided_and_says_what_would_decide_it():
    """One trajectory per net: the SE is binomial + window noise, which cannot hold the run-to-run spread, so a verdict
    that holds on its numbers becomes inconclusive naming the seeds; with two seeds the same numbers decide it."""
    from depthlab.studies.fractals.claims import m1, one_run

    rows = [(0, T, w, 0.001, 0, a, 0.8, 0.9) for T, w, a in [(1, 10, 0.6), (5, 10, 0.8), (5, 200, 0.99)]]
    t = _sound(rows, True).assign(n_params=[41, 481, 160801])
    top = [v for v in m1(t, 0.95, n_test=5000) if "near-perfect" in v.statement][0]
    assert top.holds is True
    v = one_run(top, t)
    assert v.verdict == "inconclusive" and "one trajectory" in v.reason and "training.seeds has one seed" in v.reason
    assert "on these numbers alone it would hold" in v.reason
    two = pd.concat([t, t.assign(seed=1, best_accuracy=t.best_accuracy - 0.001)])
    top2 = [v for v in m1(two, 0.95, n_test=5000) if "near-perfect" in v.statement][0]
    assert one_run(top2, two) is top2 and top2.holds is True
