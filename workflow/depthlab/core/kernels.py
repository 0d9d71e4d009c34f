"""Infinite-width kernels of deep ReLU nets: the arc-cosine layer step, Mori & Ueda's Appendix A, dot-product forms.

One ReLU layer maps the covariance of pre-activations Sigma^(l-1) to the next
(He scaling, weight variance 2, bias variance beta^2), Eqs. (16)-(17):

    sqrt det Lambda = sqrt(Sigma(x,x) Sigma(x',x') - Sigma(x,x')^2)
    Sigma^(l)       = [sqrt det Lambda + Sigma^(l-1) (pi/2 + atan(Sigma^(l-1)/sqrt det Lambda))] / pi + beta^2
    Sigmadot^(l)    = 1/2 + atan(Sigma^(l-1)/sqrt det Lambda) / pi

Written with u = Sigma(x,x')/sqrt(Sigma(x,x)Sigma(x',x')) = cos(angle) this is
Sigma^(l) = sqrt(Sigma(x,x)Sigma(x',x')) kappa_1(u) + beta^2 and Sigmadot^(l) = kappa_0(u), the
arc-cosine kernels of Cho & Saul that Bietti & Bach use.  :func:`relu_layer_` is
that step, once; everything else in this module calls it:

* Appendix A (:func:`appendix_a`): Sigma^(0) = x.x'/d + beta^2 (13), the step per hidden layer,
  Theta accumulated as Theta_0 = Sigma^(0), Theta_l = Theta_{l-1} Sigmadot^(l) + Sigma^(l), so
  Theta^(L) = Theta_L (15).  Sigma^(L) is the NNGP (random-features) kernel of the output.
* Dot-product forms on the sphere (:func:`dot_forms`, :func:`kappa0`, :func:`kappa1`), with
  Bietti & Bach's L counting *layers* (L - 1 hidden): kappa_RF^L = kappa_1^(L-1),
  kappa_NTK^L = kappa_NTK^(L-1) kappa_0(kappa_RF^(L-1)) + kappa_RF^L, kappa_NTK^1(u) = u.
  With beta = 0 and |x|^2 = d, Appendix A's Sigma^(L), Theta^(L) are kappa_RF^(L+1), kappa_NTK^(L+1).

Everything is float64 torch.  Kernel regression with these kernels is
:mod:`depthlab.core.kernel_regression`; the tangent kernel of a finite net, :mod:`depthlab.core.tangent`.
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np
import torch


def relu_layer_(
    sig: torch.Tensor, q1: torch.Tensor, q2: torch.Tensor, beta2: float, buf: torch.Tensor, dot: torch.Tensor
) -> torch.Tensor:
    """One ReLU layer, Eqs. (16)-(17), in place: ``sig`` <- Sigma^(l); returns ``dot`` filled with Sigmadot^(l).

    sig: Sigma^(l-1)(x, x') [n1, n2]; q1 [n1, 1] and q2 [1, n2]: Sigma^(l-1)(x, x) and
    Sigma^(l-1)(x', x'); buf, dot: scratch tensors shaped like sig.  Elementwise, so
    any broadcastable shapes work (the dot-product forms pass q1 = q2 = 1).
    """
    if torch.broadcast_shapes(q1.shape, q2.shape) == sig.shape:
        torch.mul(q1, q2, out=buf)
    else:
        buf.copy_(torch.mul(q1, q2).expand_as(sig))
    sqrt_det = buf.addcmul_(sig, sig, value=-1.0).clamp_(min=0.0).sqrt_()
    # atan(c / 0) = pi/2 for c > 0: the x = x' limit comes out exactly (Sigmadot = 1)
    phase = torch.div(sig, sqrt_det, out=dot).atan_()
    # Sigma^(l) = [sqrt_det + Sigma^(l-1) (pi/2 + phase)] / pi + beta^2
    sqrt_det.addcmul_(sig, phase).add_(sig, alpha=math.pi / 2)
    torch.div(sqrt_det, math.pi, out=sig).add_(beta2)
    return phase.mul_(1.0 / math.pi).add_(0.5)


# ---- dot-product kernels on the sphere (Bietti & Bach) -------------------------------------


def dot_forms(u: np.ndarray | float, layers: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Yield (L, kappa_RF^L(u), kappa_NTK^L(u)) for L = 1..layers (float64 numpy, same shape as u)."""
    sig = torch.as_tensor(np.array(u, dtype=np.float64, copy=True))
    theta = sig.clone()
    one = torch.ones((), dtype=torch.float64)
    buf, dot = torch.empty_like(sig), torch.empty_like(sig)
    yield 1, sig.numpy().copy(), theta.numpy().copy()
    for L in range(2, layers + 1):
        d = relu_layer_(sig, one, one, 0.0, buf, dot)
        theta.mul_(d).add_(sig)
        yield L, sig.numpy().copy(), theta.numpy().copy()


def appendix_a_sphere(u: np.ndarray, max_depth: int, beta: float) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Appendix A on inputs with |x|^2 = d, as dot-product kernels of u = x.x'/d in [-1, 1].

    Yields (L, Sigma^(L)(u), Theta^(L)(u)) for L = 1..max_depth: the same recursion as
    :func:`appendix_a` with the diagonal Sigma^(l-1)(x, x) = 1 + l beta^2 a constant.
    With beta = 0 these are kappa_RF^(L+1) and kappa_NTK^(L+1).
    """
    b2 = beta * beta
    sig = torch.as_tensor(np.array(u, dtype=np.float64, copy=True)).add_(b2)  # Sigma^(0) = u + beta^2
    theta = sig.clone()
    buf, dot = torch.empty_like(sig), torch.empty_like(sig)
    for ell in range(1, max_depth + 1):
        q = torch.tensor(1.0 + ell * b2, dtype=torch.float64)
        relu_layer_(sig, q, q, b2, buf, dot)
        theta.mul_(dot).add_(sig)
        yield ell, sig.numpy().copy(), theta.numpy().copy()


def kappa0(u: np.ndarray) -> np.ndarray:
    """kappa_0(u) = 1 - arccos(u)/pi (step-activation arc-cosine kernel)."""
    sig = torch.as_tensor(np.array(u, dtype=np.float64, copy=True))
    one = torch.ones((), dtype=torch.float64)
    return relu_layer_(sig, one, one, 0.0, torch.empty_like(sig), torch.empty_like(sig)).numpy()


def kappa1(u: np.ndarray) -> np.ndarray:
    """kappa_1(u) = (sqrt(1 - u^2) + u (pi - arccos u)) / pi (ReLU arc-cosine kernel)."""
    return next(v for L, v, _ in dot_forms(u, 2) if L == 2)


# ---- Appendix A: Sigma^(L) and Theta^(L) on inputs in R^d ---------------------------------


def appendix_a(
    x1: torch.Tensor, x2: torch.Tensor, max_depth: int, beta: float = 0.1, copy: bool = True
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """Yield (L, Sigma^(L), Theta^(L)) of (x1, x2) for L = 1..max_depth in one pass.  x1: [n1, d], x2: [n2, d] float64.

    With ``copy=False`` the yielded [n1, n2] tensors are updated in place by the next
    step (use them before advancing).  Keep n1 * n2 cache-sized for speed: the
    recursion is a chain of elementwise passes, cache-bound.
    """
    d = x1.shape[1]
    b2 = beta * beta
    q1 = ((x1 * x1).sum(1) / d).unsqueeze(1)  # |x|^2/d, [n1, 1]
    q2 = ((x2 * x2).sum(1) / d).unsqueeze(0)  # [1, n2]
    sig = torch.addmm(
        torch.full((), b2, dtype=x1.dtype, device=x1.device), x1, x2.T, alpha=1.0 / d
    )  # Sigma^(0), Eq. 13
    theta = sig.clone()
    buf, dot = torch.empty_like(sig), torch.empty_like(sig)
    for ell in range(1, max_depth + 1):
        # Sigma^(ell-1)(x, x) = |x|^2/d + ell beta^2 (the step maps the diagonal to itself + beta^2)
        relu_layer_(sig, q1 + ell * b2, q2 + ell * b2, b2, buf, dot)
        theta.mul_(dot).add_(sig)  # Theta_ell = Theta_{ell-1} Sigmadot^(ell) + Sigma^(ell), Eq. 15
        yield (ell, sig.clone(), theta.clone()) if copy else (ell, sig, theta)


def kernel(x1: np.ndarray, x2: np.ndarray, depth: int, beta: float = 0.1, kind: str = "ntk") -> np.ndarray:
    """Theta^(L) (kind 'ntk', Eq. 15) or Sigma^(L) (kind 'nngp') as float64 numpy [n1, n2].  x1: [n1, d], x2: [n2, d]."""
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    t1 = torch.as_tensor(x1, dtype=torch.float64)
    t2 = torch.as_tensor(x2, dtype=torch.float64)
    for ell, sig, th in appendix_a(t1, t2, depth, beta):
        if ell == depth:
            return (th if kind == "ntk" else sig).numpy()
    raise AssertionError("unreachable")


def kernel_diagonal(
    x: np.ndarray | torch.Tensor, depth: int, beta: float = 0.1, kind: str = "ntk"
) -> np.ndarray | torch.Tensor:
    """Closed forms on the diagonal (Sigmadot = 1 there).  x: [n, d] -> [n] (numpy or torch, as given).

    nngp: Sigma^(L)(x, x) = |x|^2/d + (L+1) beta^2;
    ntk:  Theta^(L)(x, x) = sum_{l=0}^{L} Sigma^(l)(x, x) = (L+1)|x|^2/d + beta^2 (L+1)(L+2)/2.
    """
    q = (x * x).sum(1) / x.shape[1]
    if kind == "nngp":
        return q + (depth + 1) * beta**2
    return (depth + 1) * q + beta**2 * (depth + 1) * (depth + 2) / 2
