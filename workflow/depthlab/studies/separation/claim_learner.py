"""The RZG23 learner's verdicts (R3: its error against the depth-2 nets'; R4: the symmetrisation of its first layer in the
gradient-flow regime); the criteria are in :mod:`.claims`' docstring."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from depthlab.claims import Z, Test, Verdict, all_of, exceeds, judge
from depthlab.problems import Problem, join_problems
from depthlab.core import stats

if TYPE_CHECKING:
    pass

from .claim_tools import _curve, _fmt, _unsound


def learner_claims(table: pd.DataFrame, small: float) -> list[Verdict]:
    out = []
    for q, part in table.groupby("dist"):
        learner = part[part.model == "learner"]
        fixed = {int(w): _curve(g) for w, g in learner[~learner.width_rule.str.endswith("d")].groupby("width")}
        contrast = "; ".join(f"contrast, fixed m = {w}: {_fmt(c)}" for w, c in fixed.items())
        poly = [r for r in learner.width_rule.unique() if r.endswith("d")]
        for rule in sorted(poly, key=lambda r: int(r[:-1])):
            g = learner[learner.width_rule == rule]
            curve, red = _curve(g), _curve(part[(part.model == "reduced") & (part.width_rule == rule)])
            t = all_of(
                *[
                    exceeds(_over_seeds(g, d), small, below=True, what=f"the learner's nMSE at d={int(d)}")
                    for d in curve.index
                ]
            )
            out.append(
                judge(
                    "R3",
                    f"the 3-layer learner at poly(d) width reaches a small test error (nMSE <= {small:g}) at every d",
                    "learner_error",
                    f"{q}, m = {rule}",
                    t,
                    f"learner nMSE {_fmt_se(g)} (rates {_rates(g)}); reduced model {_fmt(red)}"
                    + (f"; {contrast}" if contrast else "")
                    + f"; deciding d: {t.text()}",
                    _unsound(g),
                )
            )
        nets = part[part.model == "1 hidden layer"]
        if len(nets) and poly:
            first = sorted(poly, key=lambda r: int(r[:-1]))[0]
            curve, mine = _curve(nets), _curve(learner[learner.width_rule == first])
            budget = ", ".join(f"d={int(d)}: {int(n)}" for d, n in nets.groupby("d").n_params.first().items())
            top = nets.d.max()
            rests = pd.concat([nets[nets.d == top], learner[(learner.width_rule == first) & (learner.d == top)]])
            out.append(
                judge(
                    "R3",
                    f"1-hidden-layer nets with the learner's parameter count fail where it does not (nMSE > {small:g} at "
                    "the largest d)",
                    "learner_error",
                    f"{q}, parameters of m = {first}",
                    all_of(
                        exceeds(_over_seeds(nets, top), small, what="the 1-hidden-layer nMSE at the largest d"),
                        exceeds(
                            _over_seeds(learner[learner.width_rule == first], top),
                            small,
                            below=True,
                            what="the learner's nMSE at the largest d",
                        ),
                    ),
                    f"1 hidden layer nMSE {_fmt_se(nets)} (parameters {budget}); learner m = {first}: {_fmt(mine)}",
                    _unsound(rests),
                )
            )
    return out


def _over_seeds(g: pd.DataFrame, d, col: str = "test_nmse") -> stats.Estimate:
    """The mean over the seeds (diverged ones left out) at one d, with its SE."""
    h = g[(g.d == d) & ~g.diverged] if "diverged" in g else g[g.d == d]
    return stats.over_seeds(h[col].values)


def _fmt_se(g: pd.DataFrame) -> str:
    return ", ".join(f"d={int(d)}: {_over_seeds(g, d)}" for d in sorted(g.d.unique()))


def _rates(g: pd.DataFrame) -> str:
    per = g.groupby("d").lr.first()
    return ", ".join(f"d={int(d)}: {v:g}" for d, v in per.items())


INIT_FACTOR = (
    1.0  # R4 "stays small": the deviation after the first check at most this many times its init sampling error
)


ALPHA_FLOOR = 0.1  # R4's alpha gap: relative to max(|alpha_T^reduced|, this x alpha at the start)


def _held(dev: np.ndarray) -> np.ndarray:
    """A deviation path's values that lasted: each check's value where the next check is at least as high (the min of
    consecutive pairs), and the last check's; a one-check spike does not last."""
    return np.append(np.minimum(dev[:-1], dev[1:]), dev[-1:]) if len(dev) > 1 else dev


def _mean_curve(g: pd.DataFrame, col: str) -> pd.Series:
    """The mean over seeds of ``col`` per step, steps every seed recorded."""
    per = g.pivot_table(index="step", columns="seed", values=col)
    return per.dropna().mean(axis=1)


def flow_rates(g: pd.DataFrame, tol: float) -> tuple[list[float], list[str]]:
    """(the flow rates of one (law, width, d) in the gradient-flow regime, what was compared).  Rate r (the larger of a
    consecutive pair r' < r) is in the regime when its mean training-nMSE curve in flow time (lr x step) lies within
    ``tol`` (relative) of r''s over the flow time both reached.  The two are compared at r's records (after step 0),
    where r''s curve is recorded r / r' times as densely in flow time and is interpolated; the other way round, a
    straight line between r's coarse records across the first fall (nMSE 480 -> 1 within one of r's checks, as the
    learner's first steps go) is no curve of either rate, and made every pair of the default run disagree by 4-167x.
    Then r' is in the regime too (the smaller rate of a pair that agrees, as A3 takes the smallest).  A rate whose
    pair disagrees, and the rates above it, are not."""
    rates = sorted(g.lr.unique())
    curves = {lr: _mean_curve(g[g.lr == lr], "train_nmse") for lr in rates}
    flow, notes = [], []
    for small, big in zip(rates[:-1], rates[1:]):
        cs, cb = curves[small], curves[big]
        ts, tb = cs.index.values * small, cb.index.values * big
        at = (tb > 0) & (tb <= ts.max())
        if not at.any() or len(ts) < 2:
            notes.append(f"{big:g} vs {small:g}: no common flow time")
            break
        ls = np.interp(tb[at], ts, cs.values)
        lb = cb.values[at]
        rel = float(np.max(np.abs(lb - ls) / np.abs(ls)))
        notes.append(f"{big:g} vs {small:g}: {rel:.3g} over flow time <= {tb[at].max():.4g}")
        if rel > tol:
            break
        flow += [r for r in (small, big) if r not in flow]
    return flow, notes


def _rise_test(end: float, start: float, noise: float) -> tuple[float, float]:
    """(rise, its tolerance's SE): the deviation's final value above its start, and the check-to-check noise of its last
    window that a rise must clear to count (a floor of 1e-6 x the start for a noiseless path)."""
    return end - start, max(noise, 1e-6 * abs(start))


def symmetrisation_claims(
    curves: pd.DataFrame,
    growth: float,
    gap: float,
    most: float = np.inf,
    runs: pd.DataFrame | None = None,
    small: float = np.inf,
    flow_tol: float = 0.05,
) -> list[Verdict]:
    """R4 from the learner curves, judged in the gradient-flow regime (SPEC §4): at the flow rates of each d that
    :func:`flow_rates` finds in the regime, on every seed that trained (final test nMSE below 1: a net at the target's
    variance is not evidence, named).

    (a) "stays small": after the first check, the deviation's lasting values (:func:`_held`) stay at most
    max(``most``, INIT_FACTOR sqrt(pi - 1) / sqrt(m)), the larger of the absolute floor and the init's sampling error of m
    random neurons (at step 0 the deviation *is* that error), decided with the path's check-to-check noise (the SD of
    successive differences after the first check, robust to a spike: ``stats.robust_noise``) as its SE.  "Does not compound": the final deviation is above
    its start by no more than Z times that noise (the rise, its noise and z in the row), and no rise above ``growth``
    times the start lasts beyond one check.  (b) alpha follows the reduced model: at the end of training
    |alpha_T - alpha_T^reduced| / max(|alpha_T^reduced|, ALPHA_FLOOR alpha_0) <= ``gap`` (the reduced model's alpha
    passes near 0 early, where a running relative gap is meaningless), decided with its last window's noise;
    inconclusive when the reduced model itself did not train (its final test nMSE above ``small``).  The best-training
    rate's numbers are printed beside, not judged (a one-check spike at a big rate is reported).  A fixed width that does
    not grow with d is the contrast, not the claim: its rows are listed apart (scope extension)."""
    out = []
    if "regime" not in curves:
        curves = curves.assign(regime="best", lr=np.nan)
    for (q, rule), part in curves.groupby(["dist", "width_rule"]):
        label = f"{q}, m = {rule}" if rule.endswith("d") else f"{q}, m = {rule} (fixed)"
        contrast = not rule.endswith("d")
        prefix = "contrast (a width that does not grow with d, not the claim): " if contrast else ""
        problems = (
            []
            if runs is None
            else _unsound(runs[(runs.model == "learner") & (runs.dist == q) & (runs.width_rule == rule)])
        )
        dev_rows, gap_rows, beside, dead, no_flow, untrained = [], [], [], [], [], []
        small_t, rise_t, last_t, gap_t = [], [], [], []
        for d, g in part.groupby("d"):
            m = int(g.width.iloc[0])
            init = np.sqrt(np.pi - 1) / np.sqrt(m)
            limit = max(most, INIT_FACTOR * init)
            best = g[g.regime == "best"]
            if len(best):
                bdev = best.groupby("step").deviation.mean()
                beside.append(
                    f"d={d}: at the best-training rate {best.lr.iloc[0]:g} start {bdev.iloc[0]:.3g}, max "
                    f"{bdev.iloc[1:].max() if len(bdev) > 1 else np.nan:.3g}, end {bdev.iloc[-1]:.3g}"
                )
            flow = g[g.regime == "flow"]
            rates, notes = flow_rates(flow, flow_tol) if len(flow) else ([], ["no flow rates recorded"])
            if not rates:
                no_flow.append(f"d={d} ({'; '.join(notes)})")
                continue
            for lr in rates:
                at = flow[flow.lr == lr]
                for sd, h in at.sort_values("step").groupby("seed"):
                    final = h.iloc[-1]
                    if not final.test_nmse < 1:
                        dead.append(f"d={d} lr {lr:g} seed {sd} (test nMSE {final.test_nmse:.3g})")
                        continue
                    dev = h.deviation.values
                    start, end, after = dev[0], dev[-1], dev[1:]
                    w = max(3, len(dev) // 4)
                    noise = stats.robust_noise(after)  # check to check, after the first check (robust to a spike)
                    noise = noise if np.isfinite(noise) else 0.0
                    held = _held(after) if len(after) else np.array([start])
                    lasting = float(held.max())
                    small_t.append(
                        exceeds(
                            stats.Estimate(lasting / limit, noise / limit if noise else 0.0),
                            1.0,
                            below=True,
                            what=f"the lasting deviation / its limit (d={d}, lr {lr:g}, seed {sd})",
                        )
                    )
                    rise, se = _rise_test(end, start, noise)
                    rise_t.append(
                        Test(
                            bool(rise <= Z * se),
                            rise,
                            se,
                            0.0,
                            -rise / se,
                            "",
                            f" (d={d}, lr {lr:g}, seed {sd}: end {end:.3g} vs start {start:.3g}, noise {se:.2g})",
                        )
                    )
                    lasted = bool(len(held) > 1 and (held[:-1] > growth * start).any())
                    last_t.append(Test(not lasted, float(held.max() / start), 0.0, growth, None))
                    dev_rows.append(
                        f"d={d} (m={m}) lr {lr:g} seed {sd}: start {start:.3g} (sqrt(pi-1)/sqrt(m) = {init:.3g}), "
                        f"lasting max {lasting:.3g} vs limit {limit:.3g}, end {end:.3g}"
                    )
                    a_T, r_T, a_0 = float(final.alpha), float(final.reduced_alpha), float(h.alpha.iloc[0])
                    denom = max(abs(r_T), ALPHA_FLOOR * abs(a_0))
                    gcurve = (h.alpha - h.reduced_alpha).abs().values / np.maximum(
                        h.reduced_alpha.abs().values, ALPHA_FLOOR * abs(a_0)
                    )
                    gnoise = stats.robust_noise(gcurve[-w:])
                    gap_t.append(
                        exceeds(
                            stats.Estimate(abs(a_T - r_T) / denom, gnoise if np.isfinite(gnoise) else 0.0),
                            gap,
                            below=True,
                            what=f"the final alpha gap (d={d}, lr {lr:g}, seed {sd})",
                        )
                    )
                    red = float(final.reduced_test_nmse)
                    if np.isfinite(red) and red > small:
                        untrained.append(f"d={d} lr {lr:g} seed {sd} (nMSE {red:.3g})")
                    gap_rows.append(
                        f"d={d} lr {lr:g} seed {sd}: final alpha {a_T:.3g} vs reduced {r_T:.3g}, gap {abs(a_T - r_T) / denom:.3g}"
                        + (f", reduced nMSE {red:.3g}" if np.isfinite(red) else "")
                    )
        basis = []
        if no_flow:
            basis.append(
                Problem(
                    "no flow rate in the gradient-flow regime at "
                    + ", ".join(no_flow)
                    + f" (tolerance {flow_tol:g}; add a smaller flow rate)",
                    "flow_rate",
                )
            )
        if dead:
            basis.append("left out, not trained (test nMSE >= 1, not evidence): " + ", ".join(dead))
        judged_any = bool(small_t)
        tail = ("; beside, not judged: " + "; ".join(beside)) if beside else ""
        stmt_a = (
            prefix + f"in the gradient-flow regime the deviation |F/alpha - |x|| / ||x|| stays small (after the first "
            f"check at most max({most:g}, {INIT_FACTOR:g} x its init sampling error)) and does not compound (ends at most "
            f"{Z:g} x its noise above its start; no rise beyond x{growth:g} its start lasting more than one check)"
        )
        stmt_b = (
            prefix
            + f"in the gradient-flow regime alpha_T of the finite net follows the reduced model's (final relative gap <= {gap:g})"
        )
        miss = join_problems(basis)
        if judged_any:
            t_a = all_of(*small_t, *rise_t, *last_t)
            worst = max(small_t, key=lambda t: t.effect)
            ev_a = (
                "; ".join(dev_rows)
                + f"; worst lasting deviation / its limit {worst.text('.3g')}"
                + (f"; {miss}" if miss else "")
                + tail
            )
            v_a = judge("R4", stmt_a, "learner_alpha", label, t_a, ev_a, problems + ([miss] if no_flow else []))
            t_b = all_of(*gap_t)
            v_b = judge(
                "R4",
                stmt_b,
                "learner_alpha",
                label,
                t_b,
                "; ".join(gap_rows) + (f"; {miss}" if miss else ""),
                problems
                + ([miss] if no_flow else [])
                + (
                    [
                        Problem(
                            f"the reduced model did not train ({', '.join(untrained)}, above the learner's threshold "
                            f"{small:g}): a gap to it measures nothing",
                            "not_trained",
                        )
                    ]
                    if untrained
                    else []
                ),
            )
        else:
            why = miss or "no learner curves"
            v_a = judge("R4", stmt_a, "learner_alpha", label, None, why + tail, problems, why_none=why)
            v_b = judge("R4", stmt_b, "learner_alpha", label, None, why, problems, why_none=why)
        for v in (v_a, v_b):
            v.scope = "extension" if contrast else "paper"
            out.append(v)
    return out
