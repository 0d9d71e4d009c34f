"""Claims machinery shared by every study: a Verdict per (claim, subject), rendered to markdown and JSON.

Each study's ``claims`` stage computes its verdicts from its figure tables (never
by hand) and states its criteria; this module renders them the same way for
every study, and builds the index over all studies (``<results>/claims.md``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

MARK = {True: "yes", False: "**NO**", None: "n/a"}


@dataclass
class Verdict:
    claim: str  # the SPEC id: "1" ... "6" (Mori & Ueda), "B1", "R1", "S2", "M3", ...
    statement: str  # what the claim says (or, for a question, what it asks), in a few words
    figure: str  # the figure whose table it was computed from
    subject: str  # target, depth, kernel, ... it is about
    holds: bool | None  # None: not enough data to judge (always None for a question)
    evidence: str  # the numbers, and the criterion they were held to (for a question: the answer, then the numbers)
    kind: str = "claim"  # claim: judged true or false | question: answered, never failed (SPEC's S3)

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def mark(self) -> str:
        return "answer" if self.kind == "question" else MARK[self.holds]


def counts(verdicts: list[Verdict]) -> tuple[int, int, int]:
    """(hold, do not hold, could not be judged) among the claims; questions are counted apart (:func:`answered`)."""
    claims = [v for v in verdicts if v.kind == "claim"]
    yes = sum(v.holds is True for v in claims)
    no = sum(v.holds is False for v in claims)
    return yes, no, len(claims) - yes - no


def answered(verdicts: list[Verdict]) -> int:
    return sum(v.kind == "question" for v in verdicts)


def render(title: str, verdicts: list[Verdict], notes: list[str]) -> str:
    """Markdown report of one study: notes (scale, criteria), then one table row per verdict."""
    lines = [f"# {title}: claims at the scale that was run", "",
             "Computed by the pipeline from the figure tables; not written by hand.", ""]
    for n in notes:
        lines += [n, ""]
    lines += ["| claim | statement | figure | subject | holds | evidence |", "|---|---|---|---|---|---|"]
    for v in verdicts:
        lines.append(f"| {v.claim} | {v.statement} | {v.figure} | {v.subject} | {v.mark} | {v.evidence} |")
    yes, no, na = counts(verdicts)
    q = answered(verdicts)
    lines += ["", f"{yes} hold, {no} do not hold, {na} could not be judged" + (f"; {q} question(s) answered." if q else ".")]
    return "\n".join(lines) + "\n"


def render_index(studies: list[tuple[str, str, list[dict]]]) -> str:
    """The index over all studies: (study, title, verdict dicts) -> markdown with per-study counts and every row."""
    lines = ["# depthlab claims: every study", "",
             "One row per verdict of every study built by this run, each labelled with its SPEC claim id.", "",
             "| study | holds | does not hold | n/a |", "|---|---|---|---|"]
    for name, title, rows in studies:
        vs = [Verdict(**r) for r in rows]
        yes, no, na = counts(vs)
        lines.append(f"| [{title}]({name}/claims.md) | {yes} | {no} | {na} |")
    lines += ["", "| study | claim | figure | subject | holds | evidence |", "|---|---|---|---|---|---|"]
    for name, _, rows in studies:
        for r in rows:
            v = Verdict(**r)
            lines.append(f"| {name} | {v.claim} ({v.statement}) | {v.figure} | {v.subject} | {v.mark} | {v.evidence} |")
    return "\n".join(lines) + "\n"
