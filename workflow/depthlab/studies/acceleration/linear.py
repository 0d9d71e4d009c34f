"""Depth as an optimiser (Arora, Cohen & Hazan 2018): l_p linear regression as a depth-N linear network.

Loss, parameter w in R^d:  L(w) = (1/m) sum_i (1/p) |x_i.w - y_i|^p,  grad L(w) = (1/m) X^T (|r|^(p-2) r), r = Xw - y.

The depth-N net w_e = W_N ... W_1 (W_1 [h, d], W_2 .. W_{N-1} [h, h], W_N [1, h]) expresses exactly the same functions;
full-batch gradient descent on its factors with weight decay lambda,

    W_j <- (1 - eta lambda) W_j - eta (W_N ... W_{j+1})^T grad L(w_e) (W_{j-1} ... W_1)^T,

changes how w_e moves.  For a balanced start (W_{j+1}^T W_{j+1} = W_j W_j^T) and small eta, w_e follows the
end-to-end rule (the paper's Theorem 1 for a single output, SPEC §5), which needs no network:

    w <- (1 - eta lambda N) w - eta |w|^(2 - 2/N) (grad L(w) + (N - 1) P_w grad L(w)),   P_w = w w^T / |w|^2.

At N = 1 both are plain gradient descent.  M models (learning rates x seeds) move at once: every array has a leading
axis M.  The factors' gradients use the chain's row products v_{j+1} = W_N ... W_{j+1} [M, 1, h] and the gradient's
images u_j = grad L (W_{j-1} ... W_1)^T [M, 1, h], so a step costs O(m d + N h^2) per model, never a d x d product.
"""

from __future__ import annotations

import math

import torch

from depthlab.core.seeds import seed


def residual(X: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """r = X w - y for every model: w [M, d] -> [M, m]."""
    return w @ X.T - y


def lp_loss(X: torch.Tensor, y: torch.Tensor, w: torch.Tensor, p: int) -> torch.Tensor:
    """L(w) per model, [M]."""
    return (residual(X, y, w).abs() ** p).mean(1) / p


def lp_grad(X: torch.Tensor, y: torch.Tensor, w: torch.Tensor, p: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(L(w) [M], grad L(w) [M, d])."""
    r = residual(X, y, w)
    a = r.abs()
    return (a**p).mean(1) / p, (a ** (p - 2) * r) @ X / X.shape[0]


def on_rows(fn, w: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
    """``fn(w)`` computed on the rows of ``w`` [M, d] where ``rows`` [M] is True only (the rest zero): the models that
    left a batch cost nothing.  ``rows`` None: every row."""
    if rows is None or bool(rows.all()):
        return fn(w)
    idx = torch.nonzero(rows).squeeze(1)
    part = fn(w.index_select(0, idx))
    out = torch.zeros((w.shape[0], *part.shape[1:]), dtype=part.dtype, device=part.device)
    out[idx] = part
    return out


class Problem:
    """L(w) and its gradient for every model on one data set.  For p = 2 the loss is a quadratic form,
    L(w) = (1/2) w^T A w - b^T w + c with A = X^T X / m, b = X^T y / m, c = |y|^2 / (2 m), so a step costs O(M d^2)
    instead of O(M m d) (the synthetic task: d = 128 against m = 2565); for p = 4, :func:`lp_grad`."""

    def __init__(self, X: torch.Tensor, y: torch.Tensor, p: int):
        self.X, self.y, self.p = X, y, p
        if p == 2:
            m = X.shape[0]
            self.A, self.b, self.c = X.T @ X / m, X.T @ y / m, float(y @ y) / (2 * m)

    def loss(self, w: torch.Tensor) -> torch.Tensor:
        if self.p != 2:
            return lp_loss(self.X, self.y, w, self.p)
        Aw = w @ self.A
        return 0.5 * (Aw * w).sum(1) - w @ self.b + self.c

    def grad(self, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(L(w) [M], grad L(w) [M, d])."""
        if self.p != 2:
            return lp_grad(self.X, self.y, w, self.p)
        Aw = w @ self.A
        return 0.5 * (Aw * w).sum(1) - w @ self.b + self.c, Aw - self.b


def end_to_end(Ws: list[torch.Tensor]) -> torch.Tensor:
    """w_e = W_N ... W_1 as [M, d] (Ws[0] = W_1 [M, h, d], ..., Ws[-1] = W_N [M, 1, h])."""
    v = Ws[-1]
    for W in reversed(Ws[:-1]):
        v = torch.bmm(v, W)
    return v[:, 0, :]


def net_step(Ws: list[torch.Tensor], g: torch.Tensor, lr: torch.Tensor, weight_decay: float) -> None:
    """One gradient-descent step of every factor, in place, given g = grad L(w_e) [M, d] at the current factors."""
    N = len(Ws)
    lr3 = lr.view(-1, 1, 1)
    # factors F_0 = W_1 ... F_{N-1} = W_N; rows[j] = F_{N-1} ... F_{j+1}, the product above F_j, [M, 1, h] (rows[N-1] = 1)
    rows = [None] * N
    rows[N - 1] = torch.ones(g.shape[0], 1, 1, dtype=g.dtype, device=g.device)
    for j in range(N - 2, -1, -1):
        rows[j] = torch.bmm(rows[j + 1], Ws[j + 1])
    # cols[j] = g (F_{j-1} ... F_0)^T, the gradient's image below F_j, [M, 1, h] (cols[0] = g itself, [M, 1, d])
    cols = [g.unsqueeze(1)]
    for j in range(N - 1):
        cols.append(torch.bmm(cols[-1], Ws[j].transpose(1, 2)))
    grads = [torch.bmm(rows[j].transpose(1, 2), cols[j]) for j in range(N)]  # d L / d F_j = rows_j^T cols_j
    for W, G in zip(Ws, grads):
        if weight_decay:
            W.mul_(1.0 - lr3 * weight_decay)
        W.sub_(lr3 * G)


def rule_step(w: torch.Tensor, g: torch.Tensor, lr: torch.Tensor, N: int, weight_decay: float) -> None:
    """One step of the end-to-end rule, in place: w [M, d], g = grad L(w) [M, d], lr [M]."""
    lr2 = lr.view(-1, 1)
    norm2 = (w * w).sum(1, keepdim=True)  # |w|^2
    if N > 1:
        proj = (g * w).sum(1, keepdim=True) / norm2.clamp_min(1e-300) * w  # P_w g
        step = norm2 ** (1.0 - 1.0 / N) * (g + (N - 1) * proj)
    else:
        step = g
    if weight_decay:
        w.mul_(1.0 - lr2 * weight_decay * N)
    w.sub_(lr2 * step)


def balanced_init(
    M: int, d: int, h: int, N: int, scale: float, gen: torch.Generator, dtype=torch.float64
) -> list[torch.Tensor]:
    """Balanced near-zero factors with |w_e| = scale: W_1 = s a_1 r^T, W_j = s a_j a_{j-1}^T, W_N = s a_{N-1}^T
    (r, a_j random unit vectors, s = scale^(1/N)), so W_{j+1}^T W_{j+1} = s^2 a_j a_j^T = W_j W_j^T exactly."""
    s = scale ** (1.0 / N)
    r = torch.randn(M, d, generator=gen, dtype=dtype)
    r /= r.norm(dim=1, keepdim=True)
    if N == 1:
        return [(s * r).unsqueeze(1)]
    a = torch.randn(N - 1, M, h, generator=gen, dtype=dtype)
    a /= a.norm(dim=2, keepdim=True)
    Ws = [s * a[0].unsqueeze(2) * r.unsqueeze(1)]  # [M, h, d]
    Ws += [s * a[j].unsqueeze(2) * a[j - 1].unsqueeze(1) for j in range(1, N - 1)]  # [M, h, h]
    Ws.append(s * a[N - 2].unsqueeze(1))  # [M, 1, h]
    return Ws


def gaussian_init(
    M: int, d: int, h: int, N: int, scale: float, gen: torch.Generator, dtype=torch.float64
) -> list[torch.Tensor]:
    """Independent Gaussian factors (not balanced), scaled together so that |w_e| = scale: every entry N(0, 1), then
    every factor times (scale / |W_N ... W_1|)^(1/N).  The same |w_e(0)| as the balanced start, so a depth-N run and the
    depth-1 run from this kind of start begin equally far from zero (a fixed entry std would put w_e of depth 1 at
    std sqrt(d) and of depth N orders of magnitude nearer zero)."""
    shapes = [(h, d)] + [(h, h)] * (N - 2) + [(1, h)] if N > 1 else [(1, d)]
    Ws = [torch.randn(M, *sh, generator=gen, dtype=dtype) for sh in shapes]
    c = (scale / end_to_end(Ws).norm(dim=1)) ** (1.0 / N)  # [M]
    return [W * c.view(-1, 1, 1) for W in Ws]


def balancedness(Ws: list[torch.Tensor]) -> torch.Tensor:
    """max_j |W_{j+1}^T W_{j+1} - W_j W_j^T|_F / |W_j W_j^T|_F per model [M] (0 for a balanced net; N = 1: 0)."""
    out = torch.zeros(Ws[0].shape[0], dtype=Ws[0].dtype, device=Ws[0].device)
    for W, V in zip(Ws[:-1], Ws[1:]):
        a = torch.bmm(V.transpose(1, 2), V)
        b = torch.bmm(W, W.transpose(1, 2))
        out = torch.maximum(out, (a - b).flatten(1).norm(dim=1) / b.flatten(1).norm(dim=1).clamp_min(1e-300))
    return out


def diverged(loss: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """A run has diverged when its loss is non-finite or a million times its start."""
    return ~torch.isfinite(loss) | (loss > 1e6 * start)


TRACK_EVERY_CAP = 4096  # rows of history kept per run, beyond the first TRACK_ALL: evenly spaced
TRACK_ALL = 512  # every one of the first iterations is kept (the fast rates' whole descent)


def history_steps(iterations: int) -> list[int]:
    """The iterations (0 = start) at which losses and distances are stored: every one up to TRACK_ALL, then evenly spaced."""
    every = max(1, math.ceil(iterations / TRACK_EVERY_CAP))
    return sorted(set(range(0, min(iterations, TRACK_ALL) + 1)) | set(range(0, iterations + 1, every)) | {iterations})


def starts(init: str, seeds, d: int, h: int, N: int, scale: float, reps: int, device) -> list[torch.Tensor]:
    """The factors every model starts from: seed s's, balanced or Gaussian, both with |w_e| = scale, repeated for each of
    ``reps`` rates; model m = (rate m // S, seed m % S).  The generator is keyed by the seed only, so a balanced start
    points w_e the same way at every depth."""
    per_seed = []
    for s in seeds:
        gen = torch.Generator().manual_seed(seed(s, "accel_init"))
        per_seed.append(
            balanced_init(1, d, h, N, scale, gen) if init == "balanced" else gaussian_init(1, d, h, N, scale, gen)
        )
    return [torch.cat([f[j] for f in per_seed] * reps).to(device) for j in range(len(per_seed[0]))]
