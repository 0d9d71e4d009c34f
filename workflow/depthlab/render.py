"""The bytes of figure and claims files: the CSV number format, PNG and PDF rendering, the claims markdown.

Every figure and claims stage's code fingerprint covers this module (depthlab.study.Stage), so a
change here (say, fewer digits in the CSVs that figures show and claims read) reruns them.
"""

from __future__ import annotations

import io
from typing import Any

CSV_FLOAT_FORMAT = "%.6g"  # six significant digits: what the figure tables carry


def table_csv(table: Any) -> str:
    """A figure's tidy table (pandas DataFrame) as CSV text."""
    return table.to_csv(index=False, float_format=CSV_FLOAT_FORMAT)


def figure_png(fig: Any, text: dict[str, str] | None = None) -> bytes:
    """PNG bytes of a matplotlib Figure, with ``text`` as tEXt chunks; no timestamp, so reruns give identical bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150, metadata={**(text or {}), "Software": "depthlab"})
    return buf.getvalue()


def figure_pdf(fig: Any, subject: str) -> bytes:
    """PDF bytes of a matplotlib Figure with ``subject`` in its info dict; no creation date."""
    buf = io.BytesIO()
    fig.savefig(buf, format="pdf", metadata={"Subject": subject, "Creator": "depthlab", "CreationDate": None})
    return buf.getvalue()
