"""Spectra figures: a tidy table in, a matplotlib Figure out."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from depthlab import plotstyle as ps

LABEL = {
    "rf": "RF (NNGP)",
    "ntk": "NTK",
    "rf_bias": "RF, 2 layers with bias",
    "ntk_bias": "NTK, 2 layers with bias",
    "mu_ntk": "Mori & Ueda NTK",
    "mu_nngp": "Mori & Ueda NNGP",
    "laplace": "Laplace exp(-sqrt(1-u))",
}
ROWS = [("rf", "rf_bias"), ("ntk", "ntk_bias"), ("mu_ntk",), ("mu_nngp",), ("laplace",)]


def _layers(kernel: str, depth: int) -> str:
    if kernel == "laplace":
        return "Laplace"
    if kernel.startswith("mu_"):
        return f"depth {depth}"
    return f"depth {depth} (L = {depth + 1} layers)"


def eigen_figure(table: pd.DataFrame, title: str) -> plt.Figure:
    """mu_k vs k (log-log), one row per kernel family, one panel per d, one colour per depth.

    Only reliable eigenvalues are drawn (where the two quadratures agree): even k as a line,
    odd k as dots of the same colour.  The grey line has the theory's slope, -(d + 2 nu - 1).
    """
    rows = [r for r in ROWS if set(r) & set(table.kernel)]
    dims = sorted(table.d.unique())
    ps.theme()
    fig, axes = plt.subplots(len(rows), len(dims), figsize=(3.6 * len(dims), 3.4 * len(rows)), squeeze=False)
    depths = sorted(table.depth.unique())
    colors = dict(zip(depths, sns.color_palette("viridis", len(depths))))
    for r, family in enumerate(rows):
        for c, d in enumerate(dims):
            ax = axes[r][c]
            part = table[table.kernel.isin(family) & (table.d == d) & table.reliable & (table.mu > 0) & (table.k > 0)]
            for (kern, L), g in part.groupby(["kernel", "depth"]):
                style = "--" if kern.endswith("_bias") else "-"
                even, odd = g[g.k % 2 == 0], g[g.k % 2 == 1]
                ax.plot(
                    even.k,
                    even.mu,
                    style,
                    color=colors[L],
                    lw=1,
                    label=f"{_layers(kern, L)}" + (" bias" if kern.endswith("_bias") else ""),
                )
                ax.plot(odd.k, odd.mu, ".", color=colors[L], ms=2)
            if not part.empty:
                theory = part.theory_slope.iloc[0]
                k0 = np.array([part.k.min() * 4, part.k.max()])
                anchor = part[part.k == part.k.max() // 2].mu.max()
                if np.isfinite(anchor):
                    ax.plot(
                        k0,
                        anchor * (k0 / (part.k.max() // 2)) ** theory,
                        color="grey",
                        lw=2,
                        alpha=0.5,
                        label=f"k^{theory:g} (theory)",
                    )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{LABEL[family[0]]}, d = {d}", fontsize=9)
            ax.set_xlabel("k")
            ax.set_ylabel("$\\mu_k$")
            if c == len(dims) - 1:
                ax.legend(fontsize=5, loc="lower left", frameon=False)
    return ps.finish(fig, title + " (lines: even k; dots: odd k; unreliable digits not drawn)")


def slope_figure(table: pd.DataFrame) -> plt.Figure:
    """Fitted tail slope vs depth, one panel per kernel family, one colour per d; the theory as dotted lines."""
    families = [f for f in ("rf", "ntk", "mu_ntk", "mu_nngp") if f in set(table.kernel)]
    fig, axes = ps.panels(len(families), width=4.2, height=4.0)
    dims = sorted(table.d.unique())
    colors = dict(zip(dims, sns.color_palette("tab10", len(dims))))
    for ax, fam in zip(axes, families):
        extra = {"rf": "rf_bias", "ntk": "ntk_bias"}.get(fam)
        for d in dims:
            for parity, marker, style in (("even", "o", "-"), ("odd", "s", "--")):
                g = table[(table.kernel == fam) & (table.d == d) & (table.parity == parity)].sort_values("depth")
                ax.plot(g.depth, g.slope, style, marker=marker, color=colors[d], ms=4, label=f"d = {d}, {parity} k")
                if extra:
                    b = table[(table.kernel == extra) & (table.d == d) & (table.parity == parity)]
                    ax.plot(b.depth, b.slope, marker="*", color=colors[d], ls="none", ms=8)
            th = table[(table.kernel == fam) & (table.d == d)].theory_slope.iloc[0]
            ax.axhline(th, ls=":", color=colors[d], lw=1)
        ax.set_xlabel("depth (hidden layers)" + (" ; stars: 2 layers with bias" if extra else ""))
        ax.set_ylabel("fitted slope of log $\\mu_k$ vs log k")
        ax.set_title(f"{LABEL[fam]} (dotted: theory -(d + 2nu - 1))", fontsize=9)
        ps.legend_below(ax, ncol=2)
    return ps.finish(fig, "Eigenvalue decay per depth: deep equals shallow (Bietti & Bach)")


def krr_figure(table: pd.DataFrame) -> plt.Figure:
    """Best test MSE over the ridge grid vs n (log-log), mean +- std over trials; RF solid, NTK dashed, Laplace dash-dot."""
    fig, axes = ps.panels(1, width=6.0, height=5.0)
    ax = axes[0]
    depths = sorted(table.depth.unique())
    colors = dict(zip(depths, sns.color_palette("viridis", len(depths))))
    style = {"rf": "-", "rf_bias": "-", "ntk": "--", "ntk_bias": "--", "laplace": "-."}
    for (kern, L), g in table.groupby(["kernel", "depth"]):
        agg = g.groupby("n").best_mse.agg(["mean", "std"]).fillna({"std": 0.0})
        label = f"{LABEL.get(kern, kern)}, {_layers(kern, L)}: rate {g.rate.iloc[0]:.3f}"
        color = "k" if kern == "laplace" else colors[L]
        ax.errorbar(
            agg.index,
            agg["mean"],
            yerr=agg["std"],
            fmt=style[kern],
            marker="o",
            ms=3,
            color=color,
            capsize=2,
            label=label,
        )
        if "predicted_best_mse" in g and g.predicted_best_mse.notna().any():
            pred = g.groupby("n").predicted_best_mse.first()
            ax.plot(pred.index, pred.values, ":", marker="x", ms=4, lw=1.5, color=color, alpha=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training-set size n (dotted with crosses: predicted from the kernel's spectrum)")
    ax.set_ylabel("test MSE at the best ridge")
    ps.legend_below(ax, ncol=1)
    return ps.finish(
        fig, "Kernel ridge regression on the sphere, bump target: learning curves per depth (Bietti & Bach)"
    )
