"""Batched SGD for M same-shape fully connected ReLU nets (Mori & Ueda, Sec. 2.2-2.3).

All M models share one input matrix ``x [N, d]`` but each has its own row subset
(``train_idx [M, n]``: e.g. a cross-validation fold), its own learning rate,
its own initialisation seed, its own data order and its own stopping state.
Weights are stacked ``[M, in, out]`` so one layer of all models is one batched
matmul; the backward pass is written out by hand (no autograd graph), which is
what removes the framework overhead that dominates small SGD steps.

Net (paper, Sec. 2.2): z_l = relu(z_{l-1} W_l + b_l), l = 1..L, f = z_L W_{L+1} + b_{L+1}.
Init: Glorot-uniform weights, zero biases.  Loss: MSE (Eq. 4) or the logistic
(cross-entropy) loss log(1 + exp(-y f)) on labels y in {-1, +1} (Sec. 3.3.2).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from .device import resolve_device

log = logging.getLogger("depthlab")

LOSSES = ("mse", "cross_entropy")

# One layer's stacked parameters: (W [M, in, out], b [M, 1, out]).
Params = list[tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class TrainSettings:
    batch_size: int = 50  # B, the paper's minibatch size
    check_every: int = 50  # epochs between full-training-set checks (paper: 50)
    loss_threshold: float = 1e-4  # stop once full training loss < this (regression)
    max_epochs: int = 2500  # hard cap; a model that reaches it is "not converged"
    loss: str = "mse"  # "mse" or "cross_entropy" (stop rule becomes 100 % train accuracy)
    device: str = "auto"  # "auto" picks CUDA when present
    dtype: str = "float32"  # float64 for reference tests
    eval_chunk: int = 4096  # rows per forward chunk when evaluating full sets

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if self.batch_size < 1 or self.check_every < 1 or self.max_epochs < 1:
            raise ValueError("batch_size, check_every and max_epochs must be >= 1")


@dataclass
class TrainResult:
    """Per-model outcome; every array has leading dim M (models in input order)."""

    train_loss: np.ndarray  # [M] full training loss at the last check (inf if diverged)
    train_accuracy: np.ndarray  # [M] full training accuracy of sign f (classification; NaN for mse)
    epochs: np.ndarray  # [M] epochs trained
    converged: np.ndarray  # [M] bool: stop rule met
    diverged: np.ndarray  # [M] bool: a non-finite loss or parameter appeared
    check_epochs: np.ndarray  # [C] epochs at which checks ran
    history: np.ndarray  # [M, C] training loss at each check, NaN after the model stopped
    params: Params = field(repr=False)  # final parameters on the CPU, stacked [M, ...]
    seconds: float = 0.0


def glorot_init(depth: int, d: int, width: int, seeds: np.ndarray, dtype: torch.dtype) -> Params:
    """Glorot-uniform weights U(-a, a), a = sqrt(6/(fan_in+fan_out)), zero biases; one generator per model.

    Returns CPU params: W_l [M, n_{l-1}, n_l], b_l [M, 1, n_l] with n = (d, h, ..., h, 1).
    """
    sizes = [d] + [width] * depth + [1]
    M = len(seeds)
    params: Params = []
    gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        a = math.sqrt(6.0 / (fan_in + fan_out))
        W = torch.empty(M, fan_in, fan_out, dtype=dtype)
        for m, g in enumerate(gens):
            # draw [out, in] like nn.Linear.weight, so a plain nn.Sequential can load the same numbers
            W[m] = (torch.rand(fan_out, fan_in, generator=g, dtype=dtype) * 2 - 1).mul_(a).T
        params.append((W, torch.zeros(M, 1, fan_out, dtype=dtype)))
    return params


def forward(params: Params, x: torch.Tensor) -> torch.Tensor:
    """Network output. x: [M, n, d] (or [n, d], shared by all models) -> [M, n]."""
    a = x if x.dim() == 3 else x.unsqueeze(0).expand(params[0][0].shape[0], -1, -1)
    for W, b in params[:-1]:
        a = torch.relu(torch.baddbmm(b, a, W))
    W, b = params[-1]
    return torch.baddbmm(b, a, W).squeeze(-1)


def loss_and_grad(out: torch.Tensor, y: torch.Tensor, loss: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-model mean loss [M] and d(loss)/d(out) [M, B] for out, y: [M, B]."""
    B = out.shape[1]
    if loss == "mse":
        r = out - y
        return (r * r).mean(1), r * (2.0 / B)
    # logistic loss log(1 + exp(-y f)) = softplus(-y f); derivative -y sigmoid(-y f)
    m = -y * out
    return torch.nn.functional.softplus(m).mean(1), -y * torch.sigmoid(m) / B


def sgd_step(params: Params, x: torch.Tensor, y: torch.Tensor, lr: torch.Tensor, loss: str) -> torch.Tensor:
    """One SGD step (Eq. 5) on every model, in place. x: [M, B, d], y: [M, B], lr: [M].

    Returns the minibatch loss [M] before the step (Eq. 6).
    """
    acts = [x]  # z_0 .. z_L, each [M, B, n_l]
    for W, b in params[:-1]:
        acts.append(torch.baddbmm(b, acts[-1], W).relu_())
    W, b = params[-1]
    out = torch.baddbmm(b, acts[-1], W).squeeze(-1)  # [M, B]
    batch_loss, g = loss_and_grad(out, y, loss)
    g = g.unsqueeze(-1)  # dL/d(pre-activation) of the output layer, [M, B, 1]
    lr3 = lr.view(-1, 1, 1)
    for l in range(len(params) - 1, -1, -1):
        W, b = params[l]
        a_prev = acts[l]
        g_lr = g * lr3  # scale the small [M, B, out] factor rather than the [M, in, out] gradient
        if l > 0:
            # backprop through W_l before updating it; relu' = 1[z > 0] = 1[a > 0].
            # threshold_backward is that mask-multiply as one fused op (no bool temporary, no dtype copy)
            g = torch.ops.aten.threshold_backward(torch.bmm(g, W.transpose(1, 2)), a_prev, 0.0)
        W.baddbmm_(a_prev.transpose(1, 2), g_lr, alpha=-1.0)  # W -= lr a^T g
        b.sub_(g_lr.sum(1, keepdim=True))
    return batch_loss


def epoch_order(order_seed: int, epoch: int, n: int) -> np.ndarray:
    """Shuffled row order of one model in one epoch: a pure function of (seed, epoch).

    Per-model and counter-based, so a model's data order does not depend on
    which other models share its batch, and a restart at any epoch replays it.
    """
    return np.random.default_rng([int(order_seed), int(epoch)]).permutation(n)


def full_loss(params: Params, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, loss: str, chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Full-set loss [M] and accuracy of sign f [M] of every model on its own rows idx [M, n]."""
    M, n = idx.shape
    tot = torch.zeros(M, dtype=x.dtype, device=x.device)
    hits = torch.zeros(M, dtype=x.dtype, device=x.device)
    for s in range(0, n, chunk):
        j = idx[:, s : s + chunk]
        out = forward(params, x[j])
        yy = y[j]
        part, _ = loss_and_grad(out, yy, loss)
        tot += part * j.shape[1]
        hits += ((out >= 0) == (yy > 0)).to(x.dtype).sum(1)
    return tot / n, hits / n


def predict(params: Params, x: np.ndarray | torch.Tensor, chunk: int = 8192) -> np.ndarray:
    """Outputs of all M models on shared inputs x [n, d] -> float64 numpy [M, n]."""
    W0 = params[0][0]
    xt = torch.as_tensor(x, dtype=W0.dtype, device=W0.device)
    with torch.no_grad():
        outs = [forward(params, xt[s : s + chunk]) for s in range(0, xt.shape[0], chunk)]
    return torch.cat(outs, 1).double().cpu().numpy()


def params_to(params: Params, device: torch.device) -> Params:
    return [(W.to(device), b.to(device)) for W, b in params]


def _fingerprint(*parts: object) -> str:
    """SHA-256 of everything a training call depends on, to refuse a stale checkpoint."""
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, np.ndarray):
            h.update(str((p.dtype.str, p.shape)).encode())
            h.update(np.ascontiguousarray(p).tobytes())
        else:
            h.update(repr(p).encode())
    return h.hexdigest()


def _save_checkpoint(path: str | Path, fingerprint: str, tensors: dict[str, torch.Tensor]) -> None:
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    fp = torch.frombuffer(bytearray(fingerprint.encode()), dtype=torch.uint8)
    torch.save({**tensors, "fingerprint": fp}, tmp)
    os.replace(tmp, path)  # atomic: a kill mid-write leaves the previous checkpoint intact


def _load_checkpoint(path: str | Path, fingerprint: str) -> dict[str, torch.Tensor] | None:
    path = Path(path)
    if not path.exists():
        return None
    try:
        state = torch.load(path, weights_only=True, map_location="cpu")  # tensors only: no arbitrary unpickling
    except Exception as e:  # a corrupt checkpoint is ignored, never trusted
        log.warning("ignoring unreadable checkpoint %s (%s)", path, e)
        return None
    if bytes(state.pop("fingerprint").tolist()).decode() != fingerprint:
        log.warning("ignoring checkpoint %s: it was made by a different run (other data, rates, seeds or settings)", path)
        return None
    return state


def train(
    x: np.ndarray,
    y: np.ndarray,
    train_idx: np.ndarray,
    lr: np.ndarray,
    depth: int,
    width: int,
    init_seeds: np.ndarray,
    order_seeds: np.ndarray,
    settings: TrainSettings = TrainSettings(),
    init_params: Params | None = None,
    progress: Callable[[str], None] | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 1,
) -> TrainResult:
    """Train M models with plain minibatch SGD until each meets the stop rule, diverges or hits max_epochs.

    x: [N, d], y: [N] (labels in {-1, +1} for cross_entropy), train_idx: [M, n] rows of x
    each model trains on, lr: [M], init_seeds / order_seeds: [M].  Stopped models
    leave the batch at the next check, so they cost nothing afterwards.

    ``checkpoint``: a file the full training state is written to (atomically) every
    ``checkpoint_every`` checks.  If it exists and was made by the same call
    (same data, rates, seeds, shapes and settings), training resumes from it and
    ends with exactly the result of an uninterrupted run (data order is a pure
    function of (seed, epoch)).  It holds tensors only and loads with
    ``torch.load(weights_only=True)``: no arbitrary unpickling.
    """
    t0 = time.perf_counter()
    s = settings
    dev = resolve_device(s.device)
    dtype = getattr(torch, s.dtype)
    train_idx = np.asarray(train_idx)
    M, n = train_idx.shape
    lr = np.asarray(lr, dtype=np.float64)
    if lr.shape != (M,) or len(init_seeds) != M or len(order_seeds) != M:
        raise ValueError(f"lr, init_seeds and order_seeds must each have M = {M} entries")
    say = progress or log.info
    fingerprint = _fingerprint(x, y, train_idx, lr, depth, width, init_seeds, order_seeds, s) if checkpoint else ""

    X = torch.as_tensor(x, dtype=dtype, device=dev)  # [N, d]
    Y = torch.as_tensor(y, dtype=dtype, device=dev)  # [N]
    params = init_params if init_params is not None else glorot_init(depth, x.shape[1], width, np.asarray(init_seeds), dtype)
    final = [(W.clone(), b.clone()) for W, b in params]  # CPU copy, rows filled as models stop
    params = params_to(params, dev)
    lr_t = torch.as_tensor(lr, dtype=dtype, device=dev)
    idx_all = torch.as_tensor(train_idx, device=dev)

    active = np.arange(M)  # original ids of the models still training
    check_epochs = sorted(set(range(s.check_every, s.max_epochs + 1, s.check_every)) | {s.max_epochs})
    history = np.full((M, len(check_epochs)), np.nan)
    train_loss = np.full(M, np.nan)
    train_acc = np.full(M, np.nan)
    epochs = np.zeros(M, dtype=np.int64)
    converged = np.zeros(M, dtype=bool)
    diverged = np.zeros(M, dtype=bool)
    B = s.batch_size
    check_i = 0
    start = 1
    state = _load_checkpoint(checkpoint, fingerprint) if checkpoint else None
    if state is not None:
        start = int(state["epoch"]) + 1
        check_i = int(state["check_i"])
        active = state["active"].numpy()
        history, train_loss, train_acc = state["history"].numpy(), state["train_loss"].numpy(), state["train_acc"].numpy()
        epochs, converged, diverged = state["epochs"].numpy(), state["converged"].numpy(), state["diverged"].numpy()
        final = [(state[f"final_W{li}"], state[f"final_b{li}"]) for li in range(len(final))]
        params = [(state[f"W{li}"].to(dev), state[f"b{li}"].to(dev)) for li in range(len(final))]
        lr_t = torch.as_tensor(lr[active], dtype=dtype, device=dev)
        say(f"resumed from checkpoint {checkpoint} at epoch {start - 1}: {len(active)} of {M} models still training")

    with torch.no_grad():
        for epoch in range(start, s.max_epochs + 1):
            if len(active) == 0:
                break
            order = np.stack([epoch_order(order_seeds[m], epoch, n) for m in active])  # [M_act, n]
            rows = torch.gather(idx_all[active], 1, torch.as_tensor(order, device=dev))  # [M_act, n]
            for st in range(0, n, B):
                j = rows[:, st : st + B]
                sgd_step(params, X[j], Y[j], lr_t, s.loss)
            # cheap per-epoch divergence test on the output layer (NaN/inf spreads there first)
            bad = ~torch.isfinite(params[-1][0].sum((1, 2)) + params[-1][1].sum((1, 2)))
            is_check = epoch == check_epochs[check_i]
            if not (is_check or bool(bad.any())):
                continue
            bad = bad.cpu().numpy()  # [M_act] non-finite parameters
            conv = np.zeros_like(bad)
            if is_check:
                L, acc = full_loss(params, X, Y, idx_all[active], s.loss, s.eval_chunk)
                L, acc = L.double().cpu().numpy(), acc.double().cpu().numpy()
                bad |= ~np.isfinite(L)
                history[active, check_i] = np.where(bad, np.inf, L)
                train_loss[active] = L
                train_acc[active] = acc
                conv = ((acc >= 1.0) if s.loss == "cross_entropy" else (L < s.loss_threshold)) & ~bad
                check_i += 1
            train_loss[active[bad]] = np.inf
            diverged[active[bad]] = True
            converged[active[conv]] = True
            stop = bad | conv | (epoch == s.max_epochs)
            if stop.any():
                leaving = np.flatnonzero(stop)
                for li, (W, b) in enumerate(params):
                    final[li][0][active[leaving]] = W[leaving].cpu()
                    final[li][1][active[leaving]] = b[leaving].cpu()
                epochs[active[leaving]] = epoch
                keep = torch.as_tensor(np.flatnonzero(~stop), device=dev)
                params = [(W.index_select(0, keep), b.index_select(0, keep)) for W, b in params]
                lr_t = lr_t.index_select(0, keep)
                active = active[~stop]
            if is_check:
                finite = train_loss[np.isfinite(train_loss)]
                say(
                    f"epoch {epoch}/{s.max_epochs}: {len(active)} of {M} models still training, "
                    f"{int(converged.sum())} converged, {int(diverged.sum())} diverged, "
                    f"lowest train loss {finite.min() if finite.size else float('nan'):.3g}, "
                    f"{time.perf_counter() - t0:.1f}s"
                )
                if checkpoint and check_i % checkpoint_every == 0:
                    tensors = {"epoch": torch.tensor(epoch), "check_i": torch.tensor(check_i), "active": torch.as_tensor(active),
                               "history": torch.as_tensor(history), "train_loss": torch.as_tensor(train_loss),
                               "train_acc": torch.as_tensor(train_acc), "epochs": torch.as_tensor(epochs),
                               "converged": torch.as_tensor(converged), "diverged": torch.as_tensor(diverged)}
                    for li, (W, b) in enumerate(params):
                        tensors[f"W{li}"], tensors[f"b{li}"] = W.cpu(), b.cpu()
                        tensors[f"final_W{li}"], tensors[f"final_b{li}"] = final[li]
                    _save_checkpoint(checkpoint, fingerprint, tensors)

    ce = np.asarray(check_epochs)
    return TrainResult(
        train_loss=train_loss,
        train_accuracy=train_acc if s.loss == "cross_entropy" else np.full(M, np.nan),
        epochs=epochs,
        converged=converged,
        diverged=diverged,
        check_epochs=ce,
        history=history,
        params=final,
        seconds=time.perf_counter() - t0,
    )
