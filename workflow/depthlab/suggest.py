"""What would decide an inconclusive row: the suggestion a study's claims module makes, as text and config changes.

Each study's claims module says what decides its rows (``to_decide(verdict, config) -> Suggestion | None``), built from
the helpers here; :func:`generic` is the fallback every study shares, read off the problems the shared verdict machinery
(:mod:`depthlab.claims`) writes:

* ``error_bars`` (and ``no_error_bar``): more seeds.  n = n0 (Z / z)^2 seeds bring the row's z to Z if its
  effect stays where it is (the SE falls as 1 / sqrt(n)); at least one more than now;
* ``not_converged``: the study's budget, doubled;
* ``grid_low`` / ``grid_high``: one more round of rate growth;
* ``few_depths``: the next depth added.

Every suggestion is chosen by the row's problem kinds (``Verdict.problems``, :data:`depthlab.claims.PROBLEM_KINDS`),
never by the words of its reason.

Nothing here prices a suggestion or reads a cost table: the claims stage's code fingerprint covers this module, not the
cost model (the price is added after the verdicts, by :mod:`depthlab.decide`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from .claims import Z, Verdict


class SuggestionError(ValueError):
    """A row's ``to_decide`` that is not a suggestion (a claims file edited or from another version): one line."""


@dataclass
class Suggestion:
    text: str  # "seeds 8 on fig1", "paper scale (h = 5 000, lr ~ 1/h; a GPU)"
    changes: list[tuple[str, Any]] = field(default_factory=list)  # (dotted config key, new value)
    seconds: float | None = None  # planned CPU seconds the changes add (None: not priced, or no change)
    # what to say instead where the changes are not a valid config at this scale (the paper's steps at a smoke
    # config's data size, beyond the schema's bound): a suggestion never proposes a value the schema refuses
    otherwise: str | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict:
        return {
            "text": self.text,
            "changes": [{"key": k, "value": v} for k, v in self.changes],
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Suggestion":
        changes = d.get("changes", [])
        if not isinstance(changes, list) or not all(
            isinstance(c, dict) and {"key", "value"} <= set(c) for c in changes
        ):
            raise SuggestionError(f"a row's to_decide.changes is not a list of {{key, value}}: {str(changes)[:120]}")
        seconds = d.get("seconds")
        if seconds is not None and not (isinstance(seconds, (int, float)) and math.isfinite(seconds)):
            raise SuggestionError(f"a row's to_decide.seconds is not a number of seconds: {str(seconds)[:60]}")
        return cls(str(d.get("text", "")), [(str(c["key"]), c["value"]) for c in changes], seconds)


def combine(*parts: "Suggestion | None") -> "Suggestion | None":
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    changes: dict[str, Any] = {}
    for p in parts:
        for k, v in p.changes:
            changes[k] = merge_value(changes[k], v) if k in changes else v
    return Suggestion(" and ".join(dict.fromkeys(p.text for p in parts)), list(changes.items()))


def merge_value(a: Any, b: Any) -> Any:
    """Two rows' values for one key: the longer list (seeds, rates: their union, in order), the larger number."""
    if isinstance(a, list) and isinstance(b, list):
        return list(dict.fromkeys([*a, *b]))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return max(a, b)
    return b


def get(cfg: dict, key: str) -> Any:
    node: Any = cfg
    for part in key.split("."):
        node = node[part]
    return node


def needed_seeds(n0: int, z: float | None) -> int | None:
    """Seeds that bring z to Z if the effect stays (SE ~ 1 / sqrt(n)); None when z is unknown or zero."""
    if z is None or not math.isfinite(z) or abs(z) < 1e-9:
        return None
    return max(n0 + 1, math.ceil(n0 * (Z / abs(z)) ** 2 - 1e-9))


def more_seeds(v: Verdict, key: str, seeds: list, where: str) -> Suggestion:
    """'seeds n on <where>': the seed list grown to n (the current seeds kept, new integers added)."""
    n = needed_seeds(len(seeds), v.z) or 2 * len(seeds)
    new = list(seeds)
    k = 0
    while len(new) < n:
        if k not in new:
            new.append(k)
        k += 1
    return Suggestion(f"seeds {n} on {where}", [(key, new)])


def scaled(key: str, value: Any, factor: float, what: str) -> Suggestion:
    new = type(value)(value * factor) if isinstance(value, (int, float)) else value
    return Suggestion(f"{what} {new:g}" if isinstance(new, (int, float)) else f"{what} {new}", [(key, new)])


def paper(text: str) -> Suggestion:
    return Suggestion(f"paper scale ({text})")


def generic(
    v: Verdict,
    cfg: dict,
    seeds: Callable[[Verdict], tuple[str, str] | None],
    budget: Callable[[Verdict], tuple[str, str, float] | None] | None = None,
    grow: Callable[[Verdict], tuple[str, str] | None] | None = None,
    depths: Callable[[Verdict], tuple[str, str] | None] | None = None,
) -> Suggestion | None:
    """The shared reading of a row's problem kinds: ``seeds(v)`` -> (seeds key, where) for ``error_bars`` and for a part
    with ``no_error_bar`` (one net: a second seed gives one), ``budget(v)`` -> (key, what, factor) for
    ``not_converged``, ``grow(v)`` -> (key, what) for a rate at its grid's edge (one more growth round), ``depths(v)``
    -> (key, what) for ``few_depths`` (the next depth added)."""
    why = set(v.problems)  # the kinds, never the reason's words (rewording a reason moves no suggestion)
    parts: list[Suggestion | None] = []
    if why & {"error_bars", "no_error_bar"} and (s := seeds(v)):
        parts.append(more_seeds(v, s[0], list(get(cfg, s[0])), s[1]))
    if "not_converged" in why and budget and (b := budget(v)):
        parts.append(scaled(b[0], get(cfg, b[0]), b[2], b[1]))
    if why & {"grid_low", "grid_high"} and grow and (g := grow(v)):
        parts.append(Suggestion(f"{g[1]} {get(cfg, g[0]) + 1}", [(g[0], get(cfg, g[0]) + 1)]))
    if "few_depths" in why and depths and (dk := depths(v)):
        now = list(get(cfg, dk[0]))
        new = sorted({*now, max(now) + 1})
        parts.append(Suggestion(f"depths {new} on {dk[1]}", [(dk[0], new)]))
    return combine(*parts)
