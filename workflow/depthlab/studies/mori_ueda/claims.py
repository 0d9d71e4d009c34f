"""Mori & Ueda's claims (SPEC §1), checked against the figure tables.

Criteria (fixed here, printed in the report so a reader can disagree with them):

* "clearly higher": mean NN error at L = 1 exceeds the best deeper mean by more than 10 %.
* "tends to fall with L": Spearman rank correlation of mean error vs L below 0.
* "L = 1 is best": mean NN error at L = 1 below every deeper mean.
* Claim 3 is two verdicts (SPEC): "shallow best" (the mean error is lowest at the smallest depth) and
  "non-monotonic" (some interior depth, neither the first nor the last, is worse than a deeper one by more than the
  seed spread, the root-sum-square of the two standard deviations over seeds); plus, for k = 1, "local and global
  alike" (the same best depth and rank-correlated curves, Spearman > 0, in >= 95 % of bootstrap resamples over seeds;
  failing together in >= 95 %: does not hold; else inside the error bars).
* Claim 4 is a statement about trends only: the Spearman correlations of the NN's and the NTK's errors with L have
  opposite signs, or the NTK is flat (its errors within 5 % of each other) where the NN is not.  "The NTK is worse than
  the NN at the NN's best depth" (by more than 10 %) is a different finding: its own row, id "4-aside", never claim 4.
* Fig. 3 "small lr matches the kernel": at the smallest lr at which every seed converged,
  |NN - kernel| / kernel < 25 %, checked against the net's own tangent kernel at init (its
  lazy limit) and against the analytic NTK; "best lr is large": the lr with the lowest error
  is above the geometric middle of the converged lr range.
* Seed spread: a depth comparison whose difference of means is smaller than the root-sum-square of the two standard
  deviations over seeds is flagged "inside the seed spread" (the verdict is reported, but it is not resolved by the
  seeds run).
* Diverged seeds: a seed whose training diverged has no test error; means are over the seeds that did not diverge, and
  every row says how many seeds diverged at which depth (never silently dropped).  The figures mark those points.  A
  depth sweep's final nets are trained again at half the CV rate while some seed diverges (at most three times; the
  row prints the rate trained and the CV rate); a seed that still diverges makes the rows resting on it inconclusive
  (its depth's mean is over the other seeds only).
* Claim 6 applies to a figure whose targets carry label noise, whose task is classification, or whose g is not the
  product: it repeats claims 1-2 there.
* Inconclusive (depthlab.claims.judge), with the reason, when a net a row rests on did not converge (its training
  loss still improving by more than the plateau tolerance when the epoch budget ran out), when the CV-chosen rate of a
  depth sits at an edge of the rates its search evaluated and could not grow past it, or when the depth comparison a
  claim makes (claims 1, 2 and "shallow best") is inside the seed spread.  Fig. 3's "best lr is large" is inconclusive
  when the best converged rate is the largest or smallest rate of the sweep (depthlab.core.edges: every larger rate
  tried must have failed to converge for the best to be inside the grid).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from depthlab.claims import (TREND_SHARE, Z, Test, Verdict, all_of, diverged, exceeds, flagged, judge, learned,
                             not_applicable, trend, unconverged)
from depthlab.core import stats
from depthlab.core.edges import choose

if TYPE_CHECKING:
    from .specs import ClaimsSpec

CLEARLY = 1.10
NOTES = [
    "Criteria: see the docstring of `depthlab/studies/mori_ueda/claims.py` (10 % margins, Spearman signs, seed spread, "
    "claim 3 in two halves, claim 4 as a trend test with the gap at the best depth in its own 4-aside row).",
    "The paper itself (Sec. 3.1) finds the NTK close to the network for the 2-global target and for 3-global at "
    "L >= 2, so claim 4 is expected to fail there.",
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
    return "".join(f"; {int(r['sum'])} of {int(r['size'])} seeds diverged at L={int(L)} (left out of its mean)" for L, r in per.iterrows())


def _flat(s: pd.Series) -> bool:
    return bool(s.max() <= (1 + FLAT) * s.min())


def _rho(s: pd.Series) -> float:
    if len(s) < 3 or s.nunique() < 2:
        return float(np.sign(s.iloc[-1] - s.iloc[0])) if len(s) >= 2 else float("nan")
    return float(spearmanr(s.index.values, s.values).statistic)


def _fmt(s: pd.Series) -> str:
    return ", ".join(f"L={int(L)}: {v:.4g}" for L, v in s.items())


def _soundness(part: pd.DataFrame) -> list[str]:
    """What a depth-sweep row rests on that could make it unsound: nets that did not converge, CV rates at a flagged edge,
    seeds that diverged (even at the halved rate)."""
    return [unconverged(part, lambda r: f"L={r.depth} seed {r.seed}"), flagged(part, lambda r: f"L={r.depth}"),
            diverged(part, lambda r: f"L={r.depth} seed {r.seed} at lr {r.lr:.3g}", "their depth's mean is over the other seeds only")]


def _lrs(part: pd.DataFrame) -> str:
    """'L=1: 0.5, L=4: 0.54 (CV 1.08, halved once: a seed diverged)' for the rates the depths were trained at."""
    per = part.groupby("depth")[[c for c in ("lr", "cv_lr", "lr_halvings") if c in part]].first()
    return ", ".join(f"L={int(L)}: {r.lr:.3g}" + (f" (CV {r.cv_lr:.3g}, halved {int(r.lr_halvings)}x: a seed diverged)"
                                                  if getattr(r, "lr_halvings", 0) else "") for L, r in per.iterrows())


def _estimates(df: pd.DataFrame, col: str = "nn_test_error") -> dict:
    """depth -> the mean over seeds with its SE (diverged seeds, NaN, left out)."""
    return {int(L): stats.over_seeds(g[col].values) for L, g in df.groupby("depth")}


def _kernel_estimates(df: pd.DataFrame, col: str = "ntk_test_error") -> dict:
    """depth -> a kernel's test error (one fit per depth: the same on every row) with its SE over the test points (the
    table's ``<col>_se``, issue 53 item 1; a table without it: SE 0, the kernel taken as exact given the data)."""
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


def depth_claims(figure: str, variant: str | None, table: pd.DataFrame) -> list[Verdict]:
    out: list[Verdict] = []
    tag = f"6 ({variant}) = " if variant else ""
    floor, floor_name = _chance(variant)
    for name, part in table.groupby("target", sort=True):
        start = len(out)  # this target's rows: out[start:], flagged at the end of the loop body
        k = int(part.k.iloc[0])
        loc = part.locality.iloc[0]
        nn = _curve(part)
        ntk = _curve(part, "ntk_test_error")
        if len(nn) < 2 or nn.isna().all():
            out.append(judge("-", "depth dependence (claims 1-4)", figure, name, None, f"NN {_fmt(nn)}",
                             why_none="fewer than two depths with a finite NN error"))
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
            falls = trend(alive, _samples(part, alive), falling=True, what="the NN's fall with L") if len(alive) >= 2 else \
                Test(None, float("nan"), float("nan"), 0.0, None, f"fewer than two depths learned anything ({gone})")
            t = all_of(clearly, falls)
            out.append(judge(tag + "1", "local: L = 1 clearly worse, error falls with L", figure, name, t,
                             f"{shown}; err(L=1)/min deeper = {clearly.text('.3f')} (need > {CLEARLY}); Spearman(L, err) = "
                             f"{falls.text('+.2f')} (need < 0 in {TREND_SHARE:.0%} of resamples)"
                             + (f"; {gone}" if gone else "") + lr_note, sound))
        if k >= 2 and loc == "global":
            t = _beats(est, first, best_deep, f"err(L={best_deep}) - err(L=1)")
            out.append(judge(tag + "2", "global: L = 1 best", figure, name, t,
                             f"{shown}; err(L={best_deep}) - err(L=1) = {t.text()} (need > 0){lr_note}", sound))
        if k == 1:
            t = _beats(est, first, best_deep, f"err(L={best_deep}) - err(L=1)")
            out.append(judge("3", "k = 1: shallow best", figure, name, t,
                             f"{shown}; err(L={best_deep}) - err(L=1) = {t.text()} (need > 0){lr_note}", sound))
            out.append(_nonmonotonic(figure, name, est, lr_note, sound))
        out.append(_claim4(figure, name, part, est, kest, floor, floor_name, sound, _substituted(part)))
        best = int(nn.idxmin())
        gap = exceeds(stats.ratio(kest[best], est[best]), CLEARLY, what=f"NTK/NN at L={best}")
        both = [L for L in (best,) if est[L].value >= floor - Z * _se0(est[L]) and kest[L].value >= floor - Z * _se0(kest[L])]
        out.append(judge("4-aside", "finding beside claim 4: the NTK is worse than the NN at the NN's best depth", figure, name,
                         gap, f"NTK/NN at the NN's best depth L={best}: {gap.text('.3f')} (need > {CLEARLY})"
                         + _substituted(part[part.depth == best]),
                         sound + ([f"nothing learned: NN and NTK both at {floor_name} at L={best}"] if both else [])))
        _flag_substituted(out, start, part)
    ones = table[table.k == 1]
    if not ones.empty and set(ones.locality) == {"local", "global"}:
        loc_c = _curve(ones[ones.locality == "local"])
        glo_c = _curve(ones[ones.locality == "global"])
        common = loc_c.index.intersection(glo_c.index)
        t = _alike(ones, loc_c[common], glo_c[common]) if len(common) >= 3 else None
        out.append(judge("3", "k = 1: local and global alike", figure, "1-local vs 1-global", t,
                         f"best depths {int(loc_c.idxmin())} vs {int(glo_c.idxmin())}; Spearman between curves = "
                         + (t.text("+.2f") if t is not None else "n/a"), _soundness(ones), why_none="fewer than three common depths"))
    return out


def _alike(ones: pd.DataFrame, loc_c: pd.Series, glo_c: pd.Series, resamples: int = 2000, seed: int = 0) -> Test:
    """Claim 3's "k = 1: local and global alike" with its error bar: the two mean curves (``loc_c``, ``glo_c``: error
    per depth, over the depths both have) have the same best depth and a positive Spearman correlation.  Both are
    re-evaluated on bootstrap resamples over each depth's seeds (each curve resampled on its own, as
    :func:`depthlab.core.stats.trend_sign` does): holds when both hold in >= TREND_SHARE of the resamples, does not hold
    when they fail together in >= TREND_SHARE, inside the error bars otherwise.  Effect: the observed Spearman, SE its
    SD over the resamples."""
    depths = list(loc_c.index)
    a, b = (np.column_stack(stats.resampled_means(_samples(ones[ones.locality == loc], depths), resamples, seed + i))
            for i, loc in enumerate(("local", "global")))  # [resamples, depths] each
    rhos = stats.spearman_rows(a, b)
    ok = (a.argmin(1) == b.argmin(1)) & (rhos > 0)
    rho = float(spearmanr(loc_c, glo_c).statistic)
    sd = float(rhos.std(ddof=1))
    note = (f" (same best depth and Spearman > 0 in {ok.mean():.0%} of resamples over seeds; need {TREND_SHARE:.0%} "
            f"either way)")
    holds = True if ok.mean() >= TREND_SHARE else False if (1 - ok.mean()) >= TREND_SHARE else None
    z = rho / sd if sd > 0 else None
    return Test(holds, rho, sd, 0.0, z, "" if holds is not None else
                f"inside the error bars: the curves agree (same best depth, Spearman > 0) in only {ok.mean():.0%} of "
                f"bootstrap resamples over seeds, and disagree in {1 - ok.mean():.0%} (need {TREND_SHARE:.0%})", note)


def _se0(e) -> float:
    return e.se if np.isfinite(e.se) else 0.0


def _flag_substituted(out: list[Verdict], start: int, part: pd.DataFrame) -> None:
    """Issue 53 item 7: every row from ``out[start:]`` (one target's rows) records, in its ``substituted`` field, the
    depths whose nets trained at a rate other than their search's choice, because a seed diverged at the choice."""
    from dataclasses import replace

    sub = _substituted(part).removeprefix("; trained at a substituted rate: ")
    if sub:
        out[start:] = [replace(v, substituted=sub) for v in out[start:]]


def _substituted(df: pd.DataFrame) -> str:
    """'; trained at a substituted rate: L=4 at 0.5 (its CV rate 1 halved 1x: a seed diverged there)' for every depth whose
    nets trained at a rate other than the one their search chose ('' if none; issue 53 item 7: every row says so)."""
    if "lr_halvings" not in df or not df.lr_halvings.any():
        return ""
    per = df[df.lr_halvings > 0].groupby("depth")[["lr", "cv_lr", "lr_halvings"]].first()
    return "; trained at a substituted rate: " + ", ".join(
        f"L={int(L)} at {r.lr:.3g} (its CV rate {r.cv_lr:.3g} halved {int(r.lr_halvings)}x: a seed diverged there)"
        for L, r in per.iterrows())


def _claim4(figure: str, name: str, part: pd.DataFrame, est: dict, kest: dict, floor: float, floor_name: str,
            sound: list[str], substituted: str = "") -> Verdict:
    """Claim 4: the NN's trend in L, decided over seeds, runs against the NTK's (or the NTK is flat where the NN is not).

    Depths where the NN or the NTK learned nothing (at ``floor`` within Z SE) leave the test: a kernel at chance sets no
    trend.  The NTK is one kernel per depth (no seeds): its trend is its Spearman sign, or flat within ``FLAT``."""
    statement = "the NTK does not follow the NN at the CV-optimal lr (its trend in L)"
    alive, gone_nn = learned(est, floor, what=f"{floor_name} (NN)")
    alive_k, gone_k = learned(kest, floor, what=f"{floor_name} (NTK)")
    depths = [L for L in alive if L in alive_k]
    left = "; ".join(g for g in (gone_nn, gone_k) if g)
    ntk = pd.Series({L: kest[L].value for L in depths}, dtype=float)
    shown = "NTK " + ", ".join(f"L={L}: {kest[L].value:.4g}" for L in kest) + (f"; {left}" if left else "")
    if len(depths) < 2:
        return judge("4", statement, figure, name, None, shown, sound,
                     why_none=f"fewer than two depths at which both the NN and the NTK learned something ({left})")
    rk = _rho(ntk)
    flat = _flat(ntk)
    samples = _samples(part, depths)
    if flat or rk == 0:
        t = max((trend(depths, samples, falling=f, what="the NN's trend in L") for f in (True, False)),
                key=lambda t: (t.holds is True, t.z or 0.0))
        need = f"the NTK is flat within {FLAT:.0%}: need the NN's trend decided either way"
    else:
        t = trend(depths, samples, falling=rk > 0, what="the NN's trend in L")
        need = f"Spearman(L, NTK) = {rk:+.2f}: need the NN's sign opposite in {TREND_SHARE:.0%} of resamples"
    return judge("4", statement, figure, name, t,
                 f"{shown}; at L = {depths}: Spearman(L, NN) = {t.text('+.2f')}; {need}{substituted}", sound)


def _stopped(df: pd.DataFrame) -> str:
    """'; stopped: L=1 3 plateau, ...' (how each depth's nets stopped), '' without the column."""
    if "stop_reason" not in df:
        return ""
    per = df.groupby("depth").stop_reason.agg(lambda s: ", ".join(f"{n} {r}" for r, n in s.value_counts().sort_index().items()))
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
        return not_applicable("3", statement, figure, name, shown + note,
                              f"{len(interior)} interior depth(s) ({interior}): a non-monotonic curve needs at least two; {how}")
    tests = [(a, b, exceeds(stats.difference(est[a], est[b]), 0.0, what=f"err(L={a}) - err(L={b})"))
             for i, a in enumerate(depths[1:-1], 1) for b in depths[i + 1:]]
    a, b, t = max(tests, key=lambda abt: (abt[2].holds is True, abt[2].z if abt[2].z is not None else abt[2].effect))
    if t.holds is not True and any(x.holds is None for _, _, x in tests):
        a, b, t = next((a, b, x) for a, b, x in tests if x.holds is None)
    return judge("3", statement, figure, name, t,
                 f"{shown}; L={a} is worse than L={b} by {t.text()} (need > 0){note}", sound)


def lr_claims(figure: str, table: pd.DataFrame, floor: float = 1.0) -> list[Verdict]:
    """Fig. 3 table: one row per (target, depth, lr, seed) with nn_test_error, converged, and the kernels' errors.

    Claim 5 is checked three ways per (target, depth): at the smallest converged lr strictly inside the swept grid (the
    smallest swept rate is an edge: its numbers are printed beside, flagged), the net against its own tangent kernel at
    init (Theta_hat, its lazy limit) and against the analytic NTK of Appendix A (Theta, another parameterisation's
    limit), |NN - kernel| / kernel < 25 % decided with the SE over seeds and, for the analytic NTK (one fit), over its
    test points; both at the target's variance (``floor``) is "nothing learned", inconclusive; and whether the best lr
    is large.
    """
    out = []
    for (name, L), part in table.groupby(["target", "depth"], sort=True):
        ok = part[part.groupby("lr").converged.transform("all")]
        curve = ok.groupby("lr").nn_test_error.mean().sort_index()
        subject = f"{name} L={L}"
        if len(curve) < 2:
            out.append(judge("5", "small lr matches the kernel; the best lr is large", figure, subject, None,
                             f"{len(curve)} rate(s) converged", why_none="fewer than two learning rates at which every seed converged"))
            continue
        swept_min = float(part.lr.min())
        inside = [lr for lr in curve.index if lr > swept_min]
        ntk = _kernel_estimates(part)[int(L)]
        kernels = [("the net's own tangent kernel at init (Theta_hat)", part.groupby("seed").entk_test_error.first().mean(), 0.0),
                   ("the analytic NTK (Theta, Appendix A)", ntk.value, ntk.se)]
        for label, k, k_se in kernels:
            if not np.isfinite(k):
                continue
            statement = f"at small lr the net matches {label}"
            edge_note = ""
            if curve.index[0] == swept_min:
                e0 = stats.over_seeds(ok[ok.lr == swept_min].nn_test_error.values)
                edge_note = (f"; beside, not judged: at the grid's lowest rate {swept_min:.3g} (an edge) NN {e0}, "
                             f"rel. diff {abs(e0.value - k) / k:.3f}")
            if not inside:
                out.append(judge("5", statement, figure, subject, None, f"kernel {k:.4g}{edge_note}",
                                 why_none="no converged rate strictly inside the swept grid (only its lowest edge converged)"))
                continue
            small = inside[0]
            nn = stats.over_seeds(ok[ok.lr == small].nn_test_error.values)
            # the SE over seeds and, for the analytic NTK (one fit), over its test points (delta method on |NN - k| / k)
            rel = stats.Estimate(abs(nn.value - k) / k, stats.combine(nn.se / k, nn.value * k_se / k**2), nn.n,
                                 "seeds+test points" if k_se else "seeds")
            t = exceeds(rel, 0.25, below=True, what="|NN - kernel| / kernel")
            chance = [f"nothing learned: NN {nn} and kernel {k:.4g} both at the target's variance ({floor:g})"] \
                if nn.value >= floor - Z * _se0(nn) and k >= floor else []
            out.append(judge("5", statement, figure, subject, t,
                             f"at lr={small:.3g} (smallest converged inside the grid): NN {nn} vs kernel {k:.4g}: "
                             f"rel. diff {t.text('.3f')} (need < 0.25); largest converged lr {curve.index.max():.3g}{edge_note}",
                             chance))
        mid = np.sqrt(curve.index.min() * curve.index.max())
        per = part.groupby("lr").agg(err=("nn_test_error", "mean"), ok=("converged", "all")).sort_index()
        choice = choose(per.index.values, per.err.values, ~per.ok.values)
        best = curve.idxmin()
        edge = (f"the best converged rate {best:.3g} is the {choice.edge} end of the sweep "
                + ("and every rate tried converged, so the largest converging rate (the top of the curve) is unknown"
                   if choice.edge == "upper" else "(a smaller rate was not tried)")) if choice.at_edge else ""
        # the best rate against the middle, on a log scale; exact given the swept grid (the best is chosen on means)
        t = exceeds(stats.Estimate(float(np.log10(best)), 0.0), float(np.log10(mid)), what="log10 of the best lr")
        out.append(judge("5", "the best lr lies in the large-lr regime", figure, subject, t,
                         f"best lr {best:.3g} (error {curve.min():.4g}) vs the geometric middle of the converged range {mid:.3g}; "
                         f"converged rates {curve.index.min():.3g} ... {curve.index.max():.3g}; swept "
                         f"{per.index.min():.3g} ... {per.index.max():.3g}", [edge]))
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
