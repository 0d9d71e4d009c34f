"""Choices on a grid of learning rates (or any positive grid), and whether a choice sits at the grid's edge.

A rate chosen as "the best" means something only if the best is inside what was tried.  Given the rates tried, their
scores (lower is better) and which of them *failed* (diverged, or failed the stage's own criterion), :func:`choose`
returns the chosen rate and where it lies:

* ``lower``: the smallest rate tried is the best: a smaller one might be better;
* ``upper``: the largest rate tried is the best: a larger one might be better.  Not an edge when a larger rate was
  tried and failed: then the choice is the largest rate that works, which is what it is;
* ``""``: inside the grid.

Scores within ``tol`` of the best count as ties, and a tie inside the grid is preferred to an edge, so a flat curve
(every rate at chance, say) is not sent looking for rates it does not need.

:func:`grow` says which rates to try next to move an edge choice inside, one factor ``step`` beyond the edge,
unless the stated limit is reached: then the choice stays at the edge and is *flagged* (a claim resting on it is
inconclusive).  :func:`search` runs that loop around any stage's training: it trains the rates of the grid, chooses,
trains the grown rates, and so on (at most ``rounds`` growths).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

EDGES = ("", "lower", "upper")


@dataclass(frozen=True)
class Choice:
    """The chosen rate and where it lies in the grid it was chosen from."""

    index: int  # position of the choice in the grid as given (-1: no rate was usable)
    lr: float  # the chosen rate (NaN: none usable)
    edge: str  # "" (inside), "lower" or "upper"; "lower" also when no rate was usable (try smaller ones)
    flagged: bool = False  # at an edge that could not be moved inside (the growth limit was reached)

    @property
    def at_edge(self) -> bool:
        return self.edge != ""


def choose(lrs: np.ndarray, score: np.ndarray, failed: np.ndarray | None = None, tol: float = 0.0) -> Choice:
    """The best usable rate (lowest score; not failed, finite score) of ``lrs`` [n], and its edge (module docstring)."""
    lrs = np.asarray(lrs, dtype=np.float64)
    score = np.asarray(score, dtype=np.float64)
    failed = np.zeros(len(lrs), dtype=bool) if failed is None else np.asarray(failed, dtype=bool)
    usable = ~failed & np.isfinite(score)
    if not usable.any():
        return Choice(-1, float("nan"), "lower")
    order = np.argsort(lrs, kind="stable")
    lowest, highest = order[0], order[-1]
    best = float(np.min(score[usable]))
    near = usable & (score <= best + tol)
    inner = near.copy()
    inner[[lowest, highest]] = False
    pool = np.flatnonzero(inner if inner.any() else near)
    i = int(pool[np.argmin(score[pool])])
    if len(lrs) == 1:  # one rate: neither side was tried; look above first (a growing search then looks below)
        edge = "upper"
    elif i == lowest:
        edge = "lower"
    elif i == highest:  # (a larger rate that was tried and failed makes i not the highest: no edge then)
        edge = "upper"
    else:
        edge = ""
    return Choice(i, float(lrs[i]), edge)


def grow(lrs: np.ndarray, choice: Choice, step: float, limits: tuple[float, float]) -> np.ndarray:
    """The rate(s) to try next so that an edge choice can move inside: one factor ``step`` beyond the grid on the edge's
    side, if inside ``limits`` (inclusive).  Empty when the choice is inside or the limit is reached."""
    lrs = np.asarray(lrs, dtype=np.float64)
    if not choice.at_edge or step <= 1:
        return np.zeros(0)
    nxt = lrs.min() / step if choice.edge == "lower" else lrs.max() * step
    lo, hi = limits
    return np.array([nxt]) if lo * (1 - 1e-12) <= nxt <= hi * (1 + 1e-12) else np.zeros(0)


@dataclass
class Searched:
    """What :func:`search` returns: every rate trained (sorted), the per-rate results, the choice among them."""

    lrs: np.ndarray  # [n] every rate trained, ascending
    results: list[Any]  # the trainer's result per rate, in the order of ``lrs``
    choice: Choice  # its index refers to ``lrs``
    grown: list[float] = field(default_factory=list)  # the rates added by growth, in the order they were tried


def search(
    lrs: np.ndarray,
    train: Callable[[np.ndarray, int], list[Any]],
    score: Callable[[Any], tuple[float, bool]],
    *,
    step: float,
    limits: tuple[float, float],
    rounds: int,
    tol: float = 0.0,
) -> Searched:
    """Train ``lrs``, choose, and while the choice is at an edge and ``rounds`` remain, train the rate :func:`grow` gives.

    ``train(rates, round)`` -> one result per rate (round 0: the grid; 1, 2, ...: each growth);
    ``score(result)`` -> (score, failed) of one rate's result (lower is better).
    The returned choice is flagged when it still sits at an edge."""
    tried = np.asarray(lrs, dtype=np.float64)
    results = list(train(tried, 0))
    grown: list[float] = []
    for r in range(1, rounds + 2):
        order = np.argsort(tried, kind="stable")
        tried, results = tried[order], [results[i] for i in order]
        sc = [score(x) for x in results]
        choice = choose(tried, np.array([s for s, _ in sc]), np.array([f for _, f in sc]), tol)
        nxt = grow(tried, choice, step, limits) if r <= rounds else np.zeros(0)
        nxt = nxt[~np.isin(nxt, tried)]
        if not len(nxt):
            return Searched(tried, results, Choice(choice.index, choice.lr, choice.edge, choice.at_edge), grown)
        grown += nxt.tolist()
        tried = np.concatenate([tried, nxt])
        results += list(train(nxt, r))
    raise AssertionError("unreachable")
