"""Malach & Shalev-Shwartz's claims (SPEC §2), checked against the fig4, fig5, fig6, tables and fig7 tables.

Accuracy is the best test accuracy along the run (the paper's number): the mean over seeds, then the maximum over
learning rates (the paper: "different learning rates").  Criteria (fixed here, printed in the report):

* M1 (coarse curve, fig4): (a) at every width, the deepest net beats depth 1 and accuracy
  rank-correlates positively with depth (Spearman > 0); (b) at equal parameter count, each
  depth > 1 beats depth 1 wherever their parameter ranges overlap (log-linear interpolation);
  (c) the best depth-5 (deepest) net is near-perfect: accuracy >= ``near_perfect``.
* M2 (fig5): the best deep-net accuracy per curve (max over widths) rank-correlates positively (Spearman > 0)
  with P(3) and with P(4).
* M3 (fig6, and the tables' finest curve, the one with the lowest P(4)): every architecture's accuracy <= ``near_chance``.
* M4 (fig7, real images): depth helps gradually: the best net (max over widths and rates) is deeper than one layer,
  and the best one-layer net is within ``m4_margin`` of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from depthlab.claims import Verdict

if TYPE_CHECKING:
    from .specs import ClaimsSpec

from .plots import best, curve_table

NOTES = ["Criteria: see the docstring of `depthlab/studies/fractals/claims.py`.",
         "Depth counts hidden layers (the authors' T); accuracy: best along the run, mean over seeds, max over learning rates "
         "(every rate's row is in the figure tables; the chosen rate is printed beside each number)."]


def _rho(a, b) -> float:
    return float(spearmanr(a, b).statistic) if len(a) >= 2 and np.ptp(a) > 0 and np.ptp(b) > 0 else float("nan")


def m1(table: pd.DataFrame, near_perfect: float) -> list[Verdict]:
    out = []
    b = best(table, ["depth", "width", "n_params"]).drop(columns="lr")
    depths = sorted(b.depth.unique())
    per_width = []
    for w, g in b.groupby("width"):
        g = g.sort_values("depth")
        per_width.append((w, g.best_accuracy.iloc[-1] > g.best_accuracy.iloc[0] and _rho(g.depth, g.best_accuracy) > 0,
                          ", ".join(f"{int(r.depth)}: {r.best_accuracy:.3f}" for r in g.itertuples())))
    out.append(Verdict("M1", "coarse curve: deeper nets are more accurate at equal width", "fig4", "2-D Cantor, coarse",
                       bool(all(ok for _, ok, _ in per_width)),
                       "; ".join(f"width {w}: depth->acc {txt}" + ("" if ok else " (NOT deeper-better)") for w, ok, txt in per_width)))
    shallow = b[b.depth == depths[0]].sort_values("n_params")
    comps = []
    for T in depths[1:]:
        g = b[b.depth == T].sort_values("n_params")
        inside = shallow[(shallow.n_params >= g.n_params.min()) & (shallow.n_params <= g.n_params.max())]
        for r in inside.itertuples():
            deep = float(np.interp(np.log(r.n_params), np.log(g.n_params), g.best_accuracy))
            comps.append((T, r.n_params, deep, r.best_accuracy))
    out.append(Verdict("M1", "coarse curve: deeper nets are more accurate at equal parameter count", "fig4", "2-D Cantor, coarse",
                       bool(comps) and all(d > s for _, _, d, s in comps) if comps else None,
                       "; ".join(f"depth {T} vs {depths[0]} at {P} params: {d:.3f} vs {s:.3f}" for T, P, d, s in comps)
                       or "no overlapping parameter ranges"))
    deepest = best(table, ["depth", "width"])
    deepest = deepest[deepest.depth == depths[-1]]
    top = deepest.loc[deepest.best_accuracy.idxmax()]
    out.append(Verdict("M1", "coarse curve: a wide deepest net is near-perfect", "fig4", f"depth {depths[-1]}",
                       bool(top.best_accuracy >= near_perfect),
                       f"best accuracy {top.best_accuracy:.4f} at width {int(top.width)}, lr {top.lr:g} (need >= {near_perfect})"))
    return out


def m2(table: pd.DataFrame) -> list[Verdict]:
    curves = curve_table(table)  # coarse to fine by P(4)
    acc = curves.best_accuracy
    out = []
    for col in ("P3", "P4"):
        if col not in curves:
            continue
        r = _rho(acc.values, curves[col].values)
        out.append(Verdict("M2", f"best deep-net accuracy falls as the curve gets finer (rank-correlates with {col.replace('P', 'P(')}))",
                           "fig5", "2-D Cantor", bool(r > 0) if np.isfinite(r) else None,
                           f"Spearman = {r:+.2f}; coarse to fine: " + ", ".join(
                               f"pdeg {p}: acc {a:.3f} (w {int(w)}, lr {lr:g}), {col} {c:.3f}"
                               for p, a, w, lr, c in zip(curves.index, acc.values, curves.width, curves.lr, curves[col].values))))
    return out


def m3(table: pd.DataFrame, near_chance: float, figure: str, subject: str) -> Verdict:
    b = best(table, ["depth", "width"])
    top = b.loc[b.best_accuracy.idxmax()]
    return Verdict("M3", "fine curve: every architecture is near chance", figure, subject, bool(top.best_accuracy <= near_chance),
                   f"best of {len(b)} architectures: {top.best_accuracy:.4f} (depth {int(top.depth)}, width {int(top.width)}, "
                   f"lr {top.lr:g}; need <= {near_chance}); worst {b.best_accuracy.min():.4f}")


def check(spec: "ClaimsSpec", tables: dict[str, pd.DataFrame]) -> tuple[list[Verdict], list[str]]:
    out = []
    if "fig4" in tables:
        out += m1(tables["fig4"], spec.near_perfect)
    if "fig5" in tables:
        out += m2(tables["fig5"])
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
    per = best(table, ["depth", "width"])  # mean over seeds, best rate, per architecture
    per_depth = per.loc[per.groupby("depth").best_accuracy.idxmax()].sort_values("depth")  # the best width per depth
    top = per_depth.loc[per_depth.best_accuracy.idxmax()]
    one = per_depth[per_depth.depth == per_depth.depth.min()].iloc[0]
    gap = float(top.best_accuracy - one.best_accuracy)
    holds = bool(top.depth > one.depth and gap <= margin)
    return Verdict("M4", "real data: depth helps gradually (the best net is deeper than 1 layer, and 1 layer is within the margin)",
                   "fig7", str(table.dataset.iloc[0]) if "dataset" in table else "real images", holds,
                   "best over widths and rates per depth: " + ", ".join(f"{int(r.depth)}: {r.best_accuracy:.4f} (w {int(r.width)}, lr {r.lr:g})"
                                                                        for r in per_depth.itertuples())
                   + f"; best depth {int(top.depth)}; depth {int(one.depth)} is {gap:.4f} below it (need > 1 layer best and gap <= {margin:g})")
