"""Malach & Shalev-Shwartz (fractals): config rules, the job grid, store paths and per-job specs.

Jobs, paths under ``<results>/fractals/``:

  data   {fractal}/n{n}/pdeg{pdeg}/data.zarr            training and test samples of one distribution
  train  {fractal}/n{n}/pdeg{pdeg}/depth{depth}/w{width}.zarr   nets of one (depth, width): every lr x seed, one batch

``n`` is the fractal's depth, ``pdeg`` names its approximation curve, ``depth`` counts the
net's hidden layers (the authors' T) and ``width`` its units per layer.  The grid is the union
of what the figures need: fig4 (the coarse 2-D Cantor set: depth x width), fig5 (one net depth,
every curve), fig6 (the fine Vicsek set: depth x width) and the tables (other fractals,
coarse and fine); the ``samples`` figure only needs data.
"""

from __future__ import annotations

from typing import Any

from depthlab.config import ConfigError

from .distributions import level_weights

STUDY = "fractals"
PATHS = {
    "data": "{fractal}/n{n}/pdeg{pdeg}/data.zarr",
    "train": "{fractal}/n{n}/pdeg{pdeg}/depth{depth}/w{width}.zarr",
}
FIGURES = ("fig4", "fig5", "fig6", "tables", "samples")


def _section(config: dict) -> dict:
    return config["studies"][STUDY]


def check(section: dict, config: dict) -> None:
    where = f"studies.{STUDY}"
    if section["data"]["n_train"] % 2 or section["data"]["n_test"] % 2:
        raise ConfigError(f"config error at {where}.data: n_train and n_test must be even (exactly half of each class)")
    for name, f, n, pdegs in _distributions(section):
        for p in pdegs:
            try:
                level_weights(n, p)
            except ValueError as e:
                raise ConfigError(f"config error at {where}.{name}: {e}") from None
    for name in ("fig4", "fig6", "tables"):
        if name in section and not section[name]["depths"]:
            raise ConfigError(f"config error at {where}.{name}.depths: empty")


def _distributions(section: dict) -> list[tuple[str, str, int, list[int]]]:
    """(config key, fractal, n, pdegs) of every experiment."""
    out = []
    for key in ("fig4", "fig6"):
        if key in section:
            e = section[key]
            out.append((key, e["fractal"], e["fractal_depth"], [e["pdeg"]]))
    if "fig5" in section:
        e = section["fig5"]
        out.append(("fig5", e["fractal"], e["fractal_depth"], list(e["pdegs"])))
    if "tables" in section:
        e = section["tables"]
        out += [("tables", f, e["fractal_depth"], [e["coarse_pdeg"], e["fine_pdeg"]]) for f in e["fractals"]]
    out += [("samples", s["fractal"], s["fractal_depth"], [s["pdeg"]]) for s in section["samples"]["show"]]
    return out


def _nets(section: dict, key: str) -> list[dict]:
    """The (fractal, n, pdeg, depth, width) jobs one figure or table needs."""
    e = section.get(key)
    if e is None:
        return []
    if key in ("fig4", "fig6"):
        return [{"fractal": e["fractal"], "n": e["fractal_depth"], "pdeg": e["pdeg"], "depth": T, "width": k}
                for T in sorted(e["depths"]) for k in sorted(e["widths"])]
    if key == "fig5":
        return [{"fractal": e["fractal"], "n": e["fractal_depth"], "pdeg": p, "depth": e["depth"], "width": k}
                for p in e["pdegs"] for k in sorted(e["widths"])]
    return [{"fractal": f, "n": e["fractal_depth"], "pdeg": p, "depth": T, "width": k} for f in e["fractals"]
            for p in (e["coarse_pdeg"], e["fine_pdeg"]) for T in sorted(e["depths"]) for k in sorted(e["widths"])]


def _unique(rows: list[dict]) -> list[dict]:
    seen, out = set(), []
    for r in rows:
        key = tuple(sorted(r.items()))
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def figures(config: dict) -> list[str]:
    s = _section(config)
    return [f for f in FIGURES if f in s or f == "samples"]


def path(stage: str, **job: Any) -> str:
    return PATHS[stage].format(**job)


def jobs(config: dict, stage: str) -> list[dict]:
    s = _section(config)
    if stage == "data":
        return _unique([{"fractal": f, "n": n, "pdeg": p} for _, f, n, ps in _distributions(s) for p in ps])
    if stage == "train":
        return _unique([j for key in ("fig4", "fig5", "fig6", "tables") for j in _nets(s, key)])
    return []


def stage_inputs(config: dict, stage: str, job: dict) -> dict[str, str]:
    return {"data": path("data", fractal=job["fractal"], n=job["n"], pdeg=job["pdeg"])} if stage == "train" else {}


def figure_inputs(config: dict, figure: str) -> dict[str, str]:
    s = _section(config)
    if figure == "samples":
        rows = _unique([{"fractal": x["fractal"], "n": x["fractal_depth"], "pdeg": x["pdeg"]} for x in s["samples"]["show"]])
        return {path("data", **j).removesuffix("/data.zarr"): path("data", **j) for j in rows}
    return {path("train", **j).removesuffix(".zarr"): path("train", **j) for j in _nets(s, figure)}


def claims_inputs(config: dict) -> list[str]:
    return [f for f in ("fig4", "fig5", "fig6", "tables") if f in _section(config)]


def _envelope(stage: str, job: dict) -> dict:
    return {"study": STUDY, "stage": stage, "job": job}


def spec(config: dict, stage: str, job: dict) -> dict:
    s = _section(config)
    if stage == "data":
        j = {"fractal": str(job["fractal"]), "n": int(job["n"]), "pdeg": int(job["pdeg"])}
        return {**_envelope(stage, j), "n_train": s["data"]["n_train"], "n_test": s["data"]["n_test"], "seed": config["seed"]}
    if stage == "train":
        j = {"fractal": str(job["fractal"]), "n": int(job["n"]), "pdeg": int(job["pdeg"]), "depth": int(job["depth"]),
             "width": int(job["width"])}
        t = s["training"]
        return {**_envelope(stage, j), "data": spec(config, "data", j), "init": "truncated_normal",
                "lrs": [float(v) for v in sorted(t["lrs"])], "seeds": list(t["seeds"]),
                "training": {"batch_size": t["batch_size"], "check_every": t["check_every"], "loss_threshold": None,
                             "max_epochs": t["max_epochs"], "loss": "hinge", "optimizer": "adam"}}
    if stage == "figure":
        f = str(job["figure"])
        e = s.get(f, {})
        return {**_envelope(stage, {"figure": f}), **({"samples": s["samples"]["points"]} if f == "samples" else {}),
                **({"pdegs": list(e["pdegs"])} if f == "fig5" else {})}
    if stage == "claims":
        t, d = s["training"], s["data"]
        steps = t["max_epochs"] * (d["n_train"] // t["batch_size"])
        return {**_envelope(stage, {}), "near_perfect": 0.95, "near_chance": 0.6, "fig5_depth": s["fig5"]["depth"] if "fig5" in s else None,
                "scale_note": f"Scale: {d['n_train']} training / {d['n_test']} test examples, Adam lr {sorted(t['lrs'])}, batch "
                              f"{t['batch_size']}, {t['max_epochs']} epochs = {steps} steps (paper: 1e6), test accuracy every "
                              f"{t['check_every']} epochs, best along the run reported; seeds {list(t['seeds'])}."}
    raise KeyError(f"fractals has no stage {stage!r}")


def memory(config: dict) -> list[tuple[str, str, int]]:
    from depthlab import memory as mem

    s = _section(config)
    d, t = s["data"], s["training"]
    D = 2 * mem.data(d["n_train"] + d["n_test"], 2)  # rejection sampling holds a second copy
    out = [("fractals data", f"studies.{STUDY}.data.n_train", D)]
    M = len(t["lrs"]) * len(t["seeds"])
    for j in jobs(config, "train"):
        sizes = [1 if j["fractal"] == "cantor1d" else 2] + [j["width"]] * j["depth"] + [1]
        out.append((f"fractals train {path('train', **j).removesuffix('.zarr')}", f"studies.{STUDY}.training",
                    D + mem.nets(M, sizes, t["batch_size"], d["n_test"], adam=True)))
    return out
