"""Learning-rate choice by K-fold cross-validation and Bayesian optimisation (Mori & Ueda, Sec. 2.3).

The paper used Nogueira's ``bayesian-optimization`` package; so do we.  The
search runs over u = log10(lr).  Each round asks the optimiser for several
candidates (constant-liar batching), and candidates x folds train as one batch
in :func:`depthlab.trainer.train`.  The score maximised is
``-log10(mean validation error over folds)``; a diverged fold counts as the
``diverged_error`` (a fixed bad value), never as NaN.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from .trainer import TrainSettings, _fingerprint, _load_checkpoint, _save_checkpoint, predict, train

log = logging.getLogger("depthlab")


@dataclass(frozen=True)
class SearchSettings:
    folds: int = 10  # K of K-fold cross-validation (paper: 10)
    log10_lr_bounds: tuple[float, float] = (-3.0, 0.0)  # search box for log10(lr)
    init_points: int = 4  # first round: evenly spaced candidates across the box
    rounds: int = 3  # Bayesian-optimisation rounds after the first
    candidates_per_round: int = 4  # candidates proposed (and trained as one batch) per round
    kappa: float = 2.576  # UCB exploration weight (the package's default)
    seed: int = 0  # seeds the fold split, the optimiser and the models


@dataclass
class SearchResult:
    lr: np.ndarray  # [E] every evaluated learning rate, in evaluation order
    round: np.ndarray  # [E] round in which it was evaluated (0 = initial design)
    val_error: np.ndarray  # [E, K] validation error per fold (diverged folds hold diverged_error)
    diverged: np.ndarray  # [E, K] bool
    converged: np.ndarray  # [E, K] bool
    epochs: np.ndarray  # [E, K]
    score: np.ndarray  # [E] -log10(mean_k val_error)
    best_lr: float
    fold_of: np.ndarray  # [N] fold id of each training row (-1: never validated)


def fold_indices(n: int, folds: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split rows 0..n-1 into K folds of equal size n // K (the remainder always trains).

    Returns (train_idx [K, n - n//K], val_idx [K, n//K], fold_of [n]).
    """
    if folds < 2 or folds > n:
        raise ValueError(f"folds must be in [2, n = {n}], got {folds}")
    perm = np.random.default_rng([seed, 7]).permutation(n)
    nv = n // folds
    fold_of = np.full(n, -1)
    tr, va = [], []
    for k in range(folds):
        v = np.sort(perm[k * nv : (k + 1) * nv])
        fold_of[v] = k
        va.append(v)
        tr.append(np.sort(np.setdiff1d(perm, v, assume_unique=True)))
    return np.stack(tr), np.stack(va), fold_of


def validation_errors(
    x: np.ndarray, y: np.ndarray, lrs: np.ndarray, depth: int, width: int,
    tr: np.ndarray, va: np.ndarray, settings: TrainSettings, seed: int, diverged_error: float,
    progress: Callable[[str], None] | None = None, checkpoint: str | None = None,
) -> dict[str, np.ndarray]:
    """Train len(lrs) x K models as one batch; return per-(lr, fold) validation error etc., each [C, K]."""
    C, K = len(lrs), tr.shape[0]
    lr_m = np.repeat(lrs, K)  # model m = (c, k) with c = m // K
    tr_m = np.tile(tr, (C, 1))
    va_m = np.tile(va, (C, 1))
    # common random numbers across candidates: fold k always uses the same init and order
    seeds = np.tile(np.arange(K) + 1000 * seed, C)
    res = train(x, y, tr_m, lr_m, depth, width, seeds, seeds + 500, settings, progress=progress, checkpoint=checkpoint)
    err = np.empty(C * K)
    for m in range(C * K):
        if res.diverged[m]:
            err[m] = diverged_error
            continue
        out = predict([(W[m : m + 1], b[m : m + 1]) for W, b in res.params], x[va_m[m]])[0]
        if settings.loss == "cross_entropy":
            err[m] = np.mean((out >= 0) != (y[va_m[m]] > 0))
        else:
            err[m] = np.mean((out - y[va_m[m]]) ** 2)
        err[m] = err[m] if np.isfinite(err[m]) else diverged_error
    shape = (C, K)
    return {
        "val_error": err.reshape(shape),
        "diverged": res.diverged.reshape(shape),
        "converged": res.converged.reshape(shape),
        "epochs": res.epochs.reshape(shape),
    }


def _save_rounds(path: str | Path, done: list[dict[str, np.ndarray]], fingerprint: str) -> None:
    """Finished rounds as a tensor checkpoint (the trainer's format: atomic, fingerprinted, weights_only)."""
    _save_checkpoint(path, fingerprint, {f"{r}/{k}": torch.as_tensor(np.asarray(v)) for r, row in enumerate(done) for k, v in row.items()})


def _load_rounds(path: str | Path, fingerprint: str) -> list[dict[str, np.ndarray]]:
    blob = _load_checkpoint(path, fingerprint)
    if not blob:
        return []
    n = 1 + max(int(k.split("/")[0]) for k in blob)
    return [{k.split("/")[1]: v.numpy() for k, v in blob.items() if k.startswith(f"{r}/")} for r in range(n)]


def propose(opt, seen: np.ndarray, q: int, lo: float, hi: float) -> np.ndarray:
    """q new log10(lr) candidates from the optimiser, none closer than (hi - lo)/64 to a seen or pending one.

    Runs are deterministic for a given lr, so re-proposing an evaluated lr (which UCB
    does once the GP is confident) would waste a whole batch: such a proposal is
    replaced by the middle of the widest gap between seen and pending candidates.
    """
    sep = (hi - lo) / 64
    out: list[float] = []
    for _ in range(q):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sklearn GP convergence chatter
            u = float(opt.suggest()["log10_lr"])
        taken = np.concatenate([seen, out])
        if np.min(np.abs(taken - u)) < sep:
            pts = np.unique(np.concatenate([[lo, hi], taken]))
            i = int(np.argmax(np.diff(pts)))
            u = float((pts[i] + pts[i + 1]) / 2)
        out.append(u)
    return np.asarray(out)


def search_lr(
    x: np.ndarray,
    y: np.ndarray,
    depth: int,
    width: int,
    search: SearchSettings,
    settings: TrainSettings,
    progress: Callable[[str], None] | None = None,
    checkpoint: str | Path | None = None,
) -> SearchResult:
    """Cross-validated Bayesian optimisation of log10(lr) for one depth.  x: [N, d], y: [N].

    ``checkpoint``: finished rounds are kept in this file and the running round's
    training in ``<checkpoint>.round<r>``; a rerun resumes and gives the same result.
    """
    from bayes_opt import BayesianOptimization, acquisition
    from sklearn.gaussian_process.kernels import Matern

    say = progress or log.info
    lo, hi = search.log10_lr_bounds
    if not lo < hi:
        raise ValueError(f"log10_lr_bounds must be increasing, got {search.log10_lr_bounds}")
    tr, va, fold_of = fold_indices(len(y), search.folds, search.seed)
    # a diverged fold scores as predicting far worse than the constant 0 would
    diverged_error = 10.0 * float(np.mean(y**2)) if settings.loss == "mse" else 1.0

    span = hi - lo
    keys = ("val_error", "diverged", "converged", "epochs")
    fingerprint = _fingerprint(x, y, depth, width, search, settings) if checkpoint else ""
    done = _load_rounds(checkpoint, fingerprint) if checkpoint else []  # rounds finished before an interruption
    rows: list[dict[str, np.ndarray]] = []
    us: list[np.ndarray] = []
    rounds: list[np.ndarray] = []
    for r in range(search.rounds + 1):
        if r < len(done):
            u, out = done[r]["u"], {k: done[r][k] for k in keys}
            say(f"lr search depth {depth} round {r}/{search.rounds}: restored from checkpoint")
        else:
            if r == 0:
                # evenly spaced initial design (deterministic, covers the box)
                u = np.linspace(lo, hi, search.init_points + 2)[1:-1] if search.init_points > 1 else np.array([(lo + hi) / 2])
            else:
                # A fresh optimiser per round, seeded by (seed, round) and fed every observation so far:
                # the proposals are a pure function of the history, so a resumed search proposes the same rates.
                acq = acquisition.ConstantLiar(acquisition.UpperConfidenceBound(kappa=search.kappa), strategy="min")
                opt = BayesianOptimization(f=None, pbounds={"log10_lr": (lo, hi)}, acquisition_function=acq,
                                           random_state=int(np.random.SeedSequence([search.seed, r]).generate_state(1)[0]), verbose=0, allow_duplicate_points=True)
                # Bound the GP length scale (in decades of lr): with the package's default bounds the
                # marginal likelihood on a handful of points picks length_scale -> 1e-5, a flat GP,
                # and every proposal lands back on an evaluated point.
                opt.set_gp_params(kernel=Matern(nu=2.5, length_scale=span / 4, length_scale_bounds=(span / 20, 10 * span)))
                for ui, sc in zip(np.concatenate(us), -np.log10(np.concatenate([o["val_error"] for o in rows]).mean(1))):
                    opt.register(params={"log10_lr": float(ui)}, target=float(sc))
                u = propose(opt, np.concatenate(us), search.candidates_per_round, lo, hi)
            lrs = 10.0**u
            say(f"lr search depth {depth} round {r}/{search.rounds}: training {len(lrs)} lr x {search.folds} folds, lr = "
                + ", ".join(f"{v:.3g}" for v in lrs))
            ck = f"{checkpoint}.round{r}" if checkpoint else None
            out = validation_errors(x, y, lrs, depth, width, tr, va, settings, search.seed, diverged_error, progress, ck)
            if checkpoint:
                done.append({"u": u, **out})
                _save_rounds(checkpoint, done, fingerprint)
                Path(ck).unlink(missing_ok=True)
        rows.append(out)
        us.append(u)
        rounds.append(np.full(len(u), r))
    val = np.concatenate([o["val_error"] for o in rows])
    score = -np.log10(val.mean(1))
    lr_all = 10.0 ** np.concatenate(us)
    best = int(np.argmax(score))
    say(f"lr search depth {depth}: best lr {lr_all[best]:.4g} (mean val error {val[best].mean():.4g})")
    return SearchResult(
        lr=lr_all,
        round=np.concatenate(rounds),
        val_error=val,
        diverged=np.concatenate([o["diverged"] for o in rows]),
        converged=np.concatenate([o["converged"] for o in rows]),
        epochs=np.concatenate([o["epochs"] for o in rows]),
        score=score,
        best_lr=float(lr_all[best]),
        fold_of=fold_of,
    )
