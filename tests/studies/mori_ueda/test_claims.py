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


def test_diverged_seeds_are_counted_in_every_row():
    t = table("2-global", 2, "global", {1: 0.1, 2: 0.3}, {1: 0.2, 2: 0.2}, seeds=(0.0, 0.0, 0.0), diverged={(2, 1)})
    v = verdicts(t, "2")[0]
    assert v.holds and "1 of 3 seeds diverged at L=2" in v.evidence
