"""Stage ``cnn``: the CNNs of one (depth, width) on real images, every learning rate x seed (Fig. 7)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core import edges
from depthlab.core.seeds import seed
from depthlab.core.stopping import DIVERGED, reason_names

from . import cnn_nets
from .accuracy import best_along, stop_rule

if TYPE_CHECKING:
    from .specs import CnnSpec


def run_cnn(spec: "CnnSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    j = spec.job
    seeds_cfg = list(spec.seeds)
    init = np.array([seed(s, "cnn_init", j.depth, j.width) for s in seeds_cfg])
    order = np.array([seed(s, "cnn_order", j.depth, j.width) for s in seeds_cfg])
    t = spec.training
    rule = stop_rule(t)

    def train(rates: np.ndarray, r: int) -> list[dict[str, np.ndarray]]:
        ckpt = ctx.checkpoint.child(f"grow{r}") if r and ctx.checkpoint is not None else ctx.checkpoint
        acc, checks, st = cnn_nets.train(
            data.x_train.values,
            data.y_train.values,
            data.x_test.values,
            data.y_test.values,
            depth=j.depth,
            width=j.width,
            kernel=spec.kernel,
            lrs=rates,
            init_seeds=init,
            order_seeds=order,
            epochs=t.max_epochs,
            batch_size=t.batch_size,
            check_every=t.check_every,
            augment=spec.augment,
            crop=spec.crop,
            device=ctx.device,
            progress=ctx.progress,
            stop=rule,
            checkpoint=ckpt,
        )
        S = len(seeds_cfg)
        per = {
            "accuracy": acc,
            "reason": st.reason,
            "stopped": st.stopped_at,
            "converged": st.converged,
            "diverged": st.reason == DIVERGED,
        }
        return [{k: v[i * S : (i + 1) * S] for k, v in per.items()} for i in range(len(rates))]

    def score(r: dict[str, np.ndarray]) -> tuple[float, bool]:
        best = best_along(r["accuracy"])
        return (-float(np.nanmean(best)) if np.isfinite(best).any() else np.nan), bool(r["diverged"].all())

    found = edges.search(
        np.asarray(spec.lrs),
        train,
        score,
        step=t.lr_factor,
        limits=tuple(10.0**u for u in t.log10_lr_limits),
        rounds=t.lr_rounds,
        tol=t.abs_tol,
    )
    stack = {k: np.stack([r[k] for r in found.results]) for k in found.results[0]}  # [lr, seed, ...]
    c = found.choice
    checks = np.asarray(sorted(set(range(t.check_every, t.max_epochs + 1, t.check_every)) | {t.max_epochs}))
    side = spec.crop if spec.augment else data.sizes["row"]
    return xr.Dataset(
        {
            "best_accuracy": (
                ("lr", "seed"),
                best_along(stack["accuracy"]),
                {"description": "best test accuracy along the run"},
            ),
            "accuracy": (
                ("lr", "seed", "check"),
                stack["accuracy"],
                {"description": "test accuracy at every check (NaN after it stopped)"},
            ),
            "converged": (
                ("lr", "seed"),
                stack["converged"],
                {"description": "stopped because its test accuracy stopped improving"},
            ),
            "diverged": (("lr", "seed"), stack["diverged"]),
            "stop_reason": (
                ("lr", "seed"),
                reason_names(stack["reason"]),
                {"description": "why training stopped: " + rule.describe("check", f"{t.max_epochs} epochs")},
            ),
            "stopped_epoch": (("lr", "seed"), stack["stopped"]),
            "best_lr": ((), c.lr),
            "lr_edge": (
                (),
                c.edge,
                {"description": "'' (inside), 'lower' or 'upper': where best_lr lies in the grid of rates trained"},
            ),
            "lr_flagged": ((), c.flagged, {"description": "best_lr is at an edge the grid could not grow past"}),
        },
        coords={"lr": found.lrs, "seed": seeds_cfg, "check_epoch": (("check",), checks)},
        attrs={
            "dataset": j.dataset,
            "depth": j.depth,
            "width": j.width,
            "kernel": spec.kernel,
            "n_params": cnn_nets.count_params(j.depth, j.width, spec.kernel, data.sizes["channel"], side),
            "grown_lrs": [float(v) for v in found.grown],
        },
    )
