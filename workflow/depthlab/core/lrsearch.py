"""Learning-rate choice by K-fold cross-validation and Bayesian optimisation (Mori & Ueda, Sec. 2.3).

The paper used Nogueira's ``bayesian-optimization`` package; so do we. The search runs over u = log10(lr). Each round
asks the optimiser for several candidates (constant-liar batching), and candidates x folds train as one batch in
:func:`depthlab.core.grid.train_grid` (the folds as its seeds). The score maximised is ``-log10(mean validation error
over folds)``; a diverged fold counts as the ``diverged_error`` (a fixed bad value), never as NaN.

``use_folds`` < K trains only the first folds: ``folds = 5, use_folds = 1`` is a single 80/20 validation split.

Successive halving (``halving_eta`` > 1; Jamieson & Talwalkar 2016, the rungs of Hyperband, Li et al. 2018): a round's
candidates x folds train as one batch up to a first rung (``max_epochs / eta^R`` epochs, R = ``halving_rungs``), where
each candidate's mean validation error over its folds ranks it; the best ceil(n / eta) go on to the next rung, the
others leave the batch (stop reason ``pruned``, their error at the rung recorded and fed to the optimiser as it is); at
the last rung the survivors train to the budget. Only a candidate trained to the end of its budget (or stopped by its
own rule before) can be chosen. The trainer retires pruned models from its stack, so they cost nothing after their rung
(:func:`depthlab.core.trainer.train`'s ``prune``).

``max_candidates``: a round with more candidates than one stack holds (Fig. 1's P = 1e8 nets, 5 candidates x 10 folds,
planned 80.8 GiB) trains in parts of at most that many candidates, one after another, each part halved on its own; the
folds of a candidate always share its stack.

The chosen rate is the evaluated one with the lowest mean validation error among those where no fold diverged (and none
was pruned) (:func:`depthlab.core.edges.choose`; a pruned rate counts as tried, so it can make a choice inside). When it
is the smallest or the largest rate evaluated, the search grows: one round of ``candidates_per_round`` rates spread
evenly over the next decade beyond it (inside ``log10_lr_limits``), at most ``grow_rounds`` times; a choice still at an
edge after that is *flagged*.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np
import torch

from .edges import choose
from .grid import train_grid
from .mlp import forward, init_params, predict, select
from .seeds import rng, seed, seeds
from .search_settings import SearchSettings, rung_epochs  # noqa: F401 (their home; imported from here too)
from .trainer import Checkpoint, TrainSettings, fingerprint

log = logging.getLogger("depthlab")


@dataclass
class SearchResult:
    lr: np.ndarray  # [E] every evaluated learning rate, in evaluation order
    round: np.ndarray  # [E] round in which it was evaluated (0 = initial design)
    val_error: np.ndarray  # [E, K'] validation error per fold used (diverged folds hold diverged_error)
    diverged: np.ndarray  # [E, K'] bool
    converged: np.ndarray  # [E, K'] bool
    epochs: np.ndarray  # [E, K']
    score: np.ndarray  # [E] -log10(mean_k val_error)
    best_lr: float
    fold_of: np.ndarray  # [N] fold id of each training row (-1: never validated)
    edge: str = ""  # "", "lower" or "upper": where the choice lies among the rates evaluated (depthlab.core.edges)
    flagged: bool = False  # still at an edge when the search could grow no further
    pruned: np.ndarray | None = None  # [E, K'] bool: cut at a rung of successive halving (None: no halving)


class SearchCheckpoint(Checkpoint, Protocol):
    def child(self, name: str) -> Checkpoint: ...


def fold_indices(n: int, folds: int, fold_seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split rows 0..n-1 into K folds of equal size n // K (the remainder always trains): (train_idx [K, n - n//K],
    val_idx [K, n//K], fold_of [n])."""
    if folds < 2 or folds > n:
        raise ValueError(f"folds must be in [2, n = {n}], got {folds}")
    perm = rng(fold_seed, "folds").permutation(n)
    nv = n // folds
    fold_of = np.full(n, -1)
    tr, va = [], []
    for k in range(folds):
        v = np.sort(perm[k * nv : (k + 1) * nv])
        fold_of[v] = k
        va.append(v)
        tr.append(np.sort(np.setdiff1d(perm, v, assume_unique=True)))
    return np.stack(tr), np.stack(va), fold_of


@dataclass
class Halving:
    """The pruning rule of one round (module docstring): at each rung epoch, every candidate still in the race is
    ranked by its mean validation error over its K folds (models still training by their parameters now, stopped ones
    by their final parameters, a diverged fold as ``diverged_error``); the best ceil(n / eta) stay, the active folds of
    the others leave.  Model m = (candidate m // K, fold m % K); ``va`` [K, nv] the folds' validation rows."""

    epochs: tuple[int, ...]
    eta: int
    x: np.ndarray
    y: np.ndarray
    va: np.ndarray
    candidates: int
    loss: object
    diverged_error: float
    chunk: int = 2048
    log: list = None  # (epoch, candidates in the race, kept) per rung

    def __repr__(self) -> str:  # the checkpoint key: what decides the cuts (the data and rows are in the key already)
        return f"Halving(epochs={self.epochs}, eta={self.eta}, diverged_error={self.diverged_error!r})"

    def __post_init__(self) -> None:
        self.log = []
        self.out = np.zeros(self.candidates, dtype=bool)  # candidates cut at an earlier rung

    def resume(self, reason: np.ndarray, stopped_at: np.ndarray, epoch: int) -> None:
        """Rebuild the race at ``epoch`` from a restored state's stop reasons (a resumed run): the candidates cut at the
        rungs up to it are those with a fold stopped as ``pruned``, and the log is what those rungs said.  Without
        this, a search killed past a rung raced every candidate again at the next one."""
        from .stopping import PRUNED

        K = self.va.shape[0]
        cut_at = np.where(np.asarray(reason) == PRUNED, np.asarray(stopped_at), -1).reshape(self.candidates, K).max(1)
        self.out = cut_at >= 0
        self.log = []
        racing = self.candidates
        for e in self.epochs:
            if e > epoch:
                break
            keep_n = int(np.ceil(racing / self.eta))
            self.log.append((int(e), racing, keep_n))
            racing -= int((cut_at == e).sum())

    def errors(self, active: np.ndarray, params, final, reason: np.ndarray) -> np.ndarray:
        """Validation error of every model [M] (float64)."""
        from .stopping import DIVERGED

        K = self.va.shape[0]
        M = self.candidates * K
        err = np.full(M, self.diverged_error)
        W0 = params[0][0] if len(active) else final[0][0]
        X = torch.as_tensor(self.x, dtype=W0.dtype, device=W0.device)
        Y = self.y
        pos = {int(m): i for i, m in enumerate(active)}
        for group, stack in (("active", params), ("final", final)):
            ids = [m for m in range(M) if (m in pos) == (group == "active") and reason[m] != DIVERGED]
            if not ids:
                continue
            sel = torch.as_tensor([pos[m] for m in ids] if group == "active" else ids, device=stack[0][0].device)
            sub = [(W.index_select(0, sel).to(W0.device), b.index_select(0, sel).to(W0.device)) for W, b in stack]
            rows = self.va[np.asarray(ids) % K]  # [n_ids, nv]
            outs = []
            for s in range(0, rows.shape[1], self.chunk):
                j = torch.as_tensor(rows[:, s : s + self.chunk], device=X.device)
                outs.append(forward(sub, X[j]))
            out = torch.cat(outs, 1).double().cpu().numpy()
            e = np.asarray(self.loss.error(out, Y[rows]), dtype=np.float64)
            err[ids] = np.where(np.isfinite(e), e, self.diverged_error)
        return err

    def __call__(self, epoch: int, active: np.ndarray, params, final, reason: np.ndarray) -> np.ndarray:
        K = self.va.shape[0]
        with torch.no_grad():
            err = self.errors(active, params, final, reason).reshape(self.candidates, K).mean(1)
        race = np.flatnonzero(~self.out)
        keep_n = int(np.ceil(len(race) / self.eta))
        order = race[np.argsort(err[race], kind="stable")]
        cut = order[keep_n:]
        self.out[cut] = True
        self.log.append((int(epoch), len(race), keep_n))
        return np.flatnonzero(np.isin(np.asarray(active) // K, cut))


def validation_errors(
    x: np.ndarray,
    y: np.ndarray,
    lrs: np.ndarray,
    sizes: list[int],
    init_scheme: str,
    tr: np.ndarray,
    va: np.ndarray,
    settings: TrainSettings,
    search_seed: int,
    diverged_error: float,
    progress: Callable[[str], None] | None = None,
    checkpoint: Checkpoint | None = None,
    halving: tuple[int, int] = (0, 0),
    rungs: tuple[int, ...] | None = None,
) -> dict[str, np.ndarray]:
    """Train len(lrs) x K models as one batch; return per-(lr, fold) validation error etc., each [C, K].  ``halving``
    (eta, rungs): successive halving of the candidates (:class:`Halving`), at ``rung_epochs`` of it unless ``rungs``
    names the rung epochs; ``pruned`` says which models it cut."""
    C, K = len(lrs), tr.shape[0]
    loss = settings.loss
    epochs = rung_epochs(settings.max_epochs, settings.check_every, *halving) if rungs is None else rungs
    prune = Halving(epochs, halving[0], x, y, va, C, loss, diverged_error) if epochs and C > 1 else None
    # common random numbers across candidates: fold k always starts from the same init and data order
    fold_init = init_params(sizes, seeds(search_seed, "init", K), init_scheme)
    res = train_grid(
        x,
        y,
        lrs,
        fold_init,
        seeds(search_seed, "order", K),
        settings,
        rows=tr,
        progress=progress,
        checkpoint=checkpoint,
        prune=prune,
    ).result  # model m = (candidate m // K, fold m % K)
    if prune is not None and progress is not None:
        progress("successive halving: " + "; ".join(f"epoch {e}: kept {k} of {n}" for e, n, k in prune.log))
    return _errors(res, x, y, va, C, loss, diverged_error)


def screen_keep(
    err: np.ndarray, diverged: np.ndarray, eta: int, points: np.ndarray | None = None, z: float = 0.0
) -> tuple[np.ndarray, int]:
    """The candidates a one-fold screen keeps: the best ceil(C / eta) by ``err`` [C] (ties in order), and with ``z`` > 0
    also every other candidate that the screen cannot tell from its best: one whose validation errors, point by point
    on the same screened rows (``points`` [C, n]: squared error or 0/1 misclassification), exceed the best's by a mean
    of at most z standard errors of that paired difference.  A candidate with a diverged screened fold is never kept
    this way.  Returns (the kept candidates in order, how many the SE rule added).

    Why: a screen on one fold of 1 333 points ranked 0.268 at 0.188 misclassified and 0.501 at 0.191, kept
    0.268 alone, and the search chose it (CV 0.208 +- 0.010) where the full search chose 1.08 (0.182 +- 0.004)."""
    C = len(err)
    keep = np.argsort(err, kind="stable")[: int(np.ceil(C / eta))]
    near = 0
    if z > 0 and points is not None:
        best = int(keep[0])
        if not diverged[best]:
            extra = []
            for c in np.setdiff1d(np.arange(C), keep):
                if diverged[c]:
                    continue
                d = points[c] - points[best]
                if d.mean() <= z * d.std(ddof=1) / np.sqrt(d.size):
                    extra.append(int(c))
            near = len(extra)
            keep = np.concatenate([keep, np.asarray(extra, dtype=keep.dtype)])
    return np.sort(keep), near


def _point_errors(res, x: np.ndarray, y: np.ndarray, va: np.ndarray, C: int, loss) -> np.ndarray:
    """[C, K * nv] each model's error on each of its validation rows (squared error, or 0/1 misclassification with
    :func:`depthlab.core.metrics.misclassification`'s tie rule), its folds side by side; NaN where it diverged."""
    K, nv = va.shape
    va_m = np.tile(va, (C, 1))
    out = np.full((C * K, nv), np.nan)
    for m in np.flatnonzero(~res.diverged):
        pred = predict(select(res.params, [m]), x[va_m[m]])[0]
        t = np.asarray(y[va_m[m]], dtype=np.float64)
        out[m] = (pred - t) ** 2 if loss.task == "regression" else ((pred >= 0) != (t >= 0)).astype(np.float64)
    return out.reshape(C, K * nv)


def _errors(
    res, x: np.ndarray, y: np.ndarray, va: np.ndarray, C: int, loss, diverged_error: float
) -> dict[str, np.ndarray]:
    """[C, K] validation error, diverged, converged, epochs and pruned of a stack's result, model m = (m // K, m % K)."""
    from .stopping import PRUNED

    K = va.shape[0]
    va_m = np.tile(va, (C, 1))
    err = np.full(C * K, diverged_error)
    for m in np.flatnonzero(~res.diverged):
        out = predict(select(res.params, [m]), x[va_m[m]])[0]
        e = float(loss.error(out, y[va_m[m]]))
        err[m] = e if np.isfinite(e) else diverged_error
    shape = (C, K)
    return {
        "val_error": err.reshape(shape),
        "diverged": res.diverged.reshape(shape),
        "converged": res.converged.reshape(shape),
        "epochs": res.epochs.reshape(shape),
        "pruned": (res.stop_reason == PRUNED).reshape(shape),
    }


def _screened(
    x: np.ndarray,
    y: np.ndarray,
    lrs: np.ndarray,
    sizes: list[int],
    init_scheme: str,
    tr: np.ndarray,
    va: np.ndarray,
    settings: TrainSettings,
    search_seed: int,
    diverged_error: float,
    progress: Callable[[str], None] | None = None,
    checkpoint: Checkpoint | None = None,
    halving: tuple[int, int] = (0, 0),
    screen_folds: int = 0,
    screen_se: float = 0.0,
) -> dict[str, np.ndarray]:
    """Successive halving whose first rung trains only the first ``screen_folds`` folds (at the default's
    scale the first rung, every candidate x every fold, was 79 % of the search's epochs); :func:`validation_errors`
    itself when ``screen_folds`` is 0 (or not below K), or there is no rung or no second candidate.

    The candidates x the first folds train to the first rung (their own stop rule applies); each candidate's mean
    validation error over those folds ranks it, and the best ceil(n / eta) (a diverged fold counts as
    ``diverged_error``) go on, with every other candidate the screen cannot tell from its best (:func:`screen_keep`,
    ``screen_se`` > 0).  The first folds of a kept candidate go on from their screen (paused at the rung, not
    stopped); its other folds train from their start to the rung in a stack of their own; the two join there and
    train on, halved at the remaining rungs, to the budget.  A fold starts from the same init and data order whichever
    stack it is in, so this is the every-fold stack's arithmetic (to the bit while no stack is down to one model: torch
    steps a stack of one through another kernel, whose last bits differ, and near a divergent rate that can move a
    choice), and no epoch is trained twice (until 7e7cbb5 the kept candidates' first folds trained again from their
    start: 14 % of the default's search, and the stores left their screen out).  A cut candidate keeps its screen's
    errors on the screened folds and NaN on the others (``pruned`` on every fold unless it diverged)."""
    C, K = len(lrs), tr.shape[0]
    eta = halving[0]
    first = rung_epochs(settings.max_epochs, settings.check_every, *halving)
    if not 0 < screen_folds < K or not first or C <= 1:
        return validation_errors(
            x, y, lrs, sizes, init_scheme, tr, va, settings, search_seed, diverged_error, progress, checkpoint, halving
        )
    from .trainer import merge_states, train

    f, loss = screen_folds, settings.loss
    fold_init = init_params(sizes, seeds(search_seed, "init", K), init_scheme)
    order = seeds(search_seed, "order", K)

    def stack(cands: np.ndarray, folds: np.ndarray, **kw):
        """cands x folds models, model m = (cands[m // F], folds[m % F]), each fold with its own rows, init and order."""
        F = len(folds)
        return train(
            x,
            y,
            np.tile(tr[folds], (len(cands), 1)),
            np.repeat(lrs[cands], F),
            [(W[folds].repeat(len(cands), 1, 1), b[folds].repeat(len(cands), 1, 1)) for W, b in fold_init],
            np.tile(order[folds], len(cands)),
            settings,
            progress=progress,
            **kw,
        )

    def child(name: str):
        return checkpoint.child(name) if checkpoint is not None else None

    every, rest = np.arange(C), np.arange(f, K)
    screen = stack(every, np.arange(f), pause_at=first[0], checkpoint=child("screen"))
    got = _errors(screen, x, y, va[:f], C, loss, diverged_error)
    err = np.where(got["diverged"], diverged_error, got["val_error"]).mean(1)
    points = _point_errors(screen, x, y, va[:f], C, loss) if screen_se > 0 else None
    keep, near = screen_keep(err, got["diverged"].any(1), eta, points, screen_se)
    n = len(keep)
    if progress is not None:
        progress(
            f"successive halving: epoch {first[0]} on {f} of {K} folds: kept {n} of {C} "
            f"(lr = {', '.join(f'{v:.3g}' for v in lrs[keep])}"
            + (f"; {near} more within {screen_se:g} SE of the best" if near else "")
            + ")"
        )
    others = stack(keep, rest, pause_at=first[0], checkpoint=child("rest"))
    # the joined stack: model j * K + k = (kept candidate j, fold k)
    to_screen = np.full(C * f, -1)
    to_screen[(keep[:, None] * f + np.arange(f)).ravel()] = (np.arange(n)[:, None] * K + np.arange(f)).ravel()
    to_rest = (np.arange(n)[:, None] * K + rest).ravel()
    start = merge_states([(screen.state, to_screen), (others.state, to_rest)], n * K)
    # the kept candidates are cut at the rungs after the first only
    prune = Halving(first[1:], eta, x, y, va, n, loss, diverged_error) if first[1:] and n > 1 else None
    res = stack(keep, np.arange(K), prune=prune, start=start, checkpoint=child("kept"))
    if prune is not None and progress is not None:
        progress("successive halving: " + "; ".join(f"epoch {e}: kept {k} of {c}" for e, c, k in prune.log))
    kept = _errors(res, x, y, va, n, loss, diverged_error)
    out = {
        "val_error": np.full((C, K), np.nan),
        "diverged": np.zeros((C, K), bool),
        "converged": np.zeros((C, K), bool),
        "epochs": np.zeros((C, K), np.int64),
        "pruned": np.zeros((C, K), bool),
    }
    for k in ("val_error", "diverged", "converged", "epochs"):
        out[k][:, :f] = got[k]
    out["pruned"][:] = ~got["diverged"].any(1, keepdims=True)
    for k in out:
        out[k][keep] = kept[k]
    return out


def propose(opt, seen: np.ndarray, q: int, lo: float, hi: float) -> np.ndarray:
    """q new log10(lr) candidates from the optimiser, none closer than (hi - lo)/64 to a seen or pending one.

    Runs are deterministic for a given lr, so re-proposing an evaluated lr (which UCB does once the GP is confident)
    would waste a whole batch: such a proposal is replaced by the middle of the widest gap between seen and pending
    candidates."""
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


def _optimiser(search: SearchSettings, r: int, history_u: np.ndarray, history_score: np.ndarray):
    """A fresh optimiser for round r, fed every observation so far (proposals are a pure function of the history)."""
    from bayes_opt import BayesianOptimization, acquisition
    from sklearn.gaussian_process.kernels import Matern

    lo, hi = search.log10_lr_bounds
    span = hi - lo
    acq = acquisition.ConstantLiar(acquisition.UpperConfidenceBound(kappa=search.kappa), strategy="min")
    opt = BayesianOptimization(
        f=None,
        pbounds={"log10_lr": (lo, hi)},
        acquisition_function=acq,
        random_state=seed(search.seed, "search", r) % (2**32),
        verbose=0,
        allow_duplicate_points=True,
    )
    # Bound the GP length scale (in decades of lr): with the package's default bounds the marginal likelihood on a
    # handful of points picks length_scale -> 1e-5, a flat GP, and every proposal lands back on an evaluated point.
    opt.set_gp_params(kernel=Matern(nu=2.5, length_scale=span / 4, length_scale_bounds=(span / 20, 10 * span)))
    for u, sc in zip(history_u, history_score):
        opt.register(params={"log10_lr": float(u)}, target=float(sc))
    return opt


def search_lr(
    x: np.ndarray,
    y: np.ndarray,
    sizes: list[int],
    init_scheme: str,
    search: SearchSettings,
    settings: TrainSettings,
    progress: Callable[[str], None] | None = None,
    checkpoint: SearchCheckpoint | None = None,
) -> SearchResult:
    """Cross-validated Bayesian optimisation of log10(lr) for nets of layer sizes ``sizes``.  x: [N, d], y: [N].

    ``checkpoint``: finished rounds are saved there and the running round's training in
    ``checkpoint.child("round<r>")``; a rerun resumes and gives the same result."""
    say = progress or log.info
    lo, hi = search.log10_lr_bounds
    if not lo < hi:
        raise ValueError(f"log10_lr_bounds must be increasing, got {search.log10_lr_bounds}")
    tr, va, fold_of = fold_indices(len(y), search.folds, search.seed)
    used = search.use_folds or search.folds
    tr, va = tr[:used], va[:used]
    # a diverged fold scores as predicting far worse than the constant 0 would
    diverged_error = 10.0 * float(np.mean(y**2)) if settings.loss.task == "regression" else 1.0
    depth = len(sizes) - 2
    keys = ("val_error", "diverged", "converged", "epochs", "pruned")
    halving = (search.halving_eta, search.halving_rungs)
    key = fingerprint(x, y, sizes, init_scheme, repr(search), repr(settings))
    done: list[dict[str, np.ndarray]] = []
    if checkpoint is not None:
        blob = checkpoint.load(key) or {}
        n_done = 1 + max((int(k.split("/")[0]) for k in blob), default=-1)
        done = [{k.split("/")[1]: v.numpy() for k, v in blob.items() if k.startswith(f"{r}/")} for r in range(n_done)]
    rows: list[dict[str, np.ndarray]] = []
    us: list[np.ndarray] = []
    limits = search.log10_lr_limits or (lo, hi)
    choice = None
    r = 0
    while True:
        if r > search.rounds:  # the design and the BO rounds are done: grow while the choice sits at an edge
            val = np.concatenate([o["val_error"] for o in rows])
            failed = np.concatenate([o["diverged"] for o in rows]).any(1)
            cut = np.concatenate([o["pruned"] for o in rows]).any(1)
            seen = np.concatenate(us)
            choice = choose(10.0**seen, np.where(cut, np.inf, np.nanmean(val, 1)), failed)
            if not choice.at_edge or r > search.rounds + search.grow_rounds:
                break
            u = _beyond(seen, choice.edge, search.candidates_per_round, limits)
            if not len(u):
                break
        if r < len(done):
            u, out = done[r]["u"], {k: done[r][k] for k in keys}
            say(f"lr search depth {depth} round {r}: restored from checkpoint")
        else:
            if r == 0:
                # evenly spaced initial design (deterministic, covers the box)
                u = (
                    np.linspace(lo, hi, search.init_points + 2)[1:-1]
                    if search.init_points > 1
                    else np.array([(lo + hi) / 2])
                )
            elif r <= search.rounds:
                seen = np.concatenate(us)
                score = -np.log10(np.nanmean(np.concatenate([o["val_error"] for o in rows]), 1))
                u = propose(_optimiser(search, r, seen, score), seen, search.candidates_per_round, lo, hi)
            lrs = 10.0**u
            what = (
                f"round {r}/{search.rounds}"
                if r <= search.rounds
                else f"growth {r - search.rounds} ({choice.edge} edge)"
            )
            say(
                f"lr search depth {depth} {what}: training {len(lrs)} lr x {used} folds, lr = "
                + ", ".join(f"{v:.3g}" for v in lrs)
            )
            sub = checkpoint.child(f"round{r}") if checkpoint is not None else None
            step = search.max_candidates or len(lrs)
            parts = [
                _screened(
                    x,
                    y,
                    lrs[a : a + step],
                    sizes,
                    init_scheme,
                    tr,
                    va,
                    settings,
                    search.seed,
                    diverged_error,
                    progress,
                    sub if step >= len(lrs) or sub is None else sub.child(f"part{a // step}"),
                    halving=halving,
                    screen_folds=search.first_rung_folds,
                    screen_se=search.first_rung_se,
                )
                for a in range(0, len(lrs), step)
            ]
            out = {k: np.concatenate([p_[k] for p_ in parts]) for k in parts[0]}
            if checkpoint is not None:
                done.append({"u": u, **out})
                checkpoint.save(
                    key,
                    {f"{i}/{k}": torch.as_tensor(np.asarray(v)) for i, row in enumerate(done) for k, v in row.items()},
                )
        rows.append(out)
        us.append(u)
        r += 1
    val = np.concatenate([o["val_error"] for o in rows])
    score = -np.log10(np.nanmean(val, 1))
    lr_all = 10.0 ** np.concatenate(us)
    best = choice.index
    if best < 0:  # choose() found no usable rate: index -1 is only the last rate evaluated, not a choice
        say(
            f"lr search depth {depth}: every one of the {len(lr_all)} rates evaluated diverged or scored no error: no "
            f"usable rate (best_lr records the last evaluated, {lr_all[best]:.4g}, flagged)"
        )
    else:
        say(
            f"lr search depth {depth}: best lr {lr_all[best]:.4g} (mean val error {val[best].mean():.4g})"
            + (
                f", at the {choice.edge} edge of the rates evaluated"
                + (" (flagged: could grow no further)" if choice.at_edge else "")
                if choice.at_edge
                else ""
            )
        )
    return SearchResult(
        lr=lr_all,
        round=np.concatenate([np.full(len(u), r) for r, u in enumerate(us)]),
        val_error=val,
        diverged=np.concatenate([o["diverged"] for o in rows]),
        converged=np.concatenate([o["converged"] for o in rows]),
        epochs=np.concatenate([o["epochs"] for o in rows]),
        score=score,
        best_lr=float(lr_all[best]),
        fold_of=fold_of,
        edge=choice.edge,
        flagged=choice.at_edge,
        pruned=np.concatenate([o["pruned"] for o in rows]) if search.halving_eta > 1 else None,
    )


def _beyond(seen: np.ndarray, edge: str, q: int, limits: tuple[float, float]) -> np.ndarray:
    """q log10 rates spread evenly over the decade beyond the evaluated rates on the ``edge`` side, inside ``limits``."""
    lo, hi = limits
    steps = np.linspace(0.0, 1.0, q + 1)[1:]
    u = seen.max() + steps if edge == "upper" else seen.min() - steps
    u = u[(u >= lo - 1e-9) & (u <= hi + 1e-9)]
    return u[np.min(np.abs(u[:, None] - seen[None, :]), axis=1) > 1e-6] if len(u) else u
