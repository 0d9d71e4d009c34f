"""Mori & Ueda's claims (SPEC §1), checked against the figure tables.

Criteria (fixed here, printed in the report so a reader can disagree with them):

* "clearly higher": mean NN error at L = 1 exceeds the best deeper mean by more than 10 %.
* "tends to fall with L": Spearman rank correlation of mean error vs L below 0.
* "L = 1 is best": mean NN error at L = 1 below every deeper mean.
* Claim 3 is two verdicts (SPEC): "shallow best" (the mean error is lowest at the smallest depth) and
  "non-monotonic" (some interior depth, neither the first nor the last, is worse than a deeper one by more than the
  seed spread, the root-sum-square of the two standard deviations over seeds); plus, for k = 1, "local and global
  alike" (the same best depth and rank-correlated curves, Spearman > 0).
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

from depthlab.claims import Verdict, diverged, flagged, judge, unconverged
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


def _sd(df: pd.DataFrame) -> pd.Series:
    return df.groupby("depth").nn_test_error.std().fillna(0.0).sort_index()


def _rho(s: pd.Series) -> float:
    if len(s) < 3 or s.nunique() < 2:
        return float(np.sign(s.iloc[-1] - s.iloc[0])) if len(s) >= 2 else float("nan")
    return float(spearmanr(s.index.values, s.values).statistic)


def _fmt(s: pd.Series) -> str:
    return ", ".join(f"L={int(L)}: {v:.4g}" for L, v in s.items())


def _spread(nn: pd.Series, sd: pd.Series, a: int, b: int) -> str:
    """The problem 'the seeds do not resolve L=a vs L=b' when |mean_a - mean_b| < sqrt(sd_a^2 + sd_b^2), else ''."""
    diff, spread = abs(nn.loc[a] - nn.loc[b]), float(np.hypot(sd.loc[a], sd.loc[b]))
    return (f"the seeds disagree beyond the margin: L={int(a)} vs L={int(b)} differ by {diff:.3g}, inside the seed spread "
            f"{spread:.3g} (root-sum-square of their standard deviations)") if diff < spread else ""


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


def depth_claims(figure: str, variant: str | None, table: pd.DataFrame) -> list[Verdict]:
    out: list[Verdict] = []
    tag = f"6 ({variant}) = " if variant else ""
    for name, part in table.groupby("target", sort=True):
        k = int(part.k.iloc[0])
        loc = part.locality.iloc[0]
        nn, sd = _curve(part), _sd(part)
        ntk = _curve(part, "ntk_test_error")
        if len(nn) < 2 or nn.isna().all():
            out.append(judge("-", "depth dependence (claims 1-4)", figure, name, None, f"NN {_fmt(nn)}",
                             why_none="fewer than two depths with a finite NN error"))
            continue
        sound = _soundness(part)
        first = nn.index.min()
        deeper = nn.drop(index=first)
        best_deep = deeper.idxmin()
        lr_note = "; lr " + _lrs(part) + _diverged(part) + _stopped(part)
        if k >= 2 and loc == "local":
            ratio = nn.loc[first] / deeper.min()
            r = _rho(nn)
            out.append(judge(tag + "1", "local: L = 1 clearly worse, error falls with L", figure, name,
                             bool(ratio > CLEARLY and r < 0),
                             f"NN {_fmt(nn)}; err(L=1)/min deeper = {ratio:.3f} (need > {CLEARLY}); Spearman(L, err) = {r:+.2f} "
                             f"(need < 0){lr_note}", sound + [_spread(nn, sd, first, best_deep)]))
        if k >= 2 and loc == "global":
            out.append(judge(tag + "2", "global: L = 1 best", figure, name, bool(nn.loc[first] < deeper.min()),
                             f"NN {_fmt(nn)}; err(L=1) = {nn.loc[first]:.4g} vs min deeper = {deeper.min():.4g}{lr_note}",
                             sound + [_spread(nn, sd, first, best_deep)]))
        if k == 1:
            out.append(judge("3", "k = 1: shallow best", figure, name, bool(nn.idxmin() == first),
                             f"NN {_fmt(nn)}; best depth L = {int(nn.idxmin())}{lr_note}",
                             sound + [_spread(nn, sd, first, nn.drop(index=first).idxmin())]))
            out.append(_nonmonotonic(figure, name, nn, sd, lr_note, sound))
        rn, rk = _rho(nn), _rho(ntk)
        opposite, kernel_flat, nn_flat = np.sign(rn) != np.sign(rk), _flat(ntk), _flat(nn)
        out.append(judge("4", "the NTK does not follow the NN at the CV-optimal lr (its trend in L)", figure, name,
                         bool(opposite or (kernel_flat and not nn_flat)),
                         f"NTK {_fmt(ntk)}; Spearman(L, NN) = {rn:+.2f}, Spearman(L, NTK) = {rk:+.2f} (need opposite signs, or the "
                         f"NTK flat within {FLAT:.0%} where the NN is not: NTK flat {kernel_flat}, NN flat {nn_flat})", sound))
        best = nn.idxmin()
        gap = ntk.loc[best] / nn.loc[best]
        out.append(judge("4-aside", "finding beside claim 4: the NTK is worse than the NN at the NN's best depth", figure, name,
                         bool(gap > CLEARLY), f"NTK/NN at the NN's best depth L={int(best)}: {gap:.3f} (need > {CLEARLY})", sound))
    ones = table[table.k == 1]
    if not ones.empty and set(ones.locality) == {"local", "global"}:
        loc_c = _curve(ones[ones.locality == "local"])
        glo_c = _curve(ones[ones.locality == "global"])
        common = loc_c.index.intersection(glo_c.index)
        r = float(spearmanr(loc_c[common], glo_c[common]).statistic) if len(common) >= 3 else float("nan")
        same = loc_c.idxmin() == glo_c.idxmin()
        out.append(judge("3", "k = 1: local and global alike", figure, "1-local vs 1-global",
                         bool(same and r > 0) if np.isfinite(r) else None,
                         f"best depths {int(loc_c.idxmin())} vs {int(glo_c.idxmin())}; Spearman between curves = {r:+.2f}",
                         _soundness(ones), why_none="fewer than three common depths"))
    return out


def _stopped(df: pd.DataFrame) -> str:
    """'; stopped: L=1 3 plateau, ...' (how each depth's nets stopped), '' without the column."""
    if "stop_reason" not in df:
        return ""
    per = df.groupby("depth").stop_reason.agg(lambda s: ", ".join(f"{n} {r}" for r, n in s.value_counts().sort_index().items()))
    return "; stopped: " + "; ".join(f"L={int(L)} {v}" for L, v in per.items())


def _nonmonotonic(figure: str, name: str, nn: pd.Series, sd: pd.Series, note: str, sound: list[str]) -> Verdict:
    """Claim 3's second half: some interior depth is worse than a deeper one by more than the seed spread."""
    depths = list(nn.index)
    found = [(a, b, nn[a] - nn[b], float(np.hypot(sd[a], sd[b]))) for i, a in enumerate(depths[1:-1], 1) for b in depths[i + 1:]
             if nn[a] - nn[b] > np.hypot(sd[a], sd[b])]
    statement = "k = 1: the L-dependence is non-monotonic beyond the seed spread"
    if len(depths) < 3:
        return judge("3", statement, figure, name, None, f"NN {_fmt(nn)}", why_none="fewer than three depths, no interior depth")
    a, b, diff, spread = max(found, key=lambda f: f[2] - f[3]) if found else (None, None, 0.0, 0.0)
    return judge("3", statement, figure, name, bool(found),
                 f"NN {_fmt(nn)}; " + (f"L={int(a)} is worse than L={int(b)} by {diff:.3g} > spread {spread:.3g}" if found else
                                       "no interior depth is worse than a deeper one by more than the seed spread") + note, sound)


def lr_claims(figure: str, table: pd.DataFrame) -> list[Verdict]:
    """Fig. 3 table: one row per (target, depth, lr, seed) with nn_test_error, converged, and the kernels' errors.

    Claim 5 is checked three ways per (target, depth): the smallest converged lr against the
    net's own tangent kernel at init (Theta_hat, its lazy limit), against the analytic NTK of
    Appendix A (Theta, another parameterisation's limit), and whether the best lr is large.
    """
    out = []
    for (name, L), part in table.groupby(["target", "depth"], sort=True):
        ok = part[part.groupby("lr").converged.transform("all")]
        curve = ok.groupby("lr").nn_test_error.mean().sort_index()
        sd = ok.groupby("lr").nn_test_error.std().fillna(0.0)
        subject = f"{name} L={L}"
        if len(curve) < 2:
            out.append(judge("5", "small lr matches the kernel; the best lr is large", figure, subject, None,
                             f"{len(curve)} rate(s) converged", why_none="fewer than two learning rates at which every seed converged"))
            continue
        small, nn = curve.index[0], curve.iloc[0]
        kernels = [("the net's own tangent kernel at init (Theta_hat)", part.groupby("seed").entk_test_error.first().mean()),
                   ("the analytic NTK (Theta, Appendix A)", float(part.ntk_test_error.iloc[0]))]
        for label, k in kernels:
            if not np.isfinite(k):
                continue
            rel = abs(nn - k) / k
            out.append(judge("5", f"at small lr the net matches {label}", figure, subject, bool(rel < 0.25),
                             f"at lr={small:.3g} (smallest converged): NN {nn:.4g} +- {sd.iloc[0]:.2g} vs kernel {k:.4g}: "
                             f"rel. diff {rel:.2f} (need < 0.25); largest converged lr {curve.index.max():.3g}"))
        mid = np.sqrt(curve.index.min() * curve.index.max())
        per = part.groupby("lr").agg(err=("nn_test_error", "mean"), ok=("converged", "all")).sort_index()
        choice = choose(per.index.values, per.err.values, ~per.ok.values)
        best = curve.idxmin()
        edge = (f"the best converged rate {best:.3g} is the {choice.edge} end of the sweep "
                + ("and every rate tried converged, so the largest converging rate (the top of the curve) is unknown"
                   if choice.edge == "upper" else "(a smaller rate was not tried)")) if choice.at_edge else ""
        out.append(judge("5", "the best lr lies in the large-lr regime", figure, subject, bool(best > mid),
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
