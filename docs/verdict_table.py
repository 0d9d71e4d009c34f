"""Count a run's verdicts per claim, as the README's table shows them: ``python docs/verdict_table.py RESULTS/claims.md``
(or one study's ``RESULTS/<study>/claims.md``).

Reads the combined claims report of a run (``results/<name>/claims.md``: one row per verdict, each
``| study | ID (statement) | figure | subject | verdict | evidence |``) and prints one Markdown row per
(study, claim statement) with the number of rows that hold, do not hold, are inconclusive and are not applicable,
then the totals (a report of an older run, with three states, counts no row as not applicable); then the rows under
"## Extensions" (beyond the papers' claims) in a table of their own, never in the totals.
A claims report is text written by ``depthlab``; this script only reads it (no code from the results is run).
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

VERDICTS = {
    "holds": "holds",
    "**does not hold**": "does not hold",
    "does not hold": "does not hold",
    "inconclusive": "inconclusive",
    "not applicable": "not applicable",
}
STATES = ("holds", "does not hold", "inconclusive", "not applicable")


def rows(text: str, study: str = "", extensions: bool = False) -> list[tuple[str, str, str, str]]:
    """(study, claim id, statement, verdict) of every verdict row of a claims report: the run's combined one
    (``| study | ID (statement) | figure | subject | verdict | evidence |``) or one study's
    (``| claim | statement | figure | subject | verdict | evidence |``, its study given as ``study``).  Cells are split
    at unescaped bars (a statement may hold ``\\|``)."""
    out, combined, ext, in_table = [], False, False, False
    for line in text.splitlines():
        if line.startswith("## "):  # "## Extensions: rows beyond the papers' claims" starts the rows counted apart
            ext = line.startswith("## Extensions")
            continue
        if not line.strip().startswith("|"):  # a table ends at its first line that is not a row
            in_table = False
            continue
        if ext != extensions:
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if cells[:2] in (["study", "claim"], ["claim", "statement"]):
            combined, in_table = cells[0] == "study", True  # a verdict table's header (not the counts' table)
            continue
        if not in_table or len(cells) < 6 or cells[4] not in VERDICTS:
            continue
        if combined:
            m = re.match(r"(.+?) \((.*)\)$", cells[1])
            cid, statement = (m.group(1), m.group(2)) if m else (cells[1], "")
            out.append((cells[0], cid, statement, VERDICTS[cells[4]]))
        else:
            out.append((study, cells[0], cells[1], VERDICTS[cells[4]]))
    return out


def table(text: str, study: str = "", extensions: bool = False) -> str:
    counts: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for name, cid, statement, verdict in rows(text, study, extensions):
        counts[(name, cid, statement)][verdict] += 1
    lines = [
        "| study | claim | what it says | holds | does not hold | inconclusive | not applicable |",
        "|---|---|---|---|---|---|---|",
    ]
    total: Counter = Counter()
    for (study, cid, statement), c in counts.items():  # in the report's order
        total.update(c)
        cell = [str(c[v]) if c[v] else "" for v in STATES]
        lines.append(f"| {study} | {cid} | {statement} | " + " | ".join(cell) + " |")
    lines.append(
        f"| **{'all extensions' if extensions else 'all judged'}** | | | "
        + " | ".join(f"**{total[v]}**" for v in STATES)
        + " |"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python docs/verdict_table.py RESULTS/claims.md  (or RESULTS/<study>/claims.md)")
    path = Path(sys.argv[1])
    text = path.read_text()
    print(table(text, path.parent.name))
    if "## Extensions" in text:
        print("\nExtensions (beyond the papers' claims; not counted above):\n")
        print(table(text, path.parent.name, extensions=True))
