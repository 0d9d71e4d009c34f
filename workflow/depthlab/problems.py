"""What can leave a claim row inconclusive, by kind: a problem is text for people with its kinds for code.

What would decide a row (:mod:`depthlab.suggest`, each study's ``to_decide``) reads a row's kinds
(``Verdict.problems``), never the words of its reason, so a reason can be reworded freely
(``tests/test_suggest_kinds.py`` rewords every reason of the smoke run and checks that no suggestion moves).
"""

from __future__ import annotations

from typing import Any, Iterable

# What can leave a row inconclusive, by kind (a row's ``problems``; what would decide it dispatches on these):
PROBLEM_KINDS = {
    "error_bars": "the effect lies inside its error bars",
    "no_error_bar": "a part is decided on its value alone, with no error bar",
    "not_converged": "a net it rests on was still improving when its budget ran out",
    "diverged": "a net it rests on diverged",
    "grid_low": "a chosen rate sits at the lower edge of its grid",
    "grid_high": "a chosen rate sits at the upper edge of its grid",
    "few_depths": "fewer than two depths to compare",
    "one_run": "one trajectory per net: no run-to-run spread",
    "scale": "the config's scale is not the regime the claim is about",
    "nothing_learned": "the nets it rests on learned nothing",
    "underfit": "the nets underfit (worse than the constant predictor)",
    "not_trained": "a reduced model did not train",
    "flow_rate": "no rate lies in the gradient-flow regime",
    "budget": "no target was reached within the iteration budget",
    "untestable": "the test could not be applied to these numbers",
}


class Problem(str):
    """A problem's text (a ``str``: it joins, formats and compares as its text) and its ``kinds`` (keys of
    :data:`PROBLEM_KINDS`).  Code decides on the kinds, never on the text.  ``+`` keeps the kinds; an f-string or
    ``str.join`` does not (use :func:`join_problems`)."""

    kinds: tuple[str, ...]

    def __new__(cls, text: str, *kinds: str) -> "Problem":
        bad = [k for k in kinds if k not in PROBLEM_KINDS]
        if bad:
            raise ValueError(f"problem kind {bad[0]!r} is not one of {', '.join(PROBLEM_KINDS)}")
        p = super().__new__(cls, text)
        p.kinds = tuple(dict.fromkeys((*getattr(text, "kinds", ()), *kinds)))
        return p

    def __add__(self, other: str) -> "Problem":
        return Problem(str(self) + str(other), *self.kinds, *kinds_of(other))

    def __radd__(self, other: str) -> "Problem":
        return Problem(str(other) + str(self), *kinds_of(other), *self.kinds)


def kinds_of(*parts: Any) -> tuple[str, ...]:
    """The kinds of ``parts`` (problems; plain text has none), in order, once each."""
    return tuple(dict.fromkeys(k for p in parts for k in getattr(p, "kinds", ())))


def join_problems(parts: Iterable[str], sep: str = "; ") -> Problem:
    """``sep.join`` of the non-empty ``parts``, keeping every part's kinds."""
    parts = [p for p in parts if p]
    return Problem(sep.join(parts), *kinds_of(*parts))


def edge_kinds(sides: Iterable[str]) -> tuple[str, ...]:
    """The problem kinds of rates at grid edges named "lower"/"low" or "upper"/"high" (an unnamed edge: both)."""
    out: list[str] = []
    for s in sides:
        s = str(s).lower()
        low, high = s.startswith(("low", "min", "small")), s.startswith(("up", "high", "max", "large"))
        out += (["grid_low"] if low or not high else []) + (["grid_high"] if high or not low else [])
    return tuple(dict.fromkeys(out))
