"""Figures: a tidy DataFrame in, a matplotlib Figure out (the caller saves it)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

YLABEL = {"regression": "test error $\\varepsilon_g$ (MSE)", "classification": "misclassification rate"}


def depth_figure(table: pd.DataFrame, title: str, task: str = "regression") -> plt.Figure:
    """Test error vs depth, one panel per (k, g); local/global as colours.

    NN (CV-optimal lr): solid, mean with error bars = std over seeds.  NTK: dashed.
    table: rows of :func:`depthlab.experiments.depth_table`.
    """
    sns.set_theme(style="whitegrid", context="paper")
    panels = sorted({(int(k), g) for k, g in zip(table.k, table.g)})
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    palette = {"local": "tab:blue", "global": "tab:red"}
    for ax, (k, g) in zip(axes[0], panels):
        sub = table[(table.k == k) & (table.g == g)]
        for name, part in sub.groupby("target", sort=True):
            loc = part.locality.iloc[0]
            label = f"{name} (d={part.d.iloc[0]}, N={part.n_train.iloc[0]})"
            sns.lineplot(data=part, x="depth", y="nn_test_error", errorbar="sd", marker="o", ax=ax,
                         color=palette[loc], label=f"NN {label}", err_style="bars")
            ntk = part.groupby("depth", as_index=False).ntk_test_error.first()
            ax.plot(ntk.depth, ntk.ntk_test_error, "--", marker="x", color=palette[loc], label=f"NTK {name}")
        ax.set_yscale("log")
        ax.set_xlabel("depth $L$")
        ax.set_ylabel(YLABEL[task])
        ax.set_title(f"k = {k}" + ("" if g == "product" else f", g = {g}"))
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.legend(fontsize=6)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
