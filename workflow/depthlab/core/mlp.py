"""M stacked fully connected ReLU nets of one shape: parameters, initialisation, forward pass.

A net of ``depth`` L hidden ReLU layers of width h and a scalar linear output:

    z_0 = x,  z_l = relu(z_{l-1} W_l + b_l)  (l = 1..L),  f = z_L W_{L+1} + b_{L+1}.

Depth counts hidden layers everywhere in depthlab (the literature's "2-layer net"
is depth 1).  M models are stacked along a leading axis so one layer of all of
them is one batched matmul: ``W_l [M, n_{l-1}, n_l]``, ``b_l [M, 1, n_l]``.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

from .shapes import layer_sizes, n_params  # noqa: F401  (re-exported)

# One layer's stacked parameters: (W [M, in, out], b [M, 1, out]).
Params = list[tuple[torch.Tensor, torch.Tensor]]


# ---- initialisation schemes ----------------------------------------------------------
# Each draws one model's (W [in, out], b [out]) from its own generator.  Weights are
# drawn as [out, in] like nn.Linear.weight and transposed, so a plain nn.Sequential
# loads the very same numbers (the reference tests rely on it).

Init = Callable[[int, int, torch.Generator, torch.dtype], tuple[torch.Tensor, torch.Tensor]]


def _glorot_uniform(
    fan_in: int, fan_out: int, g: torch.Generator, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """Glorot (Xavier) uniform U(-a, a), a = sqrt(6 / (fan_in + fan_out)); zero biases (Mori & Ueda)."""
    a = math.sqrt(6.0 / (fan_in + fan_out))
    W = (torch.rand(fan_out, fan_in, generator=g, dtype=dtype) * 2 - 1).mul_(a).T
    return W, torch.zeros(fan_out, dtype=dtype)


def _truncated_normal(
    fan_in: int, fan_out: int, g: torch.Generator, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """Normal with std 1/sqrt(fan_in), redrawn beyond 2 std (TF1 truncated_normal); biases 0.1 (Malach & Shalev-Shwartz's code)."""
    std = 1.0 / math.sqrt(fan_in)
    W = torch.empty(fan_out, fan_in, dtype=dtype)
    torch.nn.init.trunc_normal_(W, mean=0.0, std=std, a=-2 * std, b=2 * std, generator=g)
    return W.T, torch.full((fan_out,), 0.1, dtype=dtype)


def _torch_default(
    fan_in: int, fan_out: int, g: torch.Generator, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """nn.Linear's default: weights and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)).

    Random biases spread the kinks of a 1-D net over the input interval (zero biases
    put every first-layer kink at x = 0), which the sawtooth experiments need.
    """
    a = 1.0 / math.sqrt(fan_in)
    W = (torch.rand(fan_out, fan_in, generator=g, dtype=dtype) * 2 - 1).mul_(a).T
    b = (torch.rand(fan_out, generator=g, dtype=dtype) * 2 - 1).mul_(a)
    return W, b


INITS: dict[str, Init] = {
    "glorot_uniform": _glorot_uniform,
    "truncated_normal": _truncated_normal,
    "torch_default": _torch_default,
}


def init_params(
    sizes: list[int], seeds: np.ndarray, scheme: str = "glorot_uniform", dtype: torch.dtype = torch.float32
) -> Params:
    """Stacked CPU parameters of M = len(seeds) nets with layer sizes ``sizes``; model m uses generator seeds[m]."""
    if scheme not in INITS:
        raise ValueError(f"init scheme must be one of {sorted(INITS)}, got {scheme!r}")
    draw = INITS[scheme]
    M = len(seeds)
    gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
    params: Params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        W = torch.empty(M, fan_in, fan_out, dtype=dtype)
        b = torch.empty(M, 1, fan_out, dtype=dtype)
        for m, g in enumerate(gens):
            W[m], b[m, 0] = draw(fan_in, fan_out, g, dtype)
        params.append((W, b))
    return params


def select(params: Params, rows: np.ndarray | list[int]) -> Params:
    """The models ``rows`` of a stack (a copy)."""
    idx = torch.as_tensor(np.asarray(rows, dtype=np.int64))
    return [(W.index_select(0, idx.to(W.device)), b.index_select(0, idx.to(b.device))) for W, b in params]


def to(params: Params, device: torch.device | str, dtype: torch.dtype | None = None) -> Params:
    return [
        (W.to(device=device, dtype=dtype or W.dtype), b.to(device=device, dtype=dtype or b.dtype)) for W, b in params
    ]


def forward(params: Params, x: torch.Tensor) -> torch.Tensor:
    """Outputs of all models. x: [M, n, d] (per-model rows) or [n, d] (shared) -> [M, n]."""
    a = x if x.dim() == 3 else x.unsqueeze(0).expand(params[0][0].shape[0], -1, -1)
    for W, b in params[:-1]:
        a = torch.relu(torch.baddbmm(b, a, W))
    W, b = params[-1]
    return torch.baddbmm(b, a, W).squeeze(-1)


def predict(params: Params, x: np.ndarray | torch.Tensor, chunk: int = 8192) -> np.ndarray:
    """Outputs of all M models on shared inputs x [n, d] -> float64 numpy [M, n] (chunked over rows)."""
    W0 = params[0][0]
    xt = torch.as_tensor(x, dtype=W0.dtype, device=W0.device)
    with torch.no_grad():
        outs = [forward(params, xt[s : s + chunk]) for s in range(0, xt.shape[0], chunk)]
    return torch.cat(outs, 1).double().cpu().numpy()
