"""Mori & Ueda's claim checkers on hand-made tables where each claim must hold and where it must fail."""

import numpy as np
import pandas as pd

from depthlab.studies.mori_ueda.claims import depth_claims


def table(target, k, locality, nn, ntk, seeds=(0.0,), diverged=None):
    """nn, ntk: {depth: error}; seeds: offsets added per seed (their spread is the seed spread)."""
    rows = []
    for L in nn:
        for i, off in enumerate(seeds):
            div = bool(diverged and (L, i) in diverged)
            rows.append({"target": target, "k": k, "locality": locality, "depth": L, "lr": 0.1, "seed": i,
                         "nn_test_error": np.nan if div else nn[L] + off, "ntk_test_error": ntk[L], "diverged": div})
    return pd.DataFrame(rows)


def verdicts(t, claim):
    return [v for v in depth_claims("figX", None, t) if v.claim == claim]


def test_claim_3_is_two_halves_and_non_monotonic_needs_more_than_the_seed_spread():
    up_down = {1: 0.10, 2: 0.30, 3: 0.20, 4: 0.25}
    t = table("1-local", 1, "local", up_down, {L: 0.2 for L in up_down}, seeds=(-0.01, 0.01))
    shallow, nonmono = verdicts(t, "3")[:2]
    assert shallow.holds and nonmono.holds and "L=2 is worse than L=3" in nonmono.evidence
    noisy = table("1-local", 1, "local", up_down, {L: 0.2 for L in up_down}, seeds=(-0.2, 0.2))
    assert verdicts(noisy, "3")[1].holds is False, "inside the seed spread: not judged non-monotonic"
    monotone = table("1-local", 1, "local", {1: 0.1, 2: 0.2, 3: 0.3}, {1: 0.1, 2: 0.1, 3: 0.1})
    assert verdicts(monotone, "3")[1].holds is False


def test_claim_4_is_a_trend_test_and_the_gap_at_the_best_depth_is_its_own_row():
    nn = {1: 0.10, 2: 0.08, 3: 0.06}
    # the kernel follows the net's trend but is far worse at its best depth: claim 4 fails, the aside holds
    follows = table("2-local", 2, "local", nn, {1: 0.50, 2: 0.40, 3: 0.30})
    assert verdicts(follows, "4")[0].holds is False and verdicts(follows, "4-aside")[0].holds is True
    # opposite trends: claim 4 holds
    assert verdicts(table("2-local", 2, "local", nn, {1: 0.3, 2: 0.4, 3: 0.5}), "4")[0].holds is True
    # a flat kernel where the net is not: claim 4 holds
    assert verdicts(table("2-local", 2, "local", nn, {1: 0.300, 2: 0.301, 3: 0.302}), "4")[0].holds is True


def test_diverged_seeds_are_counted_in_every_row_and_make_it_inconclusive():
    """The old checker averaged the seeds that survived and judged: 'holds' here, with one of L = 2's three nets lost to
    divergence (the rate trained sits beyond the edge of stability even after halving).  Now: inconclusive, naming it."""
    t = table("2-global", 2, "global", {1: 0.1, 2: 0.3}, {1: 0.2, 2: 0.2}, seeds=(0.0, 0.0, 0.0), diverged={(2, 1)})
    v = verdicts(t, "2")[0]
    assert v.holds is None and "1 of 3 seeds diverged at L=2" in v.evidence
    assert "1 of 6 nets diverged (L=2 seed 1 at lr 0.1)" in v.reason and "would hold" in v.reason
    assert verdicts(table("2-global", 2, "global", {1: 0.1, 2: 0.3}, {1: 0.2, 2: 0.2}, seeds=(0.0, 0.0, 0.0)), "2")[0].holds


def test_the_row_prints_the_rate_trained_and_the_cv_rate_it_was_halved_from():
    t = table("2-local", 2, "local", {1: 0.2, 2: 0.1}, {1: 0.5, 2: 0.5})
    t["cv_lr"], t["lr_halvings"] = t.lr, 0
    t.loc[t.depth == 2, ["lr", "cv_lr", "lr_halvings"]] = [0.5, 1.0, 1]
    v = verdicts(t, "1")[0]
    assert v.holds and "lr L=1: 0.1, L=2: 0.5 (CV 1, halved 1x: a seed diverged)" in v.evidence


def test_a_claim_resting_on_an_unconverged_net_or_a_flagged_rate_is_inconclusive_not_holds():
    """The old checker read the numbers only: claim 1 'held' here although the L = 3 nets were still improving when their
    budget ran out, and although L = 2's rate sat at the top of its search.  Now: inconclusive, naming both."""
    nn = {1: 0.20, 2: 0.10, 3: 0.08}
    t = table("2-local", 2, "local", nn, {L: 0.5 for L in nn})
    assert verdicts(t, "1")[0].holds is True  # sound nets: it holds on its merits
    t["converged"] = True
    t.loc[t.depth == 3, "converged"] = False
    v = verdicts(t, "1")[0]
    assert v.holds is None and v.verdict == "inconclusive" and "1 of 3 nets it rests on did not converge (still improving" in v.reason
    assert "L=3 seed 0" in v.reason and "on these numbers alone it would hold" in v.reason
    t["converged"] = True
    t["lr_flagged"] = t.depth == 2
    t["lr_edge"] = np.where(t.depth == 2, "upper", "")
    v = verdicts(t, "1")[0]
    assert v.holds is None and "the rate chosen for L=2 (upper edge) sits at the edge of its grid" in v.reason
    # every row of the target rests on the same nets: claims 4 and 4-aside too
    assert verdicts(t, "4")[0].holds is None and verdicts(t, "4-aside")[0].holds is None


def test_a_depth_comparison_inside_the_seed_spread_is_inconclusive():
    """Old: claim 2 'held' with L = 1 best by 0.01 while the seeds spread by 0.1 (only a note said so)."""
    t = table("2-global", 2, "global", {1: 0.30, 2: 0.31}, {1: 0.2, 2: 0.2}, seeds=(-0.1, 0.1))
    v = verdicts(t, "2")[0]
    assert v.holds is None and "inside the seed spread" in v.reason
    clear = table("2-global", 2, "global", {1: 0.30, 2: 0.60}, {1: 0.2, 2: 0.2}, seeds=(-0.01, 0.01))
    assert verdicts(clear, "2")[0].holds is True
    wrong = table("2-global", 2, "global", {1: 0.60, 2: 0.30}, {1: 0.2, 2: 0.2}, seeds=(-0.01, 0.01))
    assert verdicts(wrong, "2")[0].holds is False


def test_fig3_best_lr_at_the_top_of_a_sweep_where_every_rate_converged_is_inconclusive():
    from depthlab.studies.mori_ueda.claims import lr_claims

    def sweep(errors, converged):
        return pd.DataFrame([{"target": "3-local", "depth": 2, "lr": lr, "seed": 0, "nn_test_error": e, "converged": c,
                              "entk_test_error": 0.5, "ntk_test_error": 0.5} for lr, e, c in zip([0.01, 0.1, 1.0], errors, converged)])
    best_large = [v for v in lr_claims("fig3", sweep([0.5, 0.3, 0.2], [True, True, True])) if "large-lr" in v.statement][0]
    assert best_large.holds is None and "every rate tried converged" in best_large.reason  # the old checker: holds
    stops = [v for v in lr_claims("fig3", sweep([0.5, 0.2, np.nan], [True, True, False])) if "large-lr" in v.statement][0]
    assert stops.holds is True, "the largest converging rate is known (1.0 did not converge): inside the grid"
    small = [v for v in lr_claims("fig3", sweep([0.1, 0.3, 0.5], [True, True, False])) if "large-lr" in v.statement][0]
    assert small.holds is None and "lower end" in small.reason
