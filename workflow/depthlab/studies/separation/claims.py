"""Depth-separation claims (SPEC §4), checked against the sawtooth and radial tables.

Criteria (fixed here, printed in the report):

* S1, per L: the hand-built depth-L width-2 net equals Delta^L to 1e-12 on a 2^16-point grid,
  and its exact piece count is 2^L.
* S2, per L and shallow width w: every trained one-hidden-layer net (all rates and seeds) has test MSE at or above
  the lower bound for functions of w + 1 pieces, the larger of the crossing-count bound (1/12)(1 - w/2^(L-1)) and
  the window bound (1 - (w + 1)/2^L)/48 (depthlab/studies/separation/sawtooth.py); judged where the bound is
  positive, i.e. where w + 1 < 2^L.
* S3 is a question, not a claim (SPEC §4): trained from random init, does a deep narrow net find Delta^L?  A net
  "finds" it when its best model (by training loss) reaches test MSE <= ``found_mse`` (0.1 % of the constant
  predictor's 1/12).  The report answers per deep width: found at L = ..., not found from L = ...; and the same
  for the hand-built net plus noise, then trained.
* R1, per (target, distribution, budget): the error of depth-1 nets (the literature's 2-layer) grows with d faster
  than that of depth-2 nets (3-layer): the slope of the mean normalised test MSE against log2 d is larger at depth 1
  than at depth 2.  Reported whichever way it goes, with the radial density at r0 relative to its maximum per d (the
  Eldan-Shamir law oscillates: r0 sits on the lobe maximum nearest its median, SPEC §4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.claims import Verdict

if TYPE_CHECKING:
    from .specs import ClaimsSpec

NOTES = ["Criteria: see the docstring of `depthlab/studies/separation/claims.py`.",
         "Depth counts hidden layers: depth 1 vs depth 2 are the literature's 2- vs 3-layer nets."]


def sawtooth_claims(table: pd.DataFrame, found: float) -> list[Verdict]:
    out = []
    con = table[table.arch == "construction"].sort_values("level")
    for r in con.itertuples():
        out.append(Verdict("S1", "a depth-L width-2 ReLU net equals Delta^L exactly", "sawtooth_error", f"L = {r.level}",
                           bool(r.max_abs_error <= 1e-12 and r.pieces == 2**r.level),
                           f"max |net - Delta^L| = {r.max_abs_error:.3g}; pieces {r.pieces} (2^L = {2**r.level})"))
    for (L, arch), g in table[table.kind == "shallow"].groupby(["level", "arch"]):
        w, bound = int(g.width.iloc[0]), float(g.mse_bound.iloc[0])
        ok = g[~g.diverged]
        statement = "one hidden layer of width w stays above the lower bound for w + 1 pieces (judged where w + 1 < 2^L)"
        if w + 1 >= 2**L:
            out.append(Verdict("S2", statement, "sawtooth_error", f"L = {L}, width {w}", None,
                               f"w + 1 = {w + 1} >= 2^L = {2**L}: a one-hidden-layer net of this width can have as many pieces as "
                               "Delta^L, so no piece-count bound applies"))
            continue
        out.append(Verdict("S2", statement, "sawtooth_error", f"L = {L}, width {w}", bool((ok.test_mse >= bound * (1 - 1e-9)).all()),
                           f"bound max(crossing {float(g.crossing_bound.iloc[0]):.4g}, window {float(g.window_bound.iloc[0]):.4g}) = "
                           f"{bound:.4g}; trained MSE min {ok.test_mse.min():.4g}, best-by-training-loss "
                           f"{g[g.best].test_mse.iloc[0]:.4g}; pieces found up to {ok.pieces.max()} (w + 1 = {w + 1})"))
    deep = table[table.kind == "deep"]
    for arch, g in deep.groupby("arch"):
        out.append(_found("question: trained from random init, does a deep narrow net find Delta^L?", f"depth L, {arch}",
                          g[g.best], found))
    con = table[(table.kind == "construct") & table.best]
    if len(con):
        out.append(_found("question: started from the hand-built net plus noise, does training keep Delta^L?", "construct-w2",
                          con, found))
    return out


def _found(question: str, subject: str, best: pd.DataFrame, threshold: float) -> Verdict:
    """S3's answer: the levels where the best-by-training-loss net reaches test MSE <= threshold, and where it does not."""
    best = best.sort_values("level")
    hit = best.test_mse <= threshold
    yes, no = best.level[hit].astype(int).tolist(), best.level[~hit].astype(int).tolist()
    if not no:
        answer = f"found at every L tried ({yes})"
    elif not yes:
        answer = f"not found at any L tried ({no})"
    elif max(yes) < min(no):
        answer = f"found at L = {yes}; not found from L = {min(no)} on"
    else:
        answer = f"found at L = {yes}; not found at L = {no}"
    detail = "; ".join(f"L={int(r.level)}: MSE {r.test_mse:.3g}, {int(r.pieces)} of {2 ** int(r.level)} pieces"
                       + (f" (lr {r.lr:g})" if np.isfinite(r.lr) else "") for r in best.itertuples())
    return Verdict("S3", question, "sawtooth_error", subject, None,
                   f"{answer}. {detail}. Found: test MSE <= {threshold:.3g} (0.1 % of the constant's 1/12).", kind="question")


def radial_claims(table: pd.DataFrame) -> list[Verdict]:
    out = []
    for (t, q, P), g in table.groupby(["target", "dist", "budget"]):
        growth = {}
        for L, h in g.groupby("depth"):
            curve = h.groupby("d").test_nmse.mean().sort_index()
            growth[L] = (float(np.polyfit(np.log2(curve.index.values), curve.values, 1)[0]) if len(curve) >= 2 else float("nan"), curve)
        if 1 not in growth or 2 not in growth:
            continue
        s1, s2 = growth[1][0], growth[2][0]
        ev = "; ".join(f"depth {L}: slope {s:+.4f}/doubling of d, nMSE " + ", ".join(f"d={int(d)}: {v:.3g}" for d, v in c.items())
                       for L, (s, c) in sorted(growth.items()))
        ratio = g.groupby("d").r0_density_ratio.first()
        ev += "; density at r0 / its maximum: " + ", ".join(f"d={int(d)}: {v:.2f}" for d, v in ratio.items())
        n_div = int(g.diverged.sum())
        if n_div:
            ev += f"; {n_div} of {len(g)} nets diverged (left out of the means)"
        out.append(Verdict("R1", "depth-1 (2-layer) error grows with d faster than depth-2 (3-layer)", "radial_error",
                           f"{t}, {q}, P = {P}", bool(s1 > s2) if np.isfinite(s1) and np.isfinite(s2) else None, ev))
    return out


def check(spec: "ClaimsSpec", tables: dict[str, pd.DataFrame]) -> tuple[list[Verdict], list[str]]:
    verdicts = []
    if "sawtooth_error" in tables:
        verdicts += sawtooth_claims(tables["sawtooth_error"], spec.found_mse)
    if "radial_error" in tables:
        verdicts += radial_claims(tables["radial_error"])
    return verdicts, [spec.scale_note, *NOTES]
