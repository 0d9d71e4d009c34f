"""Pictures of the verdicts: a forest plot per study, and two runs on one plot for ``depthlab diff``.

One line per claim row: the effect as a dot with its error bar (effect +- SE; a hollow dot where the row has no SE),
its threshold as a black tick on the same line, the dot coloured by the row's verdict (four states, the legend
counts them).  Rows are grouped by claim, one panel each, because claims compare quantities on different scales
(a Spearman rho, a ratio of iterations, an error).  A row with no compared number (not applicable, or inconclusive
before any comparison) has no dot: its verdict is written on the line.  Beside every line: the verdict and its
reason, wrapped onto as many lines as it needs (up to REASON_LINES; claims.md has every word).  Questions (answered, never judged) are counted in the title, not drawn.

Rows are plain dicts, as claims.json holds them, so the same code draws a run being built (``run_claims``) and an old
run's file (``diff --plot``).  Everything drawn from a row is text in the picture, never markup.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any, Iterable, Sequence

COLOURS = {"holds": "#1a9850", "does not hold": "#d73027", "inconclusive": "#f59e0b", "not applicable": "#8c8c8c"}
STATES = tuple(COLOURS)
ROW_IN = 0.26  # inches per line
HEAD_IN = 0.75  # inches per panel besides its lines: its title above, its x tick labels below
HEAD_IN_TITLE = 0.3  # of which the title
TOP_IN = 0.85  # the figure's title and legend
WIDTH_IN = 13.0
LEFT, RIGHT = 0.25, 0.58  # the panels' horizontal extent (fractions of the width): labels left, verdicts right
DPI = 100
REASON_CHARS = 100  # characters per line of a reason: what the right-hand margin holds at 6.5 pt
REASON_LINES = 8  # a longer reason ends with a pointer to claims.md
LINES_PER_ROW = 2  # lines of 6.5 pt text one ROW_IN holds
# plain matplotlib with a light grid: no seaborn import (seconds of a claims job's start-up)
STYLE = {
    "axes.grid": True,
    "grid.color": "#e5e5e5",
    "axes.edgecolor": "#bbbbbb",
    "axes.facecolor": "white",
    "axes.axisbelow": True,
    "xtick.color": "#333333",
    "ytick.color": "#333333",
    "font.size": 7,
}


def _num(row: dict, key: str) -> float | None:
    v = row.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


MAX_DRAWN = 1e300  # a number drawn beyond this (a forged 1e308, say) sits at it: matplotlib's limits must stay finite


def _clip(x: float | None) -> float | None:
    return None if x is None else max(-MAX_DRAWN, min(MAX_DRAWN, x))


def verdict(row: dict) -> str:
    """A claims.json row's verdict, also for an older run's row without the field (then from ``holds``); a ``verdict``
    that is not one of the four states (or "answer") is "(not a verdict)" (["x"] read as holds)."""
    if "verdict" in row:  # a run's row: its verdict must be one of the states (["x"] or "great" is not a verdict)
        v = row.get("verdict")
        return v if isinstance(v, str) and v in (*STATES, "answer") else "(not a verdict)"
    if row.get("kind") == "question":
        return "answer"
    return {True: "holds", False: "does not hold"}.get(row.get("holds"), "inconclusive")


def _short(text: Any, n: int) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= n else s[: n - 1] + "\u2026"


def _wrapped(text: str) -> list[str]:
    """A reason's lines: wrapped at word boundaries, never cut mid-word; past REASON_LINES, a pointer to claims.md."""
    lines = textwrap.wrap(" ".join(text.split()), REASON_CHARS, break_long_words=True, break_on_hyphens=False) or [""]
    if len(lines) > REASON_LINES:
        lines = lines[: REASON_LINES - 1] + ["(the rest in claims.md)"]
    return lines


def _verdict_text(r: dict, v: str) -> list[str]:
    why = _reason(r)
    return _wrapped(("no compared number; " if _num(r, "effect") is None else "") + v + (": " + why if why else ""))


def _units(lines: list[str]) -> int:
    return max(1, math.ceil(len(lines) / LINES_PER_ROW))


def _reason(row: dict) -> str:
    r = str(row.get("reason") or "")
    for head in ("inconclusive: ", "not applicable: "):
        r = r.removeprefix(head)
    return r


def groups(rows: Iterable[dict]) -> tuple[list[tuple[str, list[dict]]], int]:
    """(claim panel title, its rows) in first-seen order, and how many questions were left out."""
    out: dict[str, list[dict]] = {}
    questions = 0
    for r in rows:
        if not isinstance(r, dict):
            continue
        if verdict(r) == "answer":
            questions += 1
            continue
        claim = str(r.get("claim", "?"))
        # a row with no claim id of its own (Mori & Ueda's depth-dependence rows) is headed by its statement alone
        head = str(r.get("statement", "")) if claim in ("-", "", "?") else f"{claim}: {r.get('statement', '')}"
        out.setdefault(head, []).append(r)
    return list(out.items()), questions


def draw(title: str, panels: Sequence[tuple[str, list[dict]]], *, sides: Sequence[str] = ("",), note: str = "") -> Any:
    """A matplotlib Figure.  Each row of a panel is a dict with ``label`` and, per side (one for a run, two for a
    diff), the claims.json row under that side's name (``""`` for one run); a side with no row draws nothing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    with plt.rc_context(STYLE):
        return _draw(plt, Line2D, title, panels, sides, note)


def _draw(
    plt: Any, Line2D: Any, title: str, panels: Sequence[tuple[str, list[dict]]], sides: Sequence[str], note: str
) -> Any:
    # a row's height follows its reason's lines (an absent side takes one line)
    units = [
        max(
            1,
            sum(
                _units(_verdict_text(row[side], verdict(row[side])) if row.get(side) else [""])
                for row in rows
                for side in sides
            ),
        )
        for _, rows in panels
    ]
    tall = [ROW_IN * u + 0.15 for u in units]
    height = TOP_IN + sum(t + HEAD_IN for t in tall) + 0.1
    fig = plt.figure(figsize=(WIDTH_IN, height), dpi=DPI)
    counts = {s: 0 for s in STATES}
    extensions = 0
    markers = ("o", "s")
    cursor = height - TOP_IN
    for (head, rows), t in zip(panels, tall):
        cursor -= HEAD_IN_TITLE + t
        ax = fig.add_axes((LEFT, cursor / height, RIGHT - LEFT, t / height))
        cursor -= HEAD_IN - HEAD_IN_TITLE
        ax.set_title(_short(head, 150), fontsize=7.5, loc="left", pad=3)
        ys, labels, xs = [], [], []
        y = 0.0
        for row in rows:
            for k, side in enumerate(sides):
                r = row.get(side)
                lines = _verdict_text(r, verdict(r)) if r is not None else [""]
                y -= (_units(lines) + 1) / 2  # the row's centre: half its own height below the last one's
                ys.append(y)
                labels.append(_short(row["label"], 46) + (f" [{side}]" if side else ""))
                if r is None:
                    ax.text(
                        1.005,
                        y,
                        "(absent)",
                        transform=ax.get_yaxis_transform(),
                        fontsize=6.5,
                        va="center",
                        color="#555555",
                    )
                    continue
                v = verdict(r)
                colour = COLOURS.get(v, "#555555")
                if v in counts and r.get("scope") != "extension":  # counted as the index counts: the papers' rows
                    counts[v] += 1
                elif v in counts:
                    extensions += 1
                e, se, th = (_clip(_num(r, k)) for k in ("effect", "stderr", "threshold"))
                if e is not None:
                    ax.errorbar(
                        [e],
                        [y],
                        xerr=[[se or 0.0], [se or 0.0]],
                        fmt=markers[k % 2],
                        ms=4.5,
                        capsize=2.5,
                        color=colour,
                        mfc=colour if se is not None else "white",
                        mec=colour,
                        lw=1.2,
                    )
                    xs += [e - (se or 0.0), e + (se or 0.0)]
                if th is not None:
                    ax.plot([th], [y], marker="|", ms=11, mew=1.6, color="black", gid="threshold")
                    xs.append(th)
                ax.text(
                    1.005,
                    y,
                    "\n".join(lines),
                    transform=ax.get_yaxis_transform(),
                    fontsize=6.5,
                    va="center",
                    color=colour,
                )
                y -= (_units(lines) - 1) / 2  # and the rest of its height
        ax.set_ylim(y - 0.7, 0.3)
        ax.set_yticks(ys)
        ax.set_yticklabels(labels, fontsize=6.5)
        xs = [_clip(x) for x in xs]
        lo, hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
        pad = (hi / 2 - lo / 2) * 0.16 or max(abs(hi), 1.0) * 0.1  # halves first: a span of +-1e308 must not overflow
        ax.set_xlim(lo - pad, hi + pad)
        ax.tick_params(axis="x", labelsize=6.5, pad=1)
        if not xs:  # nothing compared in this panel: no scale to read
            ax.set_xticks([])
        ax.grid(axis="y", visible=False)
    handles = [Line2D([], [], marker="o", ls="", color=COLOURS[s], label=f"{s} ({counts[s]})") for s in STATES]
    handles.append(Line2D([], [], marker="|", ls="", ms=10, mew=1.6, color="black", label="threshold"))
    handles.append(Line2D([], [], marker="o", ls="", mfc="white", color="#555555", label="no error bar"))
    for k, side in enumerate(sides if len(sides) > 1 else ()):
        handles.append(Line2D([], [], marker=markers[k % 2], ls="", color="#555555", label=f"run {side}"))
    fig.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(0.01, 1.0 - 0.5 / height),
        ncol=len(handles),
        fontsize=7,
        frameon=False,
    )
    if extensions:
        note += (
            f"; the legend counts the papers' rows, as the claims index does: {extensions} extension row(s) drawn, "
            "not counted"
        )
    fig.text(0.01, 1.0 - 0.08 / height, _short(title, 160) + (f"\n{note}" if note else ""), fontsize=9, va="top")
    return fig


def run_figure(title: str, rows: list[dict]) -> Any:
    """One study's forest plot: every claim row of its claims.json."""
    panels, questions = groups(rows)
    lines = [
        (head, [{"label": f"{r.get('subject', '')} ({r.get('figure', '')})", "": r} for r in rs]) for head, rs in panels
    ]
    note = "effect +- SE against its threshold, per claim row, coloured by verdict" + (
        f"; {questions} question(s) answered, not drawn" if questions else ""
    )
    return draw(title, lines, note=note)


def diff_figure(
    title: str, pairs: list[tuple[tuple, dict | None, dict | None]], labels: tuple[str, str] = ("A", "B")
) -> Any:
    """Two runs on one plot: ``pairs`` are (key, A's row, B's row) with key (study, claim, statement, figure, subject)."""
    panels: dict[str, list[dict]] = {}
    for key, ra, rb in pairs:
        study, claim, statement, fig, subject = key
        panels.setdefault(f"{study} {claim}: {statement}", []).append(
            {"label": f"{subject} ({fig})", labels[0]: ra, labels[1]: rb}
        )
    return draw(
        title,
        list(panels.items()),
        sides=labels,
        note=f"run {labels[0]} (dot) and run {labels[1]} (square), "
        "effect +- SE against the threshold, coloured by verdict",
    )


def png(fig: Any) -> bytes:
    """PNG bytes at :data:`DPI` without a timestamp (reruns give the same bytes), and the figure closed."""
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": "depthlab"})
    finally:
        plt.close(fig)
    return buf.getvalue()
