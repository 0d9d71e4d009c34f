"""``depthlab diff A B``: what differs between two runs, read only from what their folders record.

A and B are results folders or config files (a config's folder is ``depthlab where CONFIG``).  Three parts:

* **config**: the keys whose values differ between the two folders' ``config.used.yaml`` (validated, every default
  filled in), with both values;
* **stores**: per study and stage, how many stores have the same content hash in both, a different one, or are in
  one folder only (a store's record names its study, stage and content hash; arrays are not opened);
* **claims**: every claim row of both ``<study>/claims.json``, keyed by study, claim, statement, figure and subject:
  the verdict A -> B and the effect +- SE A -> B.  Rows whose verdict changed come first, then rows whose effect moved
  by more than the two SEs combined (sqrt(se_A^2 + se_B^2)); a row of an older run without the comparison fields
  shows its verdict alone.

Everything read is untrusted: JSON through the safe reader, YAML through the strict loader, no code from the folders.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import folder, forest, outputs, safeio, storage


class DiffError(ValueError):
    """A side that is neither a results folder nor a config file with one."""


@dataclass
class Side:
    label: str
    root: Path
    config: dict | None  # None: the folder records no config (not run, and no fork record naming one)
    stores: dict[str, tuple[str, str]]  # relative path -> (study/stage, content hash)
    rows: dict[tuple, dict]  # (study, claim, statement, figure, subject) -> claims.json row


def _root(arg: str) -> tuple[Path, dict | None]:
    """A side's results folder, and its validated config when ``arg`` is a config file."""
    p = Path(arg)
    if p.is_dir():
        return p, None
    if p.is_file():
        from . import config as dlc

        try:
            cfg = dlc.validate(dlc.read_yaml(p), memory=False, source=p)
        except dlc.ConfigError as e:
            raise DiffError(f"{arg}: {e}") from None
        return Path(cfg["results"]), cfg
    raise DiffError(f"{arg}: neither a results folder nor a config file")


def _recorded_config(root: Path) -> dict | None:
    """The config a folder records: its run's ``config.used.yaml``; for a fork that has not run yet, the config file its
    fork record names (validated); None when there is neither (then the config part says so instead of listing every
    key as absent)."""
    from . import config as dlc

    used = root / "config.used.yaml"
    if used.is_file():
        try:
            cfg = dlc.read_yaml(used) or {}
        except dlc.ConfigError as e:
            raise DiffError(f"{used}: {e}") from None
        return cfg if isinstance(cfg, dict) else {}
    try:
        rec = safeio.read_json(root / ".depthlab.fork.json")
        src = Path(str(rec["new_config"])) if isinstance(rec, dict) and "new_config" in rec else None
        if src is not None and src.is_file():
            return dlc.validate(dlc.read_yaml(src), memory=False, source=src)
    except (OSError, ValueError, KeyError, dlc.ConfigError):
        pass
    return None


def load(arg: str) -> Side:
    root, given = _root(arg)
    if not root.is_dir():
        raise DiffError(f"{arg}: its results folder {root} does not exist (has it run?)")
    recorded = _recorded_config(root)
    cfg = recorded if recorded is not None else given
    from .records import store_record, stores_below

    stores: dict[str, tuple[str, str]] = {}
    for p in stores_below(root):
        try:
            # the record from the store's zarr.json alone, through the safe reader; no array opened
            rec = store_record(p)
        except Exception:  # an unreadable store is listed as such, never a traceback
            stores[storage.relpath(p, root)] = ("(unreadable)", "")
            continue
        stores[storage.relpath(p, root)] = (
            f"{rec.get('study', '?')}/{rec.get('stage', '?')}",
            str(rec.get("content_hash", "")),
        )
    rows: dict[tuple, dict] = {}
    for f in sorted(root.glob("*/claims.json")):
        try:
            data = safeio.read_json(f)
        except (safeio.UnsafeFile, OSError) as e:
            raise DiffError(f"{f}: {e}") from None
        if not isinstance(data, list):
            raise DiffError(f"{f}: not a list of claim rows")
        for r in data:
            if isinstance(r, dict):
                key = (
                    f.parent.name,
                    str(r.get("claim")),
                    str(r.get("statement")),
                    str(r.get("figure")),
                    str(r.get("subject")),
                )
                rows[key] = r
    return Side(arg, root, cfg if isinstance(cfg, dict) else None, stores, rows)


def _verdict(r: dict | None) -> str:
    return "(absent)" if r is None else forest.verdict(r)  # an older run's row without the field: from `holds`


def _num(r: dict | None, k: str) -> float | None:
    return None if r is None else forest._num(r, k)


def _effect(r: dict | None) -> str:
    e, se = _num(r, "effect"), _num(r, "stderr")
    if e is None:
        return ""
    return f"{e:.4g}" + (f" +- {se:.2g}" if se is not None else "")


@dataclass
class Diff:
    a: Side
    b: Side
    config: list[tuple[str, Any, Any]] = field(default_factory=list)
    stores: dict[str, dict[str, int]] = field(default_factory=dict)
    changed: list[dict] = field(default_factory=list)  # verdict changed
    moved: list[dict] = field(default_factory=list)  # same verdict, effect moved beyond the combined SE
    same: int = 0
    unrecorded: list[str] = field(default_factory=list)  # sides that record no config: the keys cannot be compared

    @property
    def any_change(self) -> bool:
        return bool(self.changed)

    def as_dict(self) -> dict:
        return {
            "a": str(self.a.root),
            "b": str(self.b.root),
            "config": [{"key": k, "a": va, "b": vb} for k, va, vb in self.config],
            "config_not_recorded": self.unrecorded,
            "stores": self.stores,
            "verdict_changed": self.changed,
            "effect_moved": self.moved,
            "rows_unchanged": self.same,
        }


def _get(cfg: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if isinstance(cfg, dict) and part in cfg:
            cfg = cfg[part]
        else:
            return "(absent)"
    return cfg


def diff(a: Side, b: Side) -> Diff:
    d = Diff(a, b)
    if a.config is None or b.config is None:
        d.unrecorded = [s.label for s in (a, b) if s.config is None]
    else:
        ca, cb = ({"device_by_study": {}, **c} for c in (a.config, b.config))  # a snapshot leaves an empty mapping out
        keys = folder.differences(ca, cb)
        # the device and kernel keys change no result (folder.IGNORED; the stores record the machine), and a snapshot
        # records the device it resolved ("cpu") where an unrun fork's file still says "auto": listing them was noise
        d.config = [
            (k, _get(ca, k), _get(cb, k)) for k in keys if k != "results" and k.split(".")[0] not in folder.IGNORED
        ]
    for rel in sorted(set(a.stores) | set(b.stores)):
        sa, sb = a.stores.get(rel), b.stores.get(rel)
        stage = (sa or sb)[0]
        c = d.stores.setdefault(stage, {"same": 0, "different": 0, "only_a": 0, "only_b": 0})
        if sa is None:
            c["only_b"] += 1
        elif sb is None:
            c["only_a"] += 1
        else:
            c["same" if sa[1] == sb[1] and sa[1] else "different"] += 1
    for key in sorted(set(a.rows) | set(b.rows)):
        ra, rb = a.rows.get(key), b.rows.get(key)
        row = {
            "study": key[0],
            "claim": key[1],
            "statement": key[2],
            "figure": key[3],
            "subject": key[4],
            "verdict_a": _verdict(ra),
            "verdict_b": _verdict(rb),
            "effect_a": _num(ra, "effect"),
            "stderr_a": _num(ra, "stderr"),
            "effect_b": _num(rb, "effect"),
            "stderr_b": _num(rb, "stderr"),
            "z_a": _num(ra, "z"),
            "z_b": _num(rb, "z"),
        }
        if row["verdict_a"] != row["verdict_b"]:
            d.changed.append(row)
            continue
        ea, eb = row["effect_a"], row["effect_b"]
        if ea is not None and eb is not None:
            se = math.hypot(row["stderr_a"] or 0.0, row["stderr_b"] or 0.0)
            if abs(eb - ea) > se and (se > 0 or ea != eb):
                row["moved_by_se"] = abs(eb - ea) / se if se > 0 else None
                d.moved.append(row)
                continue
        d.same += 1
    return d


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))}


def clean(x: Any) -> str:
    """Text from a folder, made inert for a terminal: every control character (an ANSI escape's ESC, a newline, a
    carriage return) shown as its \\x escape.  Claims files are untrusted input."""
    return str(x).translate(_CONTROL)


def _cell(x: Any) -> str:
    """A markdown table cell: control characters escaped (a newline would end the row), the bar, and HTML's <, > and &
    (a renderer passes raw HTML through: a subject '<script>' would run in the page that shows the diff)."""
    import html

    return html.escape(clean(x), quote=False).replace("|", "\\|")


def markdown(d: Diff) -> str:
    lines = [f"# depthlab diff: {_cell(d.a.root)} -> {_cell(d.b.root)}", "", "## Config", ""]
    if d.unrecorded:
        lines.append(f"Not compared: {', '.join(_cell(u) for u in d.unrecorded)} records no config (not run yet).")
    elif d.config:
        lines += ["| key | A | B |", "|---|---|---|"]
        lines += [
            f"| {_cell(k)} | {_cell(json.dumps(va, sort_keys=True))} | {_cell(json.dumps(vb, sort_keys=True))} |"
            for k, va, vb in d.config
        ]
    else:
        lines.append("The same values (results folder aside).")
    lines += [
        "",
        "## Stores (content hash)",
        "",
        "| study/stage | same | different | only in A | only in B |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {_cell(s)} | {c['same']} | {c['different']} | {c['only_a']} | {c['only_b']} |"
        for s, c in sorted(d.stores.items())
    ]
    lines += [
        "",
        f"## Claims: {len(d.changed)} verdict(s) changed, {len(d.moved)} effect(s) moved beyond their combined SE, "
        f"{d.same} row(s) unchanged",
        "",
    ]
    if d.changed or d.moved:
        lines += [
            "| study | claim | statement | figure | subject | verdict A -> B | effect A -> B |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in d.changed + d.moved:
            ea = _effect({"effect": r["effect_a"], "stderr": r["stderr_a"]})
            eb = _effect({"effect": r["effect_b"], "stderr": r["stderr_b"]})
            lines.append(
                f"| {_cell(r['study'])} | {_cell(r['claim'])} | {_cell(r['statement'])} | {_cell(r['figure'])} | "
                f"{_cell(r['subject'])} | {_cell(r['verdict_a'])} -> {_cell(r['verdict_b'])} | {ea or '-'} -> {eb or '-'} |"
            )
    return "\n".join(lines) + "\n"


def plot(d: Diff, path: str | Path, every_row: bool = False) -> int:
    """Both runs on one forest plot (depthlab.forest), written as PNG to ``path``: the rows whose verdict changed, then
    those whose effect moved beyond the combined SE; every row with ``every_row``.  With nothing changed and no
    ``every_row``, nothing is drawn and no file written.  Returns the number of rows drawn."""
    keys = [(r["study"], r["claim"], r["statement"], r["figure"], r["subject"]) for r in d.changed + d.moved]
    what = "rows whose verdict changed or whose effect moved beyond the combined SE"
    if not keys and not every_row:  # nothing to show: no picture of every row (a 1300 x 7679 px PNG of 87 rows)
        return 0
    if every_row:
        keys = sorted(set(d.a.rows) | set(d.b.rows))
        what = "every row"
    pairs = [(k, d.a.rows.get(k), d.b.rows.get(k)) for k in keys]
    fig = forest.diff_figure(f"depthlab diff: A = {d.a.root}, B = {d.b.root}; {what}", pairs)
    outputs.write_user_file(forest.png(fig), path, protect=(d.a.root, d.b.root), what="--plot")
    return len(pairs)


def terminal(d: Diff) -> str:
    out = [f"A: {clean(d.a.root)}", f"B: {clean(d.b.root)}", ""]
    if d.unrecorded:
        out.append(f"config: not compared: {', '.join(clean(u) for u in d.unrecorded)} records no config (not run yet)")
    else:
        out.append(f"config: {len(d.config)} key(s) differ" + (":" if d.config else ""))
    out += [
        f"  {clean(k)}: {clean(json.dumps(va, sort_keys=True))} -> {clean(json.dumps(vb, sort_keys=True))}"
        for k, va, vb in d.config
    ]
    out += ["", "stores (same / different / only A / only B):"]
    out += [
        f"  {clean(s):<34} {c['same']:>5} {c['different']:>5} {c['only_a']:>5} {c['only_b']:>5}"
        for s, c in sorted(d.stores.items())
    ]
    out += [
        "",
        f"claims: {len(d.changed)} verdict(s) changed, {len(d.moved)} effect(s) moved beyond the combined SE, "
        f"{d.same} unchanged",
    ]
    for title, rows in (("verdict changed", d.changed), ("effect moved", d.moved)):
        for r in rows:
            ea = _effect({"effect": r["effect_a"], "stderr": r["stderr_a"]})
            eb = _effect({"effect": r["effect_b"], "stderr": r["stderr_b"]})
            out.append(
                clean(
                    f"  [{title}] {r['study']} {r['claim']} {r['figure']} {r['subject']}: {r['verdict_a']} -> "
                    f"{r['verdict_b']}"
                )
                + (f"; effect {ea or '-'} -> {eb or '-'}" if ea or eb else "")
                + f"  ({clean(r['statement'])})"
            )
    return "\n".join(out) + "\n"


# ---- depthlab compare RUN1 RUN2 ... ------------------------------------------------------------------------------


def runs_table(sides: list[Side]) -> tuple[str, int]:
    """N runs side by side (``dvc exp show`` for verdicts): one row per claim row any run has, each run's verdict and
    effect +- SE; the rows whose verdict differs between runs first, marked "differs".  Returns the markdown and the
    number of rows that differ."""
    keys = sorted(set().union(*(s.rows for s in sides)))

    def differs(k: tuple) -> bool:
        return len({_verdict(s.rows.get(k)) for s in sides}) > 1

    keys.sort(key=lambda k: (not differs(k), k))
    n = sum(map(differs, keys))
    lines = [
        f"# depthlab compare: {len(sides)} runs, {len(keys)} claim rows, {n} with a verdict that differs (listed first)",
        "",
        *(f"- run {i + 1}: {_cell(s.label)} ({_cell(s.root)})" for i, s in enumerate(sides)),
        "",
        "| | study | claim | subject (figure) | " + " | ".join(f"run {i + 1}" for i in range(len(sides))) + " |",
        "|---|---|---|---|" + "---|" * len(sides),
    ]
    for k in keys:
        cells = [_verdict(s.rows.get(k)) + (f" {e}" if (e := _effect(s.rows.get(k))) else "") for s in sides]
        lines.append(
            f"| {'differs' if differs(k) else ''} | {_cell(k[0])} | {_cell(k[1])}: {_cell(k[2])} | "
            f"{_cell(k[4])} ({_cell(k[3])}) | " + " | ".join(_cell(c) for c in cells) + " |"
        )
    return "\n".join(lines) + "\n", n


def run(args: Any) -> int:
    """``depthlab compare RUN1 RUN2 [...] [--markdown F]``: the table on stdout (and in F); exit 0."""
    import sys

    try:
        if len(args.runs) < 2:
            raise DiffError(f"compare needs two runs or more; got {len(args.runs)} (depthlab diff A B for one pair)")
        sides = [load(r) for r in args.runs]
        text, n = runs_table(sides)
        if args.markdown:
            outputs.write_user_file(
                text.encode(), args.markdown, protect=tuple(s.root for s in sides), what="--markdown"
            )
    except (DiffError, outputs.OutputRefused) as e:
        print(f"depthlab compare: {e}", file=sys.stderr)
        return 2
    print("\n".join(clean(line) for line in text.splitlines()))  # each line inert for a terminal
    return 0
