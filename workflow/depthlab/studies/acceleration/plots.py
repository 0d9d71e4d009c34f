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
    fig, axes = plt.subplots(len(datasets), len(pvals), figsize=(width * len(pvals), height * len(datasets)), squeeze=False)
    return fig, {(d, p): axes[i][j] for i, d in enumerate(datasets) for j, p in enumerate(pvals)}


def _colors(depths):
    return dict(zip(sorted(depths), sns.color_palette("viridis", len(depths))))


def loss_figure(curves: pd.DataFrame) -> plt.Figure:
    """Excess training loss L - L* (log) vs iteration per depth at its best rate, balanced start; the end-to-end rule
    dashed over each depth; the target as a grey line."""
    fig, axes = _grid(curves)
    colors = _colors(curves.depth.unique())
    for (d, p), ax in axes.items():
        part = curves[(curves.dataset == d) & (curves.p == p) & (curves.init == "balanced")]
        for N, g in part.groupby("depth"):
            x = np.maximum(g.step, 1)
            ax.plot(x, np.maximum(g.loss - g.optimum_loss, 1e-16), ps.NET, color=colors[N], lw=1.5, label=f"depth {N} (lr {g.lr.iloc[0]:.3g})")
            ax.plot(x, np.maximum(g.rule_loss - g.optimum_loss, 1e-16), ps.NTK, color=colors[N], lw=1, alpha=0.8)
        if len(part):
            ax.axhline(part.target_loss.iloc[0] - part.optimum_loss.iloc[0], color="grey", lw=1, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{d}, l_{p} regression", fontsize=9)
        ax.set_xlabel("iteration (full-batch gradient descent)")
        ax.set_ylabel("training loss - optimum")
        ax.legend(fontsize=5, frameon=False)
    return ps.finish(fig, "Depth as an optimiser: training loss per depth at its best rate (solid: the net; dashed: the end-to-end "
                          "rule from the same start; dotted: the target)")


def iterations_figure(table: pd.DataFrame, best: pd.DataFrame) -> plt.Figure:
    """Iterations to the target per method and depth at its own best rate (written beside each point)."""
    fig, axes = _grid(best, width=5.6, height=3.8)
    for (d, p), ax in axes.items():
        b = best[(best.dataset == d) & (best.p == p)].copy()
        b["label"] = [f"depth {N} ({i})" if m == "gd" else m for N, i, m in zip(b.depth, b.init, b.method)]
        b = b.sort_values(["method", "init", "depth"], key=lambda c: c.map({"gd": 0}).fillna(1) if c.name == "method" else c)
        y = np.arange(len(b))
        finite = b.iterations.fillna(-1)
        colors = ["tab:blue" if m == "gd" and i == "balanced" else "tab:cyan" if m == "gd" else "tab:orange" for m, i in zip(b.method, b.init)]
        ax.barh(y, np.where(finite > 0, finite, 0), color=colors)
        for yy, it, lr in zip(y, b.iterations, b.lr):
            ax.annotate("not reached" if not np.isfinite(it) else f"{int(it)} (lr {lr:.3g})", (max(it if np.isfinite(it) else 0, 1), yy),
                        xytext=(3, -2), textcoords="offset points", fontsize=5)
        ax.set_yticks(y, b.label, fontsize=6)
        ax.set_xscale("log")
        ax.set_xlabel("iterations to the target (each at its best rate)")
        ax.set_title(f"{d}, l_{p} regression", fontsize=9)
    return ps.finish(fig, "Iterations to the target loss: gradient descent on depth-N linear nets vs optimisers of the depth-1 model")


def distance_figure(curves: pd.DataFrame) -> plt.Figure:
    """|w_e(net) - w(rule)| / |w(rule)| along the run at each depth's best rate (balanced start)."""
    fig, axes = _grid(curves)
    colors = _colors(curves.depth.unique())
    for (d, p), ax in axes.items():
        part = curves[(curves.dataset == d) & (curves.p == p) & (curves.init == "balanced") & (curves.depth > 1)]
        for N, g in part.groupby("depth"):
            ax.plot(np.maximum(g.step, 1), np.maximum(g.distance, 1e-12), "-", color=colors[N], label=f"depth {N} (lr {g.lr.iloc[0]:.3g})")
        ax.axhline(0.1, color="grey", lw=1, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{d}, l_{p} regression", fontsize=9)
        ax.set_xlabel("iteration")
        ax.set_ylabel("relative distance net - rule")
        ax.legend(fontsize=5, frameon=False)
    return ps.finish(fig, "The end-to-end rule against the depth-N net (dotted: 0.1)")
