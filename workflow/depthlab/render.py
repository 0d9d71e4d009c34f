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


def figure_png(fig: Any) -> bytes:
    """PNG bytes of a matplotlib Figure; no timestamp, so reruns give identical bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PNG_DPI, metadata={"Software": "depthlab"})
    return buf.getvalue()


def png_with_text(png: bytes, text: dict[str, str]) -> bytes:
    """``png`` with an iTXt chunk (UTF-8) per item inserted before IEND: the pixels stay exactly those rendered, so a
    figure is drawn once and its record (which holds the pixels' hash) is added after."""
    end = png.rindex(b"IEND") - 4  # the IEND chunk starts with its 4-byte length
    chunks = b""
    for key, value in text.items():
        data = key.encode("latin-1") + b"\0\0\0" + b"\0" + b"\0" + value.encode("utf-8")  # no compression, no language
        chunks += struct.pack(">I", len(data)) + b"iTXt" + data + struct.pack(">I", zlib.crc32(b"iTXt" + data) & 0xFFFFFFFF)
    return png[:end] + chunks + png[end:]


def figure_pdf(fig: Any, subject: str) -> bytes:
    """PDF bytes of a matplotlib Figure with ``subject`` in its info dict; no creation date."""
    buf = io.BytesIO()
    fig.savefig(buf, format="pdf", metadata={"Subject": subject, "Creator": "depthlab", "CreationDate": None})
    return buf.getvalue()


def verdicts_json(verdicts: list[Any]) -> str:
    """A claims stage's verdicts as the JSON text of claims.json."""
    return json.dumps([v.as_dict() for v in verdicts], indent=2, sort_keys=True) + "\n"


def claims_markdown(title: str, verdicts: list[Any], notes: list[str]) -> str:
    from . import claims

    return claims.render(title, verdicts, notes)
