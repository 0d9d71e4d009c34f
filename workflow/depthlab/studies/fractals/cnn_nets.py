"""The CNNs of Malach & Shalev-Shwartz's Fig. 7, and their training (Adam, cross-entropy over 10 classes).

A net of depth D and width w: D convolutions of k x k ("same" padding, stride 1) with w channels and a ReLU
each, a 2 x 2 max-pool after each of the first two (the paper: pooling in the first two layers only), then a
linear readout of the flattened feature map to 10 classes.  Parameters: sum over layers (c_in k^2 + 1) w
plus (w s_out^2 + 1) 10, with s_out the side after the pools.

Every (lr, seed) of one (depth, width) trains in turn; seed s fixes the initialisation (torch's default init
under a seeded generator) and the data order (:func:`depthlab.core.trainer.epoch_order`); with ``augment``,
each training image is randomly cropped to ``crop`` and flipped left-right (the TF CIFAR-10 tutorial's
pipeline; the test set is centre-cropped).  The test accuracy is measured every ``check_every`` epochs: the
paper's number is the best along the run; a model stops when the stop rule says its test accuracy stopped improving,
or at the epoch budget.  A finished model's curve is checkpointed, so a killed job loses at most the model in progress.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch
from torch import nn

from depthlab.core.stopping import REASONS, StopRule, StopState
from depthlab.core.trainer import epoch_order

CLASSES = 10


def side_after(size: int, depth: int) -> int:
    """The feature map's side after the pools of the first min(depth, 2) layers (2 x 2, floor)."""
    for _ in range(min(depth, 2)):
        size //= 2
    return size


def count_params(depth: int, width: int, kernel: int, channels: int, size: int) -> int:
    """The hand count of the docstring."""
    conv = sum((c_in * kernel * kernel + 1) * width for c_in in [channels] + [width] * (depth - 1))
    return conv + (width * side_after(size, depth) ** 2 + 1) * CLASSES


def build(depth: int, width: int, kernel: int, channels: int, size: int, seed: int) -> nn.Sequential:
    if side_after(size, depth) < 1:
        raise ValueError(f"a {size} x {size} image has no pixels left after the pools")
    g = torch.random.fork_rng(devices=[])
    with g:
        torch.manual_seed(int(seed))
        layers: list[nn.Module] = []
        c_in = channels
        for ell in range(depth):
            layers += [nn.Conv2d(c_in, width, kernel, padding=kernel // 2), nn.ReLU()]
            if ell < 2:
                layers.append(nn.MaxPool2d(2))
            c_in = width
        layers += [nn.Flatten(), nn.Linear(width * side_after(size, depth) ** 2, CLASSES)]
        return nn.Sequential(*layers)


def _augment(x: torch.Tensor, crop: int, rng: np.random.Generator) -> torch.Tensor:
    """Random crop to crop x crop and a random left-right flip, per image (x: [B, C, S, S])."""
    B, S = x.shape[0], x.shape[-1]
    i, j = rng.integers(0, S - crop + 1, B), rng.integers(0, S - crop + 1, B)
    out = torch.stack([x[b, :, i[b] : i[b] + crop, j[b] : j[b] + crop] for b in range(B)])
    flip = torch.as_tensor(rng.random(B) < 0.5)
    out[flip] = out[flip].flip(-1)
    return out


def centre(x: torch.Tensor, crop: int) -> torch.Tensor:
    o = (x.shape[-1] - crop) // 2
    return x[..., o : o + crop, o : o + crop]


def accuracy(net: nn.Module, x: torch.Tensor, y: torch.Tensor, chunk: int = 2048) -> float:
    with torch.no_grad():
        hits = sum(int((net(x[s : s + chunk]).argmax(1) == y[s : s + chunk]).sum()) for s in range(0, len(y), chunk))
    return hits / len(y)


def train(
    x: np.ndarray,
    y: np.ndarray,
    xt: np.ndarray,
    yt: np.ndarray,
    *,
    depth: int,
    width: int,
    kernel: int,
    lrs: np.ndarray,
    init_seeds: np.ndarray,
    order_seeds: np.ndarray,
    epochs: int,
    batch_size: int,
    check_every: int,
    augment: bool,
    crop: int,
    device: str,
    progress: Callable[[str], None],
    stop: StopRule,
    checkpoint=None,
) -> tuple[np.ndarray, np.ndarray, StopState]:
    """Test accuracy [len(lrs) * S, checks] of model m = (lr m // S, seed m % S) (NaN after it stopped), the check
    epochs, and the stop rule's state (why and when each stopped; ``stop`` monitors the test error).

    x: [N, C, S, S] float32 (standardised), y: [N] int64; the same for the test set.
    """
    dev = torch.device(device)
    S = len(init_seeds)
    checks = np.array(sorted(set(range(check_every, epochs + 1, check_every)) | {epochs}))
    X, Y = torch.as_tensor(x, dtype=torch.float32, device=dev), torch.as_tensor(y, device=dev)
    side = crop if augment else x.shape[-1]
    XT = torch.as_tensor(xt, dtype=torch.float32, device=dev)
    XT = centre(XT, crop) if augment else XT
    YT = torch.as_tensor(yt, device=dev)
    key = (
        f"cnn|{x.shape}|{float(x.sum())!r}|{xt.shape}|{depth}|{width}|{kernel}|{list(lrs)}|{list(init_seeds)}|{list(order_seeds)}|"
        f"{epochs}|{batch_size}|{check_every}|{augment}|{crop}|{stop!r}"
    )
    done = checkpoint.load(key) if checkpoint is not None else None
    acc = np.full((len(lrs) * S, len(checks)), np.nan)
    state = stop.start(len(acc))
    start = 0
    if done is not None:
        start = int(done["done"])
        acc[:start] = done["acc"][:start].numpy()
        state = StopState(**{k: done[f"stop/{k}"].numpy().copy() for k in StopState.FIELDS})
        progress(f"resumed from checkpoint: {start} of {len(acc)} models already trained")
    n = len(Y)
    for m in range(start, len(acc)):
        lr, s = float(lrs[m // S]), m % S
        net = build(depth, width, kernel, x.shape[1], side, int(init_seeds[s])).to(dev)
        opt = torch.optim.Adam(net.parameters(), lr=lr, fused=True)  # one pass per step: the fractal MLPs' kernel
        c = 0
        ids = np.array([m])
        for epoch in range(1, epochs + 1):
            order = torch.as_tensor(epoch_order(int(order_seeds[s]), epoch, n), device=dev)
            rng = np.random.default_rng([int(order_seeds[s]), epoch, 1])
            for a in range(0, n, batch_size):
                j = order[a : a + batch_size]
                xb = _augment(X[j], crop, rng) if augment else X[j]
                loss = nn.functional.cross_entropy(net(xb), Y[j])
                opt.zero_grad()
                loss.backward()
                opt.step()
            if not torch.isfinite(loss):  # diverged: its record so far is kept
                StopRule.diverge(state, ids, epoch)
                break
            if epoch == checks[c]:
                acc[m, c] = accuracy(net, XT, YT)
                c += 1
                if stop.update(state, ids, np.array([1.0 - acc[m, c - 1]]), np.array([False]), epoch)[0]:
                    break
        else:
            StopRule.budget(state, ids, epochs)
        progress(
            f"depth {depth} width {width} lr {lr:g} seed {s}: best test accuracy {np.nanmax(acc[m]) if np.isfinite(acc[m]).any() else np.nan:.4f}, "
            f"{REASONS[state.reason[m]]} at epoch {state.stopped_at[m]}"
        )
        if checkpoint is not None:
            checkpoint.save(
                key,
                {
                    "done": torch.tensor(m + 1),
                    "acc": torch.as_tensor(acc),
                    **{f"stop/{k}": torch.as_tensor(getattr(state, k)) for k in StopState.FIELDS},
                },
            )
    return acc, checks, state
