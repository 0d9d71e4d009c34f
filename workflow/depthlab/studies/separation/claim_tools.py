"""Shared pieces of the depth-separation verdicts (:mod:`.claims`): the curves a row is judged on, their formatting, and
the notes on a row's soundness."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from depthlab.claims import diverged, flagged, unconverged

if TYPE_CHECKING:
    pass


def _net(r) -> str:
    return ", ".join(f"{k} {getattr(r, k)}" for k in ("d", "depth", "width", "seed") if hasattr(r, k))


def _unsound(g: pd.DataFrame) -> list[str]:
    """Nets (or learner runs) of ``g`` (one row each, at its chosen rate) that did not converge or diverged, and chosen
    rates at a flagged edge of their grid."""
    return [
        unconverged(g, _net),
        diverged(g, _net, "left out of the means, so the row rests on fewer nets than it trained"),
        flagged(g, lambda r: ", ".join(f"{k} {getattr(r, k)}" for k in ("d", "depth", "width") if hasattr(r, k))),
    ]


def _curve(g: pd.DataFrame, col: str = "test_nmse") -> pd.Series:
    return g[~g.diverged].groupby("d")[col].mean().sort_index()


def _fmt(curve: pd.Series) -> str:
    return ", ".join(f"d={int(d)}: {v:.3g}" for d, v in curve.items())
