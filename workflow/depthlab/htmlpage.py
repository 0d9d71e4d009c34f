"""The HTML pages the Snakemake report shows in place (it downloads any item that is not an image or HTML): each
study's claims report, the claims index and the config used, rendered from the very text of their markdown or YAML
files with markdown-it-py (CommonMark plus tables; raw HTML in the text is escaped, never passed through), the verdict
cells coloured as the forest plots colour them."""

from __future__ import annotations

import html
import re

from .forest import COLOURS

_CSS = """body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:14px;line-height:1.45;margin:1.5em;
color:#222;max-width:110em}table{border-collapse:collapse;margin:.8em 0;font-size:12.5px}th,td{border:1px solid #ccc;
padding:3px 6px;vertical-align:top;text-align:left}th{background:#f3f3f3}blockquote{border-left:4px solid #f59e0b;
margin:.8em 0;padding:.3em .9em;background:#fff8e6}code,pre{font-family:ui-monospace,monospace;font-size:12.5px}
pre{background:#f7f7f7;padding:.8em;overflow-x:auto}""" + "".join(
    f"td.v-{re.sub(r'[^a-z]+', '-', s)}{{background:{c}22;color:{c};font-weight:600;white-space:nowrap}}"
    for s, c in COLOURS.items()
)

# a table cell whose whole text is a verdict, as claims.md writes it ("holds", "**does not hold**", ...)
_CELL = re.compile(
    r"<td>(?:<strong>)?(" + "|".join(map(re.escape, sorted(COLOURS, key=len, reverse=True))) + r")(?:</strong>)?</td>"
)


def _mark(m: re.Match) -> str:
    state = m.group(1)
    return f'<td class="v-{re.sub(r"[^a-z]+", "-", state)}">{m.group(0)[4:-5]}</td>'


def _doc(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>'
        + html.escape(title)
        + f"</title><style>{_CSS}</style></head><body>\n{body}</body></html>\n"
    )


def markdown_page(title: str, text: str) -> str:
    """A whole HTML page of a markdown text (a claims report or the index), its verdict cells coloured."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    return _doc(title, _CELL.sub(_mark, md.render(text)))


def text_page(title: str, text: str) -> str:
    """A whole HTML page showing a plain text (the config used) as it is."""
    return _doc(title, f"<h1>{html.escape(title)}</h1>\n<pre>{html.escape(text)}</pre>\n")
