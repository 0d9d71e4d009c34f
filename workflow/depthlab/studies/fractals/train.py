"""Stage ``train``: nets trained on fractal samples as the authors' code does, each until its test accuracy stops
improving, at every rate of a grid that grows when the best rate sits at its edge.

Nets: depth T hidden ReLU layers of width k, scalar output, weights truncated normal with std 1/sqrt(fan_in), biases
0.1, hinge loss, Adam, batch 100.  The test accuracy is recorded at every check (the paper's number is the best along
the run).  A net stops when its test accuracy has not risen above its best by more than ``abs_tol`` for ``patience``
checks in a row (converged), or at the epoch budget (not converged); one that diverges keeps its record up to there.
The rate reported is the one with the best mean accuracy over seeds (depthlab.core.edges: ties within ``abs_tol``
prefer a rate inside the grid); when it is the grid's smallest or largest rate, the grid grows by ``factor`` on that
side, up to ``log10_limits``, at most ``rounds`` times, and a choice still at an edge is flagged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from depthlab.core import edges
from depthlab.core.grid import train_grid
from depthlab.core.losses.hinge import Hinge
from depthlab.core.mlp import init_params
from depthlab.core.optim.adam import Adam
from depthlab.core.seeds import seed
from depthlab.core.shapes import layer_sizes, n_params
from depthlab.core.stopping import reason_names
from depthlab.core.trainer import TrainSettings

from .accuracy import best_along, last_along, stop_rule

if TYPE_CHECKING:
    from .specs import TrainSpec

# The check measures each net's training loss and accuracy on its first CHECK_ROWS training rows, not all 50 000: the
# stop rule reads only the test accuracy, and the full pass was 7.6-11 % of a job.  The stores' train_loss and
# train_accuracy say so; what reads them (figures.accuracy_table's train_accuracy column) reports them, nothing decides
# on them.
CHECK_ROWS = 5000


def on_rows(what: str, n: int) -> str:
    rows = (
        f"its first {CHECK_ROWS} of the {n} training rows (a fixed subsample)"
        if n > CHECK_ROWS
        else "every training row"
    )
    return f"training {what} at the last check, on {rows}"


def run_train(spec: "TrainSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    j = spec.job
    T, k = j.depth, j.width
    seeds_cfg = list(spec.seeds)
    x, y = data.x_train.values, data.y_train.values
    sizes = layer_sizes(x.shape[1], k, T)
    init = init_params(sizes, np.array([seed(s, "init", T, k) for s in seeds_cfg]), spec.init)
    order = np.array([seed(s, "order", T, k) for s in seeds_cfg])
    t = spec.training
    settings = TrainSettings(
        loss=Hinge(),
        optimizer=Adam(),
        batch_size=t.batch_size,
        check_every=t.check_every,
        stop=stop_rule(t),
        max_epochs=t.max_epochs,
        device=ctx.device,
        check_rows=min(CHECK_ROWS, len(x)),
    )

    def train(rates: np.ndarray, r: int) -> list[dict[str, np.ndarray]]:
        ckpt = ctx.checkpoint.child(f"grow{r}") if r and ctx.checkpoint is not None else ctx.checkpoint
        grid = train_grid(
            x,
            y,
            rates,
            init,
            order,
            settings,
            eval_set=(data.x_test.values, data.y_test.values),
            progress=ctx.progress,
            checkpoint=ckpt,
        )
        res = grid.result  # model m = (lr m // S, seed m % S)
        per = {
            "accuracy": 1.0 - res.eval_history,
            "train_loss": res.train_loss,
            "train_accuracy": res.train_accuracy,
            "diverged": res.diverged,
            "converged": res.converged,
            "stop_reason": res.stop_reason,
            "epochs": res.epochs,
        }
        return [{name: grid.grid(a)[i] for name, a in per.items()} for i in range(len(rates))]

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
    stack = {name: np.stack([r[name] for r in found.results]) for name in found.results[0]}  # [lr, seed, ...]
    acc, c = stack["accuracy"], found.choice
    best = best_along(acc)
    checks = np.asarray(sorted(set(range(t.check_every, t.max_epochs + 1, t.check_every)) | {t.max_epochs}))
    ctx.progress(
        f"{j.fractal} n={j.n} pdeg={j.pdeg} depth {T} width {k}: best test accuracy along the run "
        + ", ".join(f"lr {lr:g}: {np.nanmean(b):.4f}" for lr, b in zip(found.lrs, best))
        + f"; chosen lr {c.lr:g}"
        + (f" at the {c.edge} edge" + (" (flagged)" if c.flagged else "") if c.at_edge else "")
    )
    rule = settings.stop.describe("check", f"{t.max_epochs} epochs")
    return xr.Dataset(
        {
            "best_accuracy": (
                ("lr", "seed"),
                best,
                {"description": "best test accuracy along the run (the paper's number)"},
            ),
            "final_accuracy": (
                ("lr", "seed"),
                last_along(acc),
                {"description": "test accuracy at the last check it reached"},
            ),
            "accuracy": (
                ("lr", "seed", "check"),
                acc,
                {
                    "description": "test accuracy at every check (NaN after the net stopped; a diverged net keeps its "
                    "record up to the divergence)"
                },
            ),
            "train_loss": (("lr", "seed"), stack["train_loss"], {"description": on_rows("hinge loss", len(x))}),
            "train_accuracy": (("lr", "seed"), stack["train_accuracy"], {"description": on_rows("accuracy", len(x))}),
            "diverged": (("lr", "seed"), stack["diverged"]),
            "converged": (
                ("lr", "seed"),
                stack["converged"],
                {"description": "stopped because its test accuracy stopped improving"},
            ),
            "stop_reason": (
                ("lr", "seed"),
                reason_names(stack["stop_reason"]),
                {"description": "why training stopped: " + rule},
            ),
            "stopped_epoch": (("lr", "seed"), stack["epochs"], {"description": "epochs trained"}),
            "best_lr": (
                (),
                c.lr,
                {
                    "description": "the rate with the best mean accuracy over seeds (ties within abs_tol: inside "
                    "the grid)"
                },
            ),
            "lr_edge": (
                (),
                c.edge,
                {"description": "'' (inside), 'lower' or 'upper': where best_lr lies in the grid of rates trained"},
            ),
            "lr_flagged": ((), c.flagged, {"description": "best_lr is at an edge the grid could not grow past"}),
            "curve": (("j",), data.curve.values),
        },
        coords={"lr": found.lrs, "seed": seeds_cfg, "check_epoch": (("check",), checks), "j": data.j.values},
        attrs={
            "fractal": j.fractal,
            "n": j.n,
            "pdeg": j.pdeg,
            "depth": T,
            "width": k,
            "n_params": n_params(x.shape[1], k, T),
            "grown_lrs": [float(v) for v in found.grown],
        },
    )
