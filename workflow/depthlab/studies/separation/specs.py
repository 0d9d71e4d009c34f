"""Depth separation: config rules, the job grid, store paths and per-job specs.

Jobs, paths under ``<results>/separation/``:

  sawtooth_data  sawtooth/data.zarr                           x ~ U[0, 1]: training, test and plotting points
  construction   sawtooth/construction.zarr                   the hand-built nets, their exactness and pieces; the bounds
  sawtooth       sawtooth/L{level}/{arch}.zarr                nets trained on Delta^L: every lr x seed as one batch
  radial_data    radial/{target}/{dist}/d{d}/data.zarr        one radial data set
  radial         radial/{target}/{dist}/d{d}/P{budget}/depth{depth}.zarr   lr search on a validation split + final nets

Sawtooth architectures (``arch``): ``deep-w<k>`` (depth L = the level, width k, random init),
``shallow-w<k>`` (one hidden layer with the parameter count of deep-w<k>), ``construct-w2``
(the hand-built depth-L width-2 net plus Gaussian noise on every parameter).
"""

from __future__ import annotations

import math
import re
from typing import Any

from depthlab.config import ConfigError
from depthlab.core.seeds import seed
from depthlab.core.shapes import n_params

STUDY = "separation"
PATHS = {
    "sawtooth_data": "sawtooth/data.zarr",
    "construction": "sawtooth/construction.zarr",
    "sawtooth": "sawtooth/L{level}/{arch}.zarr",
    "radial_data": "radial/{target}/{dist}/d{d}/data.zarr",
    "radial": "radial/{target}/{dist}/d{d}/P{budget}/depth{depth}.zarr",
}
FIGURES = ("sawtooth_error", "sawtooth_pieces", "sawtooth_functions", "radial_error")
ARCH = re.compile(r"^(deep|shallow|construct)-w([0-9]+)$")


def _section(config: dict) -> dict:
    return config["studies"][STUDY]


def width_for_budget(d: int, depth: int, budget: int) -> int:
    """The width h >= 1 whose exact parameter count n_params(d, h, depth) is closest to ``budget``."""
    a, b = depth - 1, d + 2 + (depth - 1)  # n_params = a h^2 + b h + 1
    root = (budget - 1) / b if a == 0 else (-b + math.sqrt(b * b + 4 * a * (budget - 1))) / (2 * a)
    h = min((max(1, math.floor(root)), max(1, math.ceil(root))), key=lambda w: (abs(n_params(d, w, depth) - budget), w))
    if n_params(d, 1, depth) > budget:
        raise ValueError(f"budget {budget} is below the smallest net (width 1: {n_params(d, 1, depth)} parameters) at d = {d}, depth {depth}")
    return h


def archs(config: dict) -> list[str]:
    widths = sorted(_section(config)["sawtooth"]["deep_widths"])
    return [f"deep-w{k}" for k in widths] + [f"shallow-w{k}" for k in widths] + ["construct-w2"]


def arch_shape(arch: str, level: int) -> tuple[str, int, int]:
    """(kind, depth, width) of a sawtooth architecture at level L."""
    m = ARCH.match(arch)
    if m is None:
        raise ValueError(f"unknown sawtooth architecture {arch!r}")
    kind, k = m[1], int(m[2])
    if kind == "shallow":
        return kind, 1, max(1, round((n_params(1, k, level) - 1) / 3))  # 3 w + 1 parameters at depth 1
    return kind, level, k


def check(section: dict, config: dict) -> None:
    where = f"studies.{STUDY}"
    r = section["radial"]
    for d in r["dims"]:
        for L in r["depths"]:
            for P in r["budgets"]:
                try:
                    width_for_budget(d, L, P)
                except ValueError as e:
                    raise ConfigError(f"config error at {where}.radial.budgets: {e}") from None
    lo, hi = r["search"]["log10_lr_bounds"]
    if not lo < hi:
        raise ConfigError(f"config error at {where}.radial.search.log10_lr_bounds: need low < high, got [{lo}, {hi}]")
    if r["search"]["use_folds"] > r["search"]["folds"]:
        raise ConfigError(f"config error at {where}.radial.search.use_folds: {r['search']['use_folds']} exceeds folds = {r['search']['folds']}")


def figures(config: dict) -> list[str]:
    return list(FIGURES)


def path(stage: str, **job: Any) -> str:
    return PATHS[stage].format(**job)


def jobs(config: dict, stage: str) -> list[dict]:
    s = _section(config)
    if stage in ("sawtooth_data", "construction"):
        return [{}]
    if stage == "sawtooth":
        return [{"level": L, "arch": a} for L in sorted(s["sawtooth"]["levels"]) for a in archs(config)]
    r = s["radial"]
    data = [{"target": t, "dist": q, "d": d} for t in sorted(r["targets"]) for q in sorted(r["distributions"]) for d in sorted(r["dims"])]
    if stage == "radial_data":
        return data
    if stage == "radial":
        return [{**j, "budget": P, "depth": L} for j in data for P in sorted(r["budgets"]) for L in sorted(r["depths"])]
    return []


def stage_inputs(config: dict, stage: str, job: dict) -> dict[str, str]:
    if stage == "sawtooth":
        return {"data": path("sawtooth_data")}
    if stage == "radial":
        return {"data": path("radial_data", target=job["target"], dist=job["dist"], d=job["d"])}
    return {}


def figure_inputs(config: dict, figure: str) -> dict[str, str]:
    if figure == "radial_error":
        return {path("radial", **j).removesuffix(".zarr"): path("radial", **j) for j in jobs(config, "radial")}
    out = {"construction": path("construction")}
    out.update({f"L{j['level']}/{j['arch']}": path("sawtooth", **j) for j in jobs(config, "sawtooth")})
    return out


def claims_inputs(config: dict) -> list[str]:
    return ["sawtooth_error", "radial_error"]


def _envelope(stage: str, job: dict) -> dict:
    return {"study": STUDY, "stage": stage, "job": job}


def _training(t: dict) -> dict:
    return {"batch_size": t["batch_size"], "check_every": t["check_every"], "loss_threshold": float(t["loss_threshold"]),
            "max_epochs": t["max_epochs"], "loss": "mse", "optimizer": t["optimizer"]}


def spec(config: dict, stage: str, job: dict) -> dict:
    s = _section(config)
    sw, r = s["sawtooth"], s["radial"]
    if stage == "sawtooth_data":
        return {**_envelope(stage, {}), "n_train": sw["n_train"], "n_test": sw["n_test"], "plot_points": sw["plot_points"],
                "seed": config["seed"]}
    if stage == "construction":
        return {**_envelope(stage, {}), "levels": sorted(sw["levels"]), "plot_points": sw["plot_points"]}
    if stage == "sawtooth":
        level, arch = int(job["level"]), str(job["arch"])
        kind, depth, width = arch_shape(arch, level)
        return {**_envelope(stage, {"level": level, "arch": arch}), "data": spec(config, "sawtooth_data", {}),
                "kind": kind, "depth": depth, "width": width, "n_params": n_params(1, width, depth), "init": sw["init"],
                "perturbation": float(sw["perturbation"]) if kind == "construct" else None,
                "lrs": [float(v) for v in sorted(sw["lrs"])], "seeds": list(sw["seeds"]), "training": _training(sw["training"])}
    if stage == "radial_data":
        t, q, d = str(job["target"]), str(job["dist"]), int(job["d"])
        return {**_envelope(stage, {"target": t, "dist": q, "d": d}), "n_train": r["n_train"], "n_test": r["n_test"],
                "es_quantile": float(r["es_quantile"]) if q == "eldan_shamir" else None,
                "shell_halfwidth": float(r["shell_halfwidth"]) if q == "shell" else None, "seed": config["seed"]}
    if stage == "radial":
        t, q, d, P, L = str(job["target"]), str(job["dist"]), int(job["d"]), int(job["budget"]), int(job["depth"])
        h = width_for_budget(d, L, P)
        se = r["search"]
        return {**_envelope(stage, {"target": t, "dist": q, "d": d, "budget": P, "depth": L}),
                "data": spec(config, "radial_data", {"target": t, "dist": q, "d": d}),
                "depth": L, "width": h, "n_params": n_params(d, h, L), "init": r["init"],
                "search": {"folds": se["folds"], "use_folds": se["use_folds"], "log10_lr_bounds": [float(v) for v in se["log10_lr_bounds"]],
                           "init_points": se["init_points"], "rounds": se["rounds"], "candidates_per_round": se["candidates_per_round"],
                           "seed": seed(config["seed"], "search", d, L, P)},
                "search_training": {**_training(r["training"]), "max_epochs": se["max_epochs"]},
                "training": _training(r["training"]), "seeds": list(r["seeds"])}
    if stage == "figure":
        return {**_envelope(stage, {"figure": str(job["figure"])})}
    if stage == "claims":
        return {**_envelope(stage, {}), "found_mse": 1e-3 / 12,
                "scale_note": f"Scale: sawtooth L = {sorted(sw['levels'])}, deep widths {sorted(sw['deep_widths'])}, "
                              f"N = {sw['n_train']}, {sw['training']['optimizer']} {sw['training']['max_epochs']} epochs, "
                              f"lrs {sorted(sw['lrs'])} x seeds {list(sw['seeds'])}; radial d = {sorted(r['dims'])}, "
                              f"depths {sorted(r['depths'])}, budgets {sorted(r['budgets'])}, N = {r['n_train']}, "
                              f"{r['training']['max_epochs']} epochs, Eldan-Shamir radius truncated at its {r['es_quantile']} quantile, "
                              f"shell radius U[{1 - r['shell_halfwidth']:g}, {1 + r['shell_halfwidth']:g}], r0 = median radius."}
    raise KeyError(f"separation has no stage {stage!r}")


def memory(config: dict) -> list[tuple[str, str, int]]:
    from depthlab import memory as mem

    s = _section(config)
    sw, r = s["sawtooth"], s["radial"]
    out = [("separation sawtooth_data", f"studies.{STUDY}.sawtooth.n_test", mem.data(sw["n_train"] + sw["n_test"] + sw["plot_points"], 1))]
    M = len(sw["lrs"]) * len(sw["seeds"])
    for L in sorted(sw["levels"]):
        for a in archs(config):
            _, depth, width = arch_shape(a, L)
            out.append((f"separation sawtooth L{L}/{a}", f"studies.{STUDY}.sawtooth.deep_widths",
                        mem.nets(M, [1] + [width] * depth + [1], sw["training"]["batch_size"], sw["n_test"], adam=True)
                        + M * (sw["n_test"] + sw["plot_points"]) * mem.F64))
    for d in sorted(r["dims"]):
        D = mem.data(r["n_train"] + r["n_test"], d)
        out.append((f"separation radial_data d{d}", f"studies.{STUDY}.radial.n_train", D))
        for L in sorted(r["depths"]):
            for P in sorted(r["budgets"]):
                sizes = [d] + [width_for_budget(d, L, P)] * L + [1]
                M = max(r["search"]["init_points"], r["search"]["candidates_per_round"], len(r["seeds"])) * r["search"]["use_folds"]
                out.append((f"separation radial d{d}/P{P}/depth{L}", f"studies.{STUDY}.radial.budgets",
                            D + mem.nets(M, sizes, r["training"]["batch_size"], r["n_train"], adam=True)))
    return out
