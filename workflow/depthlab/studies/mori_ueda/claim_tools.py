"""Shared pieces of Mori & Ueda's verdicts (:mod:`.claims`): the margins, the curves and estimates a row is judged on, and
the notes on a row's soundness."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.claims import (
    Test,
    diverged,
    exceeds,
    flagged,
    unconverged,
)
from depthlab.core import stats


CLEARLY = 1.10


FLAT = 0.05  # claim 4: a kernel whose errors over L stay within 5 % of each other is flat


def _curve(df: pd.DataFrame, col: str = "nn_test_error") -> pd.Series:
    """Mean over seeds per depth (diverged runs, NaN, excluded: :func:`_diverged` counts them)."""
    return df.groupby("depth")[col].mean().sort_index()


def _diverged(df: pd.DataFrame) -> str:
    """'; k of S seeds diverged at L=...' for every depth where any seed diverged ('' if none)."""
    if "diverged" not in df:
        return ""
    per = df.groupby("depth").diverged.agg(["sum", "size"])
    per = per[per["sum"] > 0]
    return "".join(
        f"; {int(r['sum'])} of {int(r['size'])} seeds diverged at L={int(L)} (left out of its mean)"
        for L, r in per.iterrows()
    )


def _flat(s: pd.Series) -> bool:
    return bool(s.max() <= (1 + FLAT) * s.min())


def _fmt(s: pd.Series) -> str:
    return ", ".join(f"L={int(L)}: {v:.4g}" for L, v in s.items())


def _soundness(part: pd.DataFrame) -> list[str]:
    """What a depth-sweep row rests on that could make it unsound: nets that did not converge, CV rates at a flagged edge,
    seeds that diverged (even at the halved rate)."""
    return [
        unconverged(part, lambda r: f"L={r.depth} seed {r.seed}"),
        flagged(part, lambda r: f"L={r.depth}"),
        diverged(
            part,
            lambda r: f"L={r.depth} seed {r.seed} at lr {r.lr:.3g}",
            "their depth's mean is over the other seeds only",
        ),
    ]


def _lrs(part: pd.DataFrame) -> str:
    """'L=1: 0.5, L=4: 0.54 (CV 1.08, halved once: a seed diverged)' for the rates the depths were trained at."""
    per = part.groupby("depth")[[c for c in ("lr", "cv_lr", "lr_halvings") if c in part]].first()
    return ", ".join(
        f"L={int(L)}: {r.lr:.3g}"
        + (
            f" (CV {r.cv_lr:.3g}, halved {int(r.lr_halvings)}x: a seed diverged)"
            if getattr(r, "lr_halvings", 0)
            else ""
        )
        for L, r in per.iterrows()
    )


def _estimates(df: pd.DataFrame, col: str = "nn_test_error") -> dict:
    """depth -> the mean over seeds with its SE (diverged seeds, NaN, left out)."""
    return {int(L): stats.over_seeds(g[col].values) for L, g in df.groupby("depth")}


def _kernel_estimates(df: pd.DataFrame, col: str = "ntk_test_error") -> dict:
    """depth -> a kernel's test error (one fit per depth: the same on every row) with its SE over the test points (the
    table's ``<col>_se``; a table without it: SE 0, the kernel taken as exact given the data)."""
    out = {}
    for L, g in df.groupby("depth"):
        se = float(g[col + "_se"].iloc[0]) if col + "_se" in g else 0.0
        out[int(L)] = stats.Estimate(float(g[col].iloc[0]), se if np.isfinite(se) else 0.0, 1, "test points")
    return out


def _samples(df: pd.DataFrame, depths, col: str = "nn_test_error") -> list:
    return [df[df.depth == L][col].values for L in depths]


def _chance(variant: str | None) -> tuple[float, str]:
    """The error of a predictor that learned nothing: the target's variance 1 (regression: every f has Var f = 1), or
    0.5 (classification)."""
    return (0.5, "chance (0.5)") if variant == "classification" else (1.0, "the target's variance (1)")


def _beats(est: dict, a: int, b: int, what: str, margin: float = 0.0) -> Test:
    """L = a has the lower error than L = b (by more than ``margin``), decided with the SE of the difference."""
    return exceeds(stats.difference(est[b], est[a]), margin, what=what)


NO_NTK = ("label noise", "classification")  # Figs 4 and 5: the paper shows networks only, no NTK


def _se0(e) -> float:
    return e.se if np.isfinite(e.se) else 0.0
