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

from depthlab.claims import Z, Test, Verdict, all_of, diverged, exceeds, flagged, judge, not_applicable, unconverged
from depthlab.core import stats

if TYPE_CHECKING:
    from depthlab import decide
    from .specs import ClaimsSpec

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


def _net(r) -> str:
    return ", ".join(f"{k} {getattr(r, k)}" for k in ("d", "depth", "width", "seed") if hasattr(r, k))


def _unsound(g: pd.DataFrame) -> list[str]:
    """Nets (or learner runs) of ``g`` (one row each, at its chosen rate) that did not converge or diverged, and chosen
    rates at a flagged edge of their grid."""
    return [
        unconverged(g, _net),
        diverged(g, _net, "left out of the means, so the row rests on fewer nets than it trained"),
        flagged(g, lambda r: ", ".join(f"{k} {getattr(r, k)}" for k in ("d", "depth", "width") if hasattr(r, k))),
    ]


def _curve(g: pd.DataFrame, col: str = "test_nmse") -> pd.Series:
    return g[~g.diverged].groupby("d")[col].mean().sort_index()


def _fmt(curve: pd.Series) -> str:
    return ", ".join(f"d={int(d)}: {v:.3g}" for d, v in curve.items())


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
                        f"the depth-1 nets {what} at d = {int(one.index[-1])} (test nMSE {test:.3g}, training nMSE "
                        f"{train:.3g}) ({_FIT[what]}): not the approach to the variance from below that the claim describes"
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


def learner_claims(table: pd.DataFrame, small: float) -> list[Verdict]:
    out = []
    for q, part in table.groupby("dist"):
        learner = part[part.model == "learner"]
        fixed = {int(w): _curve(g) for w, g in learner[~learner.width_rule.str.endswith("d")].groupby("width")}
        contrast = "; ".join(f"contrast, fixed m = {w}: {_fmt(c)}" for w, c in fixed.items())
        poly = [r for r in learner.width_rule.unique() if r.endswith("d")]
        for rule in sorted(poly, key=lambda r: int(r[:-1])):
            g = learner[learner.width_rule == rule]
            curve, red = _curve(g), _curve(part[(part.model == "reduced") & (part.width_rule == rule)])
            t = all_of(
                *[
                    exceeds(_over_seeds(g, d), small, below=True, what=f"the learner's nMSE at d={int(d)}")
                    for d in curve.index
                ]
            )
            out.append(
                judge(
                    "R3",
                    f"the 3-layer learner at poly(d) width reaches a small test error (nMSE <= {small:g}) at every d",
                    "learner_error",
                    f"{q}, m = {rule}",
                    t,
                    f"learner nMSE {_fmt_se(g)} (rates {_rates(g)}); reduced model {_fmt(red)}"
                    + (f"; {contrast}" if contrast else "")
                    + f"; deciding d: {t.text()}",
                    _unsound(g),
                )
            )
        nets = part[part.model == "1 hidden layer"]
        if len(nets) and poly:
            first = sorted(poly, key=lambda r: int(r[:-1]))[0]
            curve, mine = _curve(nets), _curve(learner[learner.width_rule == first])
            budget = ", ".join(f"d={int(d)}: {int(n)}" for d, n in nets.groupby("d").n_params.first().items())
            top = nets.d.max()
            rests = pd.concat([nets[nets.d == top], learner[(learner.width_rule == first) & (learner.d == top)]])
            out.append(
                judge(
                    "R3",
                    f"1-hidden-layer nets with the learner's parameter count fail where it does not (nMSE > {small:g} at "
                    "the largest d)",
                    "learner_error",
                    f"{q}, parameters of m = {first}",
                    all_of(
                        exceeds(_over_seeds(nets, top), small, what="the 1-hidden-layer nMSE at the largest d"),
                        exceeds(
                            _over_seeds(learner[learner.width_rule == first], top),
                            small,
                            below=True,
                            what="the learner's nMSE at the largest d",
                        ),
                    ),
                    f"1 hidden layer nMSE {_fmt_se(nets)} (parameters {budget}); learner m = {first}: {_fmt(mine)}",
                    _unsound(rests),
                )
            )
    return out


def _over_seeds(g: pd.DataFrame, d, col: str = "test_nmse") -> stats.Estimate:
    """The mean over the seeds (diverged ones left out) at one d, with its SE."""
    h = g[(g.d == d) & ~g.diverged] if "diverged" in g else g[g.d == d]
    return stats.over_seeds(h[col].values)


def _fmt_se(g: pd.DataFrame) -> str:
    return ", ".join(f"d={int(d)}: {_over_seeds(g, d)}" for d in sorted(g.d.unique()))


def _rates(g: pd.DataFrame) -> str:
    per = g.groupby("d").lr.first()
    return ", ".join(f"d={int(d)}: {v:g}" for d, v in per.items())


INIT_FACTOR = (
    1.0  # R4 "stays small": the deviation after the first check at most this many times its init sampling error
)
ALPHA_FLOOR = 0.1  # R4's alpha gap: relative to max(|alpha_T^reduced|, this x alpha at the start)


def _held(dev: np.ndarray) -> np.ndarray:
    """A deviation path's values that lasted: each check's value where the next check is at least as high (the min of
    consecutive pairs), and the last check's; a one-check spike does not last."""
    return np.append(np.minimum(dev[:-1], dev[1:]), dev[-1:]) if len(dev) > 1 else dev


def _mean_curve(g: pd.DataFrame, col: str) -> pd.Series:
    """The mean over seeds of ``col`` per step, steps every seed recorded."""
    per = g.pivot_table(index="step", columns="seed", values=col)
    return per.dropna().mean(axis=1)


def flow_rates(g: pd.DataFrame, tol: float) -> tuple[list[float], list[str]]:
    """(the flow rates of one (law, width, d) in the gradient-flow regime, what was compared).  Rate r (the larger of a
    consecutive pair r' < r) is in the regime when its mean training-nMSE curve in flow time (lr x step) lies within
    ``tol`` (relative) of r''s over the flow time both reached.  The two are compared at r's records (after step 0),
    where r''s curve is recorded r / r' times as densely in flow time and is interpolated; the other way round, a
    straight line between r's coarse records across the first fall (nMSE 480 -> 1 within one of r's checks, as the
    learner's first steps go) is no curve of either rate, and made every pair of the default run disagree by 4-167x.
    Then r' is in the regime too (the smaller rate of a pair that agrees, as A3 takes the smallest).  A rate whose
    pair disagrees, and the rates above it, are not."""
    rates = sorted(g.lr.unique())
    curves = {lr: _mean_curve(g[g.lr == lr], "train_nmse") for lr in rates}
    flow, notes = [], []
    for small, big in zip(rates[:-1], rates[1:]):
        cs, cb = curves[small], curves[big]
        ts, tb = cs.index.values * small, cb.index.values * big
        at = (tb > 0) & (tb <= ts.max())
        if not at.any() or len(ts) < 2:
            notes.append(f"{big:g} vs {small:g}: no common flow time")
            break
        ls = np.interp(tb[at], ts, cs.values)
        lb = cb.values[at]
        rel = float(np.max(np.abs(lb - ls) / np.abs(ls)))
        notes.append(f"{big:g} vs {small:g}: {rel:.3g} over flow time <= {tb[at].max():.4g}")
        if rel > tol:
            break
        flow += [r for r in (small, big) if r not in flow]
    return flow, notes


def _rise_test(end: float, start: float, noise: float) -> tuple[float, float]:
    """(rise, its tolerance's SE): the deviation's final value above its start, and the check-to-check noise of its last
    window that a rise must clear to count (a floor of 1e-6 x the start for a noiseless path)."""
    return end - start, max(noise, 1e-6 * abs(start))


def symmetrisation_claims(
    curves: pd.DataFrame,
    growth: float,
    gap: float,
    most: float = np.inf,
    runs: pd.DataFrame | None = None,
    small: float = np.inf,
    flow_tol: float = 0.05,
) -> list[Verdict]:
    """R4 from the learner curves, judged in the gradient-flow regime (SPEC §4): at the flow rates of each d that
    :func:`flow_rates` finds in the regime, on every seed that trained (final test nMSE below 1: a net at the target's
    variance is not evidence, named).

    (a) "stays small": after the first check, the deviation's lasting values (:func:`_held`) stay at most
    max(``most``, INIT_FACTOR sqrt(pi - 1) / sqrt(m)), the larger of the absolute floor and the init's sampling error of m
    random neurons (at step 0 the deviation *is* that error), decided with the path's check-to-check noise (the SD of
    successive differences after the first check, robust to a spike: ``stats.robust_noise``) as its SE.  "Does not compound": the final deviation is above
    its start by no more than Z times that noise (the rise, its noise and z in the row), and no rise above ``growth``
    times the start lasts beyond one check.  (b) alpha follows the reduced model: at the end of training
    |alpha_T - alpha_T^reduced| / max(|alpha_T^reduced|, ALPHA_FLOOR alpha_0) <= ``gap`` (the reduced model's alpha
    passes near 0 early, where a running relative gap is meaningless), decided with its last window's noise;
    inconclusive when the reduced model itself did not train (its final test nMSE above ``small``).  The best-training
    rate's numbers are printed beside, not judged (a one-check spike at a big rate is reported).  A fixed width that does
    not grow with d is the contrast, not the claim: its rows are listed apart (scope extension)."""
    out = []
    if "regime" not in curves:
        curves = curves.assign(regime="best", lr=np.nan)
    for (q, rule), part in curves.groupby(["dist", "width_rule"]):
        label = f"{q}, m = {rule}" if rule.endswith("d") else f"{q}, m = {rule} (fixed)"
        contrast = not rule.endswith("d")
        prefix = "contrast (a width that does not grow with d, not the claim): " if contrast else ""
        problems = (
            []
            if runs is None
            else _unsound(runs[(runs.model == "learner") & (runs.dist == q) & (runs.width_rule == rule)])
        )
        dev_rows, gap_rows, beside, dead, no_flow, untrained = [], [], [], [], [], []
        small_t, rise_t, last_t, gap_t = [], [], [], []
        for d, g in part.groupby("d"):
            m = int(g.width.iloc[0])
            init = np.sqrt(np.pi - 1) / np.sqrt(m)
            limit = max(most, INIT_FACTOR * init)
            best = g[g.regime == "best"]
            if len(best):
                bdev = best.groupby("step").deviation.mean()
                beside.append(
                    f"d={d}: at the best-training rate {best.lr.iloc[0]:g} start {bdev.iloc[0]:.3g}, max "
                    f"{bdev.iloc[1:].max() if len(bdev) > 1 else np.nan:.3g}, end {bdev.iloc[-1]:.3g}"
                )
            flow = g[g.regime == "flow"]
            rates, notes = flow_rates(flow, flow_tol) if len(flow) else ([], ["no flow rates recorded"])
            if not rates:
                no_flow.append(f"d={d} ({'; '.join(notes)})")
                continue
            for lr in rates:
                at = flow[flow.lr == lr]
                for sd, h in at.sort_values("step").groupby("seed"):
                    final = h.iloc[-1]
                    if not final.test_nmse < 1:
                        dead.append(f"d={d} lr {lr:g} seed {sd} (test nMSE {final.test_nmse:.3g})")
                        continue
                    dev = h.deviation.values
                    start, end, after = dev[0], dev[-1], dev[1:]
                    w = max(3, len(dev) // 4)
                    noise = stats.robust_noise(after)  # check to check, after the first check (robust to a spike)
                    noise = noise if np.isfinite(noise) else 0.0
                    held = _held(after) if len(after) else np.array([start])
                    lasting = float(held.max())
                    small_t.append(
                        exceeds(
                            stats.Estimate(lasting / limit, noise / limit if noise else 0.0),
                            1.0,
                            below=True,
                            what=f"the lasting deviation / its limit (d={d}, lr {lr:g}, seed {sd})",
                        )
                    )
                    rise, se = _rise_test(end, start, noise)
                    rise_t.append(
                        Test(
                            bool(rise <= Z * se),
                            rise,
                            se,
                            0.0,
                            -rise / se,
                            "",
                            f" (d={d}, lr {lr:g}, seed {sd}: end {end:.3g} vs start {start:.3g}, noise {se:.2g})",
                        )
                    )
                    lasted = bool(len(held) > 1 and (held[:-1] > growth * start).any())
                    last_t.append(Test(not lasted, float(held.max() / start), 0.0, growth, None))
                    dev_rows.append(
                        f"d={d} (m={m}) lr {lr:g} seed {sd}: start {start:.3g} (sqrt(pi-1)/sqrt(m) = {init:.3g}), "
                        f"lasting max {lasting:.3g} vs limit {limit:.3g}, end {end:.3g}"
                    )
                    a_T, r_T, a_0 = float(final.alpha), float(final.reduced_alpha), float(h.alpha.iloc[0])
                    denom = max(abs(r_T), ALPHA_FLOOR * abs(a_0))
                    gcurve = (h.alpha - h.reduced_alpha).abs().values / np.maximum(
                        h.reduced_alpha.abs().values, ALPHA_FLOOR * abs(a_0)
                    )
                    gnoise = stats.robust_noise(gcurve[-w:])
                    gap_t.append(
                        exceeds(
                            stats.Estimate(abs(a_T - r_T) / denom, gnoise if np.isfinite(gnoise) else 0.0),
                            gap,
                            below=True,
                            what=f"the final alpha gap (d={d}, lr {lr:g}, seed {sd})",
                        )
                    )
                    red = float(final.reduced_test_nmse)
                    if np.isfinite(red) and red > small:
                        untrained.append(f"d={d} lr {lr:g} seed {sd} (nMSE {red:.3g})")
                    gap_rows.append(
                        f"d={d} lr {lr:g} seed {sd}: final alpha {a_T:.3g} vs reduced {r_T:.3g}, gap {abs(a_T - r_T) / denom:.3g}"
                        + (f", reduced nMSE {red:.3g}" if np.isfinite(red) else "")
                    )
        basis = []
        if no_flow:
            basis.append(
                "no flow rate in the gradient-flow regime at "
                + ", ".join(no_flow)
                + f" (tolerance {flow_tol:g}; add a smaller flow rate)"
            )
        if dead:
            basis.append("left out, not trained (test nMSE >= 1, not evidence): " + ", ".join(dead))
        judged_any = bool(small_t)
        tail = ("; beside, not judged: " + "; ".join(beside)) if beside else ""
        stmt_a = (
            prefix + f"in the gradient-flow regime the deviation |F/alpha - |x|| / ||x|| stays small (after the first "
            f"check at most max({most:g}, {INIT_FACTOR:g} x its init sampling error)) and does not compound (ends at most "
            f"{Z:g} x its noise above its start; no rise beyond x{growth:g} its start lasting more than one check)"
        )
        stmt_b = (
            prefix
            + f"in the gradient-flow regime alpha_T of the finite net follows the reduced model's (final relative gap <= {gap:g})"
        )
        miss = "; ".join(basis) if basis else ""
        if judged_any:
            t_a = all_of(*small_t, *rise_t, *last_t)
            worst = max(small_t, key=lambda t: t.effect)
            ev_a = (
                "; ".join(dev_rows)
                + f"; worst lasting deviation / its limit {worst.text('.3g')}"
                + (f"; {miss}" if miss else "")
                + tail
            )
            v_a = judge("R4", stmt_a, "learner_alpha", label, t_a, ev_a, problems + ([miss] if no_flow else []))
            t_b = all_of(*gap_t)
            v_b = judge(
                "R4",
                stmt_b,
                "learner_alpha",
                label,
                t_b,
                "; ".join(gap_rows) + (f"; {miss}" if miss else ""),
                problems
                + ([miss] if no_flow else [])
                + (
                    [
                        f"the reduced model did not train ({', '.join(untrained)}, above the learner's threshold {small:g}): "
                        "a gap to it measures nothing"
                    ]
                    if untrained
                    else []
                ),
            )
        else:
            why = miss or "no learner curves"
            v_a = judge("R4", stmt_a, "learner_alpha", label, None, why + tail, problems, why_none=why)
            v_b = judge("R4", stmt_b, "learner_alpha", label, None, why, problems, why_none=why)
        for v in (v_a, v_b):
            v.scope = "extension" if contrast else "paper"
            out.append(v)
    return out


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


def to_decide(v: Verdict, cfg: dict) -> "decide.Suggestion | None":
    """What would decide an inconclusive row (depthlab.decide).  R4 outside the gradient-flow regime: a flow rate a
    quarter of the smallest, with the steps that keep its flow time (x 2); a reduced model that did not train: 4 x the
    flow time.  R2's depth-1 nets that underfit at d = 64: nets that train there (paper scale).  Otherwise more seeds,
    a longer budget or a wider rate grid of the row's experiment."""
    from depthlab import decide

    root = "studies.separation"
    lr = f"{root}.radial.learner"
    if v.claim == "R4":
        lrs, steps = list(decide.get(cfg, f"{lr}.flow_lrs")), decide.get(cfg, f"{lr}.steps")
        parts, factor = [], 1
        if "smaller flow rate" in v.reason:
            new = min(lrs) / 4
            parts.append(decide.Suggestion(f"a flow rate {new:g}", [(f"{lr}.flow_lrs", sorted([new, *lrs]))]))
            factor *= 2
        if "did not train" in v.reason:
            factor *= 4
        if factor > 1:
            parts.append(decide.Suggestion(f"learner steps {steps * factor}", [(f"{lr}.steps", steps * factor)]))
        return decide.combine(
            *parts,
            decide.generic(
                v,
                cfg,
                seeds=lambda v: (f"{lr}.seeds", "the learner"),
                budget=None if factor > 1 else (lambda v: (f"{lr}.steps", "learner steps", 2.0)),
                grow=lambda v: (f"{lr}.lr_growth.rounds", "learner lr_growth.rounds"),
            ),
        )
    if v.claim == "R2" and "underfit" in v.reason:
        return decide.paper("depth-1 nets that train at d = 64: a larger budget P and N, config/paper.yaml")
    if v.figure == "sawtooth_error":
        sec = f"{root}.sawtooth"
        return decide.generic(
            v,
            cfg,
            seeds=lambda v: (f"{sec}.seeds", "the sawtooth"),
            budget=lambda v: (f"{sec}.training.max_epochs", "sawtooth max_epochs", 2.0),
        )
    if v.figure in ("learner_error",):
        return decide.generic(
            v,
            cfg,
            seeds=lambda v: (f"{lr}.seeds", "the learner"),
            budget=lambda v: (f"{lr}.steps", "learner steps", 2.0),
            grow=lambda v: (f"{lr}.lr_growth.rounds", "learner lr_growth.rounds"),
        )
    sec = f"{root}.radial"
    return decide.generic(
        v,
        cfg,
        seeds=lambda v: (f"{sec}.seeds", "the radial nets"),
        budget=lambda v: (f"{sec}.training.max_epochs", "radial max_epochs", 2.0),
        grow=lambda v: (f"{sec}.search.grow_rounds", "radial search.grow_rounds"),
    )
