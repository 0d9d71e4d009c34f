"""Claims machinery shared by every study: a three-valued Verdict per (claim, subject), rendered to markdown and JSON.

Each study's ``claims`` stage computes its verdicts from its figure tables (never by hand) and states its criteria;
this module renders them the same way for every study, and builds the index over all studies (``<results>/claims.md``).

A claim row *holds*, *does not hold*, or is *inconclusive* (SPEC §6).  Inconclusive, always with its reason, when
what the claim rests on is unsound: a net that did not converge (still improving when its budget ran out), a rate
chosen at an edge of its grid that could not grow, every net at chance, or seeds that disagree beyond the stated
margin.  A study's checker keeps only its claim's logic and hands the problems of its evidence to :func:`judge`, which
turns any problem into *inconclusive* (saying what the numbers alone would give), so no checker can pass or fail a
claim on unsound numbers by forgetting to look.  A *question* (SPEC's S3) is answered, never judged.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE)


@dataclass
class Verdict:
    claim: str  # the SPEC id: "1" ... "6" (Mori & Ueda), "B1", "R1", "S2", "M3", ...
    statement: str  # what the claim says (or, for a question, what it asks), in a few words
    figure: str  # the figure whose table it was computed from
    subject: str  # target, depth, kernel, ... it is about
    holds: bool | None  # None: inconclusive (``reason`` says why); always None for a question
    evidence: str  # the numbers, and the criterion they were held to (for a question: the answer, then the numbers)
    kind: str = "claim"  # claim: judged | question: answered, never failed (SPEC's S3)
    reason: str = ""  # why the claim is inconclusive ("" when it holds or does not)

    def __post_init__(self) -> None:
        if self.kind == "claim" and self.holds is None and not self.reason:
            raise ValueError(f"claim {self.claim} ({self.subject}): an inconclusive verdict needs its reason")

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def verdict(self) -> str:
        if self.kind == "question":
            return "answer"
        return HOLDS if self.holds is True else FAILS if self.holds is False else INCONCLUSIVE

    @property
    def mark(self) -> str:
        """The verdict as the report's tables show it."""
        v = self.verdict
        return "**does not hold**" if v == FAILS else v


def judge(claim: str, statement: str, figure: str, subject: str, holds: bool | None, evidence: str,
          problems: Iterable[str] = (), why_none: str = "") -> Verdict:
    """A claim's verdict from its own test (``holds``) and the problems of what it rests on: any problem makes it
    inconclusive, the reason naming each problem and what the numbers alone would say.  ``holds`` None (the test
    could not be applied) needs ``why_none``."""
    problems = [p for p in problems if p]
    if holds is None:
        problems = [why_none or "the test could not be applied"] + problems
    elif problems:
        problems.append(f"on these numbers alone it would {'hold' if holds else 'not hold'}")
    if problems:
        return Verdict(claim, statement, figure, subject, None, evidence, reason="; ".join(problems))
    return Verdict(claim, statement, figure, subject, bool(holds), evidence)


def _names(names: list[str], most: int = 6) -> str:
    names = sorted(set(names))
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def unconverged(table: Any, label: Callable[[Any], str], converged: str = "converged", diverged: str | None = "diverged") -> str:
    """The problem 'k of n nets ... did not converge' of a table's rows (each a trained net) whose ``converged`` is False
    (a diverged net is not 'unconverged': divergence is reported on its own), naming them by ``label(row)``; '' if none."""
    if converged not in table or not len(table):
        return ""
    bad = ~table[converged].astype(bool)
    if diverged and diverged in table:
        bad &= ~table[diverged].astype(bool)
    if not bad.any():
        return ""
    return (f"{int(bad.sum())} of {len(table)} nets it rests on did not converge (still improving when the budget ran "
            f"out: {_names([label(r) for r in table[bad].itertuples()])})")


def diverged(table: Any, label: Callable[[Any], str], consequence: str, column: str = "diverged") -> str:
    """The problem 'k of n nets diverged (...): <consequence>' of a table's rows (each a trained net) whose ``column`` is
    set, naming them by ``label(row)``; '' if none (or no such column)."""
    if column not in table or not len(table):
        return ""
    bad = table[column].astype(bool)
    if not bad.any():
        return ""
    return f"{int(bad.sum())} of {len(table)} nets diverged ({_names([label(r) for r in table[bad].itertuples()])}): {consequence}"


def flagged(table: Any, label: Callable[[Any], str], flag: str = "lr_flagged", edge: str = "lr_edge") -> str:
    """The problem 'the rate chosen for ... sits at the lower/upper edge of its grid' of rows whose ``flag`` is set."""
    if flag not in table or not len(table):
        return ""
    rows = table[table[flag].astype(bool)]
    if not len(rows):
        return ""
    names = _names([f"{label(r)} ({getattr(r, edge, 'an')} edge)" for r in rows.itertuples()])
    return f"the rate chosen for {names} sits at the edge of its grid, which could not grow further"


def counts(verdicts: list[Verdict]) -> tuple[int, int, int]:
    """(hold, do not hold, inconclusive) among the claims; questions are counted apart (:func:`answered`)."""
    claims = [v.verdict for v in verdicts if v.kind == "claim"]
    return claims.count(HOLDS), claims.count(FAILS), claims.count(INCONCLUSIVE)


def answered(verdicts: list[Verdict]) -> int:
    return sum(v.kind == "question" for v in verdicts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _evidence(v: Verdict) -> str:
    return f"inconclusive: {v.reason}. {v.evidence}" if v.verdict == INCONCLUSIVE else v.evidence


def render(title: str, verdicts: list[Verdict], notes: list[str]) -> str:
    """Markdown report of one study: notes (scale, criteria), then one table row per verdict."""
    lines = [f"# {title}: claims at the scale that was run", "",
             "Computed by the pipeline from the figure tables; not written by hand. A row *holds*, *does not hold* or is "
             "*inconclusive*, with the reason: a net it rests on did not converge, a rate sits at a flagged edge of its grid, "
             "every net is at chance, or the seeds disagree beyond the stated margin.", ""]
    for n in notes:
        lines += [n, ""]
    lines += ["| claim | statement | figure | subject | verdict | evidence |", "|---|---|---|---|---|---|"]
    for v in verdicts:
        lines.append(f"| {v.claim} | {_cell(v.statement)} | {v.figure} | {_cell(v.subject)} | {v.mark} | {_cell(_evidence(v))} |")
    yes, no, na = counts(verdicts)
    q = answered(verdicts)
    lines += ["", f"{yes} hold, {no} do not hold, {na} inconclusive" + (f"; {q} question(s) answered." if q else ".")]
    return "\n".join(lines) + "\n"


def render_index(studies: list[tuple[str, str, list[dict]]]) -> str:
    """The index over all studies: (study, title, verdict dicts) -> markdown with per-study counts and every row."""
    lines = ["# depthlab claims: every study", "",
             "One row per verdict of every study built by this run, each labelled with its SPEC claim id.", "",
             "| study | holds | does not hold | inconclusive |", "|---|---|---|---|"]
    for name, title, rows in studies:
        yes, no, na = counts([Verdict(**r) for r in rows])
        lines.append(f"| [{title}]({name}/claims.md) | {yes} | {no} | {na} |")
    lines += ["", "| study | claim | figure | subject | verdict | evidence |", "|---|---|---|---|---|---|"]
    for name, _, rows in studies:
        for r in rows:
            v = Verdict(**r)
            lines.append(f"| {name} | {v.claim} ({_cell(v.statement)}) | {v.figure} | {_cell(v.subject)} | {v.mark} | "
                         f"{_cell(_evidence(v))} |")
    return "\n".join(lines) + "\n"
