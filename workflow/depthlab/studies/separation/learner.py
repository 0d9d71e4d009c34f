"""Stage ``learner``: the 3-layer mean-field learner on ReLU(1 - |x|/r0) and its reduced model, from the same start (R3, R4).

Inputs are divided by the target's radius r0 (``scale_inputs: r0``), so the learner sees ReLU(1 - |x'|) with |x'| of
order 1 on every law, the scale the theory assumes (unscaled Eldan-Shamir inputs reach |x| ~ 10 r0 at d = 64, where
alpha collapses).  Every rate of a grid x every seed trains as one batch of full-batch gradient descent; each model stops
when its training loss (the learner's own (1/2) MSE) has not fallen below its best by more than ``rel_tol`` for
``patience`` checks in a row (converged), or at the step budget (not converged).  The rate reported is the one with the
lowest mean final training loss over seeds (no test data in the choice); when it is the grid's smallest or largest the
grid grows by ``factor`` on that side (depthlab.core.edges).  The reduced model steps beside its net, at the same rate,
until the net stops.

R4 is a statement about gradient flow, so beside the search the stage trains the ``flow_lrs`` (small rates, every seed,
from the same starts, one batch) and keeps their whole curves (``flow_*``): the claims judge R4 at those of them whose
training curve in flow time (lr x step) agrees with the next smaller rate's, as A3 does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
import xarray as xr

from depthlab.core import edges
from depthlab.core.seeds import seed
from depthlab.core.stopping import DIVERGED, PLATEAU, TARGET, StopRule, StopState, reason_names

from . import meanfield as L

if TYPE_CHECKING:
    from .specs import LearnerSpec

RECORDS = ("nmse", "reduced_nmse", "train_nmse", "alpha", "reduced_alpha", "deviation")


def stop_rule(spec: "LearnerSpec", variance: float) -> StopRule:
    """On the learner's own loss, (1/2) MSE: ``abs_tol`` is in nMSE units, so (abs_tol / 2) Var(y_train) here."""
    return StopRule(
        patience=spec.patience,
        rel_tol=spec.rel_tol,
        abs_tol=spec.abs_tol * variance / 2,
        grow=spec.plateau_growth,
        min_checks=-(-spec.min_steps // spec.check_every),
    )


def run_learner(spec: "LearnerSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    dev = torch.device(ctx.device)
    d, m, m2 = spec.job.d, spec.job.width, spec.second_width
    r0 = float(data.attrs["r0"])
    scale = 1.0 / r0 if spec.scale_inputs == "r0" else 1.0
    n = spec.n_train or data.sizes["train_sample"]  # the first n training points (the full-batch step costs n m d)
    X = torch.as_tensor(data.x_train.values[:n] * scale, dtype=torch.float32, device=dev)
    Y = torch.as_tensor(data.y_train.values[:n], dtype=torch.float32, device=dev)
    XT = torch.as_tensor(data.x_test.values * scale, dtype=torch.float32, device=dev)
    YT = torch.as_tensor(data.y_test.values, dtype=torch.float32, device=dev)
    S = len(spec.seeds)
    starts = [L.init(1, m, m2, d, torch.Generator().manual_seed(seed(s, "learner_init", d, m))) for s in spec.seeds]
    var, var_train = float(YT.var()), float(Y.var())
    checks = sorted(set(range(0, spec.steps + 1, spec.check_every)) | {spec.steps})
    kept = {t: i for i, t in enumerate(checks)}
    rule = stop_rule(spec, var_train)

    def train(rates: np.ndarray, r: int) -> list[dict]:
        """Every rate x seed as one batch (model i = (rate i // S, seed i % S)), the stopped ones leaving it."""
        M = len(rates) * S
        V, w, b = (torch.cat([starts[i % S][k] for i in range(M)]).to(dev) for k in range(3))
        alpha, wr, br = L.alpha_of(V).clone(), w.clone(), b.clone()
        lr = torch.as_tensor(np.repeat(rates, S), dtype=torch.float32, device=dev)
        rec = {k: np.full((M, len(checks)), np.nan) for k in RECORDS}
        final = [None] * M  # the first layer of each model when it stopped (its profile is drawn from it)
        active = np.arange(M)
        state: StopState = rule.start(M)
        for t in range(spec.steps + 1):
            stop = np.zeros(len(active), dtype=bool)
            if t in kept:
                c = kept[t]
                with torch.no_grad():
                    loss = L.loss(L.second_layer(L.first_layer(V, X), w, b), Y)  # the training loss the rule watches
                    f = L.second_layer(L.first_layer(V, XT), w, b)
                    fr = L.second_layer(alpha.unsqueeze(1) * XT.norm(dim=1), wr, br)
                    now = {
                        "nmse": ((f - YT) ** 2).mean(1) / var,
                        "reduced_nmse": ((fr - YT) ** 2).mean(1) / var,
                        "train_nmse": 2 * loss / var_train,
                        "alpha": L.alpha_of(V),
                        "reduced_alpha": alpha,
                        "deviation": L.deviation(V, XT),
                    }
                value = loss.double().cpu().numpy()
                bad = ~np.isfinite(value)
                for k, v in now.items():
                    rec[k][active, c] = np.where(bad, np.nan, v.double().cpu().numpy())
                rule.diverge(state, active[bad], t)
                stop = bad | rule.update(
                    state, active, np.where(bad, np.inf, value), np.zeros(len(active), dtype=bool), t
                )
            if t == spec.steps:
                rule.budget(state, active[~stop], t)
                stop[:] = True
            active, (V, w, b, alpha, wr, br, lr) = _leave(stop, active, final, (V, w, b, alpha, wr, br, lr))
            if not len(active):
                break
            pre = L.net_step(V, w, b, X, Y, lr).double().cpu().numpy()  # the loss before this step
            L.reduced_step(alpha, wr, br, X, Y, lr, d)
            bad = ~np.isfinite(pre)
            if bad.any():  # diverged: its record up to the last check is kept
                rule.diverge(state, active[bad], t + 1)
                active, (V, w, b, alpha, wr, br, lr) = _leave(bad, active, final, (V, w, b, alpha, wr, br, lr))
            if (t + 1) % max(1, spec.steps // 4) == 0:
                ctx.progress(
                    f"{spec.job.dist} d={d} m={m}: step {t + 1}/{spec.steps}, {len(active)} of {M} still training"
                )
        return [
            {
                "rec": {k: v[i * S : (i + 1) * S] for k, v in rec.items()},
                "reason": state.reason[i * S : (i + 1) * S],
                "stopped": state.stopped_at[i * S : (i + 1) * S],
                "final": final[i * S : (i + 1) * S],
            }
            for i in range(len(rates))
        ]

    def score(x: dict) -> tuple[float, bool]:
        tr = np.array([_last(row) for row in x["rec"]["train_nmse"]])
        return (float(np.mean(tr)) if np.isfinite(tr).all() else np.nan), bool((x["reason"] == DIVERGED).any())

    found = edges.search(
        np.asarray(spec.lrs), train, score, step=spec.lr_factor, limits=spec.lr_limits, rounds=spec.lr_rounds
    )
    c = found.choice
    at = found.results[c.index]
    converged = np.isin(at["reason"], [TARGET, PLATEAU])
    ctx.progress(
        f"{spec.job.dist} d={d} m={m}: final train nMSE per rate "
        + ", ".join(f"{lr:g}: {score(x)[0]:.4g}" for lr, x in zip(found.lrs, found.results))
        + f"; chosen {c.lr:g}"
        + (f" ({c.edge} edge{', flagged' if c.flagged else ''})" if c.at_edge else "")
        + f"; test nMSE "  # noqa: F541 (a store stage: kept)
        + ", ".join(f"{_last(row):.3g}" for row in at["rec"]["nmse"])
    )
    flow = train(np.asarray(spec.flow_lrs, dtype=float), 0) if spec.flow_lrs else []
    if flow:
        ctx.progress(
            f"{spec.job.dist} d={d} m={m}: flow rates "
            + ", ".join(f"{lr:g}: train nMSE {score(x)[0]:.4g}" for lr, x in zip(spec.flow_lrs, flow))
        )
    start_profile = _profile(torch.cat([starts[s][0] for s in range(S)]).to(dev), spec, d, dev)
    end_profile = _profile(torch.cat(at["final"]), spec, d, dev)
    grid_train = np.array([[_last(row) for row in x["rec"]["train_nmse"]] for x in found.results])
    flow_vars = (
        {}
        if not flow
        else {
            f"flow_{k}": (
                ("flow_lr", "seed", "check"),
                np.stack([x["rec"][src] for x in flow]),
                {"description": f"{what}, at each of the small (gradient-flow) rates flow_lr (NaN after it stopped)"},
            )
            for k, src, what in (
                ("test_nmse", "nmse", "test MSE / Var(y) of the learner"),
                ("train_nmse", "train_nmse", "training MSE / Var(y_train) of the learner"),
                ("reduced_test_nmse", "reduced_nmse", "test MSE / Var(y) of the reduced model"),
                ("alpha", "alpha", "alpha = C_d mean |v_i|^2 of the finite first layer"),
                ("reduced_alpha", "reduced_alpha", "alpha of the reduced model"),
                ("deviation", "deviation", "|F/alpha - |x|| / ||x|| over the test inputs"),
            )
        }
    )
    if flow:
        flow_vars["flow_stop_reason"] = (
            ("flow_lr", "seed"),
            np.stack([reason_names(x["reason"]) for x in flow]),
            {"description": "why training stopped at each flow rate"},
        )
    return xr.Dataset(
        {
            "test_nmse": (
                ("seed", "check"),
                at["rec"]["nmse"],
                {"description": "test MSE / Var(y) of the learner (NaN after it stopped)"},
            ),
            "train_nmse": (
                ("seed", "check"),
                at["rec"]["train_nmse"],
                {"description": "training MSE / Var(y_train) of the learner"},
            ),
            "reduced_test_nmse": (
                ("seed", "check"),
                at["rec"]["reduced_nmse"],
                {"description": "the same of the reduced model (F = alpha |x|)"},
            ),
            "alpha": (
                ("seed", "check"),
                at["rec"]["alpha"],
                {"description": "alpha = C_d mean |v_i|^2 of the finite first layer"},
            ),
            "reduced_alpha": (
                ("seed", "check"),
                at["rec"]["reduced_alpha"],
                {"description": "alpha of the reduced model"},
            ),
            "deviation": (
                ("seed", "check"),
                at["rec"]["deviation"],
                {"description": "|F/alpha - |x|| / ||x|| over the test inputs"},
            ),
            "converged": (("seed",), converged, {"description": "stopped because its training loss stopped improving"}),
            "stop_reason": (
                ("seed",),
                reason_names(at["reason"]),
                {"description": "why training stopped: " + rule.describe("check", f"{spec.steps} steps")},
            ),
            "stopped_step": (("seed",), at["stopped"]),
            "start_profile": (
                ("seed", "plane", "angle"),
                start_profile,
                {"description": "F(u) / alpha on great circles, at the start"},
            ),
            "end_profile": (
                ("seed", "plane", "angle"),
                end_profile,
                {"description": "F(u) / alpha on great circles, when it stopped"},
            ),
            "grid_train_nmse": (
                ("lr", "seed"),
                grid_train,
                {"description": "final training nMSE at every rate of the grid"},
            ),
            "best_lr": ((), c.lr, {"description": "the rate with the lowest mean final training loss"}),
            "lr_edge": (
                (),
                c.edge,
                {"description": "'' (inside), 'lower' or 'upper': where best_lr lies in the grid of rates trained"},
            ),
            "lr_flagged": ((), c.flagged, {"description": "best_lr is at an edge the grid could not grow past"}),
            **flow_vars,
        },
        coords={
            "seed": list(spec.seeds),
            "check_step": (("check",), np.asarray(checks)),
            "lr": found.lrs,
            **({"flow_lr": np.asarray(spec.flow_lrs, dtype=float)} if flow else {}),
            "angle": np.linspace(0.0, 2 * np.pi, spec.profile_points),
        },
        attrs={
            "dist": spec.job.dist,
            "d": d,
            "width": m,
            "width_rule": spec.width_rule,
            "second_width": m2,
            "n_params": L.n_params(m, m2, d),
            "r0": r0,
            "input_scale": scale,
            "C_d": L.c_d(d),
        },
    )


def _leave(stop: np.ndarray, active: np.ndarray, final: list, batch: tuple[torch.Tensor, ...]):
    """Models at positions ``stop`` of the batch leave it, their first layer (``batch[0]``) kept in ``final``; returns the
    ids still active and the batch of those."""
    if not stop.any():
        return active, batch
    for i in np.flatnonzero(stop):
        final[active[i]] = batch[0][i : i + 1].clone()
    keep = torch.as_tensor(np.flatnonzero(~stop), device=batch[0].device)
    return active[~stop], tuple(a.index_select(0, keep) for a in batch)


def _last(row: np.ndarray) -> float:
    """The last recorded value of a run (where it stopped), NaN if none."""
    f = row[np.isfinite(row)]
    return float(f[-1]) if len(f) else np.nan


def _profile(V: torch.Tensor, spec, d: int, dev) -> np.ndarray:
    """F(u)/alpha on great circles u(theta) = cos(theta) e1 + sin(theta) e2 of ``directions`` random planes (a fixed stream):
    [M, plane, angle].  F is 1-homogeneous, so F(x) = |x| F(x/|x|): the symmetrisation predicts 1 at every angle."""
    g = torch.Generator().manual_seed(seed(0, "learner_planes", d))
    theta = torch.linspace(0.0, 2 * np.pi, spec.profile_points)
    out = []
    for _ in range(spec.directions):
        e = torch.linalg.qr(torch.randn(d, max(d, 2), generator=g))[0][:, :2] if d >= 2 else torch.ones(1, 2)
        u = torch.cos(theta)[:, None] * e[:, 0] + torch.sin(theta)[:, None] * e[:, 1]
        with torch.no_grad():
            out.append(L.first_layer(V, u.to(dev, V.dtype)) / L.alpha_of(V).unsqueeze(1))
    return torch.stack(out, 1).double().cpu().numpy()
