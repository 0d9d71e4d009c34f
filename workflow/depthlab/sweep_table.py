"""The tables of a sweep (:mod:`depthlab.sweep`): ``sweep.md``, ``sweep.csv``, ``sweep.png`` and ``sweep.json`` in
its folder, from every value's ``claims.json``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import yaml

from .sweep import RECORD, Sweep, Value


def _rows(results: Path) -> dict[tuple, dict]:
    from . import compare

    if not results.is_dir():
        return {}
    return compare.load(str(results)).rows


def _num(r: dict | None, k: str) -> float | None:
    from .forest import _num

    return None if r is None else _num(r, k)


def _cell(r: dict | None) -> str:
    from .forest import verdict

    if r is None:
        return "(absent)"
    e, se = _num(r, "effect"), _num(r, "stderr")
    return (
        verdict(r)
        + (f" {e:.3g}" if e is not None else "")
        + (f" +- {se:.2g}" if se is not None and e is not None else "")
    )


def table(sw: Sweep) -> tuple[list[tuple], list[dict[tuple, dict]]]:
    """The row keys (rows whose verdict differs between values first) and each value's rows by key."""
    from .forest import verdict

    per = [_rows(v.results) for v in sw.values]
    keys = sorted(set().union(*per)) if per else []

    def varies(k: tuple) -> bool:
        return len({verdict(p[k]) if k in p else "(absent)" for p in per}) > 1

    return sorted(keys, key=lambda k: (not varies(k), k)), per


def markdown(sw: Sweep, keys: list[tuple], per: list[dict]) -> str:
    from .forest import verdict

    def esc(x: Any) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")

    def flow(x: Any) -> str:
        return yaml.safe_dump(x, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()

    varying = sum(1 for k in keys if len({verdict(p[k]) if k in p else "" for p in per}) > 1)
    how = "" if len(sw.keys) == 1 else (" (values paired: --zip)" if sw.zipped else " (their grid)")
    lines = [
        f"# depthlab sweep: {esc(sw.key)}",
        "",
        f"Config {esc(sw.config)}{how}; {len(sw.values)} values, {len(keys)} claim rows, {varying} of which change "
        "verdict between values (listed first). Each cell: the verdict, then effect +- SE.",
        "",
        "| value | " + " | ".join(esc(k) for k in sw.keys) + " | results folder | stores | computed | "
        "shared with the value before | run (s) |",
        "|---|" + "---|" * len(sw.keys) + "---|---|---|---|---|",
        "| the config's own (not swept) | "
        + " | ".join(esc(flow(sw.base_values[k])) for k in sw.keys)
        + f" | {esc(sw.base) if sw.base else '(not run)'} | | | | |",
    ]

    def named(v: Value) -> str:
        return esc(v.written) + (" (the config's own)" if v.values == sw.base_values else "")

    for v in sw.values:
        lines.append(
            f"| {named(v)} | "
            + " | ".join(esc(flow(v.values[k])) for k in sw.keys)
            + f" | {esc(v.results)} | {v.stores} | {v.computed} | {v.shared} | "
            f"{'' if v.seconds is None else f'{v.seconds:.0f}'} |"
        )
    lines += [
        "",
        "| study | claim | subject (figure) | " + " | ".join(named(v) for v in sw.values) + " |",
        "|---|---|---|" + "---|" * len(sw.values),
    ]
    for k in keys:
        study, claim, statement, fig, subject = k
        lines.append(
            f"| {esc(study)} | {esc(claim)}: {esc(statement)} | {esc(subject)} ({esc(fig)}) | "
            + " | ".join(esc(_cell(p.get(k))) for p in per)
            + " |"
        )
    return "\n".join(lines) + "\n"


def csv_text(sw: Sweep, keys: list[tuple], per: list[dict]) -> str:
    from .forest import verdict

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "key",
            "value",
            "study",
            "claim",
            "statement",
            "figure",
            "subject",
            "verdict",
            "effect",
            "stderr",
            "threshold",
            "z",
            "reason",
        ]
    )
    for k in keys:
        for v, p in zip(sw.values, per):
            r = p.get(k)
            w.writerow(
                [
                    sw.key,
                    v.written,
                    *k,
                    verdict(r) if r else "(absent)",
                    *(
                        "" if _num(r, f) is None else f"{_num(r, f):.6g}"
                        for f in ("effect", "stderr", "threshold", "z")
                    ),
                    "" if r is None else str(r.get("reason") or ""),
                ]
            )
    return buf.getvalue()


MAX_HEATMAP_ROWS = 120


def heatmap(sw: Sweep, keys: list[tuple], per: list[dict]) -> Any:
    """Rows x values, each cell coloured by its verdict and annotated with its effect; the rows whose verdict varies
    first, at most MAX_HEATMAP_ROWS (the title says how many were left out: all of them unchanged across values)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from .forest import STYLE

    with plt.rc_context(STYLE):
        return _heatmap(plt, ListedColormap, Patch, sw, keys, per)


def _heatmap(plt: Any, ListedColormap: Any, Patch: Any, sw: Sweep, keys: list[tuple], per: list[dict]) -> Any:
    from .forest import COLOURS, STATES, _short, verdict

    shown = keys[:MAX_HEATMAP_ROWS]
    codes = {s: i for i, s in enumerate(STATES)}
    absent = len(STATES)
    grid = [[codes.get(verdict(p[k]), absent) if k in p else absent for p in per] for k in shown]
    fig, ax = plt.subplots(figsize=(4.5 + 1.6 * len(per), 1.4 + 0.24 * max(1, len(shown))), dpi=100)
    cmap = ListedColormap([COLOURS[s] for s in STATES] + ["#ffffff"])
    ax.imshow(grid or [[absent] * len(per)], cmap=cmap, vmin=-0.5, vmax=absent + 0.5, aspect="auto")
    for i, k in enumerate(shown):
        for j, p in enumerate(per):
            e = _num(p.get(k), "effect")
            if e is not None:
                ax.text(j, i, f"{e:.3g}", ha="center", va="center", fontsize=6.5, color="white")
    ax.set_xticks(range(len(per)))
    ax.set_xticklabels([_short(v.written, 24) for v in sw.values], fontsize=7.5)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([_short(f"{k[0]} {k[1]} {k[4]} ({k[3]})", 60) for k in shown], fontsize=6.5)
    ax.grid(False)
    left = len(keys) - len(shown)
    ax.set_title(
        _short(f"{sw.key}: verdict per claim row and value (cell: effect)", 120)
        + (f"\n{left} further rows, the same verdict at every value, not drawn" if left else ""),
        fontsize=8.5,
        pad=18,
    )
    handles = [Patch(color=COLOURS[s], label=s) for s in STATES]
    handles.append(Patch(facecolor="white", edgecolor="#999999", label="a question (answered) or absent"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=3, fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


def write_outputs(sw: Sweep) -> dict[str, Path]:
    from . import forest, storage

    keys, per = table(sw)
    paths = {
        "md": sw.folder / "sweep.md",
        "csv": sw.folder / "sweep.csv",
        "png": sw.folder / "sweep.png",
        "json": sw.folder / RECORD,
    }
    storage.write_text(markdown(sw, keys, per), paths["md"])
    storage.write_text(csv_text(sw, keys, per), paths["csv"])
    storage.write_bytes(forest.png(heatmap(sw, keys, per)), paths["png"])
    record = {
        "config": str(sw.config),
        "key": sw.key,
        "keys": sw.keys,
        "zip": sw.zipped,
        "base": None if sw.base is None else str(sw.base),
        "values": [
            {
                "value": v.written,
                "values": {k: v.values[k] for k in sw.keys},
                "config": str(v.config_path),
                "results": str(v.results),
                "stores": v.stores,
                "computed": v.computed,
                "shared_with_previous": v.shared,
                "run_seconds": v.seconds,
            }
            for v in sw.values
        ],
        "rows": len(keys),
    }
    storage.write_text(json.dumps(record, indent=1) + "\n", paths["json"])
    return paths
