"""The training loop for M stacked nets: every model its own rows, lr, data order and stopping state.

All M models share one input matrix ``x [N, d]`` but each trains on its own rows
(``train_idx [M, n]``: a cross-validation fold, say), with its own learning rate,
its own initial parameters (the caller draws them: :func:`depthlab.core.mlp.init_params`)
and its own data order.  Every ``check_every`` epochs the full training loss and
accuracy of each model are measured, and, if an evaluation set is given, its
error there (so "best test accuracy along the run" is a reduction over the
returned history).  A model leaves the batch when the stop rule
(:class:`depthlab.core.stopping.StopRule`: its loss's target is met, or the monitored
value has stopped improving) says so, when it diverges (a non-finite loss or parameter:
recorded, never raised, its history kept up to there) or at ``max_epochs`` (the budget:
not converged); stopped models cost nothing afterwards.

The loop is written top to bottom over a :class:`TrainState`; it does no file
I/O.  Interruption safety comes from an optional ``checkpoint`` object (see
:mod:`depthlab.checkpoint`) that the loop hands the state to at every check
and asks for a saved state once at the start.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np
import torch

from . import metrics
from .device import resolve_device
from .losses.base import Loss
from .mlp import Params, forward
from .stopping import StopRule, StopState

log = logging.getLogger("depthlab")


class Optimizer(Protocol):
    """An optimiser of M stacked nets (depthlab.core.optim.sgd.SGD, .adam.Adam): state, and one in-place step."""

    name: str

    def init_state(self, params: Params) -> dict[str, torch.Tensor]: ...

    def step(
        self,
        params: Params,
        state: dict[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        lr: torch.Tensor,
        loss: Loss,
    ) -> torch.Tensor: ...


@dataclass(frozen=True, kw_only=True)
class TrainSettings:
    loss: Loss  # a depthlab.core.losses object (MSE(), Logistic(), Hinge()): the caller imports the one it uses
    optimizer: Optimizer  # a depthlab.core.optim object (SGD(), Adam())
    batch_size: int = 50  # B: minibatch size (Mori & Ueda: 50; Malach & Shalev-Shwartz: 100)
    check_every: int = 50  # epochs between full-training-set checks (Mori & Ueda: 50)
    stop: StopRule = StopRule()  # when a model is done (its loss's target, a plateau); the default: only the budget
    max_epochs: int = 2500  # the budget: a model still running when it ends is "not converged"
    device: str = "auto"  # "auto" picks CUDA when present
    dtype: str = "float32"  # float64 for reference tests
    eval_chunk: int = 4096  # rows per forward chunk when evaluating full sets
    # rows of each model's training set the check measures its training loss and accuracy on: 0, all of them; else
    # its first check_rows rows (a fixed subsample).  Only for a rule that reads neither (monitor eval_error, no
    # target): the fractal nets, whose 50 000-row pass was 7.6-11 % of a job while the rule reads the test accuracy
    check_rows: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.loss, Loss):
            raise TypeError(f"loss must be a depthlab.core.losses object, got {self.loss!r}")
        if not callable(getattr(self.optimizer, "step", None)):
            raise TypeError(f"optimizer must be a depthlab.core.optim object, got {self.optimizer!r}")
        if self.batch_size < 1 or self.check_every < 1 or self.max_epochs < 1:
            raise ValueError("batch_size, check_every and max_epochs must be >= 1")
        if not isinstance(self.stop, StopRule):
            raise TypeError(f"stop must be a depthlab.core.stopping.StopRule, got {self.stop!r}")
        if self.check_rows < 0:
            raise ValueError(f"check_rows must be >= 0 (0: every training row), got {self.check_rows}")
        if self.check_rows and (self.stop.monitor == "train_loss" or self.stop.threshold is not None):
            raise ValueError(
                "check_rows measures the training loss on a subsample: only for a stop rule that reads neither it nor "
                "a loss target (monitor='eval_error', threshold None)"
            )


@dataclass
class TrainResult:
    """Per-model outcome; every array has leading dim M (models in input order)."""

    train_loss: np.ndarray  # [M] training loss at the last check (inf if diverged), on settings.check_rows rows if set
    train_accuracy: np.ndarray  # [M] training accuracy of sign f at the last check (idem)
    epochs: np.ndarray  # [M] epochs trained
    converged: np.ndarray  # [M] bool: stopped because it was done (target or plateau), not by the budget
    diverged: np.ndarray  # [M] bool: a non-finite loss or parameter appeared
    stop_reason: np.ndarray  # [M] depthlab.core.stopping code: target, plateau, budget or diverged
    check_epochs: np.ndarray  # [C] epochs at which checks ran
    history: np.ndarray  # [M, C] training loss at each check, NaN after the model stopped (inf at a divergence)
    eval_history: np.ndarray  # [M, C] error on the evaluation set at each check (NaN: none given / stopped / diverged)
    params: Params  # final parameters on the CPU, stacked [M, ...]
    seconds: float = 0.0
    state: dict[str, torch.Tensor] | None = None  # with ``pause_at``: the state to go on from (TrainState.to_tensors)


class Pruner(Protocol):
    """A successive-halving rule (depthlab.core.lrsearch.Halving): at its rung epochs (check epochs), which of the models
    still training leave the batch (positions among ``active``), from their current parameters."""

    epochs: tuple[int, ...]

    def __call__(
        self, epoch: int, active: np.ndarray, params: Params, final: Params, reason: np.ndarray
    ) -> np.ndarray: ...

    def resume(self, reason: np.ndarray, stopped_at: np.ndarray, epoch: int) -> None:
        """Rebuild what the rungs up to ``epoch`` decided from a restored state (a resumed or continued run)."""


class Checkpoint(Protocol):
    """Where a run's state survives a kill: load once at the start, save at every check."""

    def load(self, fingerprint: str) -> dict[str, torch.Tensor] | None: ...

    def save(self, fingerprint: str, tensors: dict[str, torch.Tensor]) -> None: ...


@dataclass
class TrainState:
    """Everything the loop carries from one epoch to the next.

    Tensors on the training device hold only the *active* models (in the order of
    ``active``); the numpy records and ``final`` (CPU) hold all M models.
    """

    params: Params  # active models' parameters
    opt: dict[str, torch.Tensor]  # optimiser state (per-model tensors have leading dim M_active)
    lr: torch.Tensor  # [M_active]
    active: np.ndarray  # original ids of the models still training
    final: Params  # CPU, all M: filled in as models stop
    epoch: int  # last completed epoch
    check_i: int  # checks done
    history: np.ndarray  # [M, C]
    eval_history: np.ndarray  # [M, C]
    train_loss: np.ndarray  # [M]
    train_acc: np.ndarray  # [M]
    epochs: np.ndarray  # [M]
    diverged: np.ndarray  # [M]
    stopping: StopState  # the stop rule's per-model state (best value, checks since it improved, reason)

    RECORDS = ("history", "eval_history", "train_loss", "train_acc", "epochs", "diverged", "active")

    def retire(self, leaving: np.ndarray) -> None:
        """Copy the leaving models (positions among the active ones) into ``final`` and drop them from the batch."""
        ids = self.active[leaving]
        for (Wf, bf), (W, b) in zip(self.final, self.params):
            Wf[ids] = W[leaving].cpu()
            bf[ids] = b[leaving].cpu()
        self.epochs[ids] = self.epoch
        keep_np = np.setdiff1d(np.arange(len(self.active)), leaving)
        keep = torch.as_tensor(keep_np, device=self.lr.device)
        M_act = len(self.active)
        self.params = [(W.index_select(0, keep), b.index_select(0, keep)) for W, b in self.params]
        self.opt = {k: (v.index_select(0, keep) if _per_model(v, M_act) else v) for k, v in self.opt.items()}
        self.lr = self.lr.index_select(0, keep)
        self.active = self.active[keep_np]

    def to_tensors(self) -> dict[str, torch.Tensor]:
        """Flat dict of CPU tensors (loadable with ``torch.load(weights_only=True)``)."""
        out = {"epoch": torch.tensor(self.epoch), "check_i": torch.tensor(self.check_i), "lr": self.lr.cpu()}
        out.update({k: torch.as_tensor(getattr(self, k)) for k in self.RECORDS})
        out.update({f"stop/{k}": torch.as_tensor(getattr(self.stopping, k)) for k in StopState.FIELDS})
        for i, ((W, b), (Wf, bf)) in enumerate(zip(self.params, self.final)):
            out[f"W{i}"], out[f"b{i}"], out[f"final_W{i}"], out[f"final_b{i}"] = W.cpu(), b.cpu(), Wf, bf
        out.update({f"opt/{k}": v.cpu() for k, v in self.opt.items()})
        return out

    @classmethod
    def from_tensors(cls, t: dict[str, torch.Tensor], dev: torch.device) -> "TrainState":
        n = 1 + max(int(k[1:]) for k in t if k.startswith("W"))
        return cls(
            params=[(t[f"W{i}"].to(dev), t[f"b{i}"].to(dev)) for i in range(n)],
            opt={k[4:]: v.to(dev) for k, v in t.items() if k.startswith("opt/")},
            lr=t["lr"].to(dev),
            final=[(t[f"final_W{i}"], t[f"final_b{i}"]) for i in range(n)],
            epoch=int(t["epoch"]),
            check_i=int(t["check_i"]),
            stopping=StopState(**{k: t[f"stop/{k}"].numpy().copy() for k in StopState.FIELDS}),
            **{k: t[k].numpy().copy() for k in cls.RECORDS},
        )


def epoch_order(order_seed: int, epoch: int, n: int) -> np.ndarray:
    """Shuffled row order of one model in one epoch: a pure function of (seed, epoch).

    Per-model and counter-based, so a model's data order does not depend on
    which other models share its batch, and a restart at any epoch replays it.
    """
    return np.random.default_rng([int(order_seed), int(epoch)]).permutation(n)


def check_epochs(settings: TrainSettings) -> np.ndarray:
    """Epochs at which checks run: every check_every, and always at max_epochs."""
    s = settings
    return np.asarray(sorted(set(range(s.check_every, s.max_epochs + 1, s.check_every)) | {s.max_epochs}))


def fingerprint(*parts: object) -> str:
    """SHA-256 of everything a run depends on (arrays by bytes), to refuse a stale checkpoint."""
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, torch.Tensor):
            p = p.detach().cpu().numpy()
        if isinstance(p, np.ndarray):
            h.update(str((p.dtype.str, p.shape)).encode())
            h.update(np.ascontiguousarray(p).tobytes())
        else:
            h.update(repr(p).encode())
    return h.hexdigest()


EVAL_ELEMENTS = 1 << 27  # activations held at once when evaluating full sets: 0.5 GiB of float32


def _chunk(params: Params, chunk: int) -> int:
    """Rows per evaluation chunk: at most ``chunk``, and few enough that [M, rows, widest layer] stays bounded."""
    widest = max(W.shape[2] for W, _ in params)
    return max(1, min(chunk, EVAL_ELEMENTS // (params[0][0].shape[0] * widest)))


def _full_pass(
    params: Params, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, loss: Loss, chunk: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean loss [M] and accuracy of sign f [M] of every model on its own rows idx [M, n]."""
    M, n = idx.shape
    chunk = _chunk(params, chunk)
    tot = torch.zeros(M, dtype=x.dtype, device=x.device)
    hits = torch.zeros(M, dtype=x.dtype, device=x.device)
    for s in range(0, n, chunk):
        j = idx[:, s : s + chunk]
        out = forward(params, x[j])
        yy = y[j]
        tot += loss.value(out, yy) * j.shape[1]
        hits += (1.0 - metrics.misclassification(out, yy)) * j.shape[1]
    return tot / n, hits / n


def _eval_error(params: Params, x: torch.Tensor, y: torch.Tensor, loss: Loss, chunk: int) -> np.ndarray:
    """Error metric of every model on a shared evaluation set, [M] float64."""
    chunk = _chunk(params, chunk)
    outs = [forward(params, x[s : s + chunk]) for s in range(0, x.shape[0], chunk)]
    return loss.error(torch.cat(outs, 1).double(), y.double().expand(len(params[0][0]), -1)).cpu().numpy()


GATHER_BYTES = 64 << 20  # an epoch's inputs gathered in one call when they fit here (else batch by batch)


def epoch_batches(X: torch.Tensor, Y: torch.Tensor, rows: torch.Tensor, B: int):
    """The epoch's minibatches (x [M, B, d], y [M, B]) of every model, in its row order ``rows`` [M, n].

    Where the epoch's inputs fit ``GATHER_BYTES`` they are gathered in one call and each batch is a view of them:
    two indexing calls per step less, 6 % of a width-100 fractal step.  The batches hold the same numbers either way,
    and a matmul reads a view as it reads a copy: the same bits (tests/core/test_trainer.py)."""
    M, n = rows.shape
    if M * n * X.shape[1] * X.element_size() <= GATHER_BYTES:
        Xs, Ys = X[rows], Y[rows]
        return ((Xs[:, a : a + B], Ys[:, a : a + B]) for a in range(0, n, B))
    return ((X[j], Y[j]) for j in (rows[:, a : a + B] for a in range(0, n, B)))


def _per_model(v: torch.Tensor, M: int) -> bool:
    """An optimiser-state tensor with one entry per model (leading axis M), not one shared by all (Adam's step)."""
    return v.dim() > 0 and v.shape[0] == M


ALL_AT_ONCE_BYTES = 16 << 20  # CPU: stacked models whose parameters and state fit here step all at once ...
STEP_CHUNK_BYTES = 4 << 20  # ... larger stacks step start to end in groups of models that fit here (two at least)


def models_per_step(params: Params, state: dict[str, torch.Tensor]) -> int:
    """How many of the stacked models one call of the optimiser's step takes on the CPU (all of them on a GPU).

    A step reads every weight three times (forward, the backward gradient, the update) and writes it once.  When the
    stacked weights outgrow the cache (40 models at the paper's Fig. 2 shape L = 2 hold 160 MB), each of those passes
    streams them from memory; stepping a group of models at a time, start to end, keeps a group's weights in cache
    across the passes.  Measured on one core of the 2-core dev machine (32 MB L3; benchmarks/bench.py prints it): the
    paper's Fig. 2 shape L = 2 steps 1.23-1.30x faster in groups of two than all 40 at once; the default shapes
    (30 models, 12 MB) gain nothing from groups, and step all at once.  A group holds two models at least: torch runs
    a batch of one matrix through another kernel, whose last bits differ for the thin output layer; from two up each
    model's arithmetic is that of the full batch, so the result is the same to the bit (tests/core/test_trainer.py) for the
    MSE loss.  Not for every loss: with the logistic loss five SGD steps of a stack of two differ in the last bit from
    those of a stack of six at Fig. 5's L = 2 and 4 shapes (measured: near a tie it moved a rate
    search's choice); which kernel rounds differently was not traced."""
    W0 = params[0][0]
    M = W0.shape[0]
    if W0.device.type != "cpu" or M <= 1:
        return M
    per_model = sum(t[0].numel() * t.element_size() for layer in params for t in layer)
    per_model += sum(v[0].numel() * v.element_size() for v in state.values() if _per_model(v, M))
    if M * per_model <= ALL_AT_ONCE_BYTES:
        return M
    return int(max(2, min(M, STEP_CHUNK_BYTES // max(per_model, 1))))


def step_in_groups(
    opt: Optimizer,
    params: Params,
    state: dict[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    lr: torch.Tensor,
    loss: Loss,
    per: int,
) -> torch.Tensor:
    """One optimiser step of every model, ``per`` models at a time (views: the update lands in place); a last group of
    one joins the group before it.  State shared by all models (Adam's step counter) steps once."""
    M = params[0][0].shape[0]
    if per >= M - 1:
        return opt.step(params, state, x, y, lr, loss)
    shared = [k for k, v in state.items() if not _per_model(v, M)]
    out = []
    bounds = list(range(0, M, per))
    if M - bounds[-1] == 1:
        bounds.pop()
    for a, e in zip(bounds, bounds[1:] + [M]):
        sub = {k: (v.clone() if k in shared else v[a:e]) for k, v in state.items()}
        out.append(opt.step([(W[a:e], b[a:e]) for W, b in params], sub, x[a:e], y[a:e], lr[a:e], loss))
    for k in shared:  # every group advanced its copy alike: keep the last
        state[k].copy_(sub[k])
    return torch.cat(out)


def train(
    x: np.ndarray,
    y: np.ndarray,
    train_idx: np.ndarray,
    lr: np.ndarray,
    init: Params,
    order_seeds: np.ndarray,
    settings: TrainSettings,
    eval_set: tuple[np.ndarray, np.ndarray] | None = None,
    progress: Callable[[str], None] | None = None,
    checkpoint: Checkpoint | None = None,
    prune: Pruner | None = None,
    pause_at: int | None = None,
    start: dict[str, torch.Tensor] | None = None,
) -> TrainResult:
    """Train M models until each meets its loss' stop rule, diverges or hits max_epochs.

    x: [N, d], y: [N] (labels +-1 for classification losses), train_idx: [M, n]
    rows of x each model trains on, lr: [M], init: stacked initial parameters
    (CPU, M models), order_seeds: [M], eval_set: optional shared (x_eval, y_eval)
    scored at every check.  With ``checkpoint``, a saved state of this very call
    (same data, rows, rates, init, seeds and settings) is resumed, and the result
    equals an uninterrupted run's exactly (data order is a pure function of
    (seed, epoch)).  ``prune``: at its rung epochs (checks), after the stop rule, the models it names leave the batch
    with reason ``pruned`` (a successive-halving search; their parameters at the rung are their final ones).

    ``pause_at`` (a check epoch below the budget): stop after that epoch with the models still training *not* stopped;
    the result holds their parameters and epochs there as if they had, and ``state`` the whole state to go on from.
    ``start``: such a state (of these M models: :func:`merge_states` builds one from parts) to go on from instead of
    ``init`` (a checkpoint of this very call still comes first).  Going on from a pause is the uninterrupted run.
    """
    t0 = time.perf_counter()
    s = settings
    loss, opt = s.loss, s.optimizer
    dev = resolve_device(s.device)
    dtype = getattr(torch, s.dtype)
    train_idx = np.asarray(train_idx)
    M, n = train_idx.shape
    lr = np.asarray(lr, dtype=np.float64)
    order_seeds = np.asarray(order_seeds)
    if lr.shape != (M,) or order_seeds.shape != (M,) or init[0][0].shape[0] != M:
        raise ValueError(f"lr, order_seeds and init must each hold M = {M} models")
    say = progress or log.info
    checks = check_epochs(s)
    rule = s.stop
    if rule.monitor == "eval_error" and eval_set is None:
        raise ValueError("a stop rule that monitors the evaluation error needs an eval_set")

    X = torch.as_tensor(x, dtype=dtype, device=dev)  # [N, d]
    Y = torch.as_tensor(y, dtype=dtype, device=dev)  # [N]
    idx_all = torch.as_tensor(train_idx, device=dev)
    Xe = Ye = None
    if eval_set is not None:
        Xe = torch.as_tensor(eval_set[0], dtype=dtype, device=dev)
        Ye = torch.as_tensor(eval_set[1], dtype=dtype, device=dev)
    init = [(W.to(dtype), b.to(dtype)) for W, b in init]

    key = ""
    saved = None
    if checkpoint is not None:
        key = fingerprint(
            x,
            y,
            train_idx,
            lr,
            *[t for layer in init for t in layer],
            order_seeds,
            repr(s),
            None if eval_set is None else eval_set[0],
            None if eval_set is None else eval_set[1],
            *(() if prune is None else (repr(prune),)),
            *(() if start is None else ("start", start["epoch"], start["active"])),
        )
        saved = checkpoint.load(key)
    resumed = saved is not None
    if saved is None and start is not None:
        saved = start
    if saved is not None:
        st = TrainState.from_tensors(saved, dev)
        if len(st.epochs) != M:
            raise ValueError(f"the state to start from holds {len(st.epochs)} models, not M = {M}")
        say(
            f"{'resumed from checkpoint' if resumed else 'going on'} at epoch {st.epoch}: {len(st.active)} of {M} "
            "models still training"
        )
        if prune is not None:  # the rungs already passed are in the stop reasons, not in a fresh pruner
            prune.resume(st.stopping.reason, st.stopping.stopped_at, st.epoch)
    else:
        params = [(W.to(dev).clone(), b.to(dev).clone()) for W, b in init]
        st = TrainState(
            params=params,
            opt=opt.init_state(params),
            lr=torch.as_tensor(lr, dtype=dtype, device=dev),
            active=np.arange(M),
            final=[(W.clone(), b.clone()) for W, b in init],
            epoch=0,
            check_i=0,
            history=np.full((M, len(checks)), np.nan),
            eval_history=np.full((M, len(checks)), np.nan),
            train_loss=np.full(M, np.nan),
            train_acc=np.full(M, np.nan),
            epochs=np.zeros(M, dtype=np.int64),
            diverged=np.zeros(M, dtype=bool),
            stopping=rule.start(M),
        )

    B = s.batch_size
    with torch.no_grad():
        end = s.max_epochs if pause_at is None else min(s.max_epochs, pause_at)
        while len(st.active) and st.epoch < end:
            st.epoch += 1
            order = np.stack([epoch_order(order_seeds[m], st.epoch, n) for m in st.active])  # [M_act, n]
            rows = torch.gather(idx_all[st.active], 1, torch.as_tensor(order, device=dev))  # [M_act, n]
            per = models_per_step(st.params, st.opt)
            batches = epoch_batches(X, Y, rows, B)
            for xb, yb in batches:
                step_in_groups(opt, st.params, st.opt, xb, yb, st.lr, loss, per)
            # cheap per-epoch divergence test on the output layer (NaN/inf spreads there first)
            bad = ~torch.isfinite(st.params[-1][0].sum((1, 2)) + st.params[-1][1].sum((1, 2)))
            is_check = st.epoch == checks[st.check_i]
            if not (is_check or bool(bad.any())):
                continue
            bad = bad.cpu().numpy()  # [M_act]
            done = np.zeros_like(bad)
            if is_check:
                check_idx = idx_all[st.active] if not s.check_rows else idx_all[st.active, : s.check_rows]
                L, acc = _full_pass(st.params, X, Y, check_idx, loss, s.eval_chunk)
                L, acc = L.double().cpu().numpy(), acc.double().cpu().numpy()
                bad |= ~np.isfinite(L)
                st.history[st.active, st.check_i] = np.where(bad, np.inf, L)
                st.train_loss[st.active], st.train_acc[st.active] = L, acc
                if Xe is not None:
                    st.eval_history[st.active, st.check_i] = np.where(
                        bad, np.nan, _eval_error(st.params, Xe, Ye, loss, s.eval_chunk)
                    )
                value = L if rule.monitor == "train_loss" else st.eval_history[st.active, st.check_i]
                done = (
                    rule.update(
                        st.stopping,
                        st.active,
                        np.where(bad, np.inf, value),
                        loss.converged(L, acc, rule.threshold) & ~bad,
                        st.epoch,
                    )
                    & ~bad
                )
                st.check_i += 1
            st.train_loss[st.active[bad]] = np.inf
            st.diverged[st.active[bad]] = True
            rule.diverge(st.stopping, st.active[bad], st.epoch)
            if st.epoch == s.max_epochs:
                rule.budget(st.stopping, st.active[~(bad | done)], st.epoch)
            stop = bad | done | (st.epoch == s.max_epochs)
            if stop.any():
                st.retire(np.flatnonzero(stop))
            if is_check and prune is not None and st.epoch in prune.epochs and len(st.active):
                cut = np.asarray(prune(st.epoch, st.active, st.params, st.final, st.stopping.reason), dtype=np.int64)
                if len(cut):
                    rule.prune(st.stopping, st.active[cut], st.epoch)
                    st.retire(cut)
            if is_check:
                finite = st.train_loss[np.isfinite(st.train_loss)]
                say(
                    f"epoch {st.epoch}/{s.max_epochs}: {len(st.active)} of {M} models still training, "
                    f"{int(st.stopping.converged.sum())} converged, {int(st.diverged.sum())} diverged, "
                    f"lowest train loss {finite.min() if finite.size else float('nan'):.3g}, {time.perf_counter() - t0:.1f}s"
                )
                if checkpoint is not None and len(st.active):
                    checkpoint.save(key, st.to_tensors())

    state = None
    if pause_at is not None:
        state = {k: v.clone() for k, v in st.to_tensors().items()}  # the state goes on; the result sees a stop here
        if len(st.active):
            st.retire(np.arange(len(st.active)))
    return TrainResult(
        train_loss=st.train_loss,
        train_accuracy=st.train_acc,
        epochs=st.epochs,
        converged=st.stopping.converged,
        diverged=st.diverged,
        stop_reason=st.stopping.reason.copy(),
        check_epochs=checks,
        history=st.history,
        eval_history=st.eval_history,
        params=st.final,
        seconds=time.perf_counter() - t0,
        state=state,
    )


def merge_states(parts: list[tuple[dict[str, torch.Tensor], np.ndarray]], M: int) -> dict[str, torch.Tensor]:
    """One state of M models (:meth:`TrainState.to_tensors`) from paused parts at the same epoch (``train``'s
    ``pause_at``): ``parts`` [(state, to)], ``to[m]`` the merged id of the part's model m (-1: left out).  The models
    of each part keep everything they carry (parameters, optimiser state, records, stop rule); a part whose kept models
    all stopped may have paused earlier."""
    live = [(s, to) for s, to in parts if (to[s["active"].numpy()] >= 0).any()]
    epochs = {int(s["epoch"]) for s, _ in live}
    if len(epochs) > 1:
        raise ValueError(f"the parts paused at different epochs {sorted(epochs)}")
    head = live[0][0] if live else max((s for s, _ in parts), key=lambda s: int(s["epoch"]))
    out: dict[str, torch.Tensor] = {"epoch": head["epoch"].clone(), "check_i": head["check_i"].clone()}
    per_model = [k for k in parts[0][0] if k == "lr" or k[:1] in "Wb" and k[1:].isdigit()]  # the active models'
    full = [
        k
        for k in parts[0][0]
        if k not in per_model and k not in ("epoch", "check_i", "active") and not k.startswith("opt/")
    ]  # every model's, by id
    for k in full:
        v = parts[0][0][k]
        out[k] = torch.zeros((M, *v.shape[1:]), dtype=v.dtype)
    ids, rows = [], {k: [] for k in per_model}
    opt = {k for k in parts[0][0] if k.startswith("opt/")}
    opt_rows = {k: [] for k in opt}
    for s, to in parts:
        to = np.asarray(to)
        mine = np.flatnonzero(to >= 0)
        for k in full:
            out[k][torch.as_tensor(to[mine])] = s[k][torch.as_tensor(mine)]
        act = s["active"].numpy()
        keep = np.flatnonzero(to[act] >= 0)
        ids.append(to[act][keep])
        sel = torch.as_tensor(keep, dtype=torch.long)
        for k in per_model:
            rows[k].append(s[k].index_select(0, sel))
        for k in opt:
            v = s[k]
            if _per_model(v, len(act)):
                opt_rows[k].append(v.index_select(0, sel))
            elif k not in out:
                out[k] = v.clone()
            elif not torch.equal(out[k], v):
                raise ValueError(f"the parts' shared optimiser state {k} differs")
    ids = np.concatenate(ids).astype(np.int64)
    order = torch.as_tensor(np.argsort(ids, kind="stable"))
    out["active"] = torch.as_tensor(ids[order.numpy()])
    for k in per_model:
        out[k] = torch.cat(rows[k]).index_select(0, order)
    for k, r in opt_rows.items():
        if r:
            out[k] = torch.cat(r).index_select(0, order)
    return out
