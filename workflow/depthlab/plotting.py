"""Figures: a tidy DataFrame in, a matplotlib Figure out (the caller saves it)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

YLABEL = {"regression": "test error $\\varepsilon_g$ (MSE)", "classification": "misclassification rate"}


def _mean_sd(ax: plt.Axes, part: pd.DataFrame, x: str, color: object, label: str) -> None:
    """Solid line through the mean NN error over seeds, error bars = std over seeds (0 for one seed)."""
    agg = part.groupby(x).nn_test_error.agg(["mean", "std"]).fillna(0.0)
    ax.errorbar(agg.index, agg["mean"], yerr=agg["std"], fmt="-o", color=color, capsize=3, ms=4, label=label)


def depth_figure(table: pd.DataFrame, title: str, task: str = "regression") -> plt.Figure:
    """Test error vs depth, one panel per (k, g); local/global as colours.

    NN (CV-optimal lr): solid, mean with error bars = std over seeds.  NTK: dashed.
    table: rows of :func:`depthlab.experiments.depth_table`.
    """
    sns.set_theme(style="whitegrid", context="paper")
    by_noise = table.noise.nunique() > 1  # Fig. 4: one panel per target family, one colour per noise level
    key = ["k", "g", "locality"] if by_noise else ["k", "g"]
    panels = sorted({tuple(r) for r in table[key].itertuples(index=False)})
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.6), squeeze=False)
    palette = {"local": "tab:blue", "global": "tab:red"}
    noise_colors = dict(zip(sorted(table.noise.unique()), sns.color_palette("rocket", table.noise.nunique())))
    for ax, panel in zip(axes[0], panels):
        sub = table[(table[key] == pd.Series(panel, index=key)).all(axis=1)]
        for name, part in sub.groupby("target", sort=True):
            loc = part.locality.iloc[0]
            color = noise_colors[part.noise.iloc[0]] if by_noise else palette[loc]
            label = f"{name} (d={part.d.iloc[0]}, N={part.n_train.iloc[0]}" + (f", eps={part.noise.iloc[0]:g})" if by_noise else ")")
            _mean_sd(ax, part, "depth", color, f"NN {label}")
            ntk = part.groupby("depth", as_index=False).ntk_test_error.first()
            ax.plot(ntk.depth, ntk.ntk_test_error, "--", marker="x", color=color, label=f"NTK {name}")
        ax.set_yscale("log")
        ax.set_xlabel("depth $L$")
        ax.set_ylabel(YLABEL[task])
        k, g = panel[0], panel[1]
        ax.set_title(f"k = {k}" + ("" if g == "product" else f", g = {g}") + (f", {panel[2]}" if by_noise else ""))
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def lr_figure(table: pd.DataFrame, title: str, task: str = "regression") -> plt.Figure:
    """Fig. 3: test error vs learning rate at fixed width, one curve per depth, NTK as horizontal dashed lines.

    Each curve stops at ``max_converged_lr`` (largest lr whose runs all reached the
    loss threshold within the epoch cap); that end point is marked with a triangle.
    """
    sns.set_theme(style="whitegrid", context="paper")
    names = sorted(table.target.unique())
    fig, axes = plt.subplots(1, len(names), figsize=(4.6 * len(names), 4.8), squeeze=False)
    depths = sorted(table.depth.unique())
    colors = dict(zip(depths, sns.color_palette("viridis", len(depths))))
    for ax, name in zip(axes[0], names):
        part = table[table.target == name]
        for L in depths:
            sub = part[part.depth == L]
            max_lr = sub.max_converged_lr.iloc[0]
            shown = sub[sub.lr <= max_lr] if pd.notna(max_lr) else sub.iloc[0:0]
            label = f"L={L}" + (f" (max lr {max_lr:.3g})" if pd.notna(max_lr) else " (no lr converged)")
            if not shown.empty:
                _mean_sd(ax, shown, "lr", colors[L], label)
                end = shown[shown.lr == max_lr].nn_test_error.mean()
                ax.plot([max_lr], [end], marker="v", color=colors[L], markersize=9)
            ax.axhline(sub.ntk_test_error.iloc[0], ls="--", color=colors[L], lw=1,
                       label=f"NTK L={L}" + ("" if not shown.empty else " (no NN lr converged)"))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("learning rate $\\eta$")
        ax.set_ylabel(YLABEL[task])
        ax.set_title(f"{name}, width h = {part.width.iloc[0]} (NTK dashed)")
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
