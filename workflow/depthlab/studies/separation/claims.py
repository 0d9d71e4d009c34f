"""Depth-separation claims (SPEC §4), checked against the sawtooth and radial tables.

Criteria (fixed here, printed in the report):

* S1, per L: the hand-built depth-L width-2 net equals Delta^L to 1e-12 on a 2^16-point grid,
  and its exact piece count is 2^L.
* S2, per L and shallow width w: every trained one-hidden-layer net (all rates and seeds) has
  test MSE at or above the piece-count bound (1/12)(1 - w / 2^(L-1)); judged only where the
  bound is positive (w + 1 < 2^L).
* S3, per L and deep width: trained from random init, the deep narrow net "finds" Delta^L when
  its best model (by training loss) reaches test MSE <= ``found_mse`` (0.1 % of the constant
  predictor's 1/12).  The hand-built-plus-noise runs are reported beside it.
* R1, per (target, distribution, budget): the error of depth-1 nets (the literature's 2-layer)
  grows with d faster than that of depth-2 nets (3-layer): the slope of the mean normalised
  test MSE against log2 d is larger at depth 1 than at depth 2.  Reported whichever way it goes.
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
        if bound <= 0:
            out.append(Verdict("S2", "one hidden layer of width w < 2^L - 1 stays above the piece-count bound", "sawtooth_error",
                               f"L = {L}, width {w}", None, f"bound is 0: the crossing-count bound (1/12)(1 - w/2^(L-1)) is positive only for w < 2^(L-1) = {2 ** (L - 1)}"))
            continue
        out.append(Verdict("S2", "one hidden layer of width w < 2^L - 1 stays above the piece-count bound", "sawtooth_error",
                           f"L = {L}, width {w}", bool((ok.test_mse >= bound * (1 - 1e-9)).all()),
                           f"bound (1/12)(1 - {w}/2^{L - 1}) = {bound:.4g}; trained MSE min {ok.test_mse.min():.4g}, "
                           f"best-by-training-loss {g[g.best].test_mse.iloc[0]:.4g}; pieces found up to {ok.pieces.max()} (w + 1 = {w + 1})"))
    for (L, arch), g in table[table.kind == "deep"].groupby(["level", "arch"]):
        b = g[g.best].iloc[0]
        con_g = table[(table.kind == "construct") & (table.level == L) & table.best]
        extra = (f"; hand-built + noise, trained: MSE {con_g.test_mse.iloc[0]:.3g}, {con_g.pieces.iloc[0]} pieces"
                 if len(con_g) else "")
        out.append(Verdict("S3", "trained from random init, a deep narrow net finds Delta^L", "sawtooth_error",
                           f"L = {L}, {arch}", bool(b.test_mse <= found),
                           f"best (by training loss) test MSE {b.test_mse:.3g} (need <= {found:.3g}), {b.pieces} pieces of 2^L = {2**L}, "
                           f"lr {b.lr:g}; all seeds/rates: MSE {g.test_mse.min():.3g} ... {g.test_mse.max():.3g}{extra}"))
    return out


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
