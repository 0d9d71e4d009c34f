"""Acceleration figures: a tidy table in, a matplotlib Figure out."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from depthlab import plotstyle as ps


def _grid(table: pd.DataFrame, width: float = 4.4, height: float = 3.6):
    keys = sorted({(d, p) for d, p in zip(table.dataset, table.p)})
    ps.theme()
    datasets = sorted({k[0] for k in keys})
    pvals = sorted({k[1] for k in keys})
    fig, axes = plt.subplots(
        len(datasets), len(pvals), figsize=(width * len(pvals), height * len(datasets)), squeeze=False
    )
    return fig, {(d, p): axes[i][j] for i, d in enumerate(datasets) for j, p in enumerate(pvals)}


def _colors(depths):
    return dict(zip(sorted(depths), sns.color_palette("viridis", len(depths))))


def _empty(ax: plt.Axes, why: str) -> None:
    """A panel with nothing to draw says why, instead of standing blank."""
    ax.text(0.5, 0.5, why, ha="center", va="center", fontsize=7, wrap=True, transform=ax.transAxes, color="grey")


def loss_figure(curves: pd.DataFrame) -> plt.Figure:
    """Excess training loss L - L* (log) vs iteration per depth at its best rate (for the tightest target it reaches),
    balanced start; the end-to-end rule dashed over each depth; the tightest target as a grey line."""
    fig, axes = _grid(curves)
    colors = _colors(curves.depth.unique())
    for (d, p), ax in axes.items():
        part = curves[(curves.dataset == d) & (curves.p == p) & (curves.init == "balanced") & (curves.which == "best")]
        for N, g in part.groupby("depth"):
            x = np.maximum(g.step, 1)
            ax.plot(
                x,
                np.maximum(g.loss - g.optimum_loss, 1e-16),
                ps.NET,
                color=colors[N],
                lw=1.5,
                label=f"depth {N} (lr {g.lr.iloc[0]:.3g})",
            )
            ax.plot(x, np.maximum(g.rule_loss - g.optimum_loss, 1e-16), ps.NTK, color=colors[N], lw=1, alpha=0.8)
        if len(part):
            ax.axhline(part.target_loss.iloc[0] - part.optimum_loss.iloc[0], color="grey", lw=1, ls=":")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.legend(fontsize=5, frameon=False)
        else:
            _empty(ax, "no depth reached a target at any rate (balanced start)")
        ax.set_title(f"{d}, l_{p} regression", fontsize=9)
        ax.set_xlabel("iteration (full-batch gradient descent)")
        ax.set_ylabel("training loss - optimum")
    return ps.finish(
        fig,
        "Depth as an optimiser: training loss per depth at its best rate (solid: the net; dashed: the end-to-end "
        "rule from the same start; dotted: the tightest target)",
    )


def iterations_figure(table: pd.DataFrame, best: pd.DataFrame) -> plt.Figure:
    """Iterations to each target per method and depth at its own best rate for that target (a bar per target, the rate
    beside it); a target not reached is drawn hollow at the iterations the runs went on without reaching it."""
    fig, axes = _grid(best, width=6.2, height=4.4)
    fracs = sorted(best.fraction.unique(), reverse=True)
    shades = dict(zip(fracs, sns.color_palette("Blues", len(fracs) + 1)[1:]))
    for (d, p), ax in axes.items():
        b = best[(best.dataset == d) & (best.p == p)].copy()
        b["label"] = [f"depth {N} ({i})" if m == "gd" else m for N, i, m in zip(b.depth, b.init, b.method)]
        order = (
            b.drop_duplicates("label")
            .sort_values(
                ["method", "init", "depth"], key=lambda c: c.map({"gd": 0}).fillna(1) if c.name == "method" else c
            )
            .label.tolist()
        )
        h = 0.8 / len(fracs)
        for k, f in enumerate(fracs):
            g = b[b.fraction == f].set_index("label").reindex(order)
            y = np.arange(len(order)) + (k - (len(fracs) - 1) / 2) * h
            reached = np.isfinite(g.iterations.values)
            ax.barh(y[reached], g.iterations.values[reached], height=h, color=shades[f], label=f"target f = {f:g}")
            ax.barh(
                y[~reached], g.reached_below.values[~reached], height=h, fill=False, edgecolor=shades[f], hatch="//"
            )
            for yy, it, lr, below in zip(y, g.iterations.values, g.lr.values, g.reached_below.values):
                text = f"{int(it)} (lr {lr:.3g})" if np.isfinite(it) else f"not reached in {int(below)}"
                ax.annotate(
                    text,
                    (max(it if np.isfinite(it) else below, 1), yy),
                    xytext=(3, -1.5),
                    textcoords="offset points",
                    fontsize=4,
                )
        ax.set_yticks(np.arange(len(order)), order, fontsize=6)
        ax.set_xscale("log")
        ax.set_xlabel("iterations to the target (each at its best rate for it)")
        ax.set_title(f"{d}, l_{p} regression", fontsize=9)
        ps.legend_below(ax, ncol=len(fracs))
    return ps.finish(
        fig,
        "Iterations to the targets L* + f (L(0) - L*): gradient descent on depth-N linear nets vs optimisers of "
        "the depth-1 model",
    )


def distance_figure(curves: pd.DataFrame) -> plt.Figure:
    """|w_e(net) - w(rule)| / |w(rule)| along the run, balanced start: solid at each depth's largest rate in the
    gradient-flow regime (where A3 is judged), faint at its best rate."""
    fig, axes = _grid(curves)
    colors = _colors(curves.depth.unique())
    for (d, p), ax in axes.items():
        part = curves[(curves.dataset == d) & (curves.p == p) & (curves.init == "balanced") & (curves.depth > 1)]
        for (N, which), g in part.groupby(["depth", "which"]):
            style = dict(lw=1.5, alpha=1.0) if which == "flow" else dict(lw=0.8, alpha=0.4)
            ax.plot(
                np.maximum(g.step, 1),
                np.maximum(g.distance, 1e-12),
                "-",
                color=colors[N],
                label=f"depth {N}, {which} rate {g.lr.iloc[0]:.3g}",
                **style,
            )
        ax.axhline(0.1, color="grey", lw=1, ls=":")
        if len(part):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.legend(fontsize=5, frameon=False)
        else:
            _empty(ax, "no depth >= 2 has a rate in the flow regime or reaching a target")
        ax.set_title(f"{d}, l_{p} regression", fontsize=9)
        ax.set_xlabel("iteration")
        ax.set_ylabel("relative distance net - rule")
    return ps.finish(
        fig,
        "The end-to-end rule against the depth-N net (solid: at the largest rate in the gradient-flow regime; "
        "faint: at the best rate; dotted: 0.1)",
    )
