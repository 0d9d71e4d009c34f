"""Figures fit to print (depthlab.render.layout_problems): no text outside what is saved, no two texts on top of each
other, judged from the drawn artists' bounding boxes; every figure of the smoke run is held to it through its job's
log, and the check fails on figures made to be wrong."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from depthlab import plotstyle as ps  # noqa: E402
from depthlab import render  # noqa: E402


def test_a_clean_figure_passes_and_overlapping_texts_are_named():
    fig, (ax,) = ps.panels(1)
    ax.plot([1, 2, 3], [1, 4, 9], label="a line")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ps.legend_below(ax)
    ps.finish(fig, "a title")
    assert render.layout_problems(fig) == []
    ax.text(0.5, 0.5, "one annotation", transform=ax.transAxes)
    ax.text(0.5, 0.5, "another annotation", transform=ax.transAxes)
    found = render.layout_problems(fig)
    assert len(found) == 1 and "'one annotation' and 'another annotation'" in found[0], found
    plt.close(fig)


def test_crowded_log_tick_labels_are_found():
    """The acceleration figure's defect: minor log tick labels running together ('3x10^1 4x10^1')."""
    fig, ax = plt.subplots(figsize=(1.6, 1.6))
    ax.set_xscale("log")
    ax.set_xlim(20, 90)
    ax.plot([20, 90], [0, 1])
    found = render.layout_problems(fig)
    assert any("texts overlap" in p for p in found), found
    plt.close(fig)


def test_a_label_longer_than_its_panel_is_wrapped_and_a_legend_below_clears_it():
    fig, axes = ps.panels(2, width=3.0, height=2.4)
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="a")
        ax.set_ylabel("a very long label that would run into the panel beside it and off the canvas too")
        ax.set_xlabel("angle t on a great circle")
        ps.legend_below(ax)
    ps.finish(fig, "t")
    assert all("\n" in ax.get_ylabel() for ax in axes)
    assert render.layout_problems(fig) == []
    plt.close(fig)


def test_every_smoke_figure_is_drawn_without_a_layout_problem(smoke_run):
    logs = sorted((smoke_run.results / "logs").glob("*/figures/*.log"))
    assert len(logs) >= 20, logs  # every study's figures
    bad = [
        f"{p.relative_to(smoke_run.results)}: {line}"
        for p in logs
        for line in p.read_text().splitlines()
        if "figure layout:" in line
    ]
    assert not bad, "\n".join(bad)
