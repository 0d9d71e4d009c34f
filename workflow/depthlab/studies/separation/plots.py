"""Depth-separation figures: a tidy table in, a matplotlib Figure out."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from depthlab import plotstyle as ps

from .telgarsky import mse_bound


def _style(arch: str) -> tuple[str, str]:
    kind = arch.split("-")[0]
    return {
        "deep": (ps.NET, "o"),
        "shallow": (ps.NTK, "s"),
        "construct": (ps.EMPIRICAL, "^"),
        "construction": ("", "*"),
    }[kind]


def _arch_label(arch: str, g: pd.DataFrame) -> str:
    if arch == "construction":
        return "hand-built depth L, width 2 (exact)"
    kind, w = arch.split("-w")
    label = {
        "deep": f"depth L, width {w}, random init",
        "shallow": f"1 hidden layer, as many parameters as depth L width {w}",
        "construct": "hand-built + noise, trained",
    }[kind]
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
            ax.plot(
                g.level,
                np.maximum(mse_bound(g.width.values + 1, g.level.values), 1e-12),
                ":",
                color=colors[arch],
                lw=2,
                alpha=0.6,
                label=f"lower bound, 1 hidden layer of width {int(g.width.iloc[-1])} (w + 1 pieces)",
            )
    ax.axhline(1 / 12, color="grey", lw=1, label="the constant 1/2 (MSE 1/12)")
    ax.set_yscale("log")
    ax.set_xlabel("L (target $\\Delta^L$ has $2^L$ linear pieces)")
    ax.set_ylabel("test MSE of the best net (by training loss);\nthe exact construction drawn at 1e-12")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))  # L is a whole number
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
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
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


def es16_figure(table: pd.DataFrame) -> plt.Figure:
    """R2: normalised test MSE vs d on the ES16 shell target, per depth and budget; 1 is the target's variance."""
    budgets = sorted(table.budget.unique())
    fig, axes = ps.panels(len(budgets), width=4.6, height=4.8)
    depths = sorted(table.depth.unique())
    colors = dict(zip(depths, sns.color_palette("viridis", len(depths))))
    for ax, P in zip(axes, budgets):
        part = table[table.budget == P]
        for L, g in part.groupby("depth"):
            ps.mean_sd(ax, g, "d", "test_nmse", colors[L], f"depth {L} ({L + 1}-layer)")
        ax.axhline(1.0, color="grey", lw=1.5, alpha=0.6, label="Var(g): the constant predictor")
        shells = part.groupby("d").shells.first()
        ax.set_xscale("log", base=2)
        ax.set_xticks(shells.index.values, [f"{d}\n({n} shells)" for d, n in shells.items()], fontsize=7)
        ax.set_xlabel("input dimension d (shells N)")
        ax.set_ylabel("test MSE / Var(g)")
        ax.set_title(f"P = {P} parameters", fontsize=9)
        ps.legend_below(ax, ncol=2)
    return ps.finish(
        fig, "ES16: random signs on thin radial shells, Eldan-Shamir inputs: 1 vs 2 hidden layers at equal parameters"
    )


def _rule_order(rules) -> list[str]:
    """Width rules in order: "k d" by k (poly(d)), then the fixed widths by size."""
    return sorted(rules, key=lambda r: (0, int(r[:-1])) if r.endswith("d") else (1, int(r)))


def rule_label(rule: str) -> str:
    return f"m = {rule}" if rule.endswith("d") else f"m = {rule} (fixed)"


def learner_error_figure(table: pd.DataFrame) -> plt.Figure:
    """R3: the learner's final test nMSE vs d per width rule, its reduced model, and 1-hidden-layer nets with the
    learner's parameter count; one panel per input law."""
    dists = sorted(table.dist.unique())
    fig, axes = ps.panels(len(dists), width=5.0, height=5.0)
    learner = table[table.model == "learner"]
    rules = _rule_order(learner.width_rule.unique())
    colors = dict(zip(rules, sns.color_palette("tab10", len(rules))))
    for ax, q in zip(axes, dists):
        part = table[table.dist == q]
        for rule in rules:
            g = part[(part.model == "learner") & (part.width_rule == rule)]
            label = f"3-layer learner, {rule_label(rule)}"
            ps.mean_sd(ax, g, "d", "test_nmse", colors[rule], label)
            red = part[(part.model == "reduced") & (part.width_rule == rule)]
            if rule == rules[0]:
                ps.mean_sd(ax, red, "d", "test_nmse", "black", "reduced model (F = alpha |x|)", fmt=":x")
        net = part[part.model == "1 hidden layer"]
        if len(net):
            ps.mean_sd(
                ax,
                net,
                "d",
                "test_nmse",
                "crimson",
                f"1 hidden layer, parameters of the m = {rules[0]} learner",
                fmt="--s",
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("input dimension d")
        ax.set_ylabel("test MSE / Var(y)")
        ax.set_title(f"ReLU(1 - |x|/r0), {q.replace('_', '-')} inputs", fontsize=9)
        ps.legend_below(ax, ncol=1)
    return ps.finish(fig, "The 3-layer mean-field learner (Ren, Zhou & Ge 2023): test error vs d at poly(d) width")


def learner_alpha_figure(table: pd.DataFrame) -> plt.Figure:
    """R4: alpha_t of the finite net (solid) and of the reduced model (dashed), and the deviation |F/alpha - |x|| / ||x||
    against flow time (lr x step; seed means); a column per (input law, width rule), colours by d.  Drawn at the largest
    flow rate (R4 is judged in the flow regime); the deviation at the best-training rate is dotted beside it."""
    ps.theme()
    if "regime" not in table:
        table = table.assign(regime="best", lr=1.0)
    cols = [
        (q, rule)
        for q in sorted(table.dist.unique())
        for rule in _rule_order(table[table.dist == q].width_rule.unique())
    ]
    fig, axes = plt.subplots(2, len(cols), figsize=(3.6 * len(cols), 7.2), squeeze=False)
    dims = sorted(table.d.unique())
    colors = dict(zip(dims, sns.color_palette("viridis", len(dims))))
    for c, (q, rule) in enumerate(cols):
        part = table[(table.dist == q) & (table.width_rule == rule)]
        top, bottom = axes[0][c], axes[1][c]
        for d, g in part.groupby("d"):
            flow = g[g.regime == "flow"]
            shown = flow[flow.lr == flow.lr.max()] if len(flow) else g[g.regime == "best"]
            lr = float(shown.lr.iloc[0])
            mean = shown.groupby("step")[["alpha", "reduced_alpha", "deviation"]].mean()
            m = int(g.width.iloc[0])
            t = np.maximum(mean.index.values * lr, lr)  # flow time, step 0 drawn at one step
            top.plot(t, mean.alpha, "-", color=colors[d], label=f"d = {d} (m = {m}), lr {lr:g}")
            top.plot(t, mean.reduced_alpha, "--", color=colors[d], lw=1)
            bottom.plot(t, mean.deviation, "-", color=colors[d], label=f"d = {d} (m = {m}), lr {lr:g}")
            best = g[g.regime == "best"]
            if len(flow) and len(best):
                b = best.groupby("step").deviation.mean()
                blr = float(best.lr.iloc[0])
                bottom.plot(np.maximum(b.index.values * blr, blr), b.values, ":", color=colors[d], lw=1)
        top.set_title(f"{q.replace('_', '-')}, {rule_label(rule)}", fontsize=9)
        top.set_ylabel("alpha_t: finite net (solid), reduced model (dashed)")
        bottom.set_ylabel("|F/alpha - |x|| / ||x|| (dotted: best-training rate)")
        for ax in (top, bottom):
            ax.set_xscale("log")
        bottom.set_yscale("log")
        bottom.set_xlabel("flow time lr x step")
        ps.legend_below(bottom, ncol=2)
    return ps.finish(
        fig,
        "The first layer stays near its symmetrisation alpha |x| in the gradient-flow regime: alpha_t of the "
        "finite net against the reduced (infinite-width) model, and the deviation over flow time",
    )


def first_layer_figure(table: pd.DataFrame) -> plt.Figure:
    """F(u)/alpha along great circles (u = cos t e1 + sin t e2), at the start and after training, a panel per (law, d);
    the symmetrisation predicts 1 everywhere."""
    ps.theme()
    dists, dims = sorted(table.dist.unique()), sorted(table.d.unique())
    fig, axes = plt.subplots(len(dists), len(dims), figsize=(4.0 * len(dims), 3.6 * len(dists)), squeeze=False)
    rules = _rule_order(table.width_rule.unique())
    colors = dict(zip(rules, sns.color_palette("tab10", len(rules))))
    for i, q in enumerate(dists):
        for j, d in enumerate(dims):
            ax = axes[i][j]
            part = table[(table.dist == q) & (table.d == d)]
            for (rule, when, plane), g in part.groupby(["width_rule", "when", "plane"]):
                ax.plot(
                    g.angle,
                    g.F_over_alpha,
                    "-" if when == "end" else ":",
                    color=colors[rule],
                    lw=1.2 if when == "end" else 0.8,
                    label=f"{rule_label(rule)}, {'trained' if when == 'end' else 'start'}" if plane == 0 else None,
                )
            ax.axhline(1.0, color="black", lw=1.5, alpha=0.5, label="alpha |u| / alpha = 1 (symmetrisation)")
            ax.set_title(f"{q.replace('_', '-')}, d = {d}", fontsize=9)
            ax.set_xlabel("angle t on a great circle")
            ax.set_ylabel("F(u) / alpha")
            ps.legend_below(ax, ncol=1)
    return ps.finish(fig, "The learned first layer F along random great circles against its symmetrisation alpha |x|")
