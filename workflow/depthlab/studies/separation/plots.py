"""Depth-separation figures: a tidy table in, a matplotlib Figure out."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from depthlab import plotstyle as ps

from .sawtooth import mse_bound


def _style(arch: str) -> tuple[str, str]:
    kind = arch.split("-")[0]
    return {"deep": (ps.NET, "o"), "shallow": (ps.NTK, "s"), "construct": (ps.EMPIRICAL, "^"), "construction": ("", "*")}[kind]


def _arch_label(arch: str, g: pd.DataFrame) -> str:
    if arch == "construction":
        return "hand-built depth L, width 2 (exact)"
    kind, w = arch.split("-w")
    label = {"deep": f"depth L, width {w}, random init", "shallow": f"1 hidden layer, as many parameters as depth L width {w}",
             "construct": "hand-built + noise, trained"}[kind]
    return label


def error_figure(table: pd.DataFrame) -> plt.Figure:
    """Best (by training loss) test MSE vs L per architecture; the shallow nets' lower bound for w + 1 pieces (the larger
    of the crossing-count and window bounds, positive while w + 1 < 2^L)."""
    fig, axes = ps.panels(1, width=6.5, height=5.2)
    ax = axes[0]
    archs = sorted(table.arch.unique())
    colors = dict(zip(archs, sns.color_palette("tab10", len(archs))))
    for arch in archs:
        g = table[(table.arch == arch) & table.best].sort_values("level")
        style, marker = _style(arch)
        y = np.maximum(g.test_mse.values, 1e-12)
        ax.plot(g.level, y, style or "none", marker=marker, color=colors[arch], label=_arch_label(arch, g), ms=6)
        if arch.startswith("shallow"):
            ax.plot(g.level, np.maximum(mse_bound(g.width.values + 1, g.level.values), 1e-12), ":", color=colors[arch], lw=2,
                    alpha=0.6, label=f"lower bound, 1 hidden layer of width {int(g.width.iloc[-1])} (w + 1 pieces)")
    ax.axhline(1 / 12, color="grey", lw=1, label="the constant 1/2 (MSE 1/12)")
    ax.set_yscale("log")
    ax.set_xlabel("L (target $\\Delta^L$ has $2^L$ linear pieces)")
    ax.set_ylabel("test MSE of the best net (by training loss); exact construction at 1e-12")
    ps.legend_below(ax, ncol=1)
    return ps.finish(fig, "Telgarsky's sawtooth: what depth can express vs what training finds")


def pieces_figure(table: pd.DataFrame) -> plt.Figure:
    """Exact linear pieces of the best net of each architecture vs L, against 2^L."""
    fig, axes = ps.panels(1, width=6.5, height=5.2)
    ax = axes[0]
    archs = sorted(table.arch.unique())
    colors = dict(zip(archs, sns.color_palette("tab10", len(archs))))
    levels = np.array(sorted(table.level.unique()))
    ax.plot(levels, 2.0**levels, color="grey", lw=2, alpha=0.5, label="$2^L$ (the target)")
    for arch in archs:
        g = table[(table.arch == arch) & table.best].sort_values("level")
        style, marker = _style(arch)
        ax.plot(g.level, g.pieces, style or "none", marker=marker, color=colors[arch], label=_arch_label(arch, g), ms=6)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("L")
    ax.set_ylabel("linear pieces on [0, 1] (exact, from the weights)")
    ps.legend_below(ax, ncol=1)
    return ps.finish(fig, "Linear pieces found by training vs the $2^L$ of $\\Delta^L$")


def functions_figure(curves: pd.DataFrame) -> plt.Figure:
    levels = sorted(curves.level.unique())
    fig, axes = ps.panels(len(levels), width=4.6, height=4.0)
    for ax, L in zip(axes, levels):
        part = curves[curves.level == L]
        for name, g in part.groupby("curve", sort=True):
            if name == "target":
                ax.plot(g.x, g.y, color="black", lw=2.5, alpha=0.35, label="$\\Delta^L$")
            else:
                style, _ = _style(name)
                ax.plot(g.x, g.y, style, lw=1, label=name)
        ax.set_title(f"L = {L}")
        ax.set_xlabel("x")
        ps.legend_below(ax, ncol=2)
    return ps.finish(fig, "Trained functions (best by training loss) against the sawtooth")


def radial_figure(table: pd.DataFrame) -> plt.Figure:
    """Normalised test MSE vs d per depth (mean +- std over seeds), one panel per (target, distribution), styles per budget."""
    groups = sorted({(t, q) for t, q in zip(table.target, table.dist)})
    fig, axes = ps.panels(len(groups), width=4.4, height=4.6)
    depths = sorted(table.depth.unique())
    colors = dict(zip(depths, sns.color_palette("viridis", len(depths))))
    budgets = sorted(table.budget.unique())
    styles = dict(zip(budgets, ["-", "--", ":", "-."]))
    for ax, (t, q) in zip(axes, groups):
        part = table[(table.target == t) & (table.dist == q)]
        for (P, L), g in part.groupby(["budget", "depth"]):
            ps.mean_sd(ax, g, "d", "test_nmse", colors[L], f"depth {L} ({L + 1}-layer), P = {P}", fmt=styles[P] + "o")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("input dimension d")
        ax.set_ylabel("test MSE / Var(y)")
        ax.set_title(f"{t} target, {q.replace('_', '-')} inputs", fontsize=9)
        ps.legend_below(ax, ncol=2)
    return ps.finish(fig, "Radial targets: error vs dimension at equal parameter count, per depth")
