"""Mori & Ueda's learning-rate sweeps (Fig. 3 and claim 5: the lazy regime): their verdicts; the criteria are in
:mod:`.claims`' docstring."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.claims import Z, Verdict, exceeds, judge
from depthlab.problems import Problem, edge_kinds
from depthlab.core import stats
from depthlab.core.edges import choose

from .claim_tools import _kernel_estimates, _se0


LAZY_KERNEL = (
    0.1  # claim 5's regime: the net's own tangent kernel moved by at most 10 % (relative Frobenius) in training
)


LAZY_LR = 0.1  # ... and its error changes by less than 10 % between the two smallest swept rates


def _regime(part: pd.DataFrame, lr0: float, lr1: float | None, width) -> tuple[str, str]:
    """(problem, evidence) of claim 5's regime test at the smallest swept rate ``lr0`` (SPEC §1): the net is lazy when
    (a) its tangent kernel Theta_hat moved little in training there (the mean over seeds of
    |Theta_hat_T - Theta_hat_0|_F / |Theta_hat_0|_F, the table's ``ntk_change``, below ``LAZY_KERNEL`` by Z SE), and
    (b) its error no longer depends on the rate at the small end (between ``lr0`` and the next swept rate ``lr1`` it does
    not change by more than ``LAZY_LR`` beyond Z SE).  The problem is '' when both hold, else 'scale: ...' naming the
    width (the row is then *inconclusive: scale*)."""
    at0 = part[part.lr == lr0]
    ev, bad = [], []
    if "ntk_change" in part and np.isfinite(at0.ntk_change).any():
        ch = stats.over_seeds(at0.ntk_change.values)
        t = exceeds(ch, LAZY_KERNEL, below=True, what="Theta_hat's relative change")
        ev.append(f"Theta_hat moved by {t.text('.3g')} in training at lr {lr0:.3g} (lazy: <= {LAZY_KERNEL:g})")
        if t.holds is not True:
            bad.append(
                f"its tangent kernel moved by {ch} in training (lazy: <= {LAZY_KERNEL:g}"
                + (", not decided within the error bars)" if t.holds is None else ")")
            )
    else:
        bad.append(
            "Theta_hat's movement in training was not recorded (an older table), so laziness cannot be established"
        )
    if lr1 is not None:
        a = part[part.lr == lr0].set_index("seed").nn_test_error
        b = part[part.lr == lr1].set_index("seed").nn_test_error
        rel = stats.over_seeds(((b - a) / a).dropna().values)
        d = exceeds(
            stats.Estimate(abs(rel.value), rel.se, rel.n, "seeds", rel.dof),
            LAZY_LR,
            below=True,
            what="the error's change between the two smallest rates",
        )
        ev.append(f"error change from lr {lr0:.3g} to {lr1:.3g}: {d.text('+.3g')} (lazy: |change| <= {LAZY_LR:g})")
        if d.holds is False:
            bad.append(f"its error still depends on the rate at the small end ({rel} from lr {lr0:.3g} to {lr1:.3g})")
    problem = (
        Problem(
            f"scale: at width {width} the net is not shown to be in the lazy regime the claim is about ("
            + "; ".join(bad)
            + "; the paper: h = 5000, lr proportional to 1/h)",
            "scale",
        )
        if bad
        else ""
    )
    return problem, "; ".join(ev)


def lr_claims(figure: str, table: pd.DataFrame, floor: float = 1.0) -> list[Verdict]:
    """Fig. 3 table: one row per (target, depth, lr, seed) with nn_test_error, converged, and the kernels' errors (and
    ``ntk_change``, how far the net's own tangent kernel moved in training).

    Claim 5 is judged per (target, depth) at the smallest swept rate, the end the claim is about (never skipped as a
    grid edge), once the net is shown to be there in the lazy regime (:func:`_regime`; outside it the row is
    *inconclusive: scale*, naming the width): |NN - kernel| / kernel < 25 %, against the analytic NTK of Appendix A
    (Theta: the paper's claim; SE over seeds and over the kernel's test points) and against the net's own tangent kernel
    at init (Theta_hat, its lazy limit: an extension; per seed, NN and Theta_hat of the same init paired, SE over seeds).
    Both at the target's variance (``floor``) is "nothing learned", inconclusive.  And whether the best lr is large.
    """
    out = []
    for (name, L), part in table.groupby(["target", "depth"], sort=True):
        ok = part[part.groupby("lr").converged.transform("all")]
        curve = ok.groupby("lr").nn_test_error.mean().sort_index()
        subject = f"{name} L={L}"
        if len(curve) < 2:
            out.append(
                judge(
                    "5",
                    "small lr matches the kernel; the best lr is large",
                    figure,
                    subject,
                    None,
                    f"{len(curve)} rate(s) converged",
                    why_none="fewer than two learning rates at which every seed converged",
                )
            )
            continue
        swept = sorted(part.lr.unique())
        lr0 = float(swept[0])
        lr1 = float(swept[1]) if len(swept) > 1 and swept[1] in curve.index else None
        width = int(part.width.iloc[0]) if "width" in part else "of this config"
        regime, regime_ev = _regime(part, lr0, lr1, width) if lr0 in curve.index else ("", "")
        ntk = _kernel_estimates(part)[int(L)]
        at0 = part[part.lr == lr0].sort_values("seed")
        for label, scope in (
            ("the analytic NTK (Theta, Appendix A)", "paper"),
            ("the net's own tangent kernel at init (Theta_hat)", "extension"),
        ):
            statement = f"at small lr the net matches {label}"
            if lr0 not in curve.index:
                v = judge(
                    "5",
                    statement,
                    figure,
                    subject,
                    None,
                    f"swept {lr0:.3g} ... {swept[-1]:.3g}",
                    why_none=Problem(
                        f"the smallest swept rate {lr0:.3g} did not converge for every seed within the budget, so "
                        "the small-lr end the claim is about was not reached",
                        "not_converged",
                    ),
                )
                v.scope = scope
                out.append(v)
                continue
            nn = stats.over_seeds(at0.nn_test_error.values)
            if scope == "paper":
                k = ntk.value
                if not np.isfinite(k):
                    continue
                rel = stats.Estimate(
                    abs(nn.value - k) / k,
                    stats.combine(nn.se / k, nn.value * ntk.se / k**2),
                    nn.n,
                    "seeds+test points" if ntk.se else "seeds",
                    stats.welch_dof(((nn.se / k) ** 2, nn.dof), ((nn.value * ntk.se / k**2) ** 2, ntk.dof)),
                )
                kern = f"{ntk}"
            else:
                ek = at0.entk_test_error.values.astype(float)
                if not np.isfinite(ek).any():
                    continue
                per = stats.over_seeds(
                    (at0.nn_test_error.values - ek) / ek
                )  # paired: each seed's net and its own kernel
                rel = stats.Estimate(abs(per.value), per.se, per.n, "seeds (paired)", per.dof)
                k = float(np.nanmean(ek))
                kern = f"{stats.over_seeds(ek)} (per seed: " + ", ".join(f"{e:.4g}" for e in ek) + ")"
            t = exceeds(rel, 0.25, below=True, what="|NN - kernel| / kernel")
            chance = (
                [
                    Problem(
                        f"nothing learned: NN {nn} and kernel {k:.4g} both at the target's variance ({floor:g})",
                        "nothing_learned",
                    )
                ]
                if nn.value >= floor - Z * _se0(nn) and k >= floor
                else []
            )
            v = judge(
                "5",
                statement,
                figure,
                subject,
                t,
                f"at lr={lr0:.3g} (the smallest swept rate): NN {nn} vs kernel {kern}: rel. diff {t.text('.3f')} "
                f"(need < 0.25); {regime_ev}; largest converged lr {curve.index.max():.3g}",
                chance + [regime],
            )
            v.scope = scope
            out.append(v)
        mid = np.sqrt(curve.index.min() * curve.index.max())
        per = part.groupby("lr").agg(err=("nn_test_error", "mean"), ok=("converged", "all")).sort_index()
        choice = choose(per.index.values, per.err.values, ~per.ok.values)
        best = curve.idxmin()
        edge = (
            Problem(
                f"the best converged rate {best:.3g} is the {choice.edge} end of the sweep "
                + (
                    "and every rate tried converged, so the largest converging rate (the top of the curve) is unknown"
                    if choice.edge == "upper"
                    else "(a smaller rate was not tried)"
                ),
                *edge_kinds([choice.edge]),
            )
            if choice.at_edge
            else ""
        )
        # the best rate against the middle, on a log scale; exact given the swept grid (the best is chosen on means)
        t = exceeds(stats.Estimate(float(np.log10(best)), 0.0), float(np.log10(mid)), what="log10 of the best lr")
        out.append(
            judge(
                "5",
                "the best lr lies in the large-lr regime",
                figure,
                subject,
                t,
                f"best lr {best:.3g} (error {curve.min():.4g}) vs the geometric middle of the converged range {mid:.3g}; "
                f"converged rates {curve.index.min():.3g} ... {curve.index.max():.3g}; swept "
                f"{per.index.min():.3g} ... {per.index.max():.3g}",
                [edge],
            )
        )
    return out
