"""Bietti & Bach's claims (SPEC §3), checked against the slope and KRR tables.

Criteria (fixed here, printed in the report):

* B1 ("mu_k ~ k^(-d-2nu+1) for every depth"), per kernel and d: every fitted tail
  slope (even and odd k separately, over the reliable k >= fit_k_min where the two quadratures
  agree, fitted against log(k + (d - 2)/2), which removes the plain log k fit's finite-k bias of
  about d/(2k)) lies within ``slope_tolerance`` (0.1) of the theory's -(d + 2 nu - 1), and the
  slopes of different depths differ by at most ``depth_spread`` (per parity).  A parity with no
  reliable tail (the vanishing odd eigenvalues of bias-free 2-layer kernels) has no slope and is
  not judged.  The plain log k slopes are printed beside (and stored) so a reader sees the bias.
* B2 ("learning curves of different depths decay at the same rate"), per family (RF, NTK):
  the fitted KRR rates of its depths differ by at most ``rate_spread``, decided against the spread's SE.
* Scope: B1 on the RF and NTK kernels (and the authors' bias variants) and B2 are the paper's claims; B1 on the Mori &
  Ueda and Laplace kernels, and B3, go beyond it: *extensions*, listed apart and not counted.
* B3 ("the spectrum predicts the learning curve"), per kernel and depth: at every n >= ``theory_n_min`` the
  eigenlearning prediction of the best-over-ridge test MSE (from the kernel's own mu_k and the bump's degree powers)
  and the measured one (mean over trials) agree within a factor ``theory_factor``, decided per n with the SE of the
  log of the measured mean over trials (the prediction is exact given the spectrum).

Error bars (depthlab.claims): B1's slopes come from exact quadratures of exact kernels (no sampling), so they are
compared as exact values; B2's rates are fitted to the trials' mean curve over n >= fit_n_min, each with the least-squares
SE of its slope (from the residuals about the power law, or the larger one the trials' spread carries); the spread
(largest minus smallest rate) is the slope of the difference of those two log curves, with that fit's SE (the kernels
share one data set, so their wiggles about a power law cancel there; independent SEs in quadrature would overstate it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.claims import Verdict, all_of, exceeds, judge
from depthlab.problems import Problem
from depthlab.core import stats

if TYPE_CHECKING:
    from depthlab import suggest
    from .specs import ClaimsSpec

PAPER_KERNELS = (
    "rf",
    "ntk",
    "rf_bias",
    "ntk_bias",
)  # B1 is Bietti & Bach's claim for these (their code's bias variants
# included); the Mori & Ueda kernels and the Laplace kernel are beyond it (SPEC §3: "so the two studies meet")
FAMILY = {
    "rf": "rf",
    "rf_bias": "rf",
    "ntk": "ntk",
    "ntk_bias": "ntk",
    "mu_ntk": "mu_ntk",
    "mu_nngp": "mu_nngp",
    "laplace": "laplace",
}
NOTES = [
    "Criteria: see the docstring of `depthlab/studies/spectra/claims.py`.",
    "Eigenvalues are of kernels normalised to kappa(1) = 1; depth counts hidden layers (Bietti & Bach's L = depth + 1).",
]


def _scoped(v: Verdict, paper: bool) -> Verdict:
    v.scope = "paper" if paper else "extension"
    return v


def b1(table: pd.DataFrame, tol: float, spread: float) -> list[Verdict]:
    """B1 per kernel and d; rows of kernels outside ``PAPER_KERNELS`` are extensions."""
    return [_scoped(v, v.subject.split(",")[0] in PAPER_KERNELS) for v in _b1(table, tol, spread)]


def _b1(table: pd.DataFrame, tol: float, spread: float) -> list[Verdict]:
    out = []
    for (fam, d), g in table.groupby(["kernel", "d"], sort=True):
        fitted = g.dropna(subset=["slope"])
        theory = float(g.theory_slope.iloc[0])
        if fitted.empty:
            out.append(
                judge(
                    "B1",
                    "mu_k decays as k^(-d-2nu+1) at every depth",
                    "slopes",
                    f"{fam}, d = {d}",
                    None,
                    f"theory {theory:g}",
                    why_none="no reliable tail to fit",
                )
            )
            continue
        off = float(np.max(np.abs(fitted.slope - theory)))
        spreads = [float(p.slope.max() - p.slope.min()) for _, p in fitted.groupby("parity")]
        per = "; ".join(
            f"depth {int(r.depth)} {r.parity} {r.slope:.3f} (k {r.fit_k_lo}-{r.fit_k_hi}; log k fit {r.slope_log_k:.3f})"
            for r in fitted.itertuples()
        )
        missing = g[g.slope.isna()]
        note = (
            ("; no reliable tail for: " + ", ".join(f"depth {int(r.depth)} {r.parity}" for r in missing.itertuples()))
            if len(missing)
            else ""
        )
        t = all_of(
            exceeds(stats.Estimate(off, 0.0), tol, below=True, what="max |slope - theory|"),
            exceeds(stats.Estimate(max(spreads), 0.0), spread, below=True, what="the spread over depths"),
        )
        out.append(
            judge(
                "B1",
                "mu_k decays as k^(-d-2nu+1) at every depth",
                "slopes",
                f"{fam}, d = {d}",
                t,
                f"theory {theory:g}; {per}; max |slope - theory| = {off:.3f} (need <= {tol}); "
                f"spread over depths {max(spreads):.3f} (need <= {spread}){note}",
            )
        )
    return out


def _log_curve(g: pd.DataFrame, n_min: int) -> tuple[pd.Series, pd.Series | None]:
    """log(mean best MSE over trials) per n >= n_min, and its SE (the trials' spread / the mean; None for one trial)."""
    per_n = g[(g.n >= n_min) & (g.best_mse > 0)].groupby("n").best_mse
    mean = per_n.mean()
    se = (per_n.agg(lambda v: stats.over_seeds(v.values).se) / mean) if g.trial.nunique() >= 2 else None
    return np.log(mean), se


def _rate(a: pd.DataFrame, n_min: int, b: pd.DataFrame | None = None) -> stats.Estimate:
    """A learning-curve rate: the slope of log(mean best MSE over trials) against log n over n >= n_min (the stored
    ``rate``'s own fit, ``krr.rate``), with its SE (``stats.slope``: the residuals', or the larger one the trials'
    spread carries).  With ``b``: the rate of ``a`` minus that of ``b``, fitted to the difference of the two log curves.
    The kernels' curves share their training and test sets, so their wiggles about a power law are shared too: the
    paired fit's residuals give the SE of the difference, which two separate SEs in quadrature would overstate."""
    la, sa = _log_curve(a, n_min)
    if b is not None:
        lb, sb = _log_curve(b, n_min)
        la, lb = la.align(lb, join="inner")
        sa = None if sa is None or sb is None else np.hypot(*sa.align(sb, join="inner"))
        la = la - lb
    return stats.slope(np.log(la.index.values.astype(float)), la.values, point_se=None if sa is None else sa.values)


def b2(table: pd.DataFrame, spread: float, n_min: int) -> list[Verdict]:
    out = []
    rates = table.groupby(["kernel", "depth"]).rate.first().reset_index()
    rates["family"] = rates.kernel.map(FAMILY)
    lap = rates[rates.kernel == "laplace"].rate
    for fam, g in rates[rates.family.isin(["rf", "ntk"])].groupby("family"):
        if len(g) < 2:
            out.append(
                judge(
                    "B2",
                    "KRR learning curves of different depths decay at the same rate",
                    "learning_curves",
                    fam,
                    None,
                    f"{len(g)} depth(s)",
                    why_none=Problem("fewer than two depths", "few_depths"),
                )
            )
            continue
        parts = {
            (r.kernel, int(r.depth)): table[(table.kernel == r.kernel) & (table.depth == r.depth)]
            for r in g.itertuples()
        }
        est = {key: _rate(part, n_min) for key, part in parts.items()}
        hi, lo = max(est, key=lambda k: est[k].value), min(est, key=lambda k: est[k].value)
        test = exceeds(_rate(parts[hi], n_min, b=parts[lo]), spread, below=True, what="the spread of the rates")
        out.append(
            judge(
                "B2",
                "KRR learning curves of different depths decay at the same rate",
                "learning_curves",
                fam,
                test,
                "rates "
                + ", ".join(f"depth {L} ({k}) {e}" for (k, L), e in est.items())
                + f" (slopes of log MSE vs log n over n >= {n_min}, SE from the fit's residuals)"
                + f"; spread {test.text('.3f')} (depth {hi[1]} ({hi[0]}) minus depth {lo[1]} ({lo[0]}), "
                "the slope of the difference of their log curves: they share one data set)"
                + (f"; Laplace {lap.iloc[0]:.3f}" if len(lap) else ""),
            )
        )
    return out


def b3(table: pd.DataFrame, factor: float, n_min: int) -> list[Verdict]:
    """B3, beyond the paper (SPEC §3): every row an extension."""
    return [_scoped(v, False) for v in _b3(table, factor, n_min)]


def _b3(table: pd.DataFrame, factor: float, n_min: int) -> list[Verdict]:
    out = []
    for (kern, L), g in table.groupby(["kernel", "depth"], sort=True):
        per_n = g.groupby("n").agg(measured=("best_mse", "mean"), predicted=("predicted_best_mse", "first"))
        per_n = per_n[per_n.index >= n_min]
        if per_n.empty or per_n.predicted.isna().all():
            out.append(
                judge(
                    "B3",
                    "the spectrum predicts the learning curve",
                    "learning_curves",
                    f"{kern}, depth {L}",
                    None,
                    "",
                    why_none=f"no n >= {n_min} with a prediction",
                )
            )
            continue
        ratio = per_n.predicted / per_n.measured
        tests = []
        for n, r in ratio.items():
            m = stats.over_seeds(g[g.n == n].best_mse.values)
            tests.append(
                exceeds(
                    stats.Estimate(abs(float(np.log(r))), m.se / m.value if m.value else float("nan"), dof=m.dof),
                    float(np.log(factor)),
                    below=True,
                    what=f"|log(predicted / measured)| at n={n}",
                )
            )
        out.append(
            judge(
                "B3",
                "the spectrum predicts the learning curve",
                "learning_curves",
                f"{kern}, depth {L}",
                all_of(*tests),
                "predicted / measured best-over-ridge test MSE: "
                + ", ".join(f"n={n}: {r:.3f}" for n, r in ratio.items())
                + f" (need within x{factor:g} for every n >= {n_min})",
            )
        )
    return out


def check(spec: "ClaimsSpec", tables: dict[str, pd.DataFrame]) -> tuple[list[Verdict], list[str]]:
    verdicts = []
    if "slopes" in tables:
        verdicts += b1(tables["slopes"], spec.slope_tolerance, spec.depth_spread)
    if "learning_curves" in tables:
        verdicts += b2(tables["learning_curves"], spec.rate_spread, spec.rate_n_min)
        verdicts += b3(tables["learning_curves"], spec.theory_factor, spec.theory_n_min)
    return verdicts, [spec.scale_note, *NOTES]


def to_decide(v: Verdict, cfg: dict) -> "suggest.Suggestion | None":
    """What would decide an inconclusive row (depthlab.decide): B2 with one depth of a family gets the next depth of
    its kernel among the KRR kernels; otherwise more KRR trials (the error bars of a learning curve)."""
    from depthlab import suggest

    krr = "studies.spectra.krr"
    if "few_depths" in v.problems:
        kernels = [dict(k) for k in suggest.get(cfg, f"{krr}.kernels")]
        mine = [k for k in kernels if FAMILY.get(k["kernel"]) == v.subject]
        if mine:
            top = max(mine, key=lambda k: k["depth"])
            new = {"kernel": top["kernel"], "depth": int(top["depth"]) + 1}
            return suggest.Suggestion(
                f"KRR kernel {new['kernel']} at depth {new['depth']}", [(f"{krr}.kernels", kernels + [new])]
            )
    if "error_bars" in v.problems:
        n = suggest.get(cfg, f"{krr}.trials")
        m = suggest.needed_seeds(n, v.z) or 2 * n
        return suggest.Suggestion(f"KRR trials {m}", [(f"{krr}.trials", m)])
    return None
