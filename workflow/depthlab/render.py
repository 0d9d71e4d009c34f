"""The bytes of figure and claims files: the CSV number format, PNG and PDF rendering, the claims report and verdicts.

Every figure and claims stage's code fingerprint covers this module (depthlab.study.Stage), so a change here (say,
fewer digits in the CSVs that figures show and claims read, or another PNG resolution) reruns them.  The CLI only
writes the bytes these functions return and records their hashes.
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from typing import Any

CSV_FLOAT_FORMAT = "%.6g"  # six significant digits: what the figure tables carry
PNG_DPI = 150
PROVENANCE_KEY = "depthlab-provenance"  # the PNG text chunk holding the figure's record


def table_csv(table: Any) -> str:
    """A figure's tidy table (pandas DataFrame) as CSV text."""
    return table.to_csv(index=False, float_format=CSV_FLOAT_FORMAT)


# Saved to the bounding box of everything drawn (plus a margin), so that no label, legend or title is cut off at the
# canvas' edge, whatever the panel's size.
TIGHT = {"bbox_inches": "tight", "pad_inches": 0.06}


def figure_png(fig: Any) -> bytes:
    """PNG bytes of a matplotlib Figure; no timestamp, so reruns give identical bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PNG_DPI, metadata={"Software": "depthlab"}, **TIGHT)
    return buf.getvalue()


def layout_problems(fig: Any, min_px: float = 1.0) -> list[str]:
    """What a reviewer would send back, found from the drawn artists' bounding boxes (not by eye): a text that reaches
    outside what is saved (the figure's tight bounding box, at 100 dpi), and two texts that overlap by more than
    ``min_px`` in both directions (tick labels run together, an annotation on a label).  [] when the layout is clean."""
    import itertools

    from matplotlib.text import Text

    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    saved = fig.get_tightbbox(r).transformed(fig.dpi_scale_trans).padded(TIGHT["pad_inches"] * fig.dpi)
    ticks, drawn = set(), []  # every tick label, and those of the ticks drawn (inside the axis' view interval)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                labels = (tick.label1, tick.label2)
                ticks.update(map(id, labels))
                loc = tick.get_loc()
                if loc is not None and lo - 1e-9 * (abs(lo) + abs(hi)) <= loc <= hi + 1e-9 * (abs(lo) + abs(hi)):
                    drawn += [t for t in labels if t.get_visible()]
    boxes = []
    for t in [t for t in fig.findobj(Text) if id(t) not in ticks] + drawn:
        if not t.get_visible() or not t.get_text().strip():
            continue
        bb = t.get_window_extent(r)
        if bb.width > 0 and bb.height > 0:
            boxes.append((t, bb))
    out = []
    for t, bb in boxes:
        if (
            bb.x0 < saved.x0 - min_px
            or bb.y0 < saved.y0 - min_px
            or bb.x1 > saved.x1 + min_px
            or bb.y1 > saved.y1 + min_px
        ):
            out.append(f"text outside the saved figure: {t.get_text()[:50]!r}")
    for (a, ba), (b, bb) in itertools.combinations(boxes, 2):
        dx = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
        dy = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
        if dx > min_px and dy > min_px:
            out.append(f"texts overlap by {dx:.0f} x {dy:.0f} px: {a.get_text()[:40]!r} and {b.get_text()[:40]!r}")
    return out


def png_with_text(png: bytes, text: dict[str, str]) -> bytes:
    """``png`` with an iTXt chunk (UTF-8) per item inserted before IEND: the pixels stay exactly those rendered, so a
    figure is drawn once and its record (which holds the pixels' hash) is added after."""
    end = png.rindex(b"IEND") - 4  # the IEND chunk starts with its 4-byte length
    chunks = b""
    for key, value in text.items():
        data = key.encode("latin-1") + b"\0\0\0" + b"\0" + b"\0" + value.encode("utf-8")  # no compression, no language
        chunks += (
            struct.pack(">I", len(data)) + b"iTXt" + data + struct.pack(">I", zlib.crc32(b"iTXt" + data) & 0xFFFFFFFF)
        )
    return png[:end] + chunks + png[end:]


def figure_pdf(fig: Any, subject: str) -> bytes:
    """PDF bytes of a matplotlib Figure with ``subject`` in its info dict; no creation date."""
    buf = io.BytesIO()
    fig.savefig(buf, format="pdf", metadata={"Subject": subject, "Creator": "depthlab", "CreationDate": None}, **TIGHT)
    return buf.getvalue()


def verdicts_json(verdicts: list[Any]) -> str:
    """A claims stage's verdicts as the JSON text of claims.json."""
    return json.dumps([v.as_dict() for v in verdicts], indent=2, sort_keys=True) + "\n"


def claims_markdown(title: str, verdicts: list[Any], notes: list[str]) -> str:
    from . import claims

    return claims.render(title, verdicts, notes)
