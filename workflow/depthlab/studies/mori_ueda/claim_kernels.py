"""Mori & Ueda's claim 4 (the networks against their NTK, NNGP and own tangent kernel), judged where the paper makes it
(Sec. 3.1); its criteria are in :mod:`.claims`' docstring."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.claims import Z, Test, Verdict, all_of, exceeds, judge, learned, not_applicable, trend
from depthlab.problems import Problem, join_problems
from depthlab.core import stats

from .claim_tools import CLEARLY, FLAT, NO_NTK, _curve, _flat, _samples, _se0


def _claim4_rows(
    figure: str,
    variant: str | None,
    name: str,
    k: int,
    loc: str,
    part: pd.DataFrame,
    est: dict,
    kest: dict,
    floor: float,
    floor_name: str,
    sound: list[str],
) -> list[Verdict]:
    """Claim 4 where the paper makes it (SPEC §1, Sec. 3.1): "does not follow" on the k >= 2 local targets and Fig. 6's
    generalized ones (with the "worse at the best depth" aside beside it, an extension); on 3-global at L = 1 only (the
    NTK predicts L = 1 worse than deeper nets, the net does not); "the NTK follows the net" where the paper says it does
    (k = 1: shallow best; 2-global; 3-global at L >= 2); not applicable on Figs 4 and 5 (no NTK there)."""
    sub = _substituted(part)
    if variant in NO_NTK:
        return [
            not_applicable(
                "4",
                "the NTK and the NN at the CV-optimal lr",
                figure,
                name,
                "NTK " + ", ".join(f"L={L}: {e.value:.4g}" for L, e in kest.items()),
                f"the paper shows no NTK for its {variant} figure (Figs 4 and 5 show networks only): claim 4 "
                "is not made there; the NTK's errors are in the figure's table",
            )
        ]
    if variant == "generalized g" or (k >= 2 and loc == "local"):
        return [
            _claim4(figure, name, part, est, kest, floor, floor_name, sound, sub),
            _aside(figure, name, part, est, kest, floor, floor_name, sound),
        ]
    if k == 1:
        return [_ntk_shallow_best(figure, name, est, kest, floor, floor_name, sound, sub)]
    if k == 2:  # 2-global: the paper's exception
        return [_follows(figure, name, part, est, kest, sorted(est), floor, floor_name, sound, sub)]
    # k >= 3 global: L = 1 is where the paper finds the NTK wrong; at L >= 2 it finds it close
    return [
        _claim4_at_1(figure, name, est, kest, floor, floor_name, sound, sub),
        _aside(figure, name, part, est, kest, floor, floor_name, sound),
        _follows(figure, name, part, est, kest, [L for L in sorted(est) if L >= 2], floor, floor_name, sound, sub),
    ]


def _aside(
    figure: str, name: str, part: pd.DataFrame, est: dict, kest: dict, floor: float, floor_name: str, sound: list[str]
) -> Verdict:
    """The finding beside a judged claim-4 row, an extension: the NTK is worse than the NN at the NN's best depth."""
    nn = _curve(part)
    best = int(nn.idxmin())
    gap = exceeds(stats.ratio(kest[best], est[best]), CLEARLY, what=f"NTK/NN at L={best}")
    both = est[best].value >= floor - Z * _se0(est[best]) and kest[best].value >= floor - Z * _se0(kest[best])
    v = judge(
        "4-aside",
        "finding beside claim 4: the NTK is worse than the NN at the NN's best depth",
        figure,
        name,
        gap,
        f"NTK/NN at the NN's best depth L={best}: {gap.text('.3f')} (need > {CLEARLY})"
        + _substituted(part[part.depth == best]),
        sound
        + (
            [Problem(f"nothing learned: NN and NTK both at {floor_name} at L={best}", "nothing_learned")]
            if both
            else []
        ),
    )
    v.scope = "extension"
    return v


def _kernel_trend(kest: dict, depths: list[int]) -> Test:
    """The NTK's trend over log L at ``depths``: one fit per depth, its SE over the test points (a z law on the slope;
    :func:`depthlab.core.stats.trend_test`), flat within ``FLAT`` counted as flat (holds None, effect the slope)."""
    vals = pd.Series({L: kest[L].value for L in depths}, dtype=float)
    rising = trend(
        np.log(depths),
        [[kest[L].value] for L in depths],
        falling=False,
        sem=[kest[L].se if kest[L].se > 0 else 1e-12 for L in depths],
        what="the NTK's trend in L",
    )
    if _flat(vals):
        return Test(
            None, rising.effect, rising.stderr, 0.0, rising.z, f"the NTK is flat within {FLAT:.0%}", rising.note
        )
    return rising


def _follows(
    figure: str,
    name: str,
    part: pd.DataFrame,
    est: dict,
    kest: dict,
    depths: list[int],
    floor: float,
    floor_name: str,
    sound: list[str],
    sub: str,
) -> Verdict:
    """Where the paper finds the NTK close to the net (2-global; 3-global at L >= 2): the row checks that the NTK follows
    the net's depth trend.  Holds when both trends over log L are decided with the same sign; does not hold when they are
    decided with opposite signs, or the NTK is flat (within ``FLAT``) where the net's trend is decided; otherwise
    inconclusive.  Depths where either learned nothing leave the test, named."""
    statement = "the NTK follows the NN's depth trend here, as the paper finds"
    sub_est = {L: est[L] for L in depths if L in est}
    sub_k = {L: kest[L] for L in depths if L in kest}
    alive, gone_nn = learned(sub_est, floor, what=f"{floor_name} (NN)")
    alive_k, gone_k = learned(sub_k, floor, what=f"{floor_name} (NTK)")
    use = [L for L in alive if L in alive_k]
    left = "; ".join(g for g in (gone_nn, gone_k) if g)
    shown = (
        f"at L = {depths}: NN "
        + ", ".join(f"L={L}: {est[L]}" for L in depths)
        + "; NTK "
        + ", ".join(f"L={L}: {kest[L]}" for L in depths)
        + (f"; {left}" if left else "")
        + "; NTK/NN "
        + ", ".join(f"L={L}: {kest[L].value / est[L].value:.3g}" for L in depths if est[L].value)
    )
    if len(use) < 2:
        return judge(
            "4",
            statement,
            figure,
            name,
            None,
            shown + sub,
            sound,
            why_none=Problem(
                f"fewer than two depths at which both the NN and the NTK learned something ({left})", "few_depths"
            ),
        )
    nn_t = trend(np.log(use), _samples(part, use), falling=False, what="the NN's trend in L")
    k_t = _kernel_trend(kest, use)
    nn_sign = None if nn_t.holds is None else (1 if nn_t.holds else -1)
    flat = k_t.holds is None and k_t.problem.startswith("the NTK is flat")
    k_sign = None if k_t.holds is None else (1 if k_t.holds else -1)
    ev = (
        f"{shown}; slope over log L: NN {nn_t.text('+.3g')}; NTK {k_t.text('+.3g')}" + (" (flat)" if flat else "") + sub
    )
    z = nn_t.z
    if flat:  # the NTK is flat: it follows a net whose trend is flat too, which a test can only fail to reject
        if nn_sign is None:
            return judge(
                "4",
                statement,
                figure,
                name,
                Test(
                    None,
                    nn_t.effect,
                    nn_t.stderr,
                    0.0,
                    z,
                    Problem(
                        "the NTK is flat and the NN's trend is inside its error bars: agreement is not told from a "
                        "lack of power",
                        "error_bars",
                    ),
                ),
                ev,
                sound,
            )
        return judge(
            "4",
            statement,
            figure,
            name,
            Test(False, nn_t.effect, nn_t.stderr, 0.0, -abs(z) if z is not None else None),
            ev,
            sound,
        )
    if nn_sign is None or k_sign is None:
        why = join_problems(t.problem for t in (nn_t, k_t) if t.holds is None)
        return judge("4", statement, figure, name, Test(None, nn_t.effect, nn_t.stderr, 0.0, z, why), ev, sound)
    agree = nn_sign == k_sign
    zz = (abs(z) if agree else -abs(z)) if z is not None else None
    return judge("4", statement, figure, name, Test(agree, nn_t.effect, nn_t.stderr, 0.0, zz), ev, sound)


def _ntk_shallow_best(
    figure: str, name: str, est: dict, kest: dict, floor: float, floor_name: str, sound: list[str], sub: str
) -> Verdict:
    """k = 1: the paper finds the NTK also predicts a shallow net is better (without the non-monotonicity): the NTK's
    error at the smallest depth is below every deeper one's, by Z SE of the difference (its SEs over the test points)."""
    depths = sorted(kest)
    first = depths[0]
    best_deep = min(depths[1:], key=lambda L: kest[L].value)
    t = exceeds(stats.difference(kest[best_deep], kest[first]), 0.0, what=f"NTK err(L={best_deep}) - err(L={first})")
    return judge(
        "4",
        "the NTK also finds the shallow net best (k = 1), as the paper finds",
        figure,
        name,
        t,
        "NTK " + ", ".join(f"L={L}: {kest[L]}" for L in depths) + f"; NTK err(L={best_deep}) - err(L={first}) = "
        f"{t.text()} (need > 0); NN " + ", ".join(f"L={L}: {e}" for L, e in est.items()) + sub,
        sound,
    )


def _claim4_at_1(
    figure: str, name: str, est: dict, kest: dict, floor: float, floor_name: str, sound: list[str], sub: str
) -> Verdict:
    """3-global (k >= 3 global), the paper: "the NTK predicts that a shallow network of L = 1 generalizes poorer than DNNs,
    which is not the case in neural networks".  Holds when the NTK at L = 1 is worse than its best deeper depth and the NN
    at L = 1 is not worse than its best deeper depth (both by Z SE).  An L = 1 NTK at the target's variance is the
    claim's own prediction (it generalizes poorer: at d = 20 with beta = 0.1 its degree-3 Gegenbauer coefficient is 4.7e-5
    of degree 1's, against 2.8e-3 at L = 2), not a failure to learn, so it counts; only a best deeper NTK at the variance
    too leaves nothing to compare (inconclusive)."""
    statement = "the NTK predicts L = 1 worse than deeper nets, which the NN is not (3-global, L = 1)"
    depths = sorted(kest)
    first = depths[0]
    k_deep = min(depths[1:], key=lambda L: kest[L].value)
    n_deep = min(depths[1:], key=lambda L: est[L].value)
    k_worse = exceeds(stats.difference(kest[first], kest[k_deep]), 0.0, what=f"NTK err(L={first}) - err(L={k_deep})")
    nn_not = exceeds(
        stats.difference(est[first], est[n_deep]), 0.0, below=True, what=f"NN err(L={first}) - err(L={n_deep})"
    )
    at_floor = kest[first].value >= floor - Z * _se0(kest[first])
    ev = (
        f"NTK err(L={first}) - err(L={k_deep}) = {k_worse.text()} (need > 0); NN err(L={first}) - err(L={n_deep}) = "
        f"{nn_not.text()} (need < 0); NTK "
        + ", ".join(f"L={L}: {kest[L]}" for L in depths)
        + (f" (the L = {first} NTK at {floor_name}: the poorer generalization the claim predicts)" if at_floor else "")
        + sub
    )
    deep_floor = kest[k_deep].value >= floor - Z * _se0(kest[k_deep])
    return judge(
        "4",
        statement,
        figure,
        name,
        all_of(k_worse, nn_not),
        ev,
        sound
        + (
            [
                f"every NTK depth is at {floor_name} (best deeper L = {k_deep}: {kest[k_deep]}): none learned, "
                "so none predicts better than another"
            ]
            if deep_floor
            else []
        ),
    )


def _substituted(df: pd.DataFrame) -> str:
    """'; trained at a substituted rate: L=4 at 0.5 (its CV rate 1 halved 1x: a seed diverged there)' for every depth whose
    nets trained at a rate other than the one their search chose ('' if none: every row says so)."""
    if "lr_halvings" not in df or not df.lr_halvings.any():
        return ""
    per = df[df.lr_halvings > 0].groupby("depth")[["lr", "cv_lr", "lr_halvings"]].first()
    return "; trained at a substituted rate: " + ", ".join(
        f"L={int(L)} at {r.lr:.3g} (its CV rate {r.cv_lr:.3g} halved {int(r.lr_halvings)}x: a seed diverged there)"
        for L, r in per.iterrows()
    )


def _flag_substituted(out: list[Verdict], start: int, part: pd.DataFrame) -> None:
    """Every row from ``out[start:]`` (one target's rows) records, in its ``substituted`` field, the
    depths whose nets trained at a rate other than their search's choice, because a seed diverged at the choice."""
    from dataclasses import replace

    sub = _substituted(part).removeprefix("; trained at a substituted rate: ")
    if sub:
        out[start:] = [replace(v, substituted=sub) for v in out[start:]]


def _claim4(
    figure: str,
    name: str,
    part: pd.DataFrame,
    est: dict,
    kest: dict,
    floor: float,
    floor_name: str,
    sound: list[str],
    substituted: str = "",
) -> Verdict:
    """Claim 4: the NN's trend in L, decided over seeds, runs against the NTK's (or the NTK is flat where the NN is not).

    Depths where the NN or the NTK learned nothing (at ``floor`` within Z SE) leave the test: a kernel at chance sets no
    trend.  The NTK is one kernel per depth (no seeds): its trend is the slope over log L with its SE over the test
    points (:func:`_kernel_trend`), or flat within ``FLAT``.  The evidence names the scale the row was judged at beside
    the paper's."""
    statement = "the NTK does not follow the NN at the CV-optimal lr (its trend in L)"
    alive, gone_nn = learned(est, floor, what=f"{floor_name} (NN)")
    alive_k, gone_k = learned(kest, floor, what=f"{floor_name} (NTK)")
    depths = [L for L in alive if L in alive_k]
    left = "; ".join(g for g in (gone_nn, gone_k) if g)
    shown = "NTK " + ", ".join(f"L={L}: {kest[L].value:.4g}" for L in kest) + (f"; {left}" if left else "")
    scale = "; " + _scale(part)
    if len(depths) < 2:
        return judge(
            "4",
            statement,
            figure,
            name,
            None,
            shown + scale,
            sound,
            why_none=Problem(
                f"fewer than two depths at which both the NN and the NTK learned something ({left})", "few_depths"
            ),
        )
    k_t = _kernel_trend(kest, depths)
    lx = np.log(depths)
    samples = _samples(part, depths)
    flat = k_t.holds is None and k_t.problem.startswith("the NTK is flat")
    if flat:
        t = max(
            (trend(lx, samples, falling=f, what="the NN's trend in L") for f in (True, False)),
            key=lambda t: (t.holds is True, t.z or 0.0),
        )
        need = f"the NTK is flat within {FLAT:.0%}: need the NN's trend decided either way"
    elif k_t.holds is None:
        t = Test(None, k_t.effect, k_t.stderr, 0.0, None, k_t.problem)
        need = "the NTK's trend is undecided"
    else:
        t = trend(lx, samples, falling=bool(k_t.holds), what="the NN's trend in L")
        need = f"the NTK's slope over log L {k_t.text('+.3g')}: need the NN's decided with the opposite sign"
    return judge(
        "4",
        statement,
        figure,
        name,
        t,
        f"{shown}; at L = {depths}: the NN's slope over log L = {t.text('+.3g')}; {need}{scale}{substituted}",
        sound,
    )


PAPER_SCALE = {  # (d, N) of each target in the paper (SPEC §1's table): a row judged at another scale says so
    "1-local": (1000, 5000),
    "1-global": (1000, 5000),
    "2-local": (500, 20000),
    "2-global": (100, 10000),
    "3-local": (100, 20000),
    "3-global": (40, 20000),
    "sin-local": (200, 20000),
    "sin-global": (30, 20000),
    "tanh_sin-local": (500, 20000),
    "tanh_sin-global": (100, 20000),
}


def _scale(part: pd.DataFrame) -> str:
    """'judged at d = 100, N = 4000, P = 1e+05 (the paper: d = 200, N = 20000, P = 1e6)' for a target's rows."""
    r = part.iloc[0]
    here = f"d = {int(r.d)}, N = {int(r.n_train)}" if "d" in part and "n_train" in part else "this config's d and N"
    if "n_params" in part:
        here += f", about {int(part.n_params.median()):.3g} parameters"
    name = str(r.target).split("-eps")[0]
    paper = PAPER_SCALE.get(name)
    return f"judged at {here}" + (f" (the paper: d = {paper[0]}, N = {paper[1]}, P = 1e6-1e8)" if paper else "")
