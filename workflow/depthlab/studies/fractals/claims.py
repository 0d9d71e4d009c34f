"""Malach & Shalev-Shwartz's claims (SPEC §2), checked against the fig4, fig5, fig6, tables and fig7 tables.

Accuracy is the best test accuracy along the run (the paper's number) at each net's chosen rate (the best over its
grid, chosen by its store), the mean over seeds; then the best over whatever the claim does not fix (widths, say).
Criteria (fixed here, printed in the report):

* M1 (coarse curve, fig4): (a) at every width that two or more depths have, the deepest net beats depth 1 and
  accuracy rank-correlates positively with depth (Spearman > 0); (b) at equal parameter count, each
  depth > 1 beats depth 1 wherever their parameter ranges overlap (log-linear interpolation);
  (c) the best depth-5 (deepest) net is near-perfect: accuracy >= ``near_perfect``.
* M2 (fig5): the best deep-net accuracy per curve (max over widths) falls as the curve gets finer: its Spearman
  correlation with P(3) and with P(4) is at least ``M2_RHO`` and its exact permutation p-value (the share of the
  n! orderings of the curves' accuracies whose correlation is at least as large) is at most ``M2_P``.  A zig-zag
  fails, however positive its correlation.
* M3 (fig6, and the tables' finest curve, the one with the lowest P(4)): every architecture's accuracy <= ``near_chance``.
* M4 (fig7, real images): depth helps gradually: the best net (max over widths) is deeper than one layer, and the best
  one-layer (depth 1) net is within ``m4_margin`` of it.  Without depth 1 in the config the claim cannot be judged.

Inconclusive (depthlab.claims.judge), with the reason, when a net the verdict rests on did not converge (its test
accuracy still rising when its budget ran out) or its chosen rate sits at an edge of its grid that could not grow, or
when every net is at chance (<= ``near_chance``: nothing was learned, so no ordering means anything; M1, M2, M4).
Best-along-the-run accuracy can only rise with more training, so a verdict more training cannot reverse does not rest
on an unconverged net: M1 (c) holding (a net already reached ``near_perfect``), and M3 not holding (an architecture
already beat chance).
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from depthlab.claims import Verdict, flagged, judge, unconverged

if TYPE_CHECKING:
    from .specs import ClaimsSpec

from .plots import best, curve_table

NOTES = ["Criteria: see the docstring of `depthlab/studies/fractals/claims.py`.",
         "Depth counts hidden layers (the authors' T); accuracy: best along the run, mean over seeds, at each net's chosen rate "
         "(every rate's row is in the figure tables; the chosen rate is printed beside each number)."]
M2_RHO, M2_P = 0.8, 0.05


def _rho(a, b) -> float:
    return float(spearmanr(a, b).statistic) if len(a) >= 2 and np.ptp(a) > 0 and np.ptp(b) > 0 else float("nan")


def _net(r) -> str:
    parts = [f"{k} {getattr(r, k)}" for k in ("pdeg", "depth", "width") if hasattr(r, k)]
    return ", ".join(parts)


def _unsound(rows: pd.DataFrame) -> list[str]:
    """The nets of ``rows`` (from :func:`best`) that did not converge, and chosen rates at a flagged edge."""
    return [unconverged(rows, _net, diverged=None), flagged(rows, _net)]


def _at_chance(rows: pd.DataFrame, near_chance: float) -> str:
    top = rows.best_accuracy.max() if len(rows) else np.nan
    return (f"every net is at chance (best {top:.3f} <= {near_chance}): nothing was learned, so no ordering of the nets means "
            "anything") if np.isfinite(top) and top <= near_chance else ""


def permutation_p(x: np.ndarray, y: np.ndarray) -> float:
    """Exact one-sided p-value of Spearman's rho between x and y: the share of the len(y)! orderings of y whose rho with x is
    at least the observed one (ties broken as spearmanr does)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) > 8:
        raise ValueError("the exact test enumerates len(x)! orderings: at most 8 curves")
    obs = _rho(x, y)
    if not np.isfinite(obs):
        return float("nan")
    hits = sum(_rho(x, y[list(p)]) >= obs - 1e-12 for p in itertools.permutations(range(len(y))))
    return hits / math.factorial(len(y))


def m1(table: pd.DataFrame, near_perfect: float, near_chance: float = 0.6) -> list[Verdict]:
    out = []
    b = best(table, ["depth", "width", "n_params"])
    depths = sorted(b.depth.unique())
    chance = _at_chance(b, near_chance)
    per_width = []
    for w, g in b.groupby("width"):
        if g.depth.nunique() < 2:  # a width only one depth has (fig4.extra_nets): no comparison at equal width
            continue
        g = g.sort_values("depth")
        per_width.append((w, g.best_accuracy.iloc[-1] > g.best_accuracy.iloc[0] and _rho(g.depth, g.best_accuracy) > 0,
                          ", ".join(f"{int(r.depth)}: {r.best_accuracy:.3f} (lr {r.lr:g})" for r in g.itertuples())))
    out.append(judge("M1", "coarse curve: deeper nets are more accurate at equal width", "fig4", "2-D Cantor, coarse",
                     bool(all(ok for _, ok, _ in per_width)) if per_width else None,
                     "; ".join(f"width {w}: depth->acc {txt}" + ("" if ok else " (NOT deeper-better)") for w, ok, txt in per_width),
                     _unsound(b) + [chance], why_none="no width has two depths"))
    shallow = b[b.depth == depths[0]].sort_values("n_params")
    comps = []
    for T in depths[1:]:
        g = b[b.depth == T].sort_values("n_params")
        inside = shallow[(shallow.n_params >= g.n_params.min()) & (shallow.n_params <= g.n_params.max())]
        for r in inside.itertuples():
            deep = float(np.interp(np.log(r.n_params), np.log(g.n_params), g.best_accuracy))
            comps.append((T, r.n_params, deep, r.best_accuracy))
    out.append(judge("M1", "coarse curve: deeper nets are more accurate at equal parameter count", "fig4", "2-D Cantor, coarse",
                     bool(all(d > s for _, _, d, s in comps)) if comps else None,
                     "; ".join(f"depth {T} vs {depths[0]} at {P} params: {d:.3f} vs {s:.3f}" for T, P, d, s in comps),
                     _unsound(b) + [chance], why_none="no overlapping parameter ranges"))
    deepest = best(table, ["depth", "width"])
    deepest = deepest[deepest.depth == depths[-1]]
    top = deepest.loc[deepest.best_accuracy.idxmax()]
    holds = bool(top.best_accuracy >= near_perfect)
    out.append(judge("M1", "coarse curve: a wide deepest net is near-perfect", "fig4", f"depth {depths[-1]}", holds,
                     f"best accuracy {top.best_accuracy:.4f} at width {int(top.width)}, lr {top.lr:g} (need >= {near_perfect}); "
                     "depth-{} nets: ".format(depths[-1]) + ", ".join(
                         f"width {int(r.width)} {r.best_accuracy:.4f}" for r in deepest.sort_values("width").itertuples()),
                     [] if holds else _unsound(deepest)))  # holding cannot be undone by more training (module docstring)
    return out


def m2(table: pd.DataFrame, near_chance: float = 0.6) -> list[Verdict]:
    curves = curve_table(table)  # coarse to fine by P(4)
    acc = curves.best_accuracy
    chosen = best(table, ["pdeg", "width"])
    problems = _unsound(chosen[chosen.set_index(["pdeg", "width"]).index.isin(list(zip(curves.index, curves.width)))]) \
        + [_at_chance(curves, near_chance)]
    out = []
    for col in ("P3", "P4"):
        if col not in curves:
            continue
        r, p = _rho(acc.values, curves[col].values), permutation_p(curves[col].values, acc.values)
        holds = bool(r >= M2_RHO and p <= M2_P) if np.isfinite(r) else None
        out.append(judge("M2", f"best deep-net accuracy falls as the curve gets finer (rank-correlates with {col.replace('P', 'P(')}))",
                         "fig5", "2-D Cantor", holds,
                         f"Spearman = {r:+.2f} (need >= {M2_RHO}), exact permutation p = {p:.3g} over {len(acc)}! orderings "
                         f"(need <= {M2_P}); coarse to fine: " + ", ".join(
                             f"pdeg {p_}: acc {a:.3f} (w {int(w)}, lr {lr:g}), {col} {c:.3f}"
                             for p_, a, w, lr, c in zip(curves.index, acc.values, curves.width, curves.lr, curves[col].values)),
                         problems, why_none="the accuracies (or the curve) do not vary: no ranking"))
    return out


def m3(table: pd.DataFrame, near_chance: float, figure: str, subject: str) -> Verdict:
    b = best(table, ["depth", "width"])
    top = b.loc[b.best_accuracy.idxmax()]
    holds = bool(top.best_accuracy <= near_chance)
    return judge("M3", "fine curve: every architecture is near chance", figure, subject, holds,
                 f"best of {len(b)} architectures: {top.best_accuracy:.4f} (depth {int(top.depth)}, width {int(top.width)}, "
                 f"lr {top.lr:g}; need <= {near_chance}); worst {b.best_accuracy.min():.4f}",
                 _unsound(b) if holds else [])  # beating chance cannot be undone by more training


def check(spec: "ClaimsSpec", tables: dict[str, pd.DataFrame]) -> tuple[list[Verdict], list[str]]:
    out = []
    if "fig4" in tables:
        out += m1(tables["fig4"], spec.near_perfect, spec.near_chance)
    if "fig5" in tables:
        out += m2(tables["fig5"], spec.near_chance)
    if "fig6" in tables:
        t = tables["fig6"]
        out.append(m3(t, spec.near_chance, "fig6", f"{t.fractal.iloc[0]} depth {t.n.iloc[0]}, pdeg {t.pdeg.iloc[0]}"))
    if "tables" in tables:
        t = tables["tables"]
        for f, g in t.groupby("fractal"):
            fine = g.groupby("pdeg").P4.first().idxmin() if "P4" in g else g.pdeg.max()
            g = g[g.pdeg == fine]
            out.append(m3(g, spec.near_chance, "tables", f"{f} depth {g.n.iloc[0]}, pdeg {fine} (its lowest P(4))"))
    if "fig7" in tables:
        out.append(m4(tables["fig7"], spec.m4_margin))
    return out, [spec.scale_note, *NOTES]


def m4(table: pd.DataFrame, margin: float) -> Verdict:
    """Depth helps gradually on real data: the best net is deeper than 1 layer, and 1 layer is within ``margin`` of it."""
    per = best(table, ["depth", "width"])  # mean over seeds at each net's chosen rate, per architecture
    per_depth = per.loc[per.groupby("depth").best_accuracy.idxmax()].sort_values("depth")  # the best width per depth
    top = per_depth.loc[per_depth.best_accuracy.idxmax()]
    subject = str(table.dataset.iloc[0]) if "dataset" in table else "real images"
    statement = "real data: depth helps gradually (the best net is deeper than 1 layer, and 1 layer is within the margin)"
    shown = "best over widths per depth: " + ", ".join(f"{int(r.depth)}: {r.best_accuracy:.4f} (w {int(r.width)}, lr {r.lr:g})"
                                                       for r in per_depth.itertuples())
    one = per_depth[per_depth.depth == 1]
    if one.empty:
        return judge("M4", statement, "fig7", subject, None, shown,
                     why_none=f"depth 1 is not in the config (depths {sorted(per_depth.depth.astype(int).tolist())}): no one-layer net to compare")
    one = one.iloc[0]
    gap = float(top.best_accuracy - one.best_accuracy)
    holds = bool(top.depth > 1 and gap <= margin)
    return judge("M4", statement, "fig7", subject, holds,
                 shown + f"; best depth {int(top.depth)}; depth 1 is {gap:.4f} below it (need > 1 layer best and gap <= {margin:g})",
                 _unsound(per) + [_at_chance(per, 0.1 + margin)])
