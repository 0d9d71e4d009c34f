"""Claims machinery shared by every study: a three-valued Verdict per (claim, subject), rendered to markdown and JSON.

Each study's ``claims`` stage computes its verdicts from its figure tables (never by hand) and states its criteria;
this module renders them the same way for every study, and builds the index over all studies (``<results>/claims.md``).

A claim row *holds*, *does not hold*, or is *inconclusive* (SPEC §6).  Inconclusive, always with its reason, when
what the claim rests on is unsound: a net that did not converge (still improving when its budget ran out), a rate
chosen at an edge of its grid that could not grow, every net at chance, or seeds that disagree beyond the stated
margin.  A study's checker keeps only its claim's logic and hands the problems of its evidence to :func:`judge`, which
turns any problem into *inconclusive* (saying what the numbers alone would give), so no checker can pass or fail a
claim on unsound numbers by forgetting to look.  A *question* (SPEC's S3) is answered, never judged.

A fourth state, *not applicable*: the claim has no content at this config (S2 where w + 1 >= 2^L, a non-monotonic
half with fewer than two interior depths); it is listed with its reason (saying what config would make it apply) and
counted in its own column, never as inconclusive.

Decisions under uncertainty (issue 53).  What a checker compares is a :class:`depthlab.core.stats.Estimate` (a value
and its standard error), decided here, never by the checker:

* :func:`exceeds`: "the effect is above (below) the threshold" *holds* when it clears the threshold by ``Z`` standard
  errors, *does not hold* when it falls short by ``Z``, and in between is *inconclusive: inside the error bars*.
  z = (effect - threshold) / SE, signed towards "holds": a row with z >= Z holds, z <= -Z does not, and |z| is how many
  SEs separate it from the threshold (so z - (-Z) from the other verdict).  An estimate with no SE (one net and no
  sample to resample, or an exact quantity) is decided on its value, with z null and the evidence saying so.
* :func:`trend`: a rank trend holds (fails) when its sign holds (is reversed) in >= ``TREND_SHARE`` of bootstrap
  resamples over seeds (over the test-sample error for one seed: :func:`depthlab.core.stats.trend_sign`); in between
  inconclusive.  Its effect is Spearman's rho, its SE the resamples' SD.
* :func:`all_of`: a claim that is several tests holds when every one holds, fails when any fails, and carries the
  numbers of the test nearest its threshold.
* :func:`learned`: points at chance (or at the target's variance) within ``Z`` SEs leave a trend, named in the row.

Every row carries ``verdict``, ``reason``, ``effect``, ``stderr``, ``threshold`` and ``z`` into claims.json (null
where the row is not a comparison).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable, Iterable

from depthlab.core.stats import Estimate, trend_sign

HOLDS, FAILS, INCONCLUSIVE, NOT_APPLICABLE = "holds", "does not hold", "inconclusive", "not applicable"
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, NOT_APPLICABLE)
Z = 2.0  # a comparison is decided when it clears its threshold by Z standard errors
TREND_SHARE = 0.95  # a trend is decided when its sign holds in this share of bootstrap resamples


@dataclass
class Verdict:
    claim: str  # the SPEC id: "1" ... "6" (Mori & Ueda), "B1", "R1", "S2", "M3", ...
    statement: str  # what the claim says (or, for a question, what it asks), in a few words
    figure: str  # the figure whose table it was computed from
    subject: str  # target, depth, kernel, ... it is about
    holds: bool | None  # None: inconclusive (``reason`` says why); always None for a question
    evidence: str  # the numbers, and the criterion they were held to (for a question: the answer, then the numbers)
    kind: str = "claim"  # claim: judged | question: answered, never failed (SPEC's S3)
    reason: str = ""  # why the claim is inconclusive or not applicable ("" when it holds or does not)
    effect: float | None = None  # the compared quantity (None: the row is not a comparison)
    stderr: float | None = None  # its standard error (None: none could be formed)
    threshold: float | None = None  # what it is compared with
    z: float | None = None  # (effect - threshold) / stderr, signed towards "holds"
    applicable: bool = True  # False: the claim has no content at this config (``reason`` says why, and how to make it apply)
    substituted: str = ""  # nets it rests on trained at a rate other than the one chosen (a seed diverged): which, and why

    def __post_init__(self) -> None:
        if self.kind == "claim" and self.holds is None and not self.reason:
            raise ValueError(f"claim {self.claim} ({self.subject}): an inconclusive verdict needs its reason")
        for f in ("effect", "stderr", "threshold", "z"):  # claims.json is strict JSON: no NaN or infinity
            v = getattr(self, f)
            if v is not None and not math.isfinite(v):
                object.__setattr__(self, f, None)
            elif v is not None:
                object.__setattr__(self, f, float(v))

    def as_dict(self) -> dict:
        return {**asdict(self), "verdict": self.verdict}

    @classmethod
    def from_dict(cls, row: dict) -> "Verdict":
        """A row of claims.json (this version's, or an older run's without the comparison fields)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in row.items() if k in names})

    @property
    def verdict(self) -> str:
        if self.kind == "question":
            return "answer"
        if not self.applicable:
            return NOT_APPLICABLE
        return HOLDS if self.holds is True else FAILS if self.holds is False else INCONCLUSIVE

    @property
    def mark(self) -> str:
        """The verdict as the report's tables show it."""
        v = self.verdict
        return "**does not hold**" if v == FAILS else v


@dataclass(frozen=True)
class Test:
    """The outcome of one comparison under uncertainty (:func:`exceeds`, :func:`trend`, :func:`all_of`)."""

    holds: bool | None  # None: inside the error bars (``problem`` says so), or the test could not be applied
    effect: float
    stderr: float
    threshold: float
    z: float | None
    problem: str = ""  # why it is not decided ("" when it is)
    note: str = ""  # what the evidence should add (the SE's source, or that there is none)

    def text(self, fmt: str = ".4g") -> str:
        """'0.32 +- 0.04 vs 0.25 (z = +1.75)' for the evidence."""
        se = f" +- {self.stderr:.2g}" if math.isfinite(self.stderr) else ""
        z = f", z = {self.z:+.2f}" if self.z is not None else ""
        return f"{self.effect:{fmt}}{se} vs {self.threshold:{fmt}}{z}{self.note}"


def exceeds(est: Estimate, threshold: float, *, below: bool = False, z: float = Z, what: str = "the effect") -> Test:
    """Does ``est`` lie above ``threshold`` (below it with ``below``) by more than ``z`` standard errors?

    holds: the difference clears the threshold by z SE; does not hold: it falls short by z SE; otherwise None with
    the problem 'inside the error bars'.  With no SE (NaN) or an exact one (0) the value alone decides and z is None."""
    d = (threshold - est.value) if below else (est.value - threshold)
    if not math.isfinite(est.value):
        return Test(None, est.value, est.se, threshold, None, f"{what} could not be computed")
    if not (math.isfinite(est.se) and est.se > 0):
        note = " (no error bar: " + ("one net, nothing to resample)" if not math.isfinite(est.se) else "an exact value)")
        return Test(bool(d > 0), est.value, est.se, threshold, None, "", note)
    score = d / est.se
    if score >= z:
        return Test(True, est.value, est.se, threshold, score)
    if score <= -z:
        return Test(False, est.value, est.se, threshold, score)
    side = "below" if below else "above"
    return Test(None, est.value, est.se, threshold, score,
                f"inside the error bars: {what} {est.value:.4g} +- {est.se:.2g} against {threshold:.4g} (needed {side} it by "
                f"{z:g} SE; z = {score:+.2f})")


def trend(x, samples: list, *, falling: bool, sem: list | None = None, what: str = "the trend", share: float = TREND_SHARE,
          seed: int = 0) -> Test:
    """A rank trend of y (replicates ``samples[i]`` at ``x[i]``) against x: holds when Spearman's rho has the claimed sign
    (negative with ``falling``) in >= ``share`` of bootstrap resamples, does not hold when it has the other sign in >=
    ``share``, and is inside the error bars otherwise.  Fewer than two points: not applied (holds None)."""
    if len(x) < 2:
        return Test(None, float("nan"), float("nan"), 0.0, None, f"{what}: fewer than two points")
    rho, up, down, rhos_sd = trend_sign(x, samples, sem=sem, seed=seed)
    yes, no = (down, up) if falling else (up, down)
    z = (rho if not falling else -rho) / rhos_sd if rhos_sd > 0 else None
    note = f" (sign {'falling' if falling else 'rising'} in {yes:.0%} of resamples, the other way in {no:.0%}; need {share:.0%})"
    if yes >= share:
        return Test(True, rho, rhos_sd, 0.0, z, "", note)
    if no >= share:
        return Test(False, rho, rhos_sd, 0.0, z, "", note)
    return Test(None, rho, rhos_sd, 0.0, z, f"inside the error bars: {what} (Spearman {rho:+.2f}) keeps its sign in only "
                f"{max(yes, no):.0%} of bootstrap resamples (need {share:.0%})", note)


def all_of(*tests: Test) -> Test:
    """Several tests a claim needs together: holds when every one holds, does not hold when any fails; otherwise the
    first undecided one's problem.  The row carries the numbers of the deciding test: the failing one nearest its
    threshold, else the first undecided one, else the holding one nearest its threshold (a test with no z, a bare or
    exact value, is never the nearest, so the row shows one with an error bar where there is one)."""
    failing = [t for t in tests if t.holds is False]
    open_ = [t for t in tests if t.holds is None]
    if failing:
        t = min(failing, key=lambda t: -t.z if t.z is not None else math.inf)
        return Test(False, t.effect, t.stderr, t.threshold, t.z, "", t.note)
    if open_:
        t = open_[0]
        return Test(None, t.effect, t.stderr, t.threshold, t.z, "; ".join(o.problem for o in open_), t.note)
    t = min(tests, key=lambda t: t.z if t.z is not None else math.inf)
    return Test(True, t.effect, t.stderr, t.threshold, t.z, "", t.note)


def judge(claim: str, statement: str, figure: str, subject: str, holds: "bool | None | Test", evidence: str,
          problems: Iterable[str] = (), why_none: str = "") -> Verdict:
    """A claim's verdict from its own test (``holds``: a bool, or a :class:`Test` whose numbers the row then carries)
    and the problems of what it rests on: any problem makes it inconclusive, the reason naming each problem and what the
    numbers alone would say.  ``holds`` None (the test could not be applied) needs ``why_none``."""
    problems = [p for p in problems if p]
    nums: dict = {}
    if isinstance(holds, Test):
        nums = dict(effect=holds.effect, stderr=holds.stderr, threshold=holds.threshold, z=holds.z)
        if holds.holds is None:
            why_none = holds.problem or why_none
        holds = holds.holds
    if holds is None:
        problems = [why_none or "the test could not be applied"] + problems
    elif problems:
        problems.append(f"on these numbers alone it would {'hold' if holds else 'not hold'}")
    if problems:
        return Verdict(claim, statement, figure, subject, None, evidence, reason="; ".join(problems), **nums)
    return Verdict(claim, statement, figure, subject, bool(holds), evidence, **nums)


def not_applicable(claim: str, statement: str, figure: str, subject: str, evidence: str, reason: str) -> Verdict:
    """A claim with no content at this config: listed with ``reason`` (which says how a config could make it apply)."""
    return Verdict(claim, statement, figure, subject, None, evidence, reason=reason, applicable=False)


def learned(points: dict, floor: float, *, above: bool = False, what: str = "chance") -> tuple[list, str]:
    """(the keys of ``points`` that learned something, '' or 'left out at <what>: ...').

    ``points`` maps a key (a depth, say) to an :class:`Estimate` of an error (``above`` False: a point at or above
    ``floor`` minus Z SE has learned nothing, e.g. an nMSE at the target's variance 1) or of an accuracy (``above``
    True: a point at or below ``floor`` plus Z SE is at chance)."""
    keep, gone = [], []
    for k, e in points.items():
        se = e.se if math.isfinite(e.se) else 0.0
        dead = (e.value <= floor + Z * se) if above else (e.value >= floor - Z * se)
        (gone if dead else keep).append(k)
    note = (f"left out at {what} (within {Z:g} SE of {floor:g}): " + ", ".join(f"{k} ({points[k]})" for k in gone)) if gone else ""
    return keep, note


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


def counts(verdicts: list[Verdict]) -> tuple[int, int, int, int]:
    """(hold, do not hold, inconclusive, not applicable) among the claims; questions are counted apart (:func:`answered`)."""
    claims = [v.verdict for v in verdicts if v.kind == "claim"]
    return claims.count(HOLDS), claims.count(FAILS), claims.count(INCONCLUSIVE), claims.count(NOT_APPLICABLE)


def answered(verdicts: list[Verdict]) -> int:
    return sum(v.kind == "question" for v in verdicts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _evidence(v: Verdict) -> str:
    if v.verdict in (INCONCLUSIVE, NOT_APPLICABLE):
        return f"{v.verdict}: {v.reason}. {v.evidence}"
    return v.evidence


def _num(x: float | None, fmt: str = ".4g") -> str:
    return "" if x is None else f"{x:{fmt}}"


def _numbers(v: Verdict) -> str:
    """'effect | SE | threshold | z' cells of a row."""
    return f"{_num(v.effect)} | {_num(v.stderr, '.2g')} | {_num(v.threshold)} | {_num(v.z, '+.2f')}"


def render(title: str, verdicts: list[Verdict], notes: list[str]) -> str:
    """Markdown report of one study: notes (scale, criteria), then one table row per verdict."""
    lines = [f"# {title}: claims at the scale that was run", "",
             "Computed by the pipeline from the figure tables; not written by hand. A row *holds*, *does not hold* or is "
             "*inconclusive*, with the reason: a net it rests on did not converge, a rate sits at a flagged edge of its grid, "
             "every net is at chance, the seeds disagree beyond the stated margin, or the effect lies inside its error bars. "
             f"A row that has no content at this config is *not applicable*. Each comparison gives its effect, standard error "
             f"(SE), threshold and z = (effect - threshold) / SE signed towards *holds*: it holds at z >= {Z:g}, does not hold "
             f"at z <= -{Z:g}; a trend is decided when its sign holds in {TREND_SHARE:.0%} of bootstrap resamples.", ""]
    for n in notes:
        lines += [n, ""]
    lines += ["| claim | statement | figure | subject | verdict | effect | SE | threshold | z | evidence |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for v in verdicts:
        lines.append(f"| {v.claim} | {_cell(v.statement)} | {v.figure} | {_cell(v.subject)} | {v.mark} | {_numbers(v)} | "
                     f"{_cell(_evidence(v))} |")
    yes, no, na, off = counts(verdicts)
    q = answered(verdicts)
    lines += ["", f"{yes} hold, {no} do not hold, {na} inconclusive, {off} not applicable"
              + (f"; {q} question(s) answered." if q else ".")]
    return "\n".join(lines) + "\n"


def render_index(studies: list[tuple[str, str, list[dict]]]) -> str:
    """The index over all studies: (study, title, verdict dicts) -> markdown with per-study counts and every row."""
    lines = ["# depthlab claims: every study", "",
             "One row per verdict of every study built by this run, each labelled with its SPEC claim id.", "",
             "| study | holds | does not hold | inconclusive | not applicable |", "|---|---|---|---|---|"]
    for name, title, rows in studies:
        yes, no, na, off = counts([Verdict.from_dict(r) for r in rows])
        lines.append(f"| [{title}]({name}/claims.md) | {yes} | {no} | {na} | {off} |")
    lines += ["", "| study | claim | figure | subject | verdict | effect | SE | threshold | z | evidence |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for name, _, rows in studies:
        for r in rows:
            v = Verdict.from_dict(r)
            lines.append(f"| {name} | {v.claim} ({_cell(v.statement)}) | {v.figure} | {_cell(v.subject)} | {v.mark} | "
                         f"{_numbers(v)} | {_cell(_evidence(v))} |")
    return "\n".join(lines) + "\n"
