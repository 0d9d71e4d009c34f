"""Malach & Shalev-Shwartz's claims (SPEC §2), checked against the fig4, fig5, fig6, tables and fig7 tables.

Accuracy is the best test accuracy along the run (the paper's number) at each net's chosen rate (the best over its
grid, chosen by its store), the mean over seeds; then the best over whatever the claim does not fix (widths, say).
Criteria (fixed here, printed in the report):

* M1 (coarse curve, fig4): (a) at every width that two or more depths have, the deepest net beats the shallowest by
  Z SE of the difference (with depths [1, 5], as the default and the paper's Fig. 4 ends, that is the whole trend; a
  rank correlation over intermediate depths is not tested); (b) at equal parameter count, each
  depth > 1 beats depth 1 wherever their parameter ranges overlap (log-linear interpolation);
  (c) the best depth-5 (deepest) net is near-perfect: accuracy >= ``near_perfect``.
* M2 (fig5): the best deep-net accuracy per curve (max over widths) falls as the curve gets finer: its Spearman
  correlation with P(3) and with P(4) is at least ``M2_RHO`` and its exact permutation p-value (the share of the
  n! orderings of the curves' accuracies whose correlation is at least as large) is at most ``M2_P``.  A zig-zag
  fails, however positive its correlation.
* M3 (fig6, and the tables' finest curve, the one with the lowest P(4)): every architecture's accuracy <= ``near_chance``.
* M4 (fig7, real images): depth helps gradually: the best net (max over widths) is deeper than one layer, and the best
  one-layer (depth 1) net is within ``m4_margin`` of it.  Without depth 1 in the config the claim cannot be judged.

Inconclusive (depthlab.claims.judge), with the reason, when a net the verdict rests on did not converge (its test
accuracy still rising when its budget ran out) or its chosen rate sits at an edge of its grid that could not grow, or
when every net is at chance (<= ``near_chance``: nothing was learned, so no ordering means anything; M1, M2, M4).
Best-along-the-run accuracy can only rise with more training, so a verdict more training cannot reverse does not rest
on an unconverged net: M1 (c) holding (a net already reached ``near_perfect``), and M3 not holding (an architecture
already beat chance).
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from depthlab.claims import Z, Test, Verdict, all_of, exceeds, flagged, judge, learned, unconverged
from depthlab.problems import Problem
from depthlab.core import stats
from depthlab.core.stats import Estimate

if TYPE_CHECKING:
    from depthlab import suggest
    from .specs import ClaimsSpec

from .chance import CHANCE
from .plots import best, curve_table

NOTES = [
    "Criteria: see the docstring of `depthlab/studies/fractals/claims.py`.",
    "Depth counts hidden layers (the authors' T); accuracy: best along the run, mean over seeds, at each net's chosen rate "
    "(every rate's row is in the figure tables; the chosen rate is printed beside each number).",
]
M2_RHO, M2_P = 0.8, 0.05
PAPER_STEPS = 1_000_000  # the paper trains every net 1e6 steps


def _est(table: pd.DataFrame, row, keys: list[str], n_test: int) -> Estimate:
    """One net of :func:`best` (``row``): its accuracy, the mean over its seeds at its chosen rate, with SE = the seeds'
    SE and the binomial SE of one accuracy on ``n_test`` shared test examples in quadrature (the seeds share the test
    set, so its sampling error does not average out over them).  With one seed (the default's nets) the net's own
    check-to-check fluctuation over its last window (the table's ``window_noise``) joins them in quadrature: the seeds'
    spread is not there to carry it.  The best along the run is a maximum over checks, biased up by
    about one binomial SE at chance: the onset margin allows for it."""
    sel = table[table.chosen.astype(bool)] if "chosen" in table else table
    for k in keys:
        sel = sel[sel[k] == getattr(row, k)]
    sel = sel[np.isclose(sel.lr, row.lr)]
    e = stats.over_seeds(sel.best_accuracy.values)
    b = stats.binomial(e.value, n_test).se if n_test else float("nan")
    if e.n < 2 and "window_noise" in sel and len(sel):
        return Estimate(e.value, stats.combine(b, float(sel.window_noise.iloc[0])), e.n, "binomial+window")
    return stats.with_se(e, b, how="seeds+binomial")


def _steps(table: pd.DataFrame, rows: pd.DataFrame, keys: list[str], steps_per_epoch: int) -> int:
    """The most steps any net of ``rows`` trained (its stopped epoch x steps per epoch); 0 when the table does not say."""
    if "stopped_epoch" not in table or not steps_per_epoch or rows.empty:
        return 0
    sel = table.merge(rows[keys + ["lr"]], on=keys + ["lr"])
    return int(sel.stopped_epoch.max() * steps_per_epoch) if len(sel) else 0


def _rho(a, b) -> float:
    return float(spearmanr(a, b).statistic) if len(a) >= 2 and np.ptp(a) > 0 and np.ptp(b) > 0 else float("nan")


def _net(r) -> str:
    parts = [f"{k} {getattr(r, k)}" for k in ("pdeg", "depth", "width") if hasattr(r, k)]
    return ", ".join(parts)


def _unsound(rows: pd.DataFrame) -> list[str]:
    """The nets of ``rows`` (from :func:`best`) that did not converge, and chosen rates at a flagged edge."""
    return [unconverged(rows, _net, diverged=None), flagged(rows, _net)]


def _at_chance(rows: pd.DataFrame, near_chance: float) -> str:
    top = rows.best_accuracy.max() if len(rows) else np.nan
    return (
        Problem(
            f"every net is at chance (best {top:.3f} <= {near_chance}): nothing was learned, so no ordering of the nets "
            "means anything",
            "nothing_learned",
        )
        if np.isfinite(top) and top <= near_chance
        else ""
    )


def permutation_p(x: np.ndarray, y: np.ndarray) -> float:
    """Exact one-sided p-value of Spearman's rho between x and y: the share of the len(y)! orderings of y whose rho with x is
    at least the observed one (ties broken as spearmanr does)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) > 8:
        raise ValueError("the exact test enumerates len(x)! orderings: at most 8 curves")
    obs = _rho(x, y)
    if not np.isfinite(obs):
        return float("nan")
    hits = sum(_rho(x, y[list(p)]) >= obs - 1e-12 for p in itertools.permutations(range(len(y))))
    return hits / math.factorial(len(y))


def m1(table: pd.DataFrame, near_perfect: float, near_chance: float = 0.6, n_test: int = 0) -> list[Verdict]:
    """M1, each comparison decided with its error bar (:func:`_est`): (a) at every width two depths have, the deepest
    beats depth 1 by Z SE of the difference; (b) at equal parameter count each deeper net (interpolated, the SE of its
    nearer measured net) beats depth 1; (c) the best deepest net's accuracy clears ``near_perfect`` by Z SE."""
    out = []
    keys = ["depth", "width", "n_params"]
    b = best(table, keys)
    depths = sorted(b.depth.unique())
    chance = _at_chance(b, near_chance)
    est = {(r.depth, r.width): _est(table, r, keys, n_test) for r in b.itertuples()}
    per_width = []
    for w, g in b.groupby("width"):
        if g.depth.nunique() < 2:  # a width only one depth has (fig4.extra_nets): no comparison at equal width
            continue
        g = g.sort_values("depth")
        lo, hi = g.iloc[0], g.iloc[-1]
        t = exceeds(
            stats.difference(est[(hi.depth, w)], est[(lo.depth, w)]),
            0.0,
            what=f"depth {int(hi.depth)} - depth {int(lo.depth)} at width {int(w)}",
        )
        per_width.append(
            (w, t, ", ".join(f"{int(r.depth)}: {est[(r.depth, w)]} (lr {r.lr:g})" for r in g.itertuples()))
        )
    out.append(
        judge(
            "M1",
            "coarse curve: deeper nets are more accurate at equal width",
            "fig4",
            "2-D Cantor, coarse",
            all_of(*[t for _, t, _ in per_width]) if per_width else None,
            "; ".join(f"width {w}: depth->acc {txt}; deepest - depth 1 = {t.text('.4f')}" for w, t, txt in per_width),
            _unsound(b) + [chance],
            why_none=Problem("no width has two depths", "few_depths"),
        )
    )
    shallow = b[b.depth == depths[0]].sort_values("n_params")
    comps = []
    for T in depths[1:]:
        g = b[b.depth == T].sort_values("n_params")
        inside = shallow[(shallow.n_params >= g.n_params.min()) & (shallow.n_params <= g.n_params.max())]
        for r in inside.itertuples():
            deep = float(np.interp(np.log(r.n_params), np.log(g.n_params), g.best_accuracy))
            near = g.iloc[int(np.argmin(np.abs(np.log(g.n_params.values) - np.log(r.n_params))))]
            d_est = Estimate(deep, est[(near.depth, near.width)].se, dof=est[(near.depth, near.width)].dof)
            comps.append(
                (
                    T,
                    r.n_params,
                    deep,
                    r.best_accuracy,
                    exceeds(
                        stats.difference(d_est, est[(r.depth, r.width)]),
                        0.0,
                        what=f"depth {T} - depth {depths[0]} at {r.n_params} parameters",
                    ),
                )
            )
    out.append(
        judge(
            "M1",
            "coarse curve: deeper nets are more accurate at equal parameter count",
            "fig4",
            "2-D Cantor, coarse",
            all_of(*[t for *_, t in comps]) if comps else None,
            "; ".join(
                f"depth {T} vs {depths[0]} at {P} params: {d:.3f} vs {s_:.3f}, difference {t.text('.4f')}"
                for T, P, d, s_, t in comps
            ),
            _unsound(b) + [chance],
            why_none="no overlapping parameter ranges",
        )
    )
    deepest = b[b.depth == depths[-1]]
    deepest = deepest.loc[deepest.groupby("width").best_accuracy.idxmax()]
    top = deepest.loc[deepest.best_accuracy.idxmax()]
    t = exceeds(est[(top.depth, top.width)], near_perfect, what="the best deepest net's accuracy")
    out.append(
        judge(
            "M1",
            "coarse curve: a wide deepest net is near-perfect",
            "fig4",
            f"depth {depths[-1]}",
            t,
            f"best accuracy {t.text('.4f')} at width {int(top.width)}, lr {top.lr:g} (need >= {near_perfect}); "
            "depth-{} nets: ".format(depths[-1])
            + ", ".join(
                f"width {int(r.width)} {r.best_accuracy:.4f}" for r in deepest.sort_values("width").itertuples()
            ),
            [] if t.holds else _unsound(deepest),
        )
    )  # holding cannot be undone by more training (module docstring)
    return out


def m2(table: pd.DataFrame, near_chance: float = 0.6, n_test: int = 0, steps_per_epoch: int = 0) -> list[Verdict]:
    """M2: the curves' best accuracies against P(3) and P(4).  Curves whose accuracy is at chance within Z SE learned
    nothing and leave the ranking, named with how many steps their nets trained (the paper trains 1e6).  The rank
    correlation is resampled (each curve's accuracy drawn within its SE, :func:`depthlab.core.stats.resampled_rhos`):
    holds when rho >= ``M2_RHO`` in >= 95 % of resamples and the exact permutation p <= ``M2_P``; does not hold when rho
    >= ``M2_RHO`` in <= 5 %; otherwise inconclusive: too few curves to tell from chance when the resamples hold but p
    does not, else inside the error bars."""
    curves = curve_table(table)  # coarse to fine by P(4)
    chosen = best(table, ["pdeg", "width"])
    rows = chosen[chosen.set_index(["pdeg", "width"]).index.isin(list(zip(curves.index, curves.width)))]
    est = {p_: _est(table, r, ["pdeg", "width"], n_test) for p_, r in zip(rows.pdeg, rows.itertuples())}
    keep, gone = learned(est, CHANCE, above=True, what="chance (0.5)")
    if gone:
        trained = _steps(table, rows[~rows.pdeg.isin(keep)], ["pdeg", "width"], steps_per_epoch)
        gone += f": nothing learned within {trained} steps (the paper trains {PAPER_STEPS:.0e})" if trained else ""
    problems = _unsound(rows) + [_at_chance(curves, near_chance)]
    out = []
    kept = curves[curves.index.isin(keep)]
    acc = kept.best_accuracy
    for col in ("P3", "P4"):
        if col not in curves:
            continue
        statement = (
            f"best deep-net accuracy falls as the curve gets finer (rank-correlates with {col.replace('P', 'P(')}))"
        )
        listing = (
            "coarse to fine: "
            + ", ".join(
                f"pdeg {p_}: acc {est[p_]} (w {int(w)}, lr {lr:g}), {col} {c:.3f}"
                for p_, w, lr, c in zip(curves.index, curves.width, curves.lr, curves[col].values)
            )
            + (f"; {gone}" if gone else "")
        )
        if len(kept) < 3:
            out.append(
                judge(
                    "M2",
                    statement,
                    "fig5",
                    "2-D Cantor",
                    None,
                    listing,
                    problems,
                    why_none=Problem(
                        f"fewer than three curves learned anything ({len(kept)} of {len(curves)})", "nothing_learned"
                    ),
                )
            )
            continue
        r, p = _rho(acc.values, kept[col].values), permutation_p(kept[col].values, acc.values)
        rhos = stats.resampled_rhos(
            kept[col].values, [[est[p_].value] for p_ in kept.index], sem=[est[p_].se for p_ in kept.index]
        )
        share = float((rhos >= M2_RHO).mean())
        sd = float(rhos.std(ddof=1))
        if share >= 0.95 and p <= M2_P:
            t = Test(True, r, sd, M2_RHO, None)
        elif share <= 0.05:
            t = Test(False, r, sd, M2_RHO, None)
        elif (
            share >= 0.95
        ):  # the error bars are not what stops it: the ranking of so few curves is not told from chance
            t = Test(
                None,
                r,
                sd,
                M2_RHO,
                None,
                f"too few curves to tell the ranking from chance: Spearman >= {M2_RHO} in {share:.0%} of resamples, "
                f"but the exact permutation p = {p:.3g} over {len(acc)}! orderings is above {M2_P}",
            )
        else:
            t = Test(
                None,
                r,
                sd,
                M2_RHO,
                None,
                Problem(
                    f"inside the error bars: Spearman >= {M2_RHO} in {share:.0%} of resamples within the accuracies' "
                    f"SEs (need 95 % to hold, 5 % or fewer to fail), exact permutation p = {p:.3g}",
                    "error_bars",
                ),
            )
        out.append(
            judge(
                "M2",
                statement,
                "fig5",
                "2-D Cantor",
                t if np.isfinite(r) else None,
                f"Spearman = {r:+.2f} (need >= {M2_RHO} in 95 % of resamples: {share:.0%}), exact permutation p = {p:.3g} "
                f"over {len(acc)}! orderings (need <= {M2_P}); " + listing,
                problems,
                why_none="the accuracies (or the curve) do not vary: no ranking",
            )
        )
    return out


def m3(
    table: pd.DataFrame, near_chance: float, figure: str, subject: str, n_test: int = 0, steps_per_epoch: int = 0
) -> Verdict:
    """M3: the best architecture's accuracy is below ``near_chance`` by Z SE.  Holding rests on nets that learned nothing:
    inconclusive unless they trained the paper's 1e6 steps (a net at chance after 1e5 steps may still start)."""
    b = best(table, ["depth", "width"])
    top = b.loc[b.best_accuracy.idxmax()]
    t = exceeds(
        _est(table, top, ["depth", "width"], n_test), near_chance, below=True, what="the best architecture's accuracy"
    )
    trained = _steps(table, b, ["depth", "width"], steps_per_epoch)
    short = (
        [
            Problem(
                f"nothing learned within {trained} steps (the paper trains {PAPER_STEPS:.0e}): a net still at chance "
                "may start later",
                "nothing_learned",
            )
        ]
        if t.holds and trained and trained < PAPER_STEPS
        else []
    )
    return judge(
        "M3",
        "fine curve: every architecture is near chance",
        figure,
        subject,
        t,
        f"best of {len(b)} architectures: {t.text('.4f')} (depth {int(top.depth)}, width {int(top.width)}, "
        f"lr {top.lr:g}; need <= {near_chance}); worst {b.best_accuracy.min():.4f}",
        (_unsound(b) + short) if t.holds else [],
    )  # beating chance cannot be undone by more training


def one_run(verdict: Verdict, table: pd.DataFrame) -> Verdict:
    """``verdict`` of a row whose nets were trained with one seed each (``table``'s ``seed`` column): not decided.  A
    single trajectory's SE is the test set's binomial error and the net's own check-to-check noise, which cannot hold the
    run-to-run spread (the default's depth-5 width-200 net reached 0.85 on one machine and 0.97 on another, same code,
    against an SE of 0.0055), so the row says it rests on one run and what would decide it.  With two seeds or more
    (or a question, or a row without numbers) it is returned as it is."""
    if "seed" not in table or table.seed.nunique() >= 2 or verdict.kind != "claim" or not verdict.applicable:
        return verdict
    import dataclasses

    why = (
        "it rests on one trajectory per net (training.seeds has one seed): its SE cannot hold the run-to-run spread "
        "of a trajectory"
    )  # what decides it (a second seed, stacked with the rates in each job): to_decide below
    if verdict.holds is None:
        return dataclasses.replace(verdict, reason=f"{verdict.reason}; {why}", problems=[*verdict.problems, "one_run"])
    return dataclasses.replace(
        verdict,
        holds=None,
        reason=f"{why}; on these numbers alone it would {'hold' if verdict.holds else 'not hold'}",
        problems=["one_run"],
    )


def check(spec: "ClaimsSpec", tables: dict[str, pd.DataFrame]) -> tuple[list[Verdict], list[str]]:
    out = []
    if "fig4" in tables:
        out += [
            one_run(v, tables["fig4"]) for v in m1(tables["fig4"], spec.near_perfect, spec.near_chance, spec.n_test)
        ]
    if "fig5" in tables:
        out += [
            one_run(v, tables["fig5"]) for v in m2(tables["fig5"], spec.near_chance, spec.n_test, spec.steps_per_epoch)
        ]
    if "fig6" in tables:
        t = tables["fig6"]
        out.append(
            one_run(
                m3(
                    t,
                    spec.near_chance,
                    "fig6",
                    f"{t.fractal.iloc[0]} depth {t.n.iloc[0]}, pdeg {t.pdeg.iloc[0]}",
                    spec.n_test,
                    spec.steps_per_epoch,
                ),
                t,
            )
        )
    if "tables" in tables:
        t = tables["tables"]
        for f, g in t.groupby("fractal"):
            fine = g.groupby("pdeg").P4.first().idxmin() if "P4" in g else g.pdeg.max()
            g = g[g.pdeg == fine]
            out.append(
                one_run(
                    m3(
                        g,
                        spec.near_chance,
                        "tables",
                        f"{f} depth {g.n.iloc[0]}, pdeg {fine} (its lowest P(4))",
                        spec.n_test,
                        spec.steps_per_epoch,
                    ),
                    g,
                )
            )
    if "fig7" in tables:
        out.append(m4(tables["fig7"], spec.m4_margin, spec.n_test_real))
    return out, [spec.scale_note, *NOTES]


def m4(table: pd.DataFrame, margin: float, n_test: int = 0) -> Verdict:
    """Depth helps gradually on real data: the best deeper net beats 1 layer (by Z SE of the difference), and 1 layer is
    within ``margin`` of it (by Z SE); the accuracies' SEs from the seeds and the ``n_test`` held-out images."""
    per = best(table, ["depth", "width"])  # mean over seeds at each net's chosen rate, per architecture
    per_depth = per.loc[per.groupby("depth").best_accuracy.idxmax()].sort_values("depth")  # the best width per depth
    subject = str(table.dataset.iloc[0]) if "dataset" in table else "real images"
    statement = (
        "real data: depth helps gradually (the best net is deeper than 1 layer, and 1 layer is within the margin)"
    )
    est = {int(r.depth): _est(table, r, ["depth", "width"], n_test) for r in per_depth.itertuples()}
    shown = "best over widths per depth: " + ", ".join(
        f"{int(r.depth)}: {est[int(r.depth)]} (w {int(r.width)}, lr {r.lr:g})" for r in per_depth.itertuples()
    )
    if 1 not in est:
        return judge(
            "M4",
            statement,
            "fig7",
            subject,
            None,
            shown,
            why_none=f"depth 1 is not in the config (depths {sorted(est)}): no one-layer net to compare",
        )
    deeper = {L: e for L, e in est.items() if L > 1}
    if not deeper:
        return judge("M4", statement, "fig7", subject, None, shown, why_none="no depth above 1 in the config")
    top = max(deeper, key=lambda L: deeper[L].value)
    diff = stats.difference(est[top], est[1])
    t = all_of(
        exceeds(diff, 0.0, what=f"depth {top} - depth 1"),
        exceeds(diff, margin, below=True, what=f"depth {top} - depth 1"),
    )
    return judge(
        "M4",
        statement,
        "fig7",
        subject,
        t,
        shown + f"; best deeper net depth {top}, {diff} above depth 1 (need > 0 and <= {margin:g}, each by {Z:g} SE): "
        f"{t.text('.4f')}",
        _unsound(per) + [_at_chance(per, 0.1 + margin)],
    )


def to_decide(v: Verdict, cfg: dict) -> "suggest.Suggestion | None":
    """What would decide an inconclusive row (depthlab.decide).  M2 and M3 rest on nets the paper trains for 1e6 steps
    (training.max_epochs 2 000 at 500 steps per epoch; priced, but a GPU's work); M4 on the paper's CIFAR-10 (a user's
    copy: fig7.dataset cifar10 with its cifar10_dir); M1 more seeds (one_run: the second seed), or a longer budget."""
    from depthlab import suggest

    root = "studies.fractals"
    t = suggest.get(cfg, f"{root}.training")
    if v.claim in ("M2", "M3") and {"not_converged", "nothing_learned"} & set(v.problems):
        d = suggest.get(cfg, f"{root}.data")
        epochs = max(int(t["max_epochs"]), math.ceil(PAPER_STEPS / max(1, d["n_train"] // t["batch_size"])))
        return suggest.Suggestion(
            f"paper scale (the paper's {PAPER_STEPS:.0e} steps: training.max_epochs {epochs}; a GPU)",
            [(f"{root}.training.max_epochs", epochs)],
            otherwise=f"paper scale (the paper's {PAPER_STEPS:.0e} steps at its data size: config/config.yaml's "
            f"fractals data and training, or config/paper.yaml; a GPU)",
        )
    if v.claim == "M4":
        return suggest.paper("the paper's CIFAR-10: fig7.dataset cifar10 with your copy in fig7.cifar10_dir; a GPU")
    if "one_run" in v.problems and len(t["seeds"]) < 2:
        return suggest.Suggestion("training.seeds [0, 1]", [(f"{root}.training.seeds", [0, 1])])
    return suggest.generic(
        v,
        cfg,
        seeds=lambda v: (f"{root}.training.seeds", "every fractal net"),
        budget=lambda v: (f"{root}.training.max_epochs", "training.max_epochs", 2.0),
        grow=lambda v: (f"{root}.training.lr_growth.rounds", "training.lr_growth.rounds"),
    )
