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
