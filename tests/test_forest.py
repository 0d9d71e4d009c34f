"""Forest plots of the verdicts: what each line draws is checked on the figure's artists, on rows
made by hand in every verdict state, before any PNG is written; then on the smoke run's own claims files."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys

import numpy as np
from matplotlib.colors import to_hex

from depthlab import forest


def _row(claim, subject, verdict, effect=None, se=None, threshold=None, reason=""):
    return {
        "claim": claim,
        "statement": f"claim {claim}",
        "figure": "fig",
        "subject": subject,
        "verdict": verdict,
        "effect": effect,
        "stderr": se,
        "threshold": threshold,
        "reason": reason,
        "kind": "claim",
    }


ROWS = [
    _row("1", "a", "holds", 0.8, 0.1, 0.5),
    _row("1", "b", "does not hold", 0.2, 0.05, 0.5),
    _row("1", "c", "inconclusive", 0.55, 0.1, 0.5, "inconclusive: inside the error bars"),
    _row("2", "d", "not applicable", reason="not applicable: add L = 3"),
    _row("2", "e", "holds", 3.0, None, 2.0),
    {**_row("Q", "f", "answer"), "kind": "question"},
]


def _dots(fig):
    """Per axes: (x, y, colour, hollow) of every plotted dot (errorbar markers; the threshold ticks are '|')."""
    out = []
    for ax in fig.axes:
        for line in ax.lines:
            if line.get_marker() in ("o", "s") and len(line.get_xdata()) == 1:
                out.append(
                    (
                        float(line.get_xdata()[0]),
                        float(line.get_ydata()[0]),
                        to_hex(line.get_color()),
                        line.get_markerfacecolor() == "white",
                    )
                )
    return out


def test_each_row_is_its_effect_coloured_by_its_verdict_with_its_threshold_tick():
    fig = forest.run_figure("t", ROWS)
    assert len(fig.axes) == 2  # one panel per claim; the question is not drawn
    dots = _dots(fig)
    assert [(x, c) for x, _, c, _ in dots] == [
        (0.8, forest.COLOURS["holds"]),
        (0.2, forest.COLOURS["does not hold"]),
        (0.55, forest.COLOURS["inconclusive"]),
        (3.0, forest.COLOURS["holds"]),
    ]
    assert [h for *_, h in dots] == [False, False, False, True]  # the row without an SE: a hollow dot
    ticks = [float(ln.get_xdata()[0]) for ax in fig.axes for ln in ax.lines if ln.get_gid() == "threshold"]
    assert ticks == [0.5, 0.5, 0.5, 2.0]
    # error bars: the horizontal segment of each errorbar spans effect +- SE
    spans = sorted(
        tuple(np.round(seg[:, 0], 6))
        for ax in fig.axes
        for coll in ax.collections
        for seg in coll.get_segments()
        if seg.shape == (2, 2) and seg[0, 1] == seg[1, 1]
    )
    assert (0.7, 0.9) in spans and (0.15, 0.25) in spans and (0.45, 0.65) in spans
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert "no compared number; not applicable: add L = 3" in texts and "inconclusive: inside the error bars" in texts
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[:4] == ["holds (2)", "does not hold (1)", "inconclusive (1)", "not applicable (1)"]
    assert "1 question(s) answered, not drawn" in " ".join(t.get_text() for t in fig.texts)
    png = forest.png(fig)
    assert png.startswith(b"\x89PNG") and png == forest.png(forest.run_figure("t", ROWS))  # the same bytes twice


def test_a_diff_plot_draws_both_runs_per_row_and_an_absent_side_as_such():
    a, b = ROWS[0], {**ROWS[0], "verdict": "does not hold", "effect": 0.3}
    key = ("s", "1", "claim 1", "fig", "a")
    fig = forest.diff_figure("d", [(key, a, b), (("s", "1", "claim 1", "fig", "z"), None, ROWS[1])])
    dots = _dots(fig)
    assert [(x, c) for x, _, c, _ in dots] == [
        (0.8, forest.COLOURS["holds"]),
        (0.3, forest.COLOURS["does not hold"]),
        (0.2, forest.COLOURS["does not hold"]),
    ]
    assert "(absent)" in [t.get_text() for ax in fig.axes for t in ax.texts]
    fig.clf()


def test_the_smoke_runs_forest_plots_are_recorded_and_show_every_row(smoke_run):
    states = set()
    for study in smoke_run.config["studies"]:
        folder = smoke_run.results / study
        rec = json.loads((folder / "claims.provenance.json").read_text())
        png = (folder / "claims.forest.png").read_bytes()
        assert rec["forest_sha256"] == hashlib.sha256(png).hexdigest() and png.startswith(b"\x89PNG")
        rows = json.loads((folder / "claims.json").read_text())
        fig = forest.run_figure(study, rows)
        drawn = [t.get_text() for t in fig.legends[0].get_texts()][:4]
        from depthlab.claims import Verdict
        from depthlab.claims import counts as index_counts

        counts = dict(zip(forest.STATES, index_counts([Verdict.from_dict(r) for r in rows])))  # as the index counts
        assert drawn == [f"{s} ({counts[s]})" for s in forest.STATES]
        assert not any(ax.get_title(loc="left").startswith("-:") for ax in fig.axes)
        fig.clf()
        states |= {s for r in rows for s in forest.STATES if r["verdict"] == s}
    assert states == set(forest.STATES), states  # the smoke run shows every verdict state somewhere


def test_the_audit_names_a_replaced_forest_plot(smoke_run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(smoke_run.results, copy, ignore=shutil.ignore_patterns("logs", "benchmarks"))
    ok = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(copy / "spectra" / "claims.md")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ok.returncode == 0, ok.stdout[-2000:] + ok.stderr[-2000:]
    forest_png = copy / "spectra" / "claims.forest.png"
    forest_png.write_bytes((copy / "fractals" / "claims.forest.png").read_bytes())  # another study's plot
    bad = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(copy / "spectra" / "claims.md")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert bad.returncode != 0 and "the forest plot differs" in bad.stdout + bad.stderr, bad.stdout[-2000:]


def test_huge_effects_are_drawn_at_the_edge_not_a_traceback():
    """diff --plot with effects of +-1e308 ended in 'Axis limits cannot be NaN or Inf'."""
    from depthlab import forest

    rows = [
        {
            "claim": "1",
            "statement": "s",
            "figure": "f",
            "subject": "a",
            "verdict": "holds",
            "effect": 1e308,
            "stderr": 1e308,
            "threshold": -1e308,
        },
        {
            "claim": "1",
            "statement": "s",
            "figure": "f",
            "subject": "b",
            "verdict": "does not hold",
            "effect": -1e308,
            "stderr": None,
            "threshold": 0.0,
        },
    ]
    assert forest.png(forest.run_figure("t", rows)).startswith(b"\x89PNG")
    assert forest.png(forest.diff_figure("t", [(("x", "1", "s", "f", "a"), rows[0], rows[1])])).startswith(b"\x89PNG")


def test_the_legend_counts_the_papers_rows_as_the_index_does_and_a_row_without_a_claim_id_is_headed_by_its_statement():
    ext = {**ROWS[0], "scope": "extension", "claim": "-", "statement": "depth dependence"}
    fig = forest.run_figure("t", [*ROWS, ext])
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[:4] == ["holds (2)", "does not hold (1)", "inconclusive (1)", "not applicable (1)"]  # not 3 holds
    assert "1 extension row(s) drawn, not counted" in " ".join(t.get_text() for t in fig.texts)
    assert any(ax.get_title(loc="left") == "depth dependence" for ax in fig.axes)
    fig.clf()


def test_a_long_reason_is_wrapped_whole_onto_a_taller_row_not_cut():
    words = [f"w{i}" for i in range(60)]  # about 240 characters: three lines
    long = {**ROWS[2], "reason": "inconclusive: " + " ".join(words)}
    short = forest.run_figure("t", [ROWS[0], ROWS[2]])
    fig = forest.run_figure("t", [ROWS[0], long])
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    drawn = next(t for t in texts if "w0" in t)
    assert drawn.split() == ["inconclusive:", *words] and "\u2026" not in drawn  # every word, in order
    assert all(len(line) <= forest.REASON_CHARS for line in drawn.splitlines()) and len(drawn.splitlines()) == 3
    assert fig.get_figheight() > short.get_figheight()  # the row grew to hold its lines
    huge = forest.run_figure("t", [{**ROWS[2], "reason": "x " * 5000}])
    lines = next(t.get_text() for ax in huge.axes for t in ax.texts if "x x" in t.get_text()).splitlines()
    assert len(lines) == forest.REASON_LINES and lines[-1] == "(the rest in claims.md)"
