"""The 3-layer mean-field learner of Ren, Zhou & Ge (2023) for f*(x) = ReLU(1 - |x|/r0) (lecture notes §5.2), and its
reduced (infinite-width) model.

First layer, m 2-homogeneous neurons:   F(x) = (1/m) sum_i |v_i| sigma(v_i . x)
Second layer, m2 neurons (no output weights, the notes' form):   f(x) = (1/m2) sum_j sigma(w_j F(x) + b_j)
Loss: L = (1/2) E_x (f*(x) - f(x))^2 over the training set.

Mean-field gradient descent moves every neuron by its own gradient times its layer's width (v_i <- v_i - eta m dL/dv_i,
(w_j, b_j) <- (w_j, b_j) - eta m2 dL/d(w_j, b_j)): the time-rescaled gradient flow of the neurons' distribution, so
each neuron moves O(eta) per step whatever the width.

Symmetrisation.  For a spherically symmetric first layer, E_v[|v| sigma(v.x)] = E|v|^2 E_{u ~ S^(d-1)}[sigma(u_1)] |x|,
so in the infinite-width limit F(x) = alpha |x| with

    alpha = C_d mean_i |v_i|^2,   C_d = E[max(0, u_1)] = Gamma(d/2) / (2 sqrt(pi) Gamma((d+1)/2))   (:func:`c_d`),

which is also how alpha of a finite net is defined here (the notes' alpha).  Under the flow of a symmetric layer,
d|v|^2/dt = 4 |v| E_x[S(x) sigma(v.x)] (sigma'(z) z = sigma(z)), S(x) = (f* - f)(x) (1/m2) sum_j sigma'(w_j F + b_j) w_j,
so alpha obeys one scalar equation, dalpha/dt = 4 C_d alpha E_x[S(x) |x|]: the reduced model replaces F by exactly
alpha |x| and moves alpha by that equation (stepped with the same eta, see :func:`reduced_step`) and the second layer
as the net's.
The deviation of the finite first layer from its symmetrisation is |F/alpha - |x|| / ||x|| (L2 over the test inputs).
"""

from __future__ import annotations

import math

import torch


def c_d(d: int) -> float:
    """E[max(0, u_1)] for u uniform on the unit sphere S^(d-1)."""
    return math.exp(math.lgamma(d / 2) - math.lgamma((d + 1) / 2)) / (2 * math.sqrt(math.pi))


BLOCK_ELEMENTS = 1 << 26  # the [M, rows, m] pre-activations are formed this many elements at a time (256 MB of float32)


def row_blocks(n: int, M: int, m: int) -> list[slice]:
    """Row blocks of the n inputs such that [M, rows, m] holds at most BLOCK_ELEMENTS (the paper's m = 8192,
    d = 128 learner planned 82.6 GiB with every point at once).  One block when it all fits (every default job), so the
    arithmetic is the unblocked one's to the bit there."""
    rows = max(1, BLOCK_ELEMENTS // max(1, M * m))
    return [slice(s, min(n, s + rows)) for s in range(0, n, rows)] or [slice(0, 0)]


def first_layer(V: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """F(x) for every model: V [M, m, d], X [n, d] -> [M, n] (in row blocks: :func:`row_blocks`)."""
    norm = V.norm(dim=2).unsqueeze(1)
    return torch.cat(
        [
            (norm * torch.relu(torch.einsum("nd,Mmd->Mnm", X[s], V))).mean(2)
            for s in row_blocks(X.shape[0], V.shape[0], V.shape[1])
        ],
        1,
    )


def second_layer(F: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """f = (1/m2) sum_j sigma(w_j F + b_j): F [M, n], w, b [M, m2] -> [M, n]."""
    return torch.relu(F.unsqueeze(2) * w.unsqueeze(1) + b.unsqueeze(1)).mean(2)


def loss(f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(1/2) mean (f* - f)^2 per model, [M]."""
    return 0.5 * ((y - f) ** 2).mean(1)


def net_grads(V: torch.Tensor, w: torch.Tensor, b: torch.Tensor, X: torch.Tensor, y: torch.Tensor):
    """The loss and its gradients in closed form (backpropagation written out), per model:
    returns (L [M], dL/dV [M, m, d], dL/dw [M, m2], dL/db [M, m2]).

    With r = f - y, z_nj = w_j F_n + b_j and g_n = dL/dF_n = (1/n) r_n (1/m2) sum_j sigma'(z_nj) w_j:
    dL/dw_j = (1/n) sum_n r_n sigma'(z_nj) F_n / m2,   dL/db_j = (1/n) sum_n r_n sigma'(z_nj) / m2,
    dL/dv_i = (1/m) [ (v_i/|v_i|) sum_n g_n sigma(v_i.x_n) + |v_i| sum_n g_n sigma'(v_i.x_n) x_n ]."""
    n, m, m2 = X.shape[0], V.shape[1], w.shape[1]
    norm = V.norm(dim=2)  # [M, m]
    Lsum = torch.zeros(V.shape[0], dtype=V.dtype, device=V.device)
    gb = torch.zeros_like(w)
    gw = torch.zeros_like(w)
    a = torch.zeros_like(norm)
    B = torch.zeros_like(V)
    for s in row_blocks(n, V.shape[0], m):  # every sum over the n points is a sum over blocks: exact to rounding
        Xs, ys = X[s], y[..., s]
        pre = torch.einsum("nd,Mmd->Mnm", Xs, V)  # [M, rows, m]
        rp = torch.relu(pre)
        F = torch.bmm(rp, norm.unsqueeze(2)).squeeze(2) / m  # [M, rows]
        z = F.unsqueeze(2) * w.unsqueeze(1) + b.unsqueeze(1)  # [M, rows, m2]
        on = (z > 0).to(z.dtype)
        r = (z * on).mean(2) - ys  # f - y
        gb += (r.unsqueeze(2) * on).sum(1) / (n * m2)
        gw += ((r * F).unsqueeze(2) * on).sum(1) / (n * m2)
        g = r * (on * w.unsqueeze(1)).sum(2) / (n * m2)  # dL/dF_n
        a += torch.bmm(g.unsqueeze(1), rp).squeeze(1)  # sum_n g_n sigma(v_i.x_n), [M, m]
        G = (pre > 0).to(pre.dtype) * g.unsqueeze(2)  # g_n sigma'(v_i.x_n), [M, rows, m]
        B += torch.bmm(
            G.transpose(1, 2), Xs.expand(V.shape[0], Xs.shape[0], Xs.shape[1])
        )  # sum_n g_n sigma'(v_i.x_n) x_n
        Lsum += (r * r).sum(1)
        del pre, rp, G  # before the next block's are made: one block's arrays alive at a time
    gV = (V / norm.clamp_min(torch.finfo(V.dtype).tiny).unsqueeze(2) * a.unsqueeze(2) + norm.unsqueeze(2) * B) / m
    return 0.5 * Lsum / n, gV, gw, gb


def _per_model(lr: float | torch.Tensor, like: torch.Tensor, dims: int) -> torch.Tensor | float:
    """A rate per model [M] shaped to broadcast over a tensor with ``dims`` trailing dimensions (a float stays a float)."""
    return lr if not isinstance(lr, torch.Tensor) else lr.to(like.dtype).reshape(-1, *([1] * dims))


def net_step(
    V: torch.Tensor, w: torch.Tensor, b: torch.Tensor, X: torch.Tensor, y: torch.Tensor, lr: float | torch.Tensor
) -> torch.Tensor:
    """One mean-field gradient step of every neuron, in place (``lr``: one rate, or one per model [M]); returns the loss
    before the step [M]."""
    L, gV, gw, gb = net_grads(V, w, b, X, y)
    V.sub_(_per_model(lr, V, 2) * V.shape[1] * gV)
    w.sub_(_per_model(lr, w, 1) * w.shape[1] * gw)
    b.sub_(_per_model(lr, b, 1) * b.shape[1] * gb)
    return L


def reduced_grads(alpha: torch.Tensor, w: torch.Tensor, b: torch.Tensor, X: torch.Tensor, y: torch.Tensor):
    """The reduced model's loss (F = alpha |x|) and its gradients in closed form: (L [M], dL/dalpha [M], dL/dw, dL/db).
    dL/dalpha = -E[S(x) |x|] with S the notes' S(x) = (f* - f)(x) (1/m2) sum_j sigma'(w_j F + b_j) w_j."""
    n, m2 = X.shape[0], w.shape[1]
    rad = X.norm(dim=1)  # [n]
    F = alpha.unsqueeze(1) * rad
    z = F.unsqueeze(2) * w.unsqueeze(1) + b.unsqueeze(1)
    f = torch.relu(z).mean(2)
    r = f - y
    on = (z > 0).to(z.dtype)
    gw = torch.einsum("Mn,Mnj,Mn->Mj", r, on, F) / (n * m2)
    gb = torch.einsum("Mn,Mnj->Mj", r, on) / (n * m2)
    galpha = (r * torch.einsum("Mnj,Mj->Mn", on, w) / m2 * rad).mean(1)
    return 0.5 * (r * r).mean(1), galpha, gw, gb


def reduced_step(
    alpha: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    lr: float | torch.Tensor,
    d: int,
) -> torch.Tensor:
    """One step of the reduced model, in place: alpha <- alpha exp(-eta 4 C_d dL/dalpha), the exact solution over the step
    of dalpha/dt = 4 C_d alpha E[S |x|] (= -4 C_d alpha dL/dalpha) with the gradient held fixed, so alpha keeps its sign
    as C_d mean |v_i|^2 does (the explicit Euler step can flip it at a large rate); the second layer moves as the net's
    (mean-field scaled).  alpha [M]; returns the loss before the step [M]."""
    L, ga, gw, gb = reduced_grads(alpha, w, b, X, y)
    alpha.mul_(torch.exp(-_per_model(lr, alpha, 0) * 4 * c_d(d) * ga))
    w.sub_(_per_model(lr, w, 1) * w.shape[1] * gw)
    b.sub_(_per_model(lr, b, 1) * b.shape[1] * gb)
    return L


def alpha_of(V: torch.Tensor) -> torch.Tensor:
    """alpha = C_d mean_i |v_i|^2 of every model, [M]."""
    return c_d(V.shape[2]) * (V * V).sum(2).mean(1)


def deviation(V: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """|F/alpha - |x|| / ||x|| (L2 over the rows of X), per model [M]: the first layer against its symmetrisation."""
    r = X.norm(dim=1)
    F = first_layer(V, X)
    return (F / alpha_of(V).unsqueeze(1) - r).norm(dim=1) / r.norm()


def init(
    M: int, m: int, m2: int, d: int, gen: torch.Generator, dtype=torch.float32
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A spherically symmetric first layer, v_i ~ N(0, I / (d C_d)) so that alpha = C_d E|v|^2 = 1 in expectation
    (F ~ |x| at the start); second layer w_j, b_j ~ N(0, 1)."""
    V = torch.randn(M, m, d, generator=gen, dtype=dtype) / math.sqrt(d * c_d(d))
    return V, torch.randn(M, m2, generator=gen, dtype=dtype), torch.randn(M, m2, generator=gen, dtype=dtype)


def n_params(m: int, m2: int, d: int) -> int:
    """m d (the first layer's neurons, no biases) + 2 m2 (the second layer's weights and biases)."""
    return m * d + 2 * m2
