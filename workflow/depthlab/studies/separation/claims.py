"""Depth-separation claims (SPEC §4), checked against the sawtooth and radial tables.

Criteria (fixed here, printed in the report):

* S1, per L: the hand-built depth-L width-2 net equals Delta^L to 1e-12 on a 2^16-point grid,
  and its exact piece count is 2^L.
* S2, per L and shallow width w: every trained one-hidden-layer net (all rates and seeds) has test MSE at or above
  the lower bound for functions of w + 1 pieces, the larger of the crossing-count bound (1/12)(1 - w/2^(L-1)) and
  the window bound (1 - (w + 1)/2^L)/48 (depthlab/studies/separation/telgarsky.py); judged where the bound is
  positive, i.e. where w + 1 < 2^L.
* S3 is a question, not a claim (SPEC §4): trained from random init, does a deep narrow net find Delta^L?  A net
  "finds" it when its best model (by training loss) reaches test MSE <= ``found_mse`` (0.1 % of the constant
  predictor's 1/12).  The report answers per deep width: found at L = ..., not found from L = ...; and the same
  for the hand-built net plus noise, then trained.
* R1, per (target, distribution, budget): the error of depth-1 nets (the literature's 2-layer) grows with d faster
  than that of depth-2 nets (3-layer): the slope of the mean normalised test MSE against log2 d is larger at depth 1
  than at depth 2.  Reported whichever way it goes, with the radial density at r0 relative to its maximum per d (the
  Eldan-Shamir law oscillates: r0 sits on the lobe maximum nearest its median, SPEC §4).
* R2, per budget, on the ES16 shell target (balanced random signs: ceil(N/2) of one, floor(N/2) of the other): the
  depth-1 nets have reached the target's variance at the largest d from below and without overfitting: their mean test
  nMSE (test MSE / Var(g)) lies in [1 - ``near_variance``, 1 + ``near_variance``] and their mean training nMSE is at
  least 1 - ``near_variance``; while the depth-2 nets' mean test nMSE stays below 1 - ``near_variance`` at every d.
  Depth-1 nets above the variance on the test set, or fitting the training set while at the variance on the test set,
  overfit: inconclusive (the old checker counted a test nMSE of 1.7 as "reached the variance").
* R3, per input law and poly(d) width rule (m = k d): the learner's final test nMSE (mean over seeds) is at most
  ``learner_small`` at every d.  And per input law: the 1-hidden-layer nets with the parameter count of the learner at
  its first poly(d) width fail where it does not: at the largest d their mean nMSE exceeds ``learner_small`` while the
  learner's is at most ``learner_small``.  The
  fixed-width contrast and the reduced model's errors are printed beside.
* R4, per input law and width rule, judged where it is made, in the gradient-flow regime (SPEC §4; as A3): at the
  learner's small flow rates whose training curve in flow time agrees with the next smaller one's within
  ``flow_tolerance``, on the seeds that trained (final test nMSE below 1; the others are named, not evidence):
  (a) the deviation |F/alpha - |x|| / ||x|| stays small (its lasting values after the first check at most
  ``deviation_max`` or its init sampling error sqrt(pi - 1) / sqrt(m), whichever is larger, decided with the path's
  check-to-check noise) and does not compound (its end above its start by at most Z x that noise; no rise beyond
  ``deviation_growth`` x its start lasting more than one check); (b) at the end of training alpha_T is within
  ``alpha_gap`` of the reduced model's (relative to max(|alpha_T^reduced|, 0.1 alpha_0)).  The best-training rate's
  deviation is printed beside, not judged.  The fixed width that does not grow with d is the contrast: its rows are
  extensions, listed apart.
* Inconclusive (depthlab.claims.judge), with the reason, when a net or learner run a verdict rests on did not converge
  (its training loss still falling when its budget ran out), diverged at its chosen rate (the means leave it out, so
  the row would rest on fewer nets than it trained), or its rate sits at an edge of its grid that could not grow.
  S2 rests on a bound that holds for every function of w + 1 pieces, trained or not, so it never rests on training: how
  the nets stopped is printed beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.claims import Z, Test, Verdict, exceeds, judge, not_applicable
from depthlab.problems import Problem
from depthlab.core import stats

if TYPE_CHECKING:
    from depthlab import suggest
    from .specs import ClaimsSpec

from .claim_tools import _curve, _fmt, _unsound
from .claim_learner import learner_claims, symmetrisation_claims


NOTES = [
    "Criteria: see the docstring of `depthlab/studies/separation/claims.py`.",
    "Depth counts hidden layers: depth 1 vs depth 2 are the literature's 2- vs 3-layer nets.",
]


def sawtooth_claims(table: pd.DataFrame, found: float) -> list[Verdict]:
    out = []
    con = table[table.arch == "construction"].sort_values("level")
    for r in con.itertuples():
        exact = bool(r.max_abs_error <= 1e-12 and r.pieces == 2**r.level)  # an exact construction: no error bar
        out.append(
            judge(
                "S1",
                "a depth-L width-2 ReLU net equals Delta^L exactly",
                "sawtooth_error",
                f"L = {r.level}",
                Test(exact, float(r.max_abs_error), 0.0, 1e-12, None),
                f"max |net - Delta^L| = {r.max_abs_error:.3g}; pieces {r.pieces} (2^L = {2**r.level})",
            )
        )
    for (L, _arch), g in table[table.kind == "shallow"].groupby(["level", "arch"]):
        w, bound = int(g.width.iloc[0]), float(g.mse_bound.iloc[0])
        ok = g[~g.diverged]
        statement = (
            "one hidden layer of width w stays above the lower bound for w + 1 pieces (judged where w + 1 < 2^L)"
        )
        if w + 1 >= 2**L:
            need = int(np.floor(np.log2(w + 1))) + 1  # the smallest L with 2^L > w + 1
            out.append(
                not_applicable(
                    "S2",
                    statement,
                    "sawtooth_error",
                    f"L = {L}, width {w}",
                    f"w + 1 = {w + 1}, 2^L = {2**L}",
                    f"w + 1 = {w + 1} >= 2^L = {2**L}: a one-hidden-layer net of this width can have as many "
                    f"pieces as Delta^L, so no piece-count bound applies; a width below {2**L - 1} at L = {L}, "
                    f"or L >= {need} at this width, makes it apply",
                )
            )
            continue
        stopped = (
            ", ".join(f"{n} {r}" for r, n in g.stop_reason.value_counts().sort_index().items())
            if "stop_reason" in g
            else ""
        )
        # the bound holds for every function of w + 1 pieces and the test MSE is a 2^16-point quadrature of the L2 error:
        # an exact comparison (no sampling error to carry)
        t = exceeds(stats.Estimate(float(ok.test_mse.min()), 0.0), bound * (1 - 1e-9), what="the smallest trained MSE")
        out.append(
            judge(
                "S2",
                statement,
                "sawtooth_error",
                f"L = {L}, width {w}",
                Test(t.holds is not False, *[getattr(t, f) for f in ("effect", "stderr", "threshold", "z")]),
                f"bound max(crossing {float(g.crossing_bound.iloc[0]):.4g}, window {float(g.window_bound.iloc[0]):.4g}) = "
                f"{bound:.4g}; trained MSE min {ok.test_mse.min():.4g}, best-by-training-loss "
                f"{g[g.best].test_mse.iloc[0]:.4g}; pieces found up to {ok.pieces.max()} (w + 1 = {w + 1})"
                + (f"; nets stopped: {stopped}" if stopped else ""),
            )
        )
    deep = table[table.kind == "deep"]
    for arch, g in deep.groupby("arch"):
        out.append(
            _found(
                "question: trained from random init, does a deep narrow net find Delta^L?",
                f"depth L, {arch}",
                g[g.best],
                found,
            )
        )
    con = table[(table.kind == "construct") & table.best]
    if len(con):
        out.append(
            _found(
                "question: started from the hand-built net plus noise, does training keep Delta^L?",
                "construct-w2",
                con,
                found,
            )
        )
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
    detail = "; ".join(
        f"L={int(r.level)}: MSE {r.test_mse:.3g}, {int(r.pieces)} of {2 ** int(r.level)} pieces"
        + (
            f" (lr {r.lr:g}"
            + (f", {r.stop_reason}" if hasattr(r, "stop_reason") else "")
            + (f"; the best rate is the {r.lr_edge} end of the grid" if getattr(r, "lr_edge", "") else "")
            + ")"
            if np.isfinite(r.lr)
            else ""
        )
        for r in best.itertuples()
    )
    return Verdict(
        "S3",
        question,
        "sawtooth_error",
        subject,
        None,
        f"{answer}. {detail}. Found: test MSE <= {threshold:.3g} (0.1 % of the constant's 1/12).",
        kind="question",
    )


def _failed(h: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """(rows of ``h`` whose (d) mean nMSE is not worse than the constant predictor, names of those that are).  A net
    whose test nMSE exceeds 1 (the constant predictor's) by more than Z SE over seeds (or at all, for one seed) failed to
    train and is never a data point of a slope (a depth-1 net at nMSE 105 was one)."""
    bad = []
    for d, g in h.groupby("d"):
        e = stats.over_seeds(g.test_nmse.values)
        if np.isfinite(e.value) and e.value - 1 > Z * (e.se if np.isfinite(e.se) else 0.0):
            bad.append(d)
    names = [f"depth {int(h.depth.iloc[0])} at d={int(d)} (nMSE {h[h.d == d].test_nmse.mean():.3g})" for d in bad]
    return h[~h.d.isin(bad)], names


def radial_claims(table: pd.DataFrame) -> list[Verdict]:
    """R1: slope of the mean nMSE against log2 d per depth (least squares; its SE the larger of the residuals' and the one
    the points' seed spreads carry, the latter alone for two points: ``stats.slope``), depth 1's larger
    than depth 2's by Z SE of the difference; nets worse than the constant predictor leave the fit, named."""
    out = []
    for (t, q, P), g in table.groupby(["target", "dist", "budget"]):
        growth, failed = {}, []
        for L, h in g.groupby("depth"):
            kept, bad = _failed(h[~h.diverged] if "diverged" in h else h)
            failed += bad
            curve = kept.groupby("d").test_nmse.mean().sort_index()
            se = kept.groupby("d").test_nmse.agg(lambda v: stats.over_seeds(v.values).se).reindex(curve.index)
            growth[L] = (
                stats.slope(np.log2(curve.index.values.astype(float)), curve.values, point_se=se.values),
                curve,
            )
        if 1 not in growth or 2 not in growth:
            continue
        s1, s2 = growth[1][0], growth[2][0]
        ev = "; ".join(
            f"depth {L}: slope {s}/doubling of d, nMSE " + ", ".join(f"d={int(d)}: {v:.3g}" for d, v in c.items())
            for L, (s, c) in sorted(growth.items())
        )
        ratio = g.groupby("d").r0_density_ratio.first()
        ev += "; density at r0 / its maximum: " + ", ".join(f"d={int(d)}: {v:.2f}" for d, v in ratio.items())
        if failed:
            ev += "; left out, worse than the constant predictor (failed to train): " + ", ".join(failed)
        test = exceeds(stats.difference(s1, s2), 0.0, what="slope(depth 1) - slope(depth 2)")
        ev += f"; slope difference {test.text()}"
        out.append(
            judge(
                "R1",
                "depth-1 (2-layer) error grows with d faster than depth-2 (3-layer)",
                "radial_error",
                f"{t}, {q}, P = {P}",
                test if np.isfinite(s1.value) and np.isfinite(s2.value) else None,
                ev,
                _unsound(g[g.depth.isin([1, 2])]),
                why_none="a slope could not be fitted",
            )
        )
    return out


def es16_claims(table: pd.DataFrame, near: float) -> list[Verdict]:
    out = []
    for P, g in table.groupby("budget"):
        if not {1, 2} <= set(g.depth):
            continue
        one, two = _curve(g[g.depth == 1]), _curve(g[g.depth == 2])
        one_train = _curve(g[g.depth == 1], "train_nmse") if "train_nmse" in g else pd.Series(dtype=float)
        shells = g.groupby("d").shells.first()
        ev = (
            f"test nMSE depth 1: {_fmt(one)}; depth 2: {_fmt(two)}"
            + (f"; training nMSE depth 1: {_fmt(one_train)}" if len(one_train) else "")
            + "; shells N: "
            + ", ".join(f"d={d}: {n}" for d, n in shells.items())
            + f"; judged at the largest d: depth 1 test nMSE in [{1 - near:g}, {1 + near:g}] and training nMSE >= {1 - near:g}; "
            f"depth 2 test nMSE < {1 - near:g} at every d"
        )
        problems = _unsound(g)
        ok = None
        why = "no depth-1 or depth-2 net has an error"
        if len(one) and len(two):
            test, train = float(one.iloc[-1]), float(one_train.iloc[-1]) if len(one_train) else np.nan
            two_ok = bool((two < 1 - near).all() and len(two) == g.d.nunique())
            if test < 1 - near:
                ok = False  # the 1-hidden-layer nets learned the target at the largest d
            else:
                # at or above the variance; holds with the depth-2 nets below it, unless the depth-1 nets did something else
                ok = two_ok
                what = _fit(test, train, near)
                if what:
                    problems.append(
                        Problem(
                            f"the depth-1 nets {what} at d = {int(one.index[-1])} (test nMSE {test:.3g}, training nMSE "
                            f"{train:.3g}) ({_FIT[what]}): not the approach to the variance from below that the claim "
                            "describes",
                            *(["underfit"] if what == "underfit" else []),
                        )
                    )
        out.append(
            judge(
                "R2",
                "ES16 target: the 1-hidden-layer error reaches the target's variance as d grows (from below, "
                "without overfitting) while the 2-hidden-layer error stays below it",
                "es16_error",
                f"P = {P}",
                Test(ok, float(one.iloc[-1]), float("nan"), 1 - near, None) if ok is not None and len(one) else ok,
                ev,
                problems,
                why_none=why,
            )
        )
    return out


_FIT = {
    "overfit": "training low, test high",
    "underfit": "training and test both above the variance: worse than the constant predictor on their own training "
    "data, they learned nothing",
    "neither fit nor learned": "test above the variance, training at it",
}


def _fit(test: float, train: float, near: float) -> str:
    """What a net at or above the variance on the test set did: '' (reached the variance: train and test within ``near``
    of 1), 'overfit' (training low, test high), 'underfit' (train and test both above the variance: worse than the
    constant predictor on the data it was trained on, so it learned nothing), or 'neither' (test above, training at the
    variance)."""
    if np.isfinite(train) and train < 1 - near:
        return "overfit"
    if test <= 1 + near:
        return ""
    if np.isfinite(train) and train > 1 + near:
        return "underfit"
    return "neither fit nor learned"


def check(spec: "ClaimsSpec", tables: dict[str, pd.DataFrame]) -> tuple[list[Verdict], list[str]]:
    verdicts = []
    if "sawtooth_error" in tables:
        verdicts += sawtooth_claims(tables["sawtooth_error"], spec.found_mse)
    if "radial_error" in tables:
        verdicts += radial_claims(tables["radial_error"])
    if "es16_error" in tables:
        verdicts += es16_claims(tables["es16_error"], spec.near_variance)
    if "learner_error" in tables:
        verdicts += learner_claims(tables["learner_error"], spec.learner_small)
    if "learner_alpha" in tables:
        verdicts += symmetrisation_claims(
            tables["learner_alpha"],
            spec.deviation_growth,
            spec.alpha_gap,
            spec.deviation_max,
            tables.get("learner_error"),
            spec.learner_small,
            spec.flow_tolerance,
        )
    return verdicts, [spec.scale_note, *NOTES]


def to_decide(v: Verdict, cfg: dict) -> "suggest.Suggestion | None":
    """What would decide an inconclusive row (depthlab.decide).  R4 outside the gradient-flow regime: a flow rate a
    quarter of the smallest, with the steps that keep its flow time (x 2); a reduced model that did not train: 4 x the
    flow time.  R2's depth-1 nets that underfit at d = 64: nets that train there (paper scale).  Otherwise more seeds,
    a longer budget or a wider rate grid of the row's experiment."""
    from depthlab import suggest

    root = "studies.separation"
    lr = f"{root}.radial.learner"
    if v.claim == "R4":
        lrs, steps = list(suggest.get(cfg, f"{lr}.flow_lrs")), suggest.get(cfg, f"{lr}.steps")
        parts, factor = [], 1
        if "flow_rate" in v.problems:
            new = min(lrs) / 4
            parts.append(suggest.Suggestion(f"a flow rate {new:g}", [(f"{lr}.flow_lrs", sorted([new, *lrs]))]))
            factor *= 2
        if "not_trained" in v.problems:
            factor *= 4
        if factor > 1:
            parts.append(suggest.Suggestion(f"learner steps {steps * factor}", [(f"{lr}.steps", steps * factor)]))
        return suggest.combine(
            *parts,
            suggest.generic(
                v,
                cfg,
                seeds=lambda v: (f"{lr}.seeds", "the learner"),
                budget=None if factor > 1 else (lambda v: (f"{lr}.steps", "learner steps", 2.0)),
                grow=lambda v: (f"{lr}.lr_growth.rounds", "learner lr_growth.rounds"),
            ),
        )
    if v.claim == "R2" and "underfit" in v.problems:
        return suggest.paper("depth-1 nets that train at d = 64: a larger budget P and N, config/paper.yaml")
    if v.figure == "sawtooth_error":
        sec = f"{root}.sawtooth"
        return suggest.generic(
            v,
            cfg,
            seeds=lambda v: (f"{sec}.seeds", "the sawtooth"),
            budget=lambda v: (f"{sec}.training.max_epochs", "sawtooth max_epochs", 2.0),
        )
    if v.figure in ("learner_error",):
        return suggest.generic(
            v,
            cfg,
            seeds=lambda v: (f"{lr}.seeds", "the learner"),
            budget=lambda v: (f"{lr}.steps", "learner steps", 2.0),
            grow=lambda v: (f"{lr}.lr_growth.rounds", "learner lr_growth.rounds"),
        )
    sec = f"{root}.radial"
    return suggest.generic(
        v,
        cfg,
        seeds=lambda v: (f"{sec}.seeds", "the radial nets"),
        budget=lambda v: (f"{sec}.training.max_epochs", "radial max_epochs", 2.0),
        grow=lambda v: (f"{sec}.search.grow_rounds", "radial search.grow_rounds"),
    )
