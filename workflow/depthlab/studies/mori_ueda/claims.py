"""Mori & Ueda's claims (SPEC §1), checked against the figure tables, each where the paper makes it.

Criteria (fixed here, printed in the report so a reader can disagree with them):

* Trends over depth are decided by an exact permutation test of the slope of the error over log L across every seed
  (:func:`depthlab.claims.trend`, one-sided p <= 0.05): it uses every depth (a Spearman over {1, 2, 4} was the sign of
  err(4) - err(1) alone) and its error rate is what it says at 2-5 seeds.
* Claim 1 (k >= 2 local): "clearly higher" (err(L=1) / the best deeper err > 1.10, by Z SE of the ratio) and "tends to
  fall with L" (the slope over log L decided < 0).  A row made of parts does not hold only when a failing part is
  decided beyond its error bar (:func:`depthlab.claims.all_of`).
* Claim 2 (k >= 2 global): err(best deeper) - err(L = 1) > 0 by Z SE.
* Claim 3 (k = 1) is two verdicts (SPEC): "shallow best" (the smallest depth's error below the best deeper one by Z SE)
  and "non-monotonic" (some interior depth worse than a deeper one by Z SE; not applicable with fewer than two interior
  depths); plus "local and global alike": both curves' trends over log L decided with the same sign and the same best
  depth (does not hold when the trends are decided opposite, or the curves' difference has a decided trend).
* Claim 4, only where the paper makes it (Sec. 3.1; SPEC §1):
  - "the NTK does not follow the NN" on the k >= 2 local targets and Fig. 6's generalized ones: the NTK's slope over log
    L (one fit per depth, its SE over the test points) and the NN's are decided with opposite signs, or the NTK is flat
    (its errors within 5 % of each other) where the NN's trend is decided.  The evidence names the scale judged at and
    the paper's;
  - on 3-global at L = 1 only: the NTK predicts L = 1 worse than deeper nets while the NN's L = 1 is not worse
    (inconclusive when the L = 1 NTK is at the target's variance);
  - where the paper finds the NTK agreeing with the net, the row checks the agreement: k = 1 (the NTK also finds the
    shallow net best), 2-global and 3-global at L >= 2 (the NTK's and the NN's trends over log L decided with the same
    sign);
  - Figs 4 and 5 (label noise, classification) show no NTK: not applicable.
  "The NTK is worse than the NN at the NN's best depth" (by more than 10 %) is a different finding: its own row, id
  "4-aside", an *extension* (not counted), only beside a judged "does not follow" row.
* Claim 5 (Fig. 3), a claim about the lazy regime, judged at the smallest swept rate (never skipped as a grid edge) once
  the net is shown to be lazy there (its own tangent kernel moved by at most ``LAZY_KERNEL`` in training, and its error
  changes by no more than ``LAZY_LR`` to the next rate); outside that regime *inconclusive: scale*, naming the width.
  |NN - kernel| / kernel < 25 % against the analytic NTK (the paper's) and against the net's own tangent kernel at init
  (Theta_hat, an extension; per seed paired, SE over seeds).  "Best lr is large": the lr with the lowest error is above
  the geometric middle of the converged lr range.
* Claim 6 applies to a figure whose targets carry label noise, whose task is classification, or whose g is not the
  product: it repeats claims 1-2 there.
* Diverged seeds: a seed whose training diverged has no test error; means are over the seeds that did not diverge, and
  every row says how many seeds diverged at which depth (never silently dropped).  The figures mark those points.  A
  depth sweep's final nets are trained again at half the CV rate while some seed diverges (at most three times; the
  row prints the rate trained and the CV rate); a seed that still diverges makes the rows resting on it inconclusive
  (its depth's mean is over the other seeds only).
* Inconclusive (depthlab.claims.judge), with the reason, when a net a row rests on did not converge (its training
  loss still improving by more than the plateau tolerance when the epoch budget ran out), when the CV-chosen rate of a
  depth sits at an edge of the rates its search evaluated and could not grow past it, or when the comparison is inside
  its error bars.  Fig. 3's "best lr is large" is inconclusive when the best converged rate is the largest or smallest
  rate of the sweep (depthlab.core.edges: every larger rate tried must have failed to converge for the best to be
  inside the grid).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.claims import (
    Z,
    Test,
    Verdict,
    all_of,
    diverged,
    exceeds,
    flagged,
    judge,
    learned,
    not_applicable,
    trend,
    unconverged,
)
from depthlab.core import stats
from depthlab.core.edges import choose

if TYPE_CHECKING:
    from depthlab import decide
    from .specs import ClaimsSpec

CLEARLY = 1.10
NOTES = [
    "Criteria: see the docstring of `depthlab/studies/mori_ueda/claims.py` (10 % margins, trends as exact permutation "
    "tests of the slope over log L, claim 3 in two halves, claim 4 only where the paper makes it).",
    "Claim 4's scope (the paper, Sec. 3.1): the NTK does not follow the net on the k >= 2 local targets, Fig. 6's "
    "generalized targets and 3-global at L = 1; it follows the net for k = 1 (shallow best), 2-global and 3-global at "
    "L >= 2, and those rows check that agreement; Figs 4 and 5 show no NTK (not applicable). Claim 5 is judged only in "
    "the lazy regime it is about.",
]


FLAT = 0.05  # claim 4: a kernel whose errors over L stay within 5 % of each other is flat


def _curve(df: pd.DataFrame, col: str = "nn_test_error") -> pd.Series:
    """Mean over seeds per depth (diverged runs, NaN, excluded: :func:`_diverged` counts them)."""
    return df.groupby("depth")[col].mean().sort_index()


def _diverged(df: pd.DataFrame) -> str:
    """'; k of S seeds diverged at L=...' for every depth where any seed diverged ('' if none)."""
    if "diverged" not in df:
        return ""
    per = df.groupby("depth").diverged.agg(["sum", "size"])
    per = per[per["sum"] > 0]
    return "".join(
        f"; {int(r['sum'])} of {int(r['size'])} seeds diverged at L={int(L)} (left out of its mean)"
        for L, r in per.iterrows()
    )


def _flat(s: pd.Series) -> bool:
    return bool(s.max() <= (1 + FLAT) * s.min())


def _fmt(s: pd.Series) -> str:
    return ", ".join(f"L={int(L)}: {v:.4g}" for L, v in s.items())


def _soundness(part: pd.DataFrame) -> list[str]:
    """What a depth-sweep row rests on that could make it unsound: nets that did not converge, CV rates at a flagged edge,
    seeds that diverged (even at the halved rate)."""
    return [
        unconverged(part, lambda r: f"L={r.depth} seed {r.seed}"),
        flagged(part, lambda r: f"L={r.depth}"),
        diverged(
            part,
            lambda r: f"L={r.depth} seed {r.seed} at lr {r.lr:.3g}",
            "their depth's mean is over the other seeds only",
        ),
    ]


def _lrs(part: pd.DataFrame) -> str:
    """'L=1: 0.5, L=4: 0.54 (CV 1.08, halved once: a seed diverged)' for the rates the depths were trained at."""
    per = part.groupby("depth")[[c for c in ("lr", "cv_lr", "lr_halvings") if c in part]].first()
    return ", ".join(
        f"L={int(L)}: {r.lr:.3g}"
        + (
            f" (CV {r.cv_lr:.3g}, halved {int(r.lr_halvings)}x: a seed diverged)"
            if getattr(r, "lr_halvings", 0)
            else ""
        )
        for L, r in per.iterrows()
    )


def _estimates(df: pd.DataFrame, col: str = "nn_test_error") -> dict:
    """depth -> the mean over seeds with its SE (diverged seeds, NaN, left out)."""
    return {int(L): stats.over_seeds(g[col].values) for L, g in df.groupby("depth")}


def _kernel_estimates(df: pd.DataFrame, col: str = "ntk_test_error") -> dict:
    """depth -> a kernel's test error (one fit per depth: the same on every row) with its SE over the test points (the
    table's ``<col>_se``; a table without it: SE 0, the kernel taken as exact given the data)."""
    out = {}
    for L, g in df.groupby("depth"):
        se = float(g[col + "_se"].iloc[0]) if col + "_se" in g else 0.0
        out[int(L)] = stats.Estimate(float(g[col].iloc[0]), se if np.isfinite(se) else 0.0, 1, "test points")
    return out


def _samples(df: pd.DataFrame, depths, col: str = "nn_test_error") -> list:
    return [df[df.depth == L][col].values for L in depths]


def _chance(variant: str | None) -> tuple[float, str]:
    """The error of a predictor that learned nothing: the target's variance 1 (regression: every f has Var f = 1), or
    0.5 (classification)."""
    return (0.5, "chance (0.5)") if variant == "classification" else (1.0, "the target's variance (1)")


def _beats(est: dict, a: int, b: int, what: str, margin: float = 0.0) -> Test:
    """L = a has the lower error than L = b (by more than ``margin``), decided with the SE of the difference."""
    return exceeds(stats.difference(est[b], est[a]), margin, what=what)


NO_NTK = ("label noise", "classification")  # Figs 4 and 5: the paper shows networks only, no NTK


def depth_claims(figure: str, variant: str | None, table: pd.DataFrame) -> list[Verdict]:
    out: list[Verdict] = []
    tag = f"6 ({variant}) = " if variant else ""
    floor, floor_name = _chance(variant)
    for name, part in table.groupby("target", sort=True):
        start = len(out)  # this target's rows: out[start:], flagged at the end of the loop body
        k = int(part.k.iloc[0])
        loc = part.locality.iloc[0]
        nn = _curve(part)
        if len(nn) < 2 or nn.isna().all():
            out.append(
                judge(
                    "-",
                    "depth dependence (claims 1-4)",
                    figure,
                    name,
                    None,
                    f"NN {_fmt(nn)}",
                    why_none="fewer than two depths with a finite NN error",
                )
            )
            continue
        est, kest = _estimates(part), _kernel_estimates(part, "ntk_test_error")
        sound = _soundness(part)
        first = int(nn.index.min())
        deeper = nn.drop(index=first)
        best_deep = int(deeper.idxmin())
        lr_note = "; lr " + _lrs(part) + _diverged(part) + _stopped(part)
        shown = "NN " + ", ".join(f"L={L}: {e}" for L, e in est.items())
        alive, gone = learned(est, floor, what=floor_name)
        if k >= 2 and loc == "local":
            clearly = exceeds(stats.ratio(est[first], est[best_deep]), CLEARLY, what=f"err(L=1)/err(L={best_deep})")
            falls = (
                trend(np.log(alive), _samples(part, alive), falling=True, what="the NN's fall with log L")
                if len(alive) >= 2
                else Test(
                    None, float("nan"), float("nan"), 0.0, None, f"fewer than two depths learned anything ({gone})"
                )
            )
            t = all_of(clearly, falls)
            out.append(
                judge(
                    tag + "1",
                    "local: L = 1 clearly worse, error falls with L",
                    figure,
                    name,
                    t,
                    f"{shown}; err(L=1)/min deeper = {clearly.text('.3f')} (need > {CLEARLY}); slope of err over "
                    f"log L at L = {alive} = {falls.text('+.3g')} (need < 0)" + (f"; {gone}" if gone else "") + lr_note,
                    sound,
                )
            )
        if k >= 2 and loc == "global":
            t = _beats(est, first, best_deep, f"err(L={best_deep}) - err(L=1)")
            out.append(
                judge(
                    tag + "2",
                    "global: L = 1 best",
                    figure,
                    name,
                    t,
                    f"{shown}; err(L={best_deep}) - err(L=1) = {t.text()} (need > 0){lr_note}",
                    sound,
                )
            )
        if k == 1:
            t = _beats(est, first, best_deep, f"err(L={best_deep}) - err(L=1)")
            out.append(
                judge(
                    "3",
                    "k = 1: shallow best",
                    figure,
                    name,
                    t,
                    f"{shown}; err(L={best_deep}) - err(L=1) = {t.text()} (need > 0){lr_note}",
                    sound,
                )
            )
            out.append(_nonmonotonic(figure, name, est, lr_note, sound))
        out += _claim4_rows(figure, variant, name, k, loc, part, est, kest, floor, floor_name, sound)
        _flag_substituted(out, start, part)
    ones = table[table.k == 1]
    if not ones.empty and set(ones.locality) == {"local", "global"}:
        loc_c = _curve(ones[ones.locality == "local"])
        glo_c = _curve(ones[ones.locality == "global"])
        common = list(loc_c.index.intersection(glo_c.index))
        t = _alike(ones, common) if len(common) >= 2 else None
        out.append(
            judge(
                "3",
                "k = 1: local and global alike",
                figure,
                "1-local vs 1-global",
                t,
                f"best depths {int(loc_c.idxmin())} vs {int(glo_c.idxmin())}; "
                + (t.note.strip(" ()") if t is not None else "n/a"),
                _soundness(ones),
                why_none="fewer than two common depths",
            )
        )
    return out


def _claim4_rows(
    figure: str,
    variant: str | None,
    name: str,
    k: int,
    loc: str,
    part: pd.DataFrame,
    est: dict,
    kest: dict,
    floor: float,
    floor_name: str,
    sound: list[str],
) -> list[Verdict]:
    """Claim 4 where the paper makes it (SPEC §1, Sec. 3.1): "does not follow" on the k >= 2 local targets and Fig. 6's
    generalized ones (with the "worse at the best depth" aside beside it, an extension); on 3-global at L = 1 only (the
    NTK predicts L = 1 worse than deeper nets, the net does not); "the NTK follows the net" where the paper says it does
    (k = 1: shallow best; 2-global; 3-global at L >= 2); not applicable on Figs 4 and 5 (no NTK there)."""
    sub = _substituted(part)
    if variant in NO_NTK:
        return [
            not_applicable(
                "4",
                "the NTK and the NN at the CV-optimal lr",
                figure,
                name,
                "NTK " + ", ".join(f"L={L}: {e.value:.4g}" for L, e in kest.items()),
                f"the paper shows no NTK for its {variant} figure (Figs 4 and 5 show networks only): claim 4 "
                "is not made there; the NTK's errors are in the figure's table",
            )
        ]
    if variant == "generalized g" or (k >= 2 and loc == "local"):
        return [
            _claim4(figure, name, part, est, kest, floor, floor_name, sound, sub),
            _aside(figure, name, part, est, kest, floor, floor_name, sound),
        ]
    if k == 1:
        return [_ntk_shallow_best(figure, name, est, kest, floor, floor_name, sound, sub)]
    if k == 2:  # 2-global: the paper's exception
        return [_follows(figure, name, part, est, kest, sorted(est), floor, floor_name, sound, sub)]
    # k >= 3 global: L = 1 is where the paper finds the NTK wrong; at L >= 2 it finds it close
    return [
        _claim4_at_1(figure, name, est, kest, floor, floor_name, sound, sub),
        _aside(figure, name, part, est, kest, floor, floor_name, sound),
        _follows(figure, name, part, est, kest, [L for L in sorted(est) if L >= 2], floor, floor_name, sound, sub),
    ]


def _aside(
    figure: str, name: str, part: pd.DataFrame, est: dict, kest: dict, floor: float, floor_name: str, sound: list[str]
) -> Verdict:
    """The finding beside a judged claim-4 row, an extension: the NTK is worse than the NN at the NN's best depth."""
    nn = _curve(part)
    best = int(nn.idxmin())
    gap = exceeds(stats.ratio(kest[best], est[best]), CLEARLY, what=f"NTK/NN at L={best}")
    both = est[best].value >= floor - Z * _se0(est[best]) and kest[best].value >= floor - Z * _se0(kest[best])
    v = judge(
        "4-aside",
        "finding beside claim 4: the NTK is worse than the NN at the NN's best depth",
        figure,
        name,
        gap,
        f"NTK/NN at the NN's best depth L={best}: {gap.text('.3f')} (need > {CLEARLY})"
        + _substituted(part[part.depth == best]),
        sound + ([f"nothing learned: NN and NTK both at {floor_name} at L={best}"] if both else []),
    )
    v.scope = "extension"
    return v


def _kernel_trend(kest: dict, depths: list[int]) -> Test:
    """The NTK's trend over log L at ``depths``: one fit per depth, its SE over the test points (a z law on the slope;
    :func:`depthlab.core.stats.trend_test`), flat within ``FLAT`` counted as flat (holds None, effect the slope)."""
    vals = pd.Series({L: kest[L].value for L in depths}, dtype=float)
    rising = trend(
        np.log(depths),
        [[kest[L].value] for L in depths],
        falling=False,
        sem=[kest[L].se if kest[L].se > 0 else 1e-12 for L in depths],
        what="the NTK's trend in L",
    )
    if _flat(vals):
        return Test(
            None, rising.effect, rising.stderr, 0.0, rising.z, f"the NTK is flat within {FLAT:.0%}", rising.note
        )
    return rising


def _follows(
    figure: str,
    name: str,
    part: pd.DataFrame,
    est: dict,
    kest: dict,
    depths: list[int],
    floor: float,
    floor_name: str,
    sound: list[str],
    sub: str,
) -> Verdict:
    """Where the paper finds the NTK close to the net (2-global; 3-global at L >= 2): the row checks that the NTK follows
    the net's depth trend.  Holds when both trends over log L are decided with the same sign; does not hold when they are
    decided with opposite signs, or the NTK is flat (within ``FLAT``) where the net's trend is decided; otherwise
    inconclusive.  Depths where either learned nothing leave the test, named."""
    statement = "the NTK follows the NN's depth trend here, as the paper finds"
    sub_est = {L: est[L] for L in depths if L in est}
    sub_k = {L: kest[L] for L in depths if L in kest}
    alive, gone_nn = learned(sub_est, floor, what=f"{floor_name} (NN)")
    alive_k, gone_k = learned(sub_k, floor, what=f"{floor_name} (NTK)")
    use = [L for L in alive if L in alive_k]
    left = "; ".join(g for g in (gone_nn, gone_k) if g)
    shown = (
        f"at L = {depths}: NN "
        + ", ".join(f"L={L}: {est[L]}" for L in depths)
        + "; NTK "
        + ", ".join(f"L={L}: {kest[L]}" for L in depths)
        + (f"; {left}" if left else "")
        + "; NTK/NN "
        + ", ".join(f"L={L}: {kest[L].value / est[L].value:.3g}" for L in depths if est[L].value)
    )
    if len(use) < 2:
        return judge(
            "4",
            statement,
            figure,
            name,
            None,
            shown + sub,
            sound,
            why_none=f"fewer than two depths at which both the NN and the NTK learned something ({left})",
        )
    nn_t = trend(np.log(use), _samples(part, use), falling=False, what="the NN's trend in L")
    k_t = _kernel_trend(kest, use)
    nn_sign = None if nn_t.holds is None else (1 if nn_t.holds else -1)
    flat = k_t.holds is None and k_t.problem.startswith("the NTK is flat")
    k_sign = None if k_t.holds is None else (1 if k_t.holds else -1)
    ev = (
        f"{shown}; slope over log L: NN {nn_t.text('+.3g')}; NTK {k_t.text('+.3g')}" + (" (flat)" if flat else "") + sub
    )
    z = nn_t.z
    if flat:  # the NTK is flat: it follows a net whose trend is flat too, which a test can only fail to reject
        if nn_sign is None:
            return judge(
                "4",
                statement,
                figure,
                name,
                Test(
                    None,
                    nn_t.effect,
                    nn_t.stderr,
                    0.0,
                    z,
                    "the NTK is flat and the NN's trend is inside its error bars: agreement is not told from a "
                    "lack of power",
                ),
                ev,
                sound,
            )
        return judge(
            "4",
            statement,
            figure,
            name,
            Test(False, nn_t.effect, nn_t.stderr, 0.0, -abs(z) if z is not None else None),
            ev,
            sound,
        )
    if nn_sign is None or k_sign is None:
        why = "; ".join(t.problem for t in (nn_t, k_t) if t.holds is None)
        return judge("4", statement, figure, name, Test(None, nn_t.effect, nn_t.stderr, 0.0, z, why), ev, sound)
    agree = nn_sign == k_sign
    zz = (abs(z) if agree else -abs(z)) if z is not None else None
    return judge("4", statement, figure, name, Test(agree, nn_t.effect, nn_t.stderr, 0.0, zz), ev, sound)


def _ntk_shallow_best(
    figure: str, name: str, est: dict, kest: dict, floor: float, floor_name: str, sound: list[str], sub: str
) -> Verdict:
    """k = 1: the paper finds the NTK also predicts a shallow net is better (without the non-monotonicity): the NTK's
    error at the smallest depth is below every deeper one's, by Z SE of the difference (its SEs over the test points)."""
    depths = sorted(kest)
    first = depths[0]
    best_deep = min(depths[1:], key=lambda L: kest[L].value)
    t = exceeds(stats.difference(kest[best_deep], kest[first]), 0.0, what=f"NTK err(L={best_deep}) - err(L={first})")
    return judge(
        "4",
        "the NTK also finds the shallow net best (k = 1), as the paper finds",
        figure,
        name,
        t,
        "NTK " + ", ".join(f"L={L}: {kest[L]}" for L in depths) + f"; NTK err(L={best_deep}) - err(L={first}) = "
        f"{t.text()} (need > 0); NN " + ", ".join(f"L={L}: {e}" for L, e in est.items()) + sub,
        sound,
    )


def _claim4_at_1(
    figure: str, name: str, est: dict, kest: dict, floor: float, floor_name: str, sound: list[str], sub: str
) -> Verdict:
    """3-global (k >= 3 global), the paper: "the NTK predicts that a shallow network of L = 1 generalizes poorer than DNNs,
    which is not the case in neural networks".  Holds when the NTK at L = 1 is worse than its best deeper depth and the NN
    at L = 1 is not worse than its best deeper depth (both by Z SE).  An L = 1 NTK at the target's variance is the
    claim's own prediction (it generalizes poorer: at d = 20 with beta = 0.1 its degree-3 Gegenbauer coefficient is 4.7e-5
    of degree 1's, against 2.8e-3 at L = 2), not a failure to learn, so it counts; only a best deeper NTK at the variance
    too leaves nothing to compare (inconclusive)."""
    statement = "the NTK predicts L = 1 worse than deeper nets, which the NN is not (3-global, L = 1)"
    depths = sorted(kest)
    first = depths[0]
    k_deep = min(depths[1:], key=lambda L: kest[L].value)
    n_deep = min(depths[1:], key=lambda L: est[L].value)
    k_worse = exceeds(stats.difference(kest[first], kest[k_deep]), 0.0, what=f"NTK err(L={first}) - err(L={k_deep})")
    nn_not = exceeds(
        stats.difference(est[first], est[n_deep]), 0.0, below=True, what=f"NN err(L={first}) - err(L={n_deep})"
    )
    at_floor = kest[first].value >= floor - Z * _se0(kest[first])
    ev = (
        f"NTK err(L={first}) - err(L={k_deep}) = {k_worse.text()} (need > 0); NN err(L={first}) - err(L={n_deep}) = "
        f"{nn_not.text()} (need < 0); NTK "
        + ", ".join(f"L={L}: {kest[L]}" for L in depths)
        + (f" (the L = {first} NTK at {floor_name}: the poorer generalization the claim predicts)" if at_floor else "")
        + sub
    )
    deep_floor = kest[k_deep].value >= floor - Z * _se0(kest[k_deep])
    return judge(
        "4",
        statement,
        figure,
        name,
        all_of(k_worse, nn_not),
        ev,
        sound
        + (
            [
                f"every NTK depth is at {floor_name} (best deeper L = {k_deep}: {kest[k_deep]}): none learned, "
                "so none predicts better than another"
            ]
            if deep_floor
            else []
        ),
    )


def _alike(ones: pd.DataFrame, depths: list[int]) -> Test:
    """Claim 3's "k = 1: local and global alike": both curves' trends over log L (each an exact permutation test over its
    seeds, :func:`depthlab.claims.trend`) are decided with the same sign and the two curves have the same best depth.
    Does not hold when the trends are decided with opposite signs or their difference (local minus global, per seed pair
    a permutation test of the difference's trend: its slope over log L) is decided beyond its error bar; inconclusive
    otherwise.  Effect: the local curve's slope, its SE the regression's."""
    loc = ones[ones.locality == "local"]
    glo = ones[ones.locality == "global"]
    lx = np.log(depths)
    a = trend(lx, _samples(loc, depths), falling=False, what="the 1-local trend")
    b = trend(lx, _samples(glo, depths), falling=False, what="the 1-global trend")
    # the two curves' seeds are independent nets: pair them by seed (independent differences, one per pair)
    diff_samples = []
    for L in depths:
        a_, b_ = _samples(loc, [L])[0], _samples(glo, [L])[0]
        diff_samples.append(a_[: min(len(a_), len(b_))] - b_[: min(len(a_), len(b_))])
    d = trend(lx, diff_samples, falling=False, what="the difference of the two curves")
    best_same = int(_curve(loc).loc[depths].idxmin()) == int(_curve(glo).loc[depths].idxmin())
    note = (
        f" (slope over log L: 1-local {a.text('+.3g')}; 1-global {b.text('+.3g')}; difference {d.text('+.3g')}; "
        f"same best depth: {best_same})"
    )
    if a.holds is not None and b.holds is not None and a.holds != b.holds:
        return Test(False, a.effect, a.stderr, 0.0, a.z, "", note)
    if d.holds is not None and d.z is not None and abs(d.z) >= Z:
        return Test(False, d.effect, d.stderr, 0.0, -abs(d.z), "", note)
    if a.holds is not None and a.holds == b.holds and best_same:
        return Test(True, a.effect, a.stderr, 0.0, abs(a.z) if a.z is not None else None, "", note)
    why = [t.problem for t in (a, b) if t.holds is None] + ([] if best_same else ["the two curves' best depths differ"])
    return Test(None, a.effect, a.stderr, 0.0, a.z, "; ".join(why) or "undecided", note)


def _se0(e) -> float:
    return e.se if np.isfinite(e.se) else 0.0


def _flag_substituted(out: list[Verdict], start: int, part: pd.DataFrame) -> None:
    """Every row from ``out[start:]`` (one target's rows) records, in its ``substituted`` field, the
    depths whose nets trained at a rate other than their search's choice, because a seed diverged at the choice."""
    from dataclasses import replace

    sub = _substituted(part).removeprefix("; trained at a substituted rate: ")
    if sub:
        out[start:] = [replace(v, substituted=sub) for v in out[start:]]


def _substituted(df: pd.DataFrame) -> str:
    """'; trained at a substituted rate: L=4 at 0.5 (its CV rate 1 halved 1x: a seed diverged there)' for every depth whose
    nets trained at a rate other than the one their search chose ('' if none: every row says so)."""
    if "lr_halvings" not in df or not df.lr_halvings.any():
        return ""
    per = df[df.lr_halvings > 0].groupby("depth")[["lr", "cv_lr", "lr_halvings"]].first()
    return "; trained at a substituted rate: " + ", ".join(
        f"L={int(L)} at {r.lr:.3g} (its CV rate {r.cv_lr:.3g} halved {int(r.lr_halvings)}x: a seed diverged there)"
        for L, r in per.iterrows()
    )


def _claim4(
    figure: str,
    name: str,
    part: pd.DataFrame,
    est: dict,
    kest: dict,
    floor: float,
    floor_name: str,
    sound: list[str],
    substituted: str = "",
) -> Verdict:
    """Claim 4: the NN's trend in L, decided over seeds, runs against the NTK's (or the NTK is flat where the NN is not).

    Depths where the NN or the NTK learned nothing (at ``floor`` within Z SE) leave the test: a kernel at chance sets no
    trend.  The NTK is one kernel per depth (no seeds): its trend is the slope over log L with its SE over the test
    points (:func:`_kernel_trend`), or flat within ``FLAT``.  The evidence names the scale the row was judged at beside
    the paper's."""
    statement = "the NTK does not follow the NN at the CV-optimal lr (its trend in L)"
    alive, gone_nn = learned(est, floor, what=f"{floor_name} (NN)")
    alive_k, gone_k = learned(kest, floor, what=f"{floor_name} (NTK)")
    depths = [L for L in alive if L in alive_k]
    left = "; ".join(g for g in (gone_nn, gone_k) if g)
    shown = "NTK " + ", ".join(f"L={L}: {kest[L].value:.4g}" for L in kest) + (f"; {left}" if left else "")
    scale = "; " + _scale(part)
    if len(depths) < 2:
        return judge(
            "4",
            statement,
            figure,
            name,
            None,
            shown + scale,
            sound,
            why_none=f"fewer than two depths at which both the NN and the NTK learned something ({left})",
        )
    k_t = _kernel_trend(kest, depths)
    lx = np.log(depths)
    samples = _samples(part, depths)
    flat = k_t.holds is None and k_t.problem.startswith("the NTK is flat")
    if flat:
        t = max(
            (trend(lx, samples, falling=f, what="the NN's trend in L") for f in (True, False)),
            key=lambda t: (t.holds is True, t.z or 0.0),
        )
        need = f"the NTK is flat within {FLAT:.0%}: need the NN's trend decided either way"
    elif k_t.holds is None:
        t = Test(None, k_t.effect, k_t.stderr, 0.0, None, k_t.problem)
        need = "the NTK's trend is undecided"
    else:
        t = trend(lx, samples, falling=bool(k_t.holds), what="the NN's trend in L")
        need = f"the NTK's slope over log L {k_t.text('+.3g')}: need the NN's decided with the opposite sign"
    return judge(
        "4",
        statement,
        figure,
        name,
        t,
        f"{shown}; at L = {depths}: the NN's slope over log L = {t.text('+.3g')}; {need}{scale}{substituted}",
        sound,
    )


PAPER_SCALE = {  # (d, N) of each target in the paper (SPEC §1's table): a row judged at another scale says so
    "1-local": (1000, 5000),
    "1-global": (1000, 5000),
    "2-local": (500, 20000),
    "2-global": (100, 10000),
    "3-local": (100, 20000),
    "3-global": (40, 20000),
    "sin-local": (200, 20000),
    "sin-global": (30, 20000),
    "tanh_sin-local": (500, 20000),
    "tanh_sin-global": (100, 20000),
}


def _scale(part: pd.DataFrame) -> str:
    """'judged at d = 100, N = 4000, P = 1e+05 (the paper: d = 200, N = 20000, P = 1e6)' for a target's rows."""
    r = part.iloc[0]
    here = f"d = {int(r.d)}, N = {int(r.n_train)}" if "d" in part and "n_train" in part else "this config's d and N"
    if "n_params" in part:
        here += f", about {int(part.n_params.median()):.3g} parameters"
    name = str(r.target).split("-eps")[0]
    paper = PAPER_SCALE.get(name)
    return f"judged at {here}" + (f" (the paper: d = {paper[0]}, N = {paper[1]}, P = 1e6-1e8)" if paper else "")


def _stopped(df: pd.DataFrame) -> str:
    """'; stopped: L=1 3 plateau, ...' (how each depth's nets stopped), '' without the column."""
    if "stop_reason" not in df:
        return ""
    per = df.groupby("depth").stop_reason.agg(
        lambda s: ", ".join(f"{n} {r}" for r, n in s.value_counts().sort_index().items())
    )
    return "; stopped: " + "; ".join(f"L={int(L)} {v}" for L, v in per.items())


def _nonmonotonic(figure: str, name: str, est: dict, note: str, sound: list[str]) -> Verdict:
    """Claim 3's second half: some interior depth is worse than a deeper one by more than Z SE of the difference.

    Not applicable with fewer than two interior depths (depths [1, 2, 4] can only pass if L = 2 is worse than L = 4: the
    claim's shape, a dip and a rise, needs more).  Does not hold when every interior depth is below every deeper one by
    Z SE; otherwise inconclusive inside the error bars."""
    depths = sorted(est)
    statement = "k = 1: the L-dependence is non-monotonic beyond the error bars"
    shown = "NN " + ", ".join(f"L={L}: {e}" for L, e in est.items())
    interior = depths[1:-1]
    if len(interior) < 2:
        more = [L for L in range(depths[0] + 1, depths[-1]) if L not in depths] if depths else []
        how = f"add L = {more[0]}" if more else f"add a depth beyond L = {depths[-1]}"
        return not_applicable(
            "3",
            statement,
            figure,
            name,
            shown + note,
            f"{len(interior)} interior depth(s) ({interior}): a non-monotonic curve needs at least two; {how}",
        )
    tests = [
        (a, b, exceeds(stats.difference(est[a], est[b]), 0.0, what=f"err(L={a}) - err(L={b})"))
        for i, a in enumerate(depths[1:-1], 1)
        for b in depths[i + 1 :]
    ]
    a, b, t = max(tests, key=lambda abt: (abt[2].holds is True, abt[2].z if abt[2].z is not None else abt[2].effect))
    if t.holds is not True and any(x.holds is None for _, _, x in tests):
        a, b, t = next((a, b, x) for a, b, x in tests if x.holds is None)
    return judge(
        "3", statement, figure, name, t, f"{shown}; L={a} is worse than L={b} by {t.text()} (need > 0){note}", sound
    )


LAZY_KERNEL = (
    0.1  # claim 5's regime: the net's own tangent kernel moved by at most 10 % (relative Frobenius) in training
)
LAZY_LR = 0.1  # ... and its error changes by less than 10 % between the two smallest swept rates


def _regime(part: pd.DataFrame, lr0: float, lr1: float | None, width) -> tuple[str, str]:
    """(problem, evidence) of claim 5's regime test at the smallest swept rate ``lr0`` (SPEC §1): the net is lazy when
    (a) its tangent kernel Theta_hat moved little in training there (the mean over seeds of
    |Theta_hat_T - Theta_hat_0|_F / |Theta_hat_0|_F, the table's ``ntk_change``, below ``LAZY_KERNEL`` by Z SE), and
    (b) its error no longer depends on the rate at the small end (between ``lr0`` and the next swept rate ``lr1`` it does
    not change by more than ``LAZY_LR`` beyond Z SE).  The problem is '' when both hold, else 'scale: ...' naming the
    width (the row is then *inconclusive: scale*)."""
    at0 = part[part.lr == lr0]
    ev, bad = [], []
    if "ntk_change" in part and np.isfinite(at0.ntk_change).any():
        ch = stats.over_seeds(at0.ntk_change.values)
        t = exceeds(ch, LAZY_KERNEL, below=True, what="Theta_hat's relative change")
        ev.append(f"Theta_hat moved by {t.text('.3g')} in training at lr {lr0:.3g} (lazy: <= {LAZY_KERNEL:g})")
        if t.holds is not True:
            bad.append(
                f"its tangent kernel moved by {ch} in training (lazy: <= {LAZY_KERNEL:g}"
                + (", not decided within the error bars)" if t.holds is None else ")")
            )
    else:
        bad.append(
            "Theta_hat's movement in training was not recorded (an older table), so laziness cannot be established"
        )
    if lr1 is not None:
        a = part[part.lr == lr0].set_index("seed").nn_test_error
        b = part[part.lr == lr1].set_index("seed").nn_test_error
        rel = stats.over_seeds(((b - a) / a).dropna().values)
        d = exceeds(
            stats.Estimate(abs(rel.value), rel.se, rel.n, "seeds"),
            LAZY_LR,
            below=True,
            what="the error's change between the two smallest rates",
        )
        ev.append(f"error change from lr {lr0:.3g} to {lr1:.3g}: {d.text('+.3g')} (lazy: |change| <= {LAZY_LR:g})")
        if d.holds is False:
            bad.append(f"its error still depends on the rate at the small end ({rel} from lr {lr0:.3g} to {lr1:.3g})")
    problem = (
        (
            f"scale: at width {width} the net is not shown to be in the lazy regime the claim is about ("
            + "; ".join(bad)
            + "; the paper: h = 5000, lr proportional to 1/h)"
        )
        if bad
        else ""
    )
    return problem, "; ".join(ev)


def lr_claims(figure: str, table: pd.DataFrame, floor: float = 1.0) -> list[Verdict]:
    """Fig. 3 table: one row per (target, depth, lr, seed) with nn_test_error, converged, and the kernels' errors (and
    ``ntk_change``, how far the net's own tangent kernel moved in training).

    Claim 5 is judged per (target, depth) at the smallest swept rate, the end the claim is about (never skipped as a
    grid edge), once the net is shown to be there in the lazy regime (:func:`_regime`; outside it the row is
    *inconclusive: scale*, naming the width): |NN - kernel| / kernel < 25 %, against the analytic NTK of Appendix A
    (Theta: the paper's claim; SE over seeds and over the kernel's test points) and against the net's own tangent kernel
    at init (Theta_hat, its lazy limit: an extension; per seed, NN and Theta_hat of the same init paired, SE over seeds).
    Both at the target's variance (``floor``) is "nothing learned", inconclusive.  And whether the best lr is large.
    """
    out = []
    for (name, L), part in table.groupby(["target", "depth"], sort=True):
        ok = part[part.groupby("lr").converged.transform("all")]
        curve = ok.groupby("lr").nn_test_error.mean().sort_index()
        subject = f"{name} L={L}"
        if len(curve) < 2:
            out.append(
                judge(
                    "5",
                    "small lr matches the kernel; the best lr is large",
                    figure,
                    subject,
                    None,
                    f"{len(curve)} rate(s) converged",
                    why_none="fewer than two learning rates at which every seed converged",
                )
            )
            continue
        swept = sorted(part.lr.unique())
        lr0 = float(swept[0])
        lr1 = float(swept[1]) if len(swept) > 1 and swept[1] in curve.index else None
        width = int(part.width.iloc[0]) if "width" in part else "of this config"
        regime, regime_ev = _regime(part, lr0, lr1, width) if lr0 in curve.index else ("", "")
        ntk = _kernel_estimates(part)[int(L)]
        at0 = part[part.lr == lr0].sort_values("seed")
        for label, scope in (
            ("the analytic NTK (Theta, Appendix A)", "paper"),
            ("the net's own tangent kernel at init (Theta_hat)", "extension"),
        ):
            statement = f"at small lr the net matches {label}"
            if lr0 not in curve.index:
                v = judge(
                    "5",
                    statement,
                    figure,
                    subject,
                    None,
                    f"swept {lr0:.3g} ... {swept[-1]:.3g}",
                    why_none=f"the smallest swept rate {lr0:.3g} did not converge for every seed within the budget, "
                    "so the small-lr end the claim is about was not reached",
                )
                v.scope = scope
                out.append(v)
                continue
            nn = stats.over_seeds(at0.nn_test_error.values)
            if scope == "paper":
                k = ntk.value
                if not np.isfinite(k):
                    continue
                rel = stats.Estimate(
                    abs(nn.value - k) / k,
                    stats.combine(nn.se / k, nn.value * ntk.se / k**2),
                    nn.n,
                    "seeds+test points" if ntk.se else "seeds",
                )
                kern = f"{ntk}"
            else:
                ek = at0.entk_test_error.values.astype(float)
                if not np.isfinite(ek).any():
                    continue
                per = stats.over_seeds(
                    (at0.nn_test_error.values - ek) / ek
                )  # paired: each seed's net and its own kernel
                rel = stats.Estimate(abs(per.value), per.se, per.n, "seeds (paired)")
                k = float(np.nanmean(ek))
                kern = f"{stats.over_seeds(ek)} (per seed: " + ", ".join(f"{e:.4g}" for e in ek) + ")"
            t = exceeds(rel, 0.25, below=True, what="|NN - kernel| / kernel")
            chance = (
                [f"nothing learned: NN {nn} and kernel {k:.4g} both at the target's variance ({floor:g})"]
                if nn.value >= floor - Z * _se0(nn) and k >= floor
                else []
            )
            v = judge(
                "5",
                statement,
                figure,
                subject,
                t,
                f"at lr={lr0:.3g} (the smallest swept rate): NN {nn} vs kernel {kern}: rel. diff {t.text('.3f')} "
                f"(need < 0.25); {regime_ev}; largest converged lr {curve.index.max():.3g}",
                chance + [regime],
            )
            v.scope = scope
            out.append(v)
        mid = np.sqrt(curve.index.min() * curve.index.max())
        per = part.groupby("lr").agg(err=("nn_test_error", "mean"), ok=("converged", "all")).sort_index()
        choice = choose(per.index.values, per.err.values, ~per.ok.values)
        best = curve.idxmin()
        edge = (
            (
                f"the best converged rate {best:.3g} is the {choice.edge} end of the sweep "
                + (
                    "and every rate tried converged, so the largest converging rate (the top of the curve) is unknown"
                    if choice.edge == "upper"
                    else "(a smaller rate was not tried)"
                )
            )
            if choice.at_edge
            else ""
        )
        # the best rate against the middle, on a log scale; exact given the swept grid (the best is chosen on means)
        t = exceeds(stats.Estimate(float(np.log10(best)), 0.0), float(np.log10(mid)), what="log10 of the best lr")
        out.append(
            judge(
                "5",
                "the best lr lies in the large-lr regime",
                figure,
                subject,
                t,
                f"best lr {best:.3g} (error {curve.min():.4g}) vs the geometric middle of the converged range {mid:.3g}; "
                f"converged rates {curve.index.min():.3g} ... {curve.index.max():.3g}; swept "
                f"{per.index.min():.3g} ... {per.index.max():.3g}",
                [edge],
            )
        )
    return out


def check(spec: "ClaimsSpec", tables: dict[str, pd.DataFrame]) -> tuple[list[Verdict], list[str]]:
    """(verdicts, notes for the report) from every figure's table."""
    verdicts: list[Verdict] = []
    for name in sorted(tables):
        fig = spec.figures[name]
        if fig.kind == "lr_sweep":
            verdicts += lr_claims(name, tables[name])
        else:
            verdicts += depth_claims(name, fig.variant, tables[name])
    return verdicts, [spec.scale_note, *NOTES]


def to_decide(v: Verdict, cfg: dict) -> "decide.Suggestion | None":
    """What would decide an inconclusive row (depthlab.decide): claim 5 is about the lazy regime, which needs the paper's
    width (h = 5 000 with lr ~ 1/h) and a GPU; the others more seeds on their figure, a longer budget, a wider grid."""
    from depthlab import decide

    if v.claim == "5":
        return decide.paper("the lazy regime: fig3 width 5 000 with lr ~ 1/h, config/paper.yaml; a GPU")
    root = "studies.mori_ueda"
    fig = v.figure if v.figure in decide.get(cfg, f"{root}.figures") else None
    s = decide.generic(
        v,
        cfg,
        seeds=lambda v: (f"{root}.figures.{fig}.seeds", fig) if fig else None,
        budget=lambda v: (
            (f"{root}.figures.fig3.max_epochs", "fig3 max_epochs", 2.0)
            if fig == "fig3"
            else (f"{root}.training.max_epochs", "training.max_epochs", 2.0)
        ),
        grow=lambda v: (f"{root}.lrsearch.grow_rounds", "lrsearch.grow_rounds"),
        depths=lambda v: (f"{root}.figures.{fig}.depths", fig) if fig else None,
    )
    if s is None and "scale" in v.reason:
        return decide.paper("the paper's d, N and P: config/paper.yaml")
    return s
