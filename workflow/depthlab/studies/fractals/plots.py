"""Fractal figures: a tidy table in, a matplotlib Figure out.  Accuracies are the best along the run,
the maximum over learning rates of the mean over seeds."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from depthlab import plotstyle as ps


def best(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean best-along-run accuracy over seeds, then the max over learning rates, per ``keys``."""
    return table.groupby(keys + ["lr"]).best_accuracy.mean().groupby(keys).max().reset_index()


def curve_table(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5's numbers per ``pdeg``: ``best`` per width, then the max over widths, beside the curve's P(3), P(4), P(5)."""
    curves = table.groupby("pdeg")[[c for c in ("P3", "P4", "P5") if c in table]].first()
    acc = best(table, ["pdeg", "width"]).groupby("pdeg").best_accuracy.max()
    return curves.assign(best_accuracy=acc)


def width_figure(table: pd.DataFrame, by_params: bool, title: str) -> plt.Figure:
    fig, axes = ps.panels(2 if by_params else 1, width=5.0, height=4.6)
    depths = sorted(table.depth.unique())
    colors = dict(zip(depths, sns.color_palette("viridis", len(depths))))
    b = best(table, ["depth", "width", "n_params"])
    for ax, x in zip(axes, ["width", "n_params"] if by_params else ["width"]):
        for T in depths:
            g = b[b.depth == T].sort_values(x)
            ax.plot(g[x], g.best_accuracy, "-o", color=colors[T], ms=4, label=f"depth {T}")
        ax.axhline(0.5, color="grey", lw=1, ls=":")
        ax.set_xscale("log")
        ax.set_xlabel({"width": "width", "n_params": "parameters"}[x])
        ax.set_ylabel("best test accuracy along the run")
        ps.legend_below(ax, ncol=3)
    return ps.finish(fig, title + f" (fractal depth {table.n.iloc[0]}, pdeg {table.pdeg.iloc[0]})")


def curves_figure(table: pd.DataFrame, pdegs: list[int]) -> plt.Figure:
    """Fig. 5: the best accuracy of the deepest nets for each approximation curve (#1 coarse ... fine), with P(3), P(4), P(5)."""
    fig, axes = ps.panels(1, width=6.5, height=4.8)
    ax = axes[0]
    b = curve_table(table)
    cols = [c for c in b.columns if c != "best_accuracy"]
    xs = np.arange(1, len(pdegs) + 1)
    ax.plot(xs, [b.best_accuracy.get(p, np.nan) for p in pdegs], "-o", color="tab:red", lw=2,
            label=f"best accuracy, depth {table.depth.iloc[0]} (max over widths)")
    for col, c in zip(cols, sns.color_palette("Blues", len(cols) + 1)[1:]):
        ax.plot(xs, [b[col].get(p, np.nan) for p in pdegs], "--s", color=c, ms=4, label=col.replace("P", "P(") + ")")
    ax.set_xticks(xs, [f"#{i}\npdeg {p}" for i, p in zip(xs, pdegs)])
    ax.set_xlabel("approximation curve (coarse to fine)")
    ax.set_ylabel("accuracy / approximation curve P(j)")
    ps.legend_below(ax, ncol=2)
    return ps.finish(fig, "Malach & Shalev-Shwartz Fig. 5: learning depends on the approximation curve (2-D Cantor set)")


def tables_figure(table: pd.DataFrame) -> plt.Figure:
    """Tables 1-2 as heat maps: best accuracy per (depth, width), one panel per (fractal, curve)."""
    groups = sorted({(f, p) for f, p in zip(table.fractal, table.pdeg)})
    fig, axes = ps.panels(len(groups), width=3.6, height=3.4)
    b = best(table, ["fractal", "pdeg", "depth", "width"])
    for ax, (f, p) in zip(axes, groups):
        g = b[(b.fractal == f) & (b.pdeg == p)].pivot(index="depth", columns="width", values="best_accuracy")
        sns.heatmap(g, annot=True, fmt=".3f", vmin=0.5, vmax=1.0, cmap="viridis", cbar=False, ax=ax, annot_kws={"fontsize": 7})
        ax.set_title(f"{f}, pdeg {p}", fontsize=9)
    return ps.finish(fig, "Malach & Shalev-Shwartz Tables 1-2: best test accuracy per depth and width")


def samples_figure(table: pd.DataFrame) -> plt.Figure:
    groups = sorted({(f, n, p) for f, n, p in zip(table.fractal, table.n, table.pdeg)})
    fig, axes = ps.panels(len(groups), width=3.4, height=3.6)
    for ax, (f, n, p) in zip(axes, groups):
        g = table[(table.fractal == f) & (table.n == n) & (table.pdeg == p)]
        y2 = g.x2 if g.x2.notna().any() else np.random.default_rng(0).uniform(-1, 1, len(g))  # 1-D: jitter for visibility
        for lab, color in ((-1, "tab:orange"), (1, "tab:blue")):
            m = g.label == lab
            ax.scatter(g.x1[m], y2[m], s=1, color=color, alpha=0.6, label="positive" if lab > 0 else "negative", rasterized=True)
        ax.set_title(f"{f}, depth {n}, pdeg {p}\nP(j) = {g.P_analytic.iloc[0].replace(';', ' ')}", fontsize=7)
        ax.set_aspect("equal" if g.x2.notna().any() else "auto")
        ax.set_xticks([])
        ax.set_yticks([])
    return ps.finish(fig, "Samples of the fractal distributions (blue positive, orange negative)")
