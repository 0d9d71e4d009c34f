"""The look shared by every study's figures: theme, line styles, legends below the axes.

Plotting functions take a tidy DataFrame and return a matplotlib Figure; the
caller saves it (depthlab.storage.render_figure).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

# One meaning per line style, in every study: a trained net is solid; kernels and bounds are not.
NET = "-"
NTK = "--"
NNGP = "-."
EMPIRICAL = ":"  # finite-width tangent kernel / constructions


def theme() -> None:
    sns.set_theme(style="whitegrid", context="paper")


def panels(n: int, width: float = 4.6, height: float = 4.6) -> tuple[plt.Figure, list[plt.Axes]]:
    theme()
    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, list(axes[0])


def legend_below(ax: plt.Axes, ncol: int = 2) -> None:
    """A legend under the panel, one entry per distinct label; none (and no warning) on a panel without labelled artists."""
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    if unique:
        leg = ax.legend(
            unique.values(),
            unique.keys(),
            fontsize=6,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.18),
            ncol=ncol,
            frameon=False,
        )
        leg._depthlab_below = True  # finish() moves it under the axis' tick labels and label, wherever they end


def mean_sd(
    ax: plt.Axes, part: pd.DataFrame, x: str, y: str, color: object, label: str, fmt: str = "-o"
) -> pd.DataFrame:
    """Line through the mean of ``y`` over the rows of each ``x`` (NaN rows dropped), error bars = std (0 for one row)."""
    agg = part.groupby(x)[y].agg(["mean", "std"]).fillna({"std": 0.0}).dropna()
    ax.errorbar(agg.index, agg["mean"], yerr=agg["std"], fmt=fmt, color=color, capsize=3, ms=4, label=label)
    return agg


def finish(fig: plt.Figure, title: str) -> plt.Figure:
    """Title wrapped to the figure's width, then a tight layout."""
    import textwrap

    fig.suptitle("\n".join(textwrap.wrap(title, int(fig.get_figwidth() * 11))), fontsize=10)
    _fit_axis_labels(fig)
    fig.tight_layout()
    _legends_below_labels(fig)
    return fig


def _fit_axis_labels(fig: plt.Figure) -> None:
    """Wrap an axis label longer than its axis (it would run into the next panel's, or off the canvas) onto lines
    that fit; measured on the drawn figure."""
    import textwrap

    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    for ax in fig.axes:
        for label, size in ((ax.xaxis.label, ax.bbox.width), (ax.yaxis.label, ax.bbox.height)):
            text = label.get_text()
            if not text or "$" in text:  # mathtext is not split
                continue
            bb = label.get_window_extent(r)
            length = max(bb.width, bb.height)
            if length > 0.98 * size:
                chars = max(12, int(len(text) * 0.95 * size / length))
                label.set_text("\n".join(textwrap.wrap(text, chars)))


def _legends_below_labels(fig: plt.Figure) -> None:
    """A legend of legend_below() starts just under its axis' tick labels and label (a fixed offset lands on a long
    or wrapped label when the panel is short)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None or not getattr(leg, "_depthlab_below", False):
            continue
        bottom = ax.xaxis.get_tightbbox(r)
        if bottom is None:
            continue
        y = ax.transAxes.inverted().transform((0.0, bottom.y0 - 4.0))[1]
        leg.set_bbox_to_anchor((0.5, min(y, -0.02)), transform=ax.transAxes)
