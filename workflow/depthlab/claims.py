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

Decisions under uncertainty.  What a checker compares is a :class:`depthlab.core.stats.Estimate` (a value
and its standard error), decided here, never by the checker:

* :func:`exceeds`: "the effect is above (below) the threshold" *holds* when it clears the threshold by ``Z`` standard
  errors, *does not hold* when it falls short by ``Z``, and in between is *inconclusive: inside the error bars*.
  z = (effect - threshold) / SE, signed towards "holds": a row with z >= Z holds, z <= -Z does not, and |z| is how many
  SEs separate it from the threshold (so z - (-Z) from the other verdict).  An estimate with no SE (one net and no
  sample to resample, or an exact quantity) is decided on its value, with z null and the evidence saying so.
* :func:`trend`: a trend holds (fails) when its sign (the other sign) has one-sided p <= 1 - ``TREND_SHARE`` in an exact
  permutation test of the slope over every seed (:func:`depthlab.core.stats.trend_test`: its error rate is what it says
  at 2-5 seeds, where the bootstrap of 3 means it replaced decided 22-25 % of flat-null draws for a nominal 10 %); in
  between inconclusive.  Its effect is the slope, its SE the regression's.
* :func:`all_of`: a claim that is several tests holds when every one holds, does not hold only when a failing part is
  itself decided beyond its error bar, and carries the numbers of the test nearest its threshold.
* :func:`learned`: points at chance (or at the target's variance) within ``Z`` SEs leave a trend, named in the row.

Every row carries ``verdict``, ``reason``, ``effect``, ``stderr``, ``threshold`` and ``z`` into claims.json (null
where the row is not a comparison), and ``problems``: the kinds of what made it inconclusive (:data:`depthlab.problems.PROBLEM_KINDS`).
A problem is a :class:`depthlab.problems.Problem`, text for people with its kinds for code: what would decide a row
(:mod:`depthlab.suggest`, each study's ``to_decide``) reads the kinds, never the text, so a reason can be reworded
freely.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Iterable

from depthlab.core.stats import Estimate, trend_test

from .problems import PROBLEM_KINDS, Problem, edge_kinds, join_problems, kinds_of

HOLDS, FAILS, INCONCLUSIVE, NOT_APPLICABLE = "holds", "does not hold", "inconclusive", "not applicable"
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, NOT_APPLICABLE)
SCOPES = ("paper", "extension")  # whose claim a row is: SPEC's scope of a paper's claim, or a row beyond the papers
Z = 2.0  # a comparison is decided when it clears its threshold by Z standard errors
TREND_SHARE = 0.95  # a trend is decided at confidence 1 - p >= this: one-sided p <= 0.05 (so 10 % of flat-null draws)


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
    applicable: bool = (
        True  # False: the claim has no content at this config (``reason`` says why, and how to make it apply)
    )
    substituted: str = (
        ""  # nets it rests on trained at a rate other than the one chosen (a seed diverged): which, and why
    )
    scope: str = (
        "paper"  # paper: a claim the paper makes, judged where it makes it | extension: beyond the papers' claims
    )
    to_decide: dict | None = None  # an inconclusive row: {text, changes: [{key, value}], seconds} (depthlab.decide)
    problems: list[str] = field(default_factory=list)  # the kinds of what makes it inconclusive (PROBLEM_KINDS)

    def __post_init__(self) -> None:
        if self.kind == "claim" and self.holds is None and not self.reason:
            raise ValueError(f"claim {self.claim} ({self.subject}): an inconclusive verdict needs its reason")
        if self.scope not in SCOPES:
            raise ValueError(
                f"claim {self.claim} ({self.subject}): scope {self.scope!r} is not one of {', '.join(SCOPES)}"
            )
        bad = [k for k in self.problems if k not in PROBLEM_KINDS]
        if bad:
            raise ValueError(
                f"claim {self.claim} ({self.subject}): problem kind {bad[0]!r} is not one of {', '.join(PROBLEM_KINDS)}"
            )
        self.problems = list(dict.fromkeys(self.problems))
        if self.holds is not None or not self.applicable:
            self.problems = []
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


def critical(z: float, dof: float) -> float:
    """The multiple of the SE a difference must clear: ``z`` for a known SE (infinite dof); for a SE estimated from
    the spread of a few values (dof = n - 1 for n seeds), Student's t quantile at the same one-sided level, so the
    false-decision rate under a flat null stays the normal law's at any n (at 2 seeds, t_1 = 13.97 for z = 2: a
    normal z of 2 there decided 30 % of flat-null draws)."""
    if not math.isfinite(dof) or dof > 1e6:
        return z
    if dof < 1:
        return math.inf
    from scipy.stats import norm, t

    return float(t.ppf(norm.cdf(z), dof))


def exceeds(est: Estimate, threshold: float, *, below: bool = False, z: float = Z, what: str = "the effect") -> Test:
    """Does ``est`` lie above ``threshold`` (below it with ``below``) by more than ``z`` standard errors?

    holds: the difference clears the threshold by z SE; does not hold: it falls short by z SE; otherwise None with
    the problem 'inside the error bars'.  With no SE (NaN) or an exact one (0) the value alone decides and z is None.
    Where the SE comes from a few seeds (``est.dof`` finite) the bar is Student's t at that dof (:func:`critical`), and
    the row's z is still d / SE."""
    d = (threshold - est.value) if below else (est.value - threshold)
    if not math.isfinite(est.value):
        return Test(None, est.value, est.se, threshold, None, Problem(f"{what} could not be computed", "untestable"))
    if not (math.isfinite(est.se) and est.se > 0):
        note = " (no error bar: " + (
            "one net, nothing to resample)" if not math.isfinite(est.se) else "an exact value)"
        )
        return Test(bool(d > 0), est.value, est.se, threshold, None, "", note)
    score = d / est.se
    bar = critical(z, est.dof)
    if score >= bar:
        return Test(True, est.value, est.se, threshold, score)
    if score <= -bar:
        return Test(False, est.value, est.se, threshold, score)
    side = "below" if below else "above"
    need = f"{z:g} SE" if bar == z else f"{bar:.3g} SE: Student's t at {est.dof:.3g} dof"
    return Test(
        None,
        est.value,
        est.se,
        threshold,
        score,
        Problem(
            f"inside the error bars: {what} {est.value:.4g} +- {est.se:.2g} against {threshold:.4g} (needed {side} it "
            f"by {need}; z = {score:+.2f})",
            "error_bars",
        ),
    )


def trend(
    x,
    samples: list,
    *,
    falling: bool,
    sem: list | None = None,
    what: str = "the trend",
    share: float = TREND_SHARE,
    seed: int = 0,
) -> Test:
    """A trend of y (replicates ``samples[i]`` at ``x[i]``; pass log L for depths) against x, decided by
    :func:`depthlab.core.stats.trend_test` (an exact permutation test of the least-squares slope over every replicate):
    holds when the claimed sign (falling with ``falling``) has one-sided p <= 1 - ``share``, does not hold when the other
    sign has, and is inside the error bars otherwise.  Under a flat null either is decided in at most 2 (1 - share) of
    draws at any number of seeds.  The row carries the slope, its SE and z = slope / SE signed towards holding; the
    p-value decides.  Fewer than two points: not applied (holds None)."""
    if len(x) < 2:
        return Test(
            None, float("nan"), float("nan"), 0.0, None, Problem(f"{what}: fewer than two points", "untestable")
        )
    tt = trend_test(x, samples, sem=sem, seed=seed, alpha=1 - share)
    p_yes, p_no = (tt.p_down, tt.p_up) if falling else (tt.p_up, tt.p_down)
    z = (-tt.slope if falling else tt.slope) / tt.se if math.isfinite(tt.se) and tt.se > 0 else None
    alpha = 1 - share
    note = (
        f" ({'falling' if falling else 'rising'}: one-sided p = {p_yes:.3g}, the other way p = {p_no:.3g}, need <= "
        f"{alpha:.2g}; {tt.how} over {tt.n} values; Spearman of the means {tt.rho:+.2f})"
    )
    if tt.mc_ok and p_yes <= alpha + 1e-12:
        return Test(True, tt.slope, tt.se, 0.0, z, "", note)
    if tt.mc_ok and p_no <= alpha + 1e-12:
        return Test(False, tt.slope, tt.se, 0.0, z, "", note)
    why = (
        f"inside the error bars: {what} (slope {tt.slope:+.3g} +- {tt.se:.2g}) has one-sided p = "
        f"{min(p_yes, p_no):.3g} either way (need <= {alpha:.2g}; {tt.how})"
        if tt.mc_ok  # else the random draws, not the data, would decide: said, never decided
        else f"inside the Monte-Carlo noise: {what}'s permutation p = {min(p_yes, p_no):.4g} +- {tt.mc_se:.2g} "
        f"(Monte-Carlo SE after {tt.how}) is within 10 of its SEs of alpha = {alpha:.2g}"
    )
    return Test(None, tt.slope, tt.se, 0.0, z, Problem(why, "error_bars"), note)


def decided(t: Test) -> bool:
    """Is ``t``'s verdict decided beyond its error bar: z beyond ``Z`` either way, or an exact comparison (SE 0)?  A test
    decided on a bare value (no SE could be formed: one net, nothing to resample) is not."""
    return t.holds is not None and (t.z is not None or (math.isfinite(t.stderr) and t.stderr == 0))


def all_of(*tests: Test) -> Test:
    """Several tests a claim needs together (a headline and a trend, say): holds when every one holds; does not hold only
    when a failing part is itself decided beyond its error bar (:func:`decided`; a part failing on a bare value leaves
    the row inconclusive, saying so); otherwise the undecided parts' problems.  The row carries the numbers of the deciding
    test: the failing one nearest its threshold, else the first undecided one, else the holding one nearest its threshold
    (a test with no z, a bare or exact value, is never the nearest, so the row shows one with an error bar where there
    is one)."""
    failing = [t for t in tests if t.holds is False and decided(t)]
    bare = [t for t in tests if t.holds is False and not decided(t)]
    open_ = [t for t in tests if t.holds is None]
    if failing:
        t = min(failing, key=lambda t: -t.z if t.z is not None else math.inf)
        return Test(False, t.effect, t.stderr, t.threshold, t.z, "", t.note)
    if open_ or bare:
        t = (open_ or bare)[0]
        why = [o.problem for o in open_] + [
            Problem(
                f"a part fails on its value alone, with no error bar ({b.effect:.4g} against {b.threshold:.4g}{b.note})",
                "no_error_bar",
            )
            for b in bare
        ]
        return Test(None, t.effect, t.stderr, t.threshold, t.z, join_problems(why), t.note)
    t = min(tests, key=lambda t: t.z if t.z is not None else math.inf)
    return Test(True, t.effect, t.stderr, t.threshold, t.z, "", t.note)


def judge(
    claim: str,
    statement: str,
    figure: str,
    subject: str,
    holds: "bool | None | Test",
    evidence: str,
    problems: Iterable[str] = (),
    why_none: str = "",
) -> Verdict:
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
    if holds is None:  # the reason the test says nothing leads: of no kind of its own, it could not be applied
        why_none = why_none or "the test could not be applied"
        problems = [why_none if kinds_of(why_none) else Problem(why_none, "untestable")] + problems
    elif problems:
        problems.append(f"on these numbers alone it would {'hold' if holds else 'not hold'}")
    if problems:
        why = join_problems(problems)
        return Verdict(
            claim, statement, figure, subject, None, evidence, reason=str(why), problems=list(why.kinds), **nums
        )
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
    note = (
        (f"left out at {what} (within {Z:g} SE of {floor:g}): " + ", ".join(f"{k} ({points[k]})" for k in gone))
        if gone
        else ""
    )
    return keep, note


def _names(names: list[str], most: int = 6) -> str:
    names = sorted(set(names))
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def unconverged(
    table: Any, label: Callable[[Any], str], converged: str = "converged", diverged: str | None = "diverged"
) -> str:
    """The problem 'k of n nets ... did not converge' of a table's rows (each a trained net) whose ``converged`` is False
    (a diverged net is not 'unconverged': divergence is reported on its own), naming them by ``label(row)``; '' if none."""
    if converged not in table or not len(table):
        return ""
    bad = ~table[converged].astype(bool)
    if diverged and diverged in table:
        bad &= ~table[diverged].astype(bool)
    if not bad.any():
        return ""
    return Problem(
        f"{int(bad.sum())} of {len(table)} nets it rests on did not converge (still improving when the budget ran "
        f"out: {_names([label(r) for r in table[bad].itertuples()])})",
        "not_converged",
    )


def diverged(table: Any, label: Callable[[Any], str], consequence: str, column: str = "diverged") -> str:
    """The problem 'k of n nets diverged (...): <consequence>' of a table's rows (each a trained net) whose ``column`` is
    set, naming them by ``label(row)``; '' if none (or no such column)."""
    if column not in table or not len(table):
        return ""
    bad = table[column].astype(bool)
    if not bad.any():
        return ""
    return Problem(
        f"{int(bad.sum())} of {len(table)} nets diverged ({_names([label(r) for r in table[bad].itertuples()])}): "
        f"{consequence}",
        "diverged",
    )


def flagged(table: Any, label: Callable[[Any], str], flag: str = "lr_flagged", edge: str = "lr_edge") -> str:
    """The problem 'the rate chosen for ... sits at the lower/upper edge of its grid' of rows whose ``flag`` is set."""
    if flag not in table or not len(table):
        return ""
    rows = table[table[flag].astype(bool)]
    if not len(rows):
        return ""
    sides = [str(getattr(r, edge, "")) for r in rows.itertuples()]
    names = _names([f"{label(r)} ({s or 'an'} edge)" for r, s in zip(rows.itertuples(), sides)])
    return Problem(
        f"the rate chosen for {names} sits at the edge of its grid, which could not grow further",
        *edge_kinds(sides),
    )


def counts(verdicts: list[Verdict], scope: str = "paper") -> tuple[int, int, int, int]:
    """(hold, do not hold, inconclusive, not applicable) among the claims of ``scope`` (the papers' own by default: an
    extension row is never counted as a reproduction or a non-reproduction); questions are counted apart
    (:func:`answered`)."""
    claims = [v.verdict for v in verdicts if v.kind == "claim" and v.scope == scope]
    return claims.count(HOLDS), claims.count(FAILS), claims.count(INCONCLUSIVE), claims.count(NOT_APPLICABLE)


def answered(verdicts: list[Verdict]) -> int:
    return sum(v.kind == "question" for v in verdicts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def cost_text(seconds: float | None) -> str:
    """'+0.4 core-s planned', '+40 core-s planned', '+1.2 core-min planned', '+2.30 core-h planned' ('' for None)."""
    if seconds is None:
        return ""
    if seconds < 9.5:  # a smoke-scale job: seconds, never rounded to "+0"
        return f"+{seconds:.2g} core-s planned"
    if seconds < 60:
        return f"+{seconds:.0f} core-s planned"
    if seconds < 3600:
        return f"+{seconds / 60:.1f} core-min planned"
    return f"+{seconds / 3600:.2f} core-h planned"


def decide_text(v: Verdict) -> str:
    """' To decide: ... (+... planned).' closing an inconclusive row's evidence ('' without one)."""
    d = v.to_decide
    if not d:
        return ""
    cost = cost_text(d.get("seconds"))
    return f" To decide: {d.get('text', '')}" + (f" ({cost})" if cost else "") + "."


def _evidence(v: Verdict) -> str:
    if v.verdict == INCONCLUSIVE:
        then = decide_text(v)
        ev = v.evidence.rstrip()
        if then and ev and not ev.endswith("."):  # "... L=2 1 budget. To decide: ...", not "... budget To decide"
            ev += "."
        return f"{v.verdict}: {v.reason}. {ev}{then}"
    if v.verdict == NOT_APPLICABLE:
        return f"{v.verdict}: {v.reason}. {v.evidence}"
    return v.evidence


def _num(x: float | None, fmt: str = ".4g") -> str:
    return "" if x is None else f"{x:{fmt}}"


def _numbers(v: Verdict) -> str:
    """'effect | SE | threshold | z' cells of a row."""
    return f"{_num(v.effect)} | {_num(v.stderr, '.2g')} | {_num(v.threshold)} | {_num(v.z, '+.2f')}"


def _table(verdicts: list[Verdict]) -> list[str]:
    lines = [
        "| claim | statement | figure | subject | verdict | effect | SE | threshold | z | evidence |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for v in verdicts:
        lines.append(
            f"| {v.claim} | {_cell(v.statement)} | {v.figure} | {_cell(v.subject)} | {v.mark} | {_numbers(v)} | "
            f"{_cell(_evidence(v))} |"
        )
    return lines


def _tally(verdicts: list[Verdict], scope: str) -> str:
    yes, no, na, off = counts(verdicts, scope)
    return f"{yes} hold, {no} do not hold, {na} inconclusive, {off} not applicable"


EXTENSION_HEAD = (
    "## Extensions: rows beyond the papers' claims",
    "Listed apart and never counted as a reproduction or a non-reproduction: findings the papers do not state "
    '(SPEC\'s "beyond the paper" items, or a comparison the paper makes no claim about on that target).',
)


def render(title: str, verdicts: list[Verdict], notes: list[str]) -> str:
    """Markdown report of one study: notes (scale, criteria), one table row per verdict of the papers' claims (and the
    questions), then the extension rows in a table of their own."""
    lines = [
        f"# {title}: claims at the scale that was run",
        "",
        "Computed by the pipeline from the figure tables; not written by hand. A row *holds*, *does not hold* or is "
        "*inconclusive*, with the reason: a net it rests on did not converge, a rate sits at a flagged edge of its grid, "
        "every net is at chance, the seeds disagree beyond the stated margin, the net is outside the regime the claim "
        "is about (*inconclusive: scale*), or the effect lies inside its error bars. "
        f"A row that has no content at this config is *not applicable*. Each comparison gives its effect, standard error "
        f"(SE), threshold and z = (effect - threshold) / SE signed towards *holds*: it holds at z >= {Z:g}, does not hold "
        f"at z <= -{Z:g}; a trend is decided when an exact permutation test of its slope over the seeds gives one-sided "
        f"p <= {1 - TREND_SHARE:.2g}. Each claim is judged where its paper makes it; rows beyond the papers' claims are "
        "*extensions*, listed apart and not counted.",
        "",
    ]
    for n in notes:
        lines += [n, ""]
    paper = [v for v in verdicts if v.scope != "extension"]
    ext = [v for v in verdicts if v.scope == "extension"]
    lines += _table(paper)
    q = answered(verdicts)
    lines += ["", _tally(verdicts, "paper") + (f"; {q} question(s) answered." if q else ".")]
    if ext:
        lines += (
            ["", EXTENSION_HEAD[0], "", EXTENSION_HEAD[1], ""]
            + _table(ext)
            + ["", "Extensions: " + _tally(verdicts, "extension") + "."]
        )
    return "\n".join(lines) + "\n"


def per_claim(parsed: list[tuple[str, str, list[Verdict]]]) -> list[str]:
    """One line per paper claim (its SPEC id): its statements, and how many of its rows hold, do not hold, are
    inconclusive and are not applicable; the papers' own rows only (extensions are counted apart)."""
    out = [
        "| claim | study | what it says | holds | does not hold | inconclusive | not applicable |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, _, vs in parsed:
        by: dict[str, list[Verdict]] = {}
        for v in vs:
            if v.kind == "claim" and v.scope == "paper":
                by.setdefault(v.claim, []).append(v)
        for claim in sorted(by, key=lambda c: (len(c), c)):
            rows = by[claim]
            said = list(dict.fromkeys(v.statement for v in rows))
            text = "; ".join(said[:3]) + (f"; and {len(said) - 3} more" if len(said) > 3 else "")
            yes, no, na, off = counts(rows)
            out.append(f"| {claim} | {name} | {_cell(text)} | {yes} | {no} | {na} | {off} |")
    return out


SMOKE_BANNER = (
    "> **Smoke scale.** This run is the smoke config: every study at a tiny scale, to show that every stage "
    "runs and chains. Its numbers and verdicts are not findings; the default run (`config/config.yaml`) and "
    "the paper run (`config/paper.yaml`) are where the claims are judged."
)


def render_index(studies: list[tuple[str, str, list[dict]]], smoke: bool = False) -> str:
    """The index over all studies: (study, title, verdict dicts) -> markdown with per-study counts of the papers' claims,
    one line per paper claim, and every row, then the extension rows apart with their own counts.  ``smoke``: it opens
    with :data:`SMOKE_BANNER`."""
    lines = [
        "# depthlab claims: every study",
        "",
        *([SMOKE_BANNER, ""] if smoke else []),
        "One row per verdict of every study built by this run, each labelled with its SPEC claim id. The counts are "
        "of the papers' own claims, judged where the papers make them; rows beyond the papers' claims (*extensions*) "
        "are listed apart at the end and not counted.",
        "",
        "| study | holds | does not hold | inconclusive | not applicable | extensions |",
        "|---|---|---|---|---|---|",
    ]
    parsed = [(name, title, [Verdict.from_dict(r) for r in rows]) for name, title, rows in studies]
    for name, title, vs in parsed:
        yes, no, na, off = counts(vs)
        lines.append(
            f"| [{title}]({name}/claims.md) | {yes} | {no} | {na} | {off} | {sum(v.scope == 'extension' for v in vs)} |"
        )
    lines += ["", *per_claim(parsed)]
    head = [
        "| study | claim | figure | subject | verdict | effect | SE | threshold | z | evidence |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def row(name: str, v: Verdict) -> str:
        return (
            f"| {name} | {v.claim} ({_cell(v.statement)}) | {v.figure} | {_cell(v.subject)} | {v.mark} | "
            f"{_numbers(v)} | {_cell(_evidence(v))} |"
        )

    lines += [""] + head + [row(name, v) for name, _, vs in parsed for v in vs if v.scope != "extension"]
    ext = [(name, v) for name, _, vs in parsed for v in vs if v.scope == "extension"]
    if ext:
        every = [v for _, v in ext]
        lines += ["", EXTENSION_HEAD[0], "", EXTENSION_HEAD[1], "", f"Extensions: {_tally(every, 'extension')}.", ""]
        lines += head + [row(name, v) for name, v in ext]
    return "\n".join(lines) + "\n"
