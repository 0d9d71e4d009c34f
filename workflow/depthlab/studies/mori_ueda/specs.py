"""Mori & Ueda: cross-field config rules, the job grid, store paths and per-job specs.

Jobs (wildcards ``figure``, ``target``, ``depth``), paths under ``<results>/mori_ueda/``:

  data      {figure}/data/{target}.zarr                 training and test sets of one target
  lrsearch  {figure}/lrsearch/{target}/L{depth}.zarr    CV + BO choice of the lr (depth_sweep figures)
  train     {figure}/train/{target}/L{depth}.zarr       final nets: every lr x seed of one (target, depth)
  ntk       {figure}/ntk/{target}/L{depth}.zarr         kernel regression with the NTK and the NNGP kernel
  entk      {figure}/entk/{target}/L{depth}.zarr        the trained nets' own tangent kernel at init (lr_sweep figures)

A depth_sweep figure trains at the lr its ``lrsearch`` store chose; an lr_sweep
figure (Fig. 3) trains every lr of its grid.  The width is computed here, once,
from the budget (Eq. 3), and travels in the spec.
"""

from __future__ import annotations

from typing import Any

from depthlab.config import ConfigError
from depthlab.core.seeds import seed
from depthlab.core.shapes import n_params

from .targets import TargetError, check_target
from .widths import width_for_budget

STUDY = "mori_ueda"
PATHS = {
    "data": "{figure}/data/{target}.zarr",
    "lrsearch": "{figure}/lrsearch/{target}/L{depth}.zarr",
    "train": "{figure}/train/{target}/L{depth}.zarr",
    "ntk": "{figure}/ntk/{target}/L{depth}.zarr",
    "entk": "{figure}/entk/{target}/L{depth}.zarr",
}
WILDCARDS = {"figure": "fig[0-9]+", "target": "[A-Za-z0-9][A-Za-z0-9_.-]*", "depth": "[0-9]+"}


def check(section: dict, config: dict) -> None:
    """Cross-field rules of the mori_ueda section (after the schema); fills defaults in place."""
    where0 = f"studies.{STUDY}"
    lo, hi = section["lrsearch"]["log10_lr_bounds"]
    if not lo < hi:
        raise ConfigError(f"config error at {where0}.lrsearch.log10_lr_bounds: need low < high, got [{lo}, {hi}]")
    for fname, fig in section["figures"].items():
        fig.setdefault("kind", "depth_sweep")
        for tname, t in fig["targets"].items():
            t.setdefault("g", "product")
            t.setdefault("noise", 0.0)
            where = f"{where0}.figures.{fname}.targets.{tname}"
            try:
                check_target(t["k"], t["d"], t["locality"], t["g"])
            except TargetError as e:
                raise ConfigError(f"config error at {where}.{e.key}: {e}") from None
            if t["noise"] > 0 and fig["task"] == "classification":
                raise ConfigError(f"config error at {where}.noise: label noise is only defined for task = regression")
            if section["lrsearch"]["folds"] > t["n_train"]:
                raise ConfigError(f"config error at {where0}.lrsearch.folds: {section['lrsearch']['folds']} folds exceed "
                                  f"n_train = {t['n_train']} of {where}")
            for L in fig["depths"] if fig["kind"] == "depth_sweep" else []:
                try:
                    width_for_budget(t["d"], fig["budget"], L)
                except ValueError as err:
                    raise ConfigError(f"config error at {where0}.figures.{fname}.budget: {err} "
                                      f"(target {tname}, depth {L} in figures.{fname}.depths)") from None


# ---- the grid -------------------------------------------------------------------------


def _section(config: dict) -> dict:
    return config["studies"][STUDY]


def figures(config: dict) -> list[str]:
    return sorted(_section(config)["figures"])


def grid(config: dict, figure: str) -> list[tuple[str, int]]:
    fig = _section(config)["figures"][figure]
    return [(t, L) for t in sorted(fig["targets"]) for L in sorted(fig["depths"])]


def path(stage: str, **job: Any) -> str:
    """A store's path relative to the study's folder."""
    return PATHS[stage].format(**job)


def stage_inputs(config: dict, stage: str, job: dict) -> dict[str, str]:
    """{name: path relative to the study folder} of the stores a job reads."""
    f, t = job["figure"], job["target"]
    if stage == "data":
        return {}
    out = {"data": path("data", figure=f, target=t)}
    if stage == "train" and _section(config)["figures"][f]["kind"] == "depth_sweep":
        out["lrsearch"] = path("lrsearch", **job)
    return out


def _kinds(config: dict, figure: str) -> tuple[str, ...]:
    """The store kinds a figure reads per (target, depth)."""
    return ("train", "ntk", "entk") if _section(config)["figures"][figure]["kind"] == "lr_sweep" else ("train", "ntk")


def figure_inputs(config: dict, figure: str) -> dict[str, str]:
    """{name: path} of every store a figure reads: names are '<kind>/<target>/L<depth>'."""
    return {f"{kind}/{t}/L{L}": path(kind, figure=figure, target=t, depth=L)
            for t, L in grid(config, figure) for kind in _kinds(config, figure)}


def claims_inputs(config: dict) -> list[str]:
    """Figures whose tables the claims stage reads."""
    return figures(config)


# ---- specs ----------------------------------------------------------------------------


def _envelope(stage: str, job: dict) -> dict:
    return {"study": STUDY, "stage": stage, "job": job}


def _job(job: dict) -> dict:
    out = {"figure": str(job["figure"]), "target": str(job["target"])}
    if "depth" in job:
        out["depth"] = int(job["depth"])
    return out


def data_spec(config: dict, figure: str, target: str) -> dict:
    fig = _section(config)["figures"][figure]
    t = fig["targets"][target]
    return {
        **_envelope("data", {"figure": figure, "target": target}),
        "target": {k: t[k] for k in ("k", "locality", "g", "d", "n_train", "noise")},
        "task": fig["task"],
        "n_test": fig["n_test"],
        "seed": config["seed"],
    }


def _training(config: dict, figure: str, max_epochs: int) -> dict:
    tr = _section(config)["training"]
    return {
        "batch_size": tr["batch_size"],
        "check_every": tr["check_every"],
        "loss_threshold": float(tr["loss_threshold"]),
        "max_epochs": max_epochs,
        "loss": "logistic" if _section(config)["figures"][figure]["task"] == "classification" else "mse",
        "optimizer": "sgd",
    }


def _shape(config: dict, figure: str, target: str, depth: int) -> dict:
    """Depth, width and exact parameter count: from the budget (Eq. 3) or the figure's fixed width."""
    fig = _section(config)["figures"][figure]
    d = fig["targets"][target]["d"]
    if fig["kind"] == "lr_sweep":
        h = fig["width"]
        return {"depth": depth, "width": h, "n_params": n_params(d, h, depth)}
    h, count = width_for_budget(d, fig["budget"], depth)
    return {"depth": depth, "width": h, "n_params": count, "budget": float(fig["budget"])}


def lrsearch_spec(config: dict, figure: str, target: str, depth: int) -> dict:
    ls = _section(config)["lrsearch"]
    return {
        **_envelope("lrsearch", {"figure": figure, "target": target, "depth": depth}),
        "data": data_spec(config, figure, target),
        **_shape(config, figure, target, depth),
        "training": _training(config, figure, ls["max_epochs"]),
        "search": {
            "folds": ls["folds"],
            "log10_lr_bounds": [float(v) for v in ls["log10_lr_bounds"]],
            "init_points": ls["init_points"],
            "rounds": ls["rounds"],
            "candidates_per_round": ls["candidates_per_round"],
            "seed": seed(config["seed"], "search", depth, ls.get("seed", 0)),
        },
    }


def train_spec(config: dict, figure: str, target: str, depth: int) -> dict:
    fig = _section(config)["figures"][figure]
    sweep = fig["kind"] == "lr_sweep"
    return {
        **_envelope("train", {"figure": figure, "target": target, "depth": depth}),
        "data": data_spec(config, figure, target),
        **_shape(config, figure, target, depth),
        # depth_sweep: the lr the lrsearch input chose; lr_sweep: this grid
        "lrs": [float(10.0**u) for u in sorted(fig["log10_lrs"])] if sweep else "lrsearch",
        "training": _training(config, figure, fig["max_epochs"] if sweep else _section(config)["training"]["max_epochs"]),
        "seeds": list(fig["seeds"]),
    }


def ntk_spec(config: dict, figure: str, target: str, depth: int) -> dict:
    k = _section(config)["ntk"]
    return {
        **_envelope("ntk", {"figure": figure, "target": target, "depth": depth}),
        "data": data_spec(config, figure, target),
        "depth": depth,
        "beta": float(k["beta"]),
        "block": k["block"],
    }


def entk_spec(config: dict, figure: str, target: str, depth: int) -> dict:
    fig = _section(config)["figures"][figure]
    if fig["kind"] != "lr_sweep":
        raise KeyError(f"{figure} is not an lr_sweep figure: it has no entk stores")
    return {
        **_envelope("entk", {"figure": figure, "target": target, "depth": depth}),
        "data": data_spec(config, figure, target),
        **_shape(config, figure, target, depth),
        "seeds": list(fig["seeds"]),
        "loss": _training(config, figure, fig["max_epochs"])["loss"],
    }


def figure_spec(config: dict, figure: str) -> dict:
    fig = _section(config)["figures"][figure]
    return {
        **_envelope("figure", {"figure": figure}),
        "kind": fig["kind"],
        "task": fig["task"],
        "depths": sorted(fig["depths"]),
        "targets": {name: data_spec(config, figure, name)["target"] for name in sorted(fig["targets"])},
    }


def claims_spec(config: dict) -> dict:
    figs = _section(config)["figures"]
    scale = "; ".join(
        f"{name}: " + ", ".join(f"{t} (d={v['d']}, N={v['n_train']}" + (f", eps={v['noise']:g}" if v["noise"] else "") + ")"
                                for t, v in sorted(f["targets"].items()))
        + (f", P={f['budget']:g}" if f["kind"] == "depth_sweep" else f", h={f['width']}")
        + f", L={sorted(f['depths'])}, N_test={f['n_test']}, seeds={len(f['seeds'])}"
        for name, f in sorted(figs.items())
    )
    return {
        **_envelope("claims", {}),
        "figures": {name: {"kind": f["kind"], "variant": _variant(f)} for name, f in sorted(figs.items())},
        "scale_note": f"Scale: {scale}; CV folds={_section(config)['lrsearch']['folds']}.",
    }


def _variant(fig: dict) -> str | None:
    """Which robustness check of claim 6 a figure is, from its content: noise, classification, or another g."""
    ts = fig["targets"].values()
    if fig["task"] == "classification":
        return "classification"
    if any(t["noise"] > 0 for t in ts):
        return "label noise"
    if any(t["g"] != "product" for t in ts):
        return "generalized g"
    return None


SPECS = {"data": data_spec, "lrsearch": lrsearch_spec, "train": train_spec, "ntk": ntk_spec, "entk": entk_spec}


def spec(config: dict, stage: str, job: dict) -> dict:
    """The spec of job ``job`` (wildcard values) of ``stage`` under ``config``."""
    if stage == "figure":
        return figure_spec(config, str(job["figure"]))
    if stage == "claims":
        return claims_spec(config)
    return SPECS[stage](config, **_job(job))


def jobs(config: dict, stage: str) -> list[dict]:
    """Every job of a store stage under ``config`` (used by the memory estimate and the audit)."""
    out = []
    for f in figures(config):
        kind = _section(config)["figures"][f]["kind"]
        if stage == "data":
            out += [{"figure": f, "target": t} for t in sorted(_section(config)["figures"][f]["targets"])]
        elif (stage != "lrsearch" or kind == "depth_sweep") and (stage != "entk" or kind == "lr_sweep"):
            out += [{"figure": f, "target": t, "depth": L} for t, L in grid(config, f)]
    return out


def memory(config: dict) -> list[tuple[str, str, int]]:
    """(job, the config key of its largest part, estimated peak bytes) for every job."""
    from depthlab import memory as mem

    s = _section(config)
    out = []
    for f in figures(config):
        fig = s["figures"][f]
        key = f"studies.{STUDY}.figures.{f}"
        n_test = fig["n_test"]
        for t, tv in sorted(fig["targets"].items()):
            n, d = tv["n_train"], tv["d"]
            data = {f"{key}.n_test": mem.data(n_test, d), f"{key}.targets.{t}.n_train": mem.data(n, d)}
            out.append(mem.job(f"mori_ueda data {f}/{t}", data))
            for L in sorted(fig["depths"]):
                sh = _shape(config, f, t, L)
                sizes = [d] + [sh["width"]] * L + [1]
                wkey = f"{key}.width" if fig["kind"] == "lr_sweep" else f"{key}.budget"
                M = (len(fig["log10_lrs"]) if fig["kind"] == "lr_sweep" else 1) * len(fig["seeds"])
                pred = {f"{key}.n_test": data[f"{key}.n_test"] + 2 * M * n_test * mem.F64}
                out.append(mem.job(f"mori_ueda train {f}/{t}/L{L}", {**data, **pred, wkey: mem.nets(M, sizes, s["training"]["batch_size"], n)}))
                if fig["kind"] == "depth_sweep":
                    ls = s["lrsearch"]
                    M = max(ls["init_points"], ls["candidates_per_round"]) * ls["folds"]
                    out.append(mem.job(f"mori_ueda lrsearch {f}/{t}/L{L}", {**data, wkey: mem.nets(M, sizes, s["training"]["batch_size"], n)}))
                tile = min(s["ntk"]["block"], max(1, (1 << 16) // n)) * n * 8 * mem.F64
                gram = {f"{key}.targets.{t}.n_train": data[f"{key}.targets.{t}.n_train"] + 3 * 2 * n * n * mem.F64,
                        f"studies.{STUDY}.ntk.block": tile}
                out.append(mem.job(f"mori_ueda ntk {f}/{t}/L{L}", {**data, **gram}))
                if fig["kind"] == "lr_sweep":
                    feats = {wkey: (n + n_test) * sh["width"] * (L + 1) * 2 * mem.F64,
                             f"{key}.targets.{t}.n_train": data[f"{key}.targets.{t}.n_train"] + 3 * n * n * mem.F64,
                             f"{key}.n_test": data[f"{key}.n_test"] + n_test * n * mem.F64}
                    out.append(mem.job(f"mori_ueda entk {f}/{t}/L{L}", feats))
    return out
