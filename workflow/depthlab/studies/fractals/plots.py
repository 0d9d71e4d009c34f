"""Fractal figures: a tidy table in, a matplotlib Figure out.

Accuracies are the paper's numbers: the best test accuracy along the run, the mean over seeds, then the maximum over
learning rates (:func:`best`, which also says which rate won); the rate is written beside every point or cell.
Accuracy axes span chance to 1 (0.5 to 1.0), as the paper draws them.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from depthlab import plotstyle as ps

CHANCE, PERFECT = 0.5, 1.0


SOUND = ("converged", "lr_flagged", "lr_edge")  # what a verdict rests on, carried with the chosen rows


def best(table: pd.DataFrame, keys: list[str], value: str = "best_accuracy") -> pd.DataFrame:
    """Mean of ``value`` over seeds at each net's chosen rate (the store's ``chosen`` column: the best over its grid),
    then the max over whatever of the nets' coordinates is not in ``keys``; ``lr`` is the rate that gave it.  Without
    a ``chosen`` column, the max over learning rates.  A net whose every seed has no value (diverged before its first
    check) is left out; a group with none at all is left out too.  Where the table says how the nets stopped, each
    row also carries ``converged`` (every seed of it) and the rate's ``lr_flagged`` / ``lr_edge``."""
    rows = table[table.chosen.astype(bool)] if "chosen" in table else table
    agg = {value: (value, "mean")}
    if "converged" in rows:
        agg.update(converged=("converged", "all"), lr_flagged=("lr_flagged", "any"), lr_edge=("lr_edge", "first"))
    mean = rows.groupby(keys + ["lr"]).agg(**agg).reset_index().dropna(subset=[value])
    if mean.empty:
        return mean[keys + [c for c in (value, "lr", *SOUND) if c in mean]]
    top = mean.loc[mean.groupby(keys)[value].idxmax()]
    return top.reset_index(drop=True)[keys + [c for c in (value, "lr", *SOUND) if c in top]]


def curve_table(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5's numbers per ``pdeg``, ordered coarse to fine (P(4) falling): ``best`` per width, then the max over widths,
    the width and rate that gave it, beside the curve's P(3), P(4), P(5)."""
    curves = table.groupby("pdeg")[[c for c in ("P3", "P4", "P5") if c in table]].first()
    per = best(table, ["pdeg", "width"])
    top = per.loc[per.groupby("pdeg").best_accuracy.idxmax()].set_index("pdeg")
    out = curves.assign(best_accuracy=top.best_accuracy, width=top.width, lr=top.lr)
    return out.sort_values("P4" if "P4" in out else "P3", ascending=False, kind="stable")


def _mark_unsound(ax: plt.Axes, x, y, rows: pd.DataFrame) -> None:
    """A red ring on every point whose nets did not converge (still improving at the budget), a red square where the chosen
    rate sits at a flagged edge of its grid: the numbers a verdict must not rest on."""
    x, y = np.asarray(x), np.asarray(y)
    if "converged" in rows:
        bad = ~rows.converged.astype(bool).values
        if bad.any():
            ax.plot(x[bad], y[bad], "o", mfc="none", mec="red", ms=9, mew=1.0, label="still improving at the budget")
    if "lr_flagged" in rows:
        bad = rows.lr_flagged.astype(bool).values
        if bad.any():
            ax.plot(x[bad], y[bad], "s", mfc="none", mec="red", ms=10, mew=1.0, label="rate at a grid edge")


def _accuracy_axis(ax: plt.Axes, label: str = "best test accuracy along the run") -> None:
    ax.set_ylim(CHANCE - 0.02, PERFECT + 0.01)
    ax.axhline(CHANCE, color="grey", lw=1, ls=":")
    ax.set_ylabel(label)


def width_figure(table: pd.DataFrame, by_params: bool, title: str) -> plt.Figure:
    fig, axes = ps.panels(2 if by_params else 1, width=5.0, height=4.6)
    depths = sorted(table.depth.unique())
    colors = dict(zip(depths, sns.color_palette("viridis", len(depths))))
    b = best(table, ["depth", "width", "n_params"])
    for ax, x in zip(axes, ["width", "n_params"] if by_params else ["width"]):
        for i, T in enumerate(depths):
            g = b[b.depth == T].sort_values(x)
            ax.plot(g[x], g.best_accuracy, "-o", color=colors[T], ms=4, label=f"depth {T}")
            _mark_unsound(ax, g[x], g.best_accuracy, g)
            for r in g.itertuples():  # every other depth's rates below its points: two depths at one width stay apart
                ax.annotate(
                    f"{r.lr:g}",
                    (getattr(r, x), r.best_accuracy),
                    textcoords="offset points",
                    xytext=(2, 3) if i % 2 == 0 else (2, -8),
                    fontsize=4.5,
                    color=colors[T],
                )
        ax.set_xscale("log")
        ax.set_xlabel({"width": "width", "n_params": "parameters"}[x] + " (numbers: the best learning rate)")
        _accuracy_axis(ax)
        ps.legend_below(ax, ncol=3)
    return ps.finish(fig, title + f" (fractal depth {table.n.iloc[0]}, pdeg {table.pdeg.iloc[0]})")


def curves_figure(table: pd.DataFrame) -> plt.Figure:
    """Fig. 5: the best accuracy of the deep nets per approximation curve, coarse to fine by P(4), beside P(3), P(4), P(5)."""
    fig, axes = ps.panels(1, width=6.5, height=4.8)
    ax = axes[0]
    b = curve_table(table)
    cols = [c for c in b.columns if c.startswith("P")]
    xs = np.arange(1, len(b) + 1)
    ax.plot(
        xs,
        b.best_accuracy.values,
        "-o",
        color="tab:red",
        lw=2,
        label=f"best accuracy, depth {table.depth.iloc[0]} (max over widths and rates)",
    )
    for x, r in zip(xs, b.itertuples()):
        ax.annotate(
            f"w {r.width}, lr {r.lr:g}", (x, r.best_accuracy), textcoords="offset points", xytext=(3, 4), fontsize=5
        )
    for col, c in zip(cols, sns.color_palette("Blues", len(cols) + 1)[1:]):
        ax.plot(xs, b[col].values, "--s", color=c, ms=4, label=col.replace("P", "P(") + ")")
    ax.set_xticks(
        xs, [f"pdeg {p}\nP(4) {r:.2f}" for p, r in zip(b.index, b["P4"] if "P4" in b else b[cols[0]])], fontsize=7
    )
    ax.set_xlabel("approximation curve, coarse to fine (P(4) falling)")
    _accuracy_axis(ax, "accuracy / approximation curve P(j)")
    ps.legend_below(ax, ncol=2)
    return ps.finish(
        fig, "Malach & Shalev-Shwartz Fig. 5: learning depends on the approximation curve (2-D Cantor set)"
    )


def tables_figure(table: pd.DataFrame) -> plt.Figure:
    """Tables 1-2 as heat maps: best accuracy per (depth, width) with its rate, one panel per (fractal, curve)."""
    groups = sorted({(f, p) for f, p in zip(table.fractal, table.pdeg)})
    fig, axes = ps.panels(len(groups), width=3.6, height=3.4)
    b = best(table, ["fractal", "pdeg", "depth", "width"])
    for ax, (f, p) in zip(axes, groups):
        g = b[(b.fractal == f) & (b.pdeg == p)]
        acc = g.pivot(index="depth", columns="width", values="best_accuracy")
        text = g.assign(t=[f"{a:.3f}\nlr {lr:g}" for a, lr in zip(g.best_accuracy, g.lr)]).pivot(
            index="depth", columns="width", values="t"
        )
        sns.heatmap(
            acc,
            annot=text,
            fmt="",
            vmin=CHANCE,
            vmax=PERFECT,
            cmap="viridis",
            cbar=False,
            ax=ax,
            annot_kws={"fontsize": 6},
        )
        ax.set_title(f"{f}, pdeg {p}", fontsize=9)
    return ps.finish(fig, "Malach & Shalev-Shwartz Tables 1-2: best test accuracy per depth and width (and its rate)")


def runs_figure(table: pd.DataFrame) -> plt.Figure:
    """Test accuracy along the run, one line per rate (mean over seeds): a plateau or a climb, not a single number.

    One panel per net of the table (the deepest nets of Fig. 4, every net of Fig. 5)."""
    groups = list(dict.fromkeys(zip(table.fractal, table.pdeg, table.depth, table.width)))
    cols = min(4, len(groups))
    rows = -(-len(groups) // cols)
    ps.theme()
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.0 * rows), squeeze=False)
    lrs = sorted(table.lr.unique())
    colors = dict(zip(lrs, sns.color_palette("rocket", len(lrs))))
    for ax, (f, p, T, w) in zip(axes.ravel(), groups):
        g = table[(table.fractal == f) & (table.pdeg == p) & (table.depth == T) & (table.width == w)]
        for lr, h in g.groupby("lr"):
            m = h.groupby("step").accuracy.mean()
            ax.plot(m.index, m.values, "-", color=colors[lr], lw=1.2, label=f"lr {lr:g}")
        _accuracy_axis(ax, "test accuracy")
        ax.set_title(f"{f}, pdeg {p}, depth {T}, width {w}", fontsize=7)
        ax.set_xlabel("Adam steps")
        ax.legend(fontsize=5, loc="lower right", frameon=False)
    for ax in axes.ravel()[len(groups) :]:
        ax.set_visible(False)
    return ps.finish(fig, "Training curves: test accuracy along the run per learning rate (Figs. 4 and 5 nets)")


def samples_figure(table: pd.DataFrame) -> plt.Figure:
    groups = sorted({(f, n, p) for f, n, p in zip(table.fractal, table.n, table.pdeg)})
    fig, axes = ps.panels(len(groups), width=3.4, height=3.6)
    for ax, (f, n, p) in zip(axes, groups):
        g = table[(table.fractal == f) & (table.n == n) & (table.pdeg == p)]
        y2 = (
            g.x2 if g.x2.notna().any() else np.random.default_rng(0).uniform(-1, 1, len(g))
        )  # 1-D: jitter for visibility
        for lab, color in ((-1, "tab:orange"), (1, "tab:blue")):
            m = g.label == lab
            ax.scatter(
                g.x1[m],
                y2[m],
                s=1,
                color=color,
                alpha=0.6,
                label="positive" if lab > 0 else "negative",
                rasterized=True,
            )
        ax.set_title(f"{f}, depth {n}, pdeg {p}\nP(j) = {g.P_analytic.iloc[0].replace(';', ' ')}", fontsize=7)
        ax.set_aspect("equal" if g.x2.notna().any() else "auto")
        ax.set_xticks([])
        ax.set_yticks([])
    return ps.finish(fig, "Samples of the fractal distributions (blue positive, orange negative)")


def realdata_figure(table: pd.DataFrame, title: str) -> plt.Figure:
    """Fig. 7: best test accuracy of the CNNs vs width, one line per depth, the rate beside each point; and vs depth."""
    fig, axes = ps.panels(2, width=5.0, height=4.6)
    depths = sorted(table.depth.unique())
    colors = dict(zip(depths, sns.color_palette("viridis", len(depths))))
    b = best(table, ["depth", "width"])
    ax = axes[0]
    for T in depths:
        g = b[b.depth == T].sort_values("width")
        ax.plot(g.width, g.best_accuracy, "-o", color=colors[T], ms=4, label=f"depth {T}")
        _mark_unsound(ax, g.width, g.best_accuracy, g)
        for r in g.itertuples():
            ax.annotate(
                f"{r.lr:g}",
                (r.width, r.best_accuracy),
                textcoords="offset points",
                xytext=(2, 3),
                fontsize=4.5,
                color=colors[T],
            )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("width (channels per layer; numbers: the best rate)")
    ax.set_ylabel("best test accuracy along the run")
    ax.set_ylim(0.0, 1.01)
    ax.axhline(0.1, color="grey", lw=1, ls=":")
    ps.legend_below(ax, ncol=4)
    ax = axes[1]
    per_depth = b.groupby("depth").best_accuracy.max()
    ax.plot(per_depth.index, per_depth.values, "-o", color="tab:red")
    ax.set_xlabel("depth (convolutional layers)")
    ax.set_ylabel("best over widths and rates")
    ax.set_ylim(0.0, 1.01)
    ax.set_xticks(depths)
    return ps.finish(fig, title)
