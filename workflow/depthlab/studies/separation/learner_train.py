"""Stage ``learner``: the 3-layer mean-field learner on ReLU(1 - |x|/r0) and its reduced model, from the same start (R3, R4)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
import xarray as xr

from depthlab.core.seeds import seed

from . import learner as L

if TYPE_CHECKING:
    from .specs import LearnerSpec


def run_learner(spec: "LearnerSpec", inputs: dict[str, xr.Dataset], ctx) -> xr.Dataset:
    data = inputs["data"]
    dev = torch.device(ctx.device)
    d, m, m2 = spec.job.d, spec.job.width, spec.second_width
    X, Y, XT, YT = (torch.as_tensor(data[k].values, dtype=torch.float32, device=dev) for k in ("x_train", "y_train", "x_test", "y_test"))
    per_seed = [L.init(1, m, m2, d, torch.Generator().manual_seed(seed(s, "learner_init", d, m))) for s in spec.seeds]
    V, w, b = (torch.cat([p[i] for p in per_seed]).to(dev) for i in range(3))
    alpha, wr, br = L.alpha_of(V).clone(), w.clone(), b.clone()
    var = float(YT.var())
    checks = sorted(set(range(0, spec.steps + 1, spec.check_every)) | {spec.steps})
    rec = {k: [] for k in ("nmse", "reduced_nmse", "alpha", "reduced_alpha", "deviation")}

    def record():
        with torch.no_grad():
            f = L.second_layer(L.first_layer(V, XT), w, b)
            fr = L.second_layer(alpha.unsqueeze(1) * XT.norm(dim=1), wr, br)
            rec["nmse"].append(((f - YT) ** 2).mean(1) / var)
            rec["reduced_nmse"].append(((fr - YT) ** 2).mean(1) / var)
            rec["alpha"].append(L.alpha_of(V))
            rec["reduced_alpha"].append(alpha.clone())
            rec["deviation"].append(L.deviation(V, XT))

    start_profile = _profile(V, spec, d, dev)
    for t in range(spec.steps + 1):
        if t in checks:
            record()
        if t == spec.steps:
            break
        L.net_step(V, w, b, X, Y, spec.lr)
        L.reduced_step(alpha, wr, br, X, Y, spec.lr, d)
        if (t + 1) % max(1, spec.steps // 4) == 0:
            ctx.progress(f"{spec.job.dist} d={d} m={m}: step {t + 1}/{spec.steps}, test nMSE "
                         + ", ".join(f"{v:.3g}" for v in rec["nmse"][-1].tolist()))
    end_profile = _profile(V, spec, d, dev)
    stack = {k: torch.stack(v, 1).double().cpu().numpy() for k, v in rec.items()}  # [seed, check]
    return xr.Dataset(
        {
            "test_nmse": (("seed", "check"), stack["nmse"], {"description": "test MSE / Var(y) of the learner"}),
            "reduced_test_nmse": (("seed", "check"), stack["reduced_nmse"], {"description": "the same of the reduced model (F = alpha |x|)"}),
            "alpha": (("seed", "check"), stack["alpha"], {"description": "alpha = C_d mean |v_i|^2 of the finite first layer"}),
            "reduced_alpha": (("seed", "check"), stack["reduced_alpha"], {"description": "alpha of the reduced model"}),
            "deviation": (("seed", "check"), stack["deviation"], {"description": "|F/alpha - |x|| / ||x|| over the test inputs"}),
            "start_profile": (("seed", "plane", "angle"), start_profile, {"description": "F(u) / alpha on great circles, at the start"}),
            "end_profile": (("seed", "plane", "angle"), end_profile, {"description": "F(u) / alpha on great circles, after training"}),
        },
        coords={"seed": list(spec.seeds), "check_step": (("check",), np.asarray(checks)),
                "angle": np.linspace(0.0, 2 * np.pi, spec.profile_points)},
        attrs={"dist": spec.job.dist, "d": d, "width": m, "width_rule": spec.width_rule, "second_width": m2, "n_params": L.n_params(m, m2, d), "lr": spec.lr,
               "r0": float(data.attrs["r0"]), "C_d": L.c_d(d)},
    )


def _profile(V: torch.Tensor, spec, d: int, dev) -> np.ndarray:
    """F(u)/alpha on great circles u(theta) = cos(theta) e1 + sin(theta) e2 of ``directions`` random planes (a fixed stream):
    [M, plane, angle].  F is 1-homogeneous, so F(x) = |x| F(x/|x|): the symmetrisation predicts 1 at every angle."""
    g = torch.Generator().manual_seed(seed(0, "learner_planes", d))
    theta = torch.linspace(0.0, 2 * np.pi, spec.profile_points)
    out = []
    for _ in range(spec.directions):
        e = torch.linalg.qr(torch.randn(d, max(d, 2), generator=g))[0][:, :2] if d >= 2 else torch.ones(1, 2)
        u = torch.cos(theta)[:, None] * e[:, 0] + torch.sin(theta)[:, None] * e[:, 1]
        with torch.no_grad():
            out.append(L.first_layer(V, u.to(dev, V.dtype)) / L.alpha_of(V).unsqueeze(1))
    return torch.stack(out, 1).double().cpu().numpy()
