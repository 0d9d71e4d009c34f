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

from depthlab.claims import Z, Test, Verdict, all_of, exceeds, judge, learned, not_applicable, trend
from depthlab.problems import Problem, join_problems
from depthlab.core import stats

if TYPE_CHECKING:
    from depthlab import suggest
    from .specs import ClaimsSpec

from .claim_tools import (
    CLEARLY,
    _beats,
    _chance,
    _curve,
    _diverged,
    _estimates,
    _fmt,
    _kernel_estimates,
    _lrs,
    _samples,
    _soundness,
)
from .claim_kernels import (
    _claim4_rows,
    _flag_substituted,
)
from .claim_lr import lr_claims


NOTES = [
    "Criteria: see the docstring of `depthlab/studies/mori_ueda/claims.py` (10 % margins, trends as exact permutation "
    "tests of the slope over log L, claim 3 in two halves, claim 4 only where the paper makes it).",
    "Claim 4's scope (the paper, Sec. 3.1): the NTK does not follow the net on the k >= 2 local targets, Fig. 6's "
    "generalized targets and 3-global at L = 1; it follows the net for k = 1 (shallow best), 2-global and 3-global at "
    "L >= 2, and those rows check that agreement; Figs 4 and 5 show no NTK (not applicable). Claim 5 is judged only in "
    "the lazy regime it is about.",
]


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
                    why_none=Problem("fewer than two depths with a finite NN error", "few_depths"),
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
                why_none=Problem("fewer than two common depths", "few_depths"),
            )
        )
    return out


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
    return Test(None, a.effect, a.stderr, 0.0, a.z, join_problems(why) or "undecided", note)


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


def to_decide(v: Verdict, cfg: dict) -> "suggest.Suggestion | None":
    """What would decide an inconclusive row (depthlab.decide): claim 5 is about the lazy regime, which needs the paper's
    width (h = 5 000 with lr ~ 1/h) and a GPU; the others more seeds on their figure, a longer budget, a wider grid."""
    from depthlab import suggest

    if v.claim == "5":
        return suggest.paper("the lazy regime: fig3 width 5 000 with lr ~ 1/h, config/paper.yaml; a GPU")
    root = "studies.mori_ueda"
    fig = v.figure if v.figure in suggest.get(cfg, f"{root}.figures") else None
    s = suggest.generic(
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
    if s is None and "scale" in v.problems:
        return suggest.paper("the paper's d, N and P: config/paper.yaml")
    return s
