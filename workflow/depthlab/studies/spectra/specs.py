"""Bietti & Bach (spectra): config rules, the job grid, store paths and per-job specs.

Jobs, paths under ``<results>/spectra/``:

  eigen     eigen/{kernel}/d{d}.zarr     mu_k, k = 0..k_max, of one kernel on S^(d-1), for every depth
                                         of that kernel, by two quadratures; decay fits per depth and parity
  krr_data  krr/data.zarr                sphere points and bump targets, one set per trial
  krr       krr/{kernel}/L{depth}.zarr   KRR test MSE per (trial, n, ridge), best over ridges, fitted rate

One eigen job holds every depth of its (kernel, d): a job costs about 1.8 s of start-up
(torch, xarray, zarr imports) and its quadratures about 0.1 s per depth, so per-depth
jobs would spend most of the study's time starting Python.
"""

from __future__ import annotations

from typing import Any

from depthlab.config import ConfigError

from .dotkernels import FIXED_DEPTH

STUDY = "spectra"
PATHS = {
    "eigen": "eigen/{kernel}/d{d}.zarr",
    "krr_data": "krr/data.zarr",
    "krr": "krr/{kernel}/L{depth}.zarr",
}
FIGURES = ("eigenvalues", "mori_ueda_eigenvalues", "slopes", "learning_curves")


def _section(config: dict) -> dict:
    return config["studies"][STUDY]


def check(section: dict, config: dict) -> None:
    where = f"studies.{STUDY}"
    e = section["eigen"]
    if e["fit_k_min"] >= e["k_max"]:
        raise ConfigError(f"config error at {where}.eigen.fit_k_min: {e['fit_k_min']} must be below eigen.k_max = {e['k_max']}")
    k = section["krr"]
    for i, entry in enumerate(k["kernels"]):
        fixed = FIXED_DEPTH.get(entry["kernel"])
        if fixed is not None and entry["depth"] != fixed:
            raise ConfigError(f"config error at {where}.krr.kernels.{i}.depth: kernel {entry['kernel']} exists at depth "
                              f"{fixed} only, got {entry['depth']}")
        if fixed is None and entry["depth"] < 1:
            raise ConfigError(f"config error at {where}.krr.kernels.{i}.depth: kernel {entry['kernel']} needs depth >= 1")
    if max(k["n_train"]) < 2:
        raise ConfigError(f"config error at {where}.krr.n_train: need a training-set size of at least 2")


def depths_of(config: dict, kernel: str) -> list[int]:
    """The depths an eigen job computes for ``kernel``."""
    e = _section(config)["eigen"]
    if kernel in FIXED_DEPTH:
        return [FIXED_DEPTH[kernel]]
    return sorted(e["mori_ueda_depths"] if kernel.startswith("mu_") else e["depths"])


def figures(config: dict) -> list[str]:
    kernels = _section(config)["eigen"]["kernels"]
    return [f for f in FIGURES if f != "mori_ueda_eigenvalues" or any(k.startswith("mu_") for k in kernels)]


def path(stage: str, **job: Any) -> str:
    return PATHS[stage].format(**job)


def jobs(config: dict, stage: str) -> list[dict]:
    s = _section(config)
    if stage == "eigen":
        return [{"kernel": k, "d": d} for k in s["eigen"]["kernels"] for d in sorted(s["eigen"]["dims"])]
    if stage == "krr_data":
        return [{}]
    if stage == "krr":
        return [{"kernel": e["kernel"], "depth": e["depth"]} for e in s["krr"]["kernels"]]
    return []


def stage_inputs(config: dict, stage: str, job: dict) -> dict[str, str]:
    return {"data": path("krr_data")} if stage == "krr" else {}


def figure_inputs(config: dict, figure: str) -> dict[str, str]:
    if figure == "learning_curves":
        return {f"krr/{j['kernel']}/L{j['depth']}": path("krr", **j) for j in jobs(config, "krr")}
    mu = figure == "mori_ueda_eigenvalues"
    return {f"eigen/{j['kernel']}/d{j['d']}": path("eigen", **j) for j in jobs(config, "eigen")
            if figure == "slopes" or j["kernel"].startswith("mu_") == mu}


def claims_inputs(config: dict) -> list[str]:
    return [f for f in figures(config) if f in ("slopes", "learning_curves")]


def _envelope(stage: str, job: dict) -> dict:
    return {"study": STUDY, "stage": stage, "job": job}


def spec(config: dict, stage: str, job: dict) -> dict:
    s = _section(config)
    if stage == "eigen":
        kernel, d = str(job["kernel"]), int(job["d"])
        e = s["eigen"]
        return {**_envelope("eigen", {"kernel": kernel, "d": d}), "depths": depths_of(config, kernel),
                "beta": float(e["beta"]) if kernel.startswith("mu_") else None,
                "k_max": e["k_max"], "panels": e["panels"], "rtol": float(e["rtol"]), "fit_k_min": e["fit_k_min"]}
    if stage == "krr_data":
        k = s["krr"]
        return {**_envelope("krr_data", {}), "d": k["d"], "n_train": max(k["n_train"]), "n_test": k["n_test"],
                "threshold": float(k["threshold"]), "trials": k["trials"], "seed": config["seed"]}
    if stage == "krr":
        k = s["krr"]
        return {**_envelope("krr", {"kernel": str(job["kernel"]), "depth": int(job["depth"])}),
                "data": spec(config, "krr_data", {}), "n_train": sorted(k["n_train"]),
                "log10_ridges": [float(v) for v in sorted(k["log10_ridges"], reverse=True)], "fit_n_min": k["fit_n_min"]}
    if stage == "figure":
        return {**_envelope("figure", {"figure": str(job["figure"])})}
    if stage == "claims":
        e, k = s["eigen"], s["krr"]
        return {**_envelope("claims", {}), "slope_tolerance": 0.5, "depth_spread": 0.2, "rate_spread": 0.1,
                "scale_note": f"Scale: eigenvalues k = 0..{e['k_max']} on S^(d-1) for d = {sorted(e['dims'])}, "
                              f"depths {sorted(e['depths'])} (Mori & Ueda kernel: {sorted(e['mori_ueda_depths'])}, beta = {e['beta']}), "
                              f"{e['panels']} quadrature panels, agreement rtol {e['rtol']:g}, fits over k >= {e['fit_k_min']}; "
                              f"KRR on S^{k['d'] - 1}, n = {sorted(k['n_train'])}, {k['n_test']} test points, "
                              f"{k['trials']} trial(s), rates over n >= {k['fit_n_min']}."}
    raise KeyError(f"spectra has no stage {stage!r}")


def memory(config: dict) -> list[tuple[str, str, int]]:
    from depthlab import memory as mem

    s = _section(config)
    e, k = s["eigen"], s["krr"]
    N, Nt = max(k["n_train"]), k["n_test"]
    nodes = e["panels"] * 24 + 2 * 40 * 24
    return [
        ("spectra eigen", f"studies.{STUDY}.eigen.k_max", 3 * (e["k_max"] + 1) * nodes * mem.F64),
        ("spectra krr_data", f"studies.{STUDY}.krr.n_test", k["trials"] * mem.data(N + Nt, k["d"])),
        ("spectra krr", f"studies.{STUDY}.krr.n_train", mem.data(N + Nt, k["d"]) + 4 * N * N * mem.F64 + 3 * Nt * N * mem.F64),
    ]
