"""Mori & Ueda's figures: a tidy table (figures.table) in, a matplotlib Figure out."""

from __future__ import annotations

import matplotlib.ticker
import pandas as pd
import seaborn as sns

from depthlab import plotstyle as ps

YLABEL = {"regression": "test error $\\varepsilon_g$ (MSE)", "classification": "misclassification rate"}


def _mark_divergences(ax, part: pd.DataFrame, agg: pd.DataFrame, color) -> None:
    """A red ring and 'k/S div.' at every depth where some seed diverged (its mean is over the others); at the axis
    bottom where every seed diverged."""
    if "diverged" not in part:
        return
    per = part.groupby("depth").diverged.agg(["sum", "size"])
    for L, r in per[per["sum"] > 0].iterrows():
        if L in agg.index:
            ax.plot([L], [agg.loc[L, "mean"]], "o", mfc="none", mec="red", ms=9, mew=1.2)
            ax.annotate(
                f"{int(r['sum'])}/{int(r['size'])} div.",
                (L, agg.loc[L, "mean"]),
                textcoords="offset points",
                xytext=(4, -9),
                fontsize=5,
                color="red",
            )
        else:
            ax.annotate(
                f"all {int(r['size'])} diverged",
                (L, 0.02),
                xycoords=ax.get_xaxis_transform(),
                fontsize=5,
                color="red",
                ha="center",
            )


def depth_figure(table: pd.DataFrame, title: str, task: str = "regression"):
    """Test error vs depth, one panel per (k, g); local/global as colours.

    NN at its cross-validated lr: solid, mean +- std over the seeds that did not diverge, the chosen lr written
    at each point, a red ring with the count where some seed diverged.  NTK: dashed.  NNGP (random-features
    kernel): dash-dot.
    """
    by_noise = table.noise.nunique() > 1  # Fig. 4: one panel per target family, one colour per noise level
    key = ["k", "g", "locality"] if by_noise else ["k", "g"]
    groups = sorted({tuple(r) for r in table[key].itertuples(index=False)})
    fig, axes = ps.panels(len(groups))
    palette = {"local": "tab:blue", "global": "tab:red"}
    noise_colors = dict(zip(sorted(table.noise.unique()), sns.color_palette("rocket", table.noise.nunique())))
    for ax, panel in zip(axes, groups):
        sub = table[(table[key] == pd.Series(panel, index=key)).all(axis=1)]
        for name, part in sub.groupby("target", sort=True):
            color = noise_colors[part.noise.iloc[0]] if by_noise else palette[part.locality.iloc[0]]
            label = f"{name} (d={part.d.iloc[0]}, N={part.n_train.iloc[0]}" + (
                f", eps={part.noise.iloc[0]:g})" if by_noise else ")"
            )
            agg = ps.mean_sd(ax, part, "depth", "nn_test_error", color, f"NN {label}")
            for L, lr in part.groupby("depth").lr.first().items():
                if L in agg.index:
                    ax.annotate(
                        f"{lr:.2g}",
                        (L, agg.loc[L, "mean"]),
                        textcoords="offset points",
                        xytext=(3, 4),
                        fontsize=5,
                        color=color,
                    )
            _mark_divergences(ax, part, agg, color)
            kern = part.groupby("depth", as_index=False)[["ntk_test_error", "nngp_test_error"]].first()
            ax.plot(kern.depth, kern.ntk_test_error, ps.NTK, marker="x", color=color, label=f"NTK {name}")
            ax.plot(kern.depth, kern.nngp_test_error, ps.NNGP, marker="+", color=color, alpha=0.6, label=f"NNGP {name}")
        ax.set_yscale("log")
        ax.set_xlabel("depth $L$ (numbers: the CV-chosen lr)")
        ax.set_ylabel(YLABEL[task])
        k, g = panel[0], panel[1]
        ax.set_title(f"k = {k}" + ("" if g == "product" else f", g = {g}") + (f", {panel[2]}" if by_noise else ""))
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ps.legend_below(ax)
    return ps.finish(fig, title)


def lr_figure(table: pd.DataFrame, title: str, task: str = "regression"):
    """Fig. 3: test error vs learning rate at fixed width, one curve per depth, kernels as horizontal lines.

    Each curve shows only converged runs (those that reached the loss threshold within
    the epoch cap) and ends at ``max_converged_lr``, marked with a triangle; a rate
    where some seed did not converge is drawn as an open circle, never as part of the curve.
    """
    names = sorted(table.target.unique())
    fig, axes = ps.panels(len(names), height=4.8)
    depths = sorted(table.depth.unique())
    colors = dict(zip(depths, sns.color_palette("viridis", len(depths))))
    for ax, name in zip(axes, names):
        part = table[table.target == name]
        for L in depths:
            sub = part[part.depth == L]
            max_lr = sub.max_converged_lr.iloc[0]
            ok = sub.groupby("lr").converged.transform("all")
            shown = sub[ok & (sub.lr <= max_lr)] if pd.notna(max_lr) else sub.iloc[0:0]
            label = f"L={L}" + (f" (max lr {max_lr:.3g})" if pd.notna(max_lr) else " (no lr converged)")
            if not shown.empty:
                ps.mean_sd(ax, shown, "lr", "nn_test_error", colors[L], label)
                ax.plot(
                    [max_lr],
                    [shown[shown.lr == max_lr].nn_test_error.mean()],
                    marker="v",
                    color=colors[L],
                    markersize=9,
                )
            rest = sub[~ok].groupby("lr").nn_test_error.mean().dropna()
            ax.plot(rest.index, rest.values, "o", mfc="none", color=colors[L], ms=5)
            ax.axhline(sub.ntk_test_error.iloc[0], ls=ps.NTK, color=colors[L], lw=1, label=f"NTK L={L}")
            if sub.entk_test_error.notna().any():
                ax.axhline(
                    sub.groupby("seed").entk_test_error.first().mean(),
                    ls=ps.EMPIRICAL,
                    color=colors[L],
                    lw=1.5,
                    label=f"own tangent kernel L={L}",
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("learning rate $\\eta$ (open circles: not converged)")
        ax.set_ylabel(YLABEL[task])
        ax.set_title(f"{name}, width h = {part.width.iloc[0]}")
        ps.legend_below(ax)
    return ps.finish(fig, title)
