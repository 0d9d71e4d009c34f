"""Small linear-algebra helpers shared by the kernel methods."""

from __future__ import annotations

import numpy as np
import torch


def cholesky_with_jitter(K: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Cholesky of K, adding the smallest jitter 10^j * mean(diag) (j = -12, -11, ...) that succeeds."""
    L, info = torch.linalg.cholesky_ex(K)
    if int(info) == 0:
        return L, 0.0
    scale = float(K.diagonal().mean())
    for j in range(-12, -1):
        jit = scale * 10.0**j
        L, info = torch.linalg.cholesky_ex(K + jit * torch.eye(K.shape[0], dtype=K.dtype, device=K.device))
        if int(info) == 0:
            return L, jit
    raise np.linalg.LinAlgError("kernel Gram matrix is not positive definite even with jitter 1e-2 * mean diag")
