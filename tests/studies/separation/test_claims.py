"""The separation claims' checkers on tables where they must hold and where they must fail; S3 answers, never fails."""

import numpy as np
import pandas as pd

from depthlab.studies.separation.claims import radial_claims, sawtooth_claims
from depthlab.studies.separation.sawtooth import crossing_bound, mse_bound, window_bound

COLS = ["level", "arch", "kind", "depth", "width", "lr", "seed", "test_mse", "max_abs_error", "pieces", "best", "mse_bound",
        "crossing_bound", "window_bound", "diverged"]


def row(level, arch, kind, width, mse, pieces, best=True, lr=0.01):
    depth = 1 if kind == "shallow" else level
    b = [float(f(width + 1, level)) if kind == "shallow" else 0.0 for f in (mse_bound, crossing_bound, window_bound)]
    return (level, arch, kind, depth, width, lr, 0, mse, np.nan, pieces, best, *b, False)


def table(rows):
    con = [(L, "construction", "construction", L, 2, np.nan, -1, 0.0, 0.0, 2**L, True, 0.0, 0.0, 0.0, False) for L in (2, 4)]
    return pd.DataFrame(con + rows, columns=COLS)


def test_s2_holds_above_the_bound_fails_below_it_and_is_not_judged_where_no_bound_applies():
    ok = table([row(4, "shallow-w8", "shallow", 8, 0.02, 9), row(2, "shallow-w8", "shallow", 8, 0.001, 5)])
    s2 = [v for v in sawtooth_claims(ok, 1e-4) if v.claim == "S2"]
    assert [v.holds for v in s2] == [None, True], "w + 1 = 9 >= 2^2: no bound at L = 2; above the window bound at L = 4"
    bad = table([row(4, "shallow-w8", "shallow", 8, 0.005, 9)])  # below the window bound 0.0091
    assert [v.holds for v in sawtooth_claims(bad, 1e-4) if v.claim == "S2"] == [False]


def test_s3_is_answered_not_failed():
    t = table([row(2, "deep-w2", "deep", 2, 1e-6, 4), row(4, "deep-w2", "deep", 2, 0.05, 3),
               row(2, "construct-w2", "construct", 2, 1e-7, 4), row(4, "construct-w2", "construct", 2, 0.02, 9)])
    s3 = [v for v in sawtooth_claims(t, 1e-4) if v.claim == "S3"]
    assert all(v.kind == "question" and v.holds is None for v in s3)
    assert s3[0].evidence.startswith("found at L = [2]; not found from L = 4 on")
    assert s3[1].evidence.startswith("found at L = [2]; not found from L = 4 on")


def test_r1_holds_when_the_shallow_error_grows_faster_and_fails_otherwise():
    def radial(s1, s2):
        rows = []
        for d in (2, 4, 8, 16):
            for depth, slope in ((1, s1), (2, s2)):
                rows.append({"target": "relu", "dist": "shell", "budget": 1000, "depth": depth, "d": d, "seed": 0,
                             "test_nmse": 0.1 + slope * np.log2(d), "r0_density_ratio": 1.0, "diverged": False})
        return pd.DataFrame(rows)

    assert radial_claims(radial(0.1, 0.02))[0].holds is True
    v = radial_claims(radial(0.02, 0.1))[0]
    assert v.holds is False and "density at r0 / its maximum: d=2: 1.00" in v.evidence


def test_r1_and_r2_a_diverged_net_left_out_of_the_means_makes_the_row_inconclusive():
    """The old checker left a diverged net out of the means, said so in the evidence, and judged the survivors: here the
    depth-1 seed 1 at d = 16 diverged, the other nets' depth-1 error grows faster than depth 2's, and R1 'held' on 15 of
    16 nets."""
    rows = []
    for d in (2, 4, 8, 16):
        for depth, slope in ((1, 0.1), (2, 0.02)):
            for seed in (0, 1):
                bad = (depth, d, seed) == (1, 16, 1)
                rows.append({"target": "relu", "dist": "shell", "budget": 1000, "depth": depth, "d": d, "seed": seed, "width": 8,
                             "test_nmse": np.nan if bad else 0.1 + slope * np.log2(d), "r0_density_ratio": 1.0,
                             "diverged": bad, "converged": not bad})
    v = radial_claims(pd.DataFrame(rows))[0]
    assert v.holds is None and "1 of 16 nets diverged (d 16, depth 1, width 8, seed 1): left out of the means" in v.reason
    assert "on these numbers alone it would hold" in v.reason
    from depthlab.studies.separation.claims import es16_claims

    t = es16_table([0.5, 0.8, 0.97], [0.2, 0.4, 0.6])
    t.loc[(t.depth == 2) & (t.d == 32), ["diverged", "test_nmse"]] = [True, np.nan]  # the one depth-2 net that ...
    v = es16_claims(t, 0.1)[0]
    assert v.holds is None and "nets diverged" in v.reason


def es16_table(one, two, train_one=None):
    train_one = one if train_one is None else train_one
    rows = [{"budget": 1000, "depth": depth, "d": d, "seed": 0, "test_nmse": v, "train_nmse": t, "shells": int(np.ceil(2 * np.sqrt(d))),
             "diverged": False} for depth, curve, train in ((1, one, train_one), (2, two, two)) for d, v, t in zip((2, 8, 32), curve, train)]
    return pd.DataFrame(rows)


def test_r2_holds_when_only_the_shallow_error_reaches_the_variance():
    from depthlab.studies.separation.claims import es16_claims

    assert es16_claims(es16_table([0.5, 0.8, 0.97], [0.2, 0.4, 0.6]), 0.1)[0].holds is True
    assert es16_claims(es16_table([0.5, 0.8, 0.85], [0.2, 0.4, 0.6]), 0.1)[0].holds is False, "shallow not at the variance"
    assert es16_claims(es16_table([0.5, 0.8, 0.97], [0.2, 0.4, 0.95]), 0.1)[0].holds is False, "deep at the variance too"


def test_r2_an_overfitting_shallow_net_above_the_variance_is_inconclusive_not_holds():
    """The old checker counted a depth-1 test nMSE of 1.7 (its nets overfit: training nMSE 0.2) as 'reached the variance'
    and held R2.  Above the variance, or at it on the test set only, the depth-1 nets overfit: inconclusive."""
    from depthlab.studies.separation.claims import es16_claims

    over = es16_claims(es16_table([0.5, 0.8, 1.7], [0.2, 0.4, 0.6], train_one=[0.3, 0.2, 0.2]), 0.1)[0]
    assert over.holds is None and "the depth-1 nets overfit at d = 32 (test nMSE 1.7, training nMSE 0.2)" in over.reason
    memorised = es16_claims(es16_table([0.5, 0.8, 0.97], [0.2, 0.4, 0.6], train_one=[0.3, 0.2, 0.05]), 0.1)[0]
    assert memorised.holds is None and "overfit" in memorised.reason
    assert es16_claims(es16_table([0.5, 0.8, 0.97], [0.2, 0.4, 0.6], train_one=[0.5, 0.8, 0.95]), 0.1)[0].holds is True
    # a net still improving when its budget ran out makes it inconclusive too
    t = es16_table([0.5, 0.8, 0.97], [0.2, 0.4, 0.6]).assign(converged=True)
    t.loc[(t.depth == 2) & (t.d == 32), "converged"] = False
    v = es16_claims(t, 0.1)[0]
    assert v.holds is None and "did not converge" in v.reason


def learner_table(learner, net, fixed=(0.9, 0.9, 0.9)):
    rows = []
    for d, v, n, f in zip((2, 8, 32), learner, net, fixed):
        base = {"dist": "shell", "d": d, "seed": 0, "lr": 0.5, "diverged": False}
        rows += [{**base, "model": "learner", "width": 4 * d, "width_rule": "4d", "n_params": 4 * d * d + 32, "test_nmse": v},
                 {**base, "model": "reduced", "width": 4 * d, "width_rule": "4d", "n_params": 4 * d * d + 32, "test_nmse": v},
                 {**base, "model": "learner", "width": 8, "width_rule": "8", "n_params": 8 * d + 32, "test_nmse": f},
                 {**base, "model": "1 hidden layer", "width": 3, "width_rule": "equal parameters", "n_params": 4 * d * d + 32, "test_nmse": n}]
    return pd.DataFrame(rows)


def test_r3_holds_when_the_learner_is_small_at_every_d_and_the_shallow_net_is_not():
    from depthlab.studies.separation.claims import learner_claims

    ok = learner_claims(learner_table([0.05, 0.1, 0.15], [0.3, 0.6, 0.9]), 0.2)
    assert [v.holds for v in ok] == [True, True]
    assert "contrast, fixed m = 8" in ok[0].evidence
    bad = learner_claims(learner_table([0.05, 0.1, 0.4], [0.3, 0.6, 0.9]), 0.2)
    assert [v.holds for v in bad] == [False, False], "the learner is not small at d = 32, so it does not win there either"
    assert [v.holds for v in learner_claims(learner_table([0.05, 0.1, 0.15], [0.1, 0.1, 0.1]), 0.2)] == [True, False]


def curves_table(dev_path, alpha, reduced):
    rows = []
    for d in (2, 8):
        for step, dev, a, r in zip((0, 10, 20), dev_path, alpha, reduced):
            rows.append({"dist": "shell", "d": d, "width": 4 * d, "width_rule": "4d", "seed": 0, "step": step,
                         "alpha": a, "reduced_alpha": r, "deviation": dev, "test_nmse": 0.1, "reduced_test_nmse": 0.1})
    return pd.DataFrame(rows)


def test_r4_fails_when_the_deviation_compounds_or_alpha_leaves_the_reduced_model():
    from depthlab.studies.separation.claims import symmetrisation_claims

    ok = symmetrisation_claims(curves_table([0.2, 0.25, 0.15], [1.0, 0.9, 0.8], [1.0, 0.92, 0.85]), 2.0, 0.1)
    assert [v.holds for v in ok] == [True, True]
    grows = symmetrisation_claims(curves_table([0.2, 0.3, 0.5], [1.0, 0.9, 0.8], [1.0, 0.92, 0.85]), 2.0, 0.1)
    assert [v.holds for v in grows] == [False, True]
    drifts = symmetrisation_claims(curves_table([0.2, 0.25, 0.15], [1.0, 0.9, 0.6], [1.0, 0.92, 0.85]), 2.0, 0.1)
    assert [v.holds for v in drifts] == [True, False]


def test_r4_a_deviation_that_starts_large_and_stays_large_does_not_stay_small():
    """The old checker compared the deviation's maximum only with its start: 0.45 -> 0.46 -> 0.44 (x1.02) 'held', which is
    what raw Eldan-Shamir inputs at d = 64 gave.  With the absolute bound (0.25 along the whole run) it does not hold."""
    from depthlab.studies.separation.claims import symmetrisation_claims

    large = curves_table([0.45, 0.46, 0.44], [1.0, 0.9, 0.8], [1.0, 0.92, 0.85])
    assert symmetrisation_claims(large, 2.0, 0.1)[0].holds is True  # the old criterion alone
    v = symmetrisation_claims(large, 2.0, 0.1, 0.25)[0]
    assert v.holds is False and "max 0.46" in v.evidence
    assert symmetrisation_claims(curves_table([0.2, 0.22, 0.15], [1.0, 0.9, 0.8], [1.0, 0.92, 0.85]), 2.0, 0.1, 0.25)[0].holds is True


def test_s2_without_a_bound_is_not_applicable_and_says_what_makes_it_apply():
    """Issue 53: S2's rows where w + 1 >= 2^L were counted inconclusive (7 of 11): they are not applicable."""
    from depthlab.claims import counts

    s2 = [v for v in sawtooth_claims(table([row(2, "shallow-w8", "shallow", 8, 0.001, 5)]), 1e-4) if v.claim == "S2"]
    assert [v.verdict for v in s2] == ["not applicable"] and "L >= 4 at this width" in s2[0].reason
    assert counts(s2) == (0, 0, 0, 1)


def test_r1_a_net_worse_than_the_constant_predictor_is_no_data_point_of_a_slope():
    """Issue 53: R1 took a depth-1 net at nMSE 105 as a point of its slope (here it alone makes depth 1 'grow faster')."""
    rows = []
    for d in (2, 4, 8, 16):
        for depth, slope in ((1, 0.01), (2, 0.05)):
            for seed in (0, 1):
                e = 0.1 + slope * np.log2(d) + 0.001 * seed
                if (depth, d) == (1, 16):
                    e = 105.0 + seed
                rows.append({"target": "relu", "dist": "shell", "budget": 1000, "depth": depth, "d": d, "seed": seed,
                             "test_nmse": e, "r0_density_ratio": 1.0, "diverged": False})
    v = radial_claims(pd.DataFrame(rows))[0]
    assert "left out, worse than the constant predictor (failed to train): depth 1 at d=16 (nMSE 106)" in v.evidence
    assert v.holds is False  # without the failed net, depth 1's error grows more slowly than depth 2's
    assert v.effect < 0 and v.stderr is not None


def test_r1_with_two_points_left_has_the_error_bar_its_seeds_give():
    """Issue 53: in the default run depth 1 at d = 64 left the fit, and the row read 'no error bar: one net, nothing to
    resample' though each point had 2 seeds.  Their spread now carries into the slope: clear seeds decide, noisy
    seeds leave the row inside its error bars."""
    def rows(noise):
        out = []
        for d in (4, 16, 64):
            for depth, slope in ((1, 0.5), (2, 0.05)):
                for seed in (0, 1):
                    e = 0.05 + slope * np.log2(d / 4) / 2 + noise * (2 * seed - 1)
                    if (depth, d) == (1, 64):
                        e = 1.5 + 0.01 * seed
                    out.append({"target": "relu", "dist": "eldan_shamir", "budget": 4000, "depth": depth, "d": d,
                                "seed": seed, "test_nmse": e, "r0_density_ratio": 1.0, "diverged": False})
        return pd.DataFrame(out)

    v = radial_claims(rows(0.001))[0]
    assert "depth 1 at d=64" in v.evidence and "no error bar" not in v.evidence
    assert v.holds is True and v.stderr is not None and v.z > 2
    v = radial_claims(rows(0.4))[0]  # seeds 0.8 apart at each point: a slope difference of 0.475 is inside the bars
    assert v.verdict == "inconclusive" and "inside the error bars" in v.reason


def test_r2_says_underfit_when_the_shallow_nets_learned_nothing():
    """Issue 53: at d = 64 the depth-1 nets had training nMSE 1.16 and test 1.24; the reason read 'overfit'."""
    from depthlab.studies.separation.claims import es16_claims

    v = es16_claims(es16_table([0.5, 0.8, 1.24], [0.2, 0.4, 0.6], train_one=[0.5, 0.8, 1.16]), 0.1)[0]
    assert v.verdict == "inconclusive" and "underfit" in v.reason and "overfit" not in v.reason


def test_r4_is_not_judged_at_step_0_a_one_check_spike_is_reported_and_an_untrained_reduced_model_is_no_reference():
    """Issue 53: (a) 0.2855 -> 0.045 -> 0.032 at m = 16 failed 'stays small' at step 0, where the deviation is the
    sampling error of m random neurons (0.37 at m = 16); (b) 0.246 -> 0.662 (one check) -> 0.046 failed 'does not
    compound'; (c) the alpha gap 'failed' where the reduced model's own nMSE was 0.806 against the learner's 0.0098."""
    from depthlab.studies.separation.claims import symmetrisation_claims

    def curves(path, m, red_nmse=0.01):
        return pd.DataFrame([{"dist": "shell", "d": 4, "width": m, "width_rule": "4d", "seed": 0, "step": 25 * i, "alpha": 1.0,
                              "reduced_alpha": 1.5, "deviation": dev, "test_nmse": 0.01, "reduced_test_nmse": red_nmse}
                             for i, dev in enumerate(path)])

    assert symmetrisation_claims(curves([0.2855, 0.045, 0.032], 16), 2.0, 0.1, 0.25)[0].holds is True
    spike = symmetrisation_claims(curves([0.246, 0.662, 0.05, 0.046], 64), 2.0, 0.1, 0.25)[0]
    assert spike.holds is True and "a one-check spike" in spike.evidence and "max 0.662" in spike.evidence
    lasting = symmetrisation_claims(curves([0.246, 0.662, 0.6, 0.046], 64), 2.0, 0.1, 0.25)[0]
    assert lasting.holds is False  # a rise that lasts two checks compounds (and is not small)
    gap = symmetrisation_claims(curves([0.2, 0.1, 0.05], 16, red_nmse=0.806), 2.0, 0.1, 0.25, small=0.2)[1]
    assert gap.verdict == "inconclusive" and "the reduced model did not train" in gap.reason
    assert symmetrisation_claims(curves([0.2, 0.1, 0.05], 16), 2.0, 0.1, 0.25, small=0.2)[1].holds is False
