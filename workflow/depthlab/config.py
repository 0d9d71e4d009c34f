"""Config validation and the per-job specs derived from it.

A *spec* is the exact, canonical set of config values one job depends on.  Its
canonical JSON is the job's Snakemake ``params`` (so a change reruns exactly the
jobs it touches) and its SHA-256 is the ``config_hash`` recorded in the store.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .targets import G_FUNCTIONS
from .widths import width_for_budget

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "config.schema.yaml"
STAGES = ("data", "lrsearch", "train", "sweep", "ntk", "figure", "claims", "config")


class ConfigError(ValueError):
    """A config value is invalid; the message names the key and what is allowed."""


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, floats in repr form (1e-4 and 0.0001 agree)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def spec_hash(spec: dict) -> str:
    return hashlib.sha256(canonical_json(spec).encode()).hexdigest()


def format_lr(lr: float) -> str:
    """Canonical string for a learning rate in a file name: 4 significant digits, e.g. 0.05 -> '5.000e-02'."""
    return f"{lr:.3e}"


def _key(path: Any) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _schema() -> dict:
    return yaml.safe_load(SCHEMA_PATH.read_text())


def _allowed_keys(schema: dict, path: list) -> list[str] | None:
    node = schema
    for p in path:
        props = node.get("properties", {})
        if p in props:
            node = props[p]
            continue
        pats = node.get("patternProperties", {})
        node = next(iter(pats.values())) if pats else {}
    props = node.get("properties")
    return sorted(props) if props else None


def validate(config: dict) -> dict:
    """Check ``config`` against the JSON schema and the cross-field rules; return it with defaults filled.

    Raises ConfigError naming the offending key (dotted path) and the allowed values,
    before any job runs.
    """
    schema = _schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        e = errors[0]
        where = _key(e.absolute_path)
        msg = f"config error at {where}: {e.message}"
        if e.validator == "additionalProperties":
            allowed = _allowed_keys(schema, list(e.absolute_path))
            if allowed:
                msg += f"; allowed keys: {', '.join(allowed)}"
            elif "patternProperties" in e.schema:
                msg += f"; keys must match {', '.join(e.schema['patternProperties'])}"
        if e.validator == "type" and isinstance(e.instance, str) and "number" in str(e.validator_value):
            msg += " (YAML 1.1 reads 1e-4 and 2.0e3 as strings: write 1.0e-4, 2.0e+3 or 2000)"
        if len(errors) > 1:
            msg += f" (and {len(errors) - 1} more problem(s))"
        raise ConfigError(msg)

    lo, hi = config["lrsearch"]["log10_lr_bounds"]
    if not lo < hi:
        raise ConfigError(f"config error at lrsearch.log10_lr_bounds: need low < high, got [{lo}, {hi}]")
    for fname, fig in config["figures"].items():
        fig.setdefault("kind", "depth_sweep")
        for tname, t in fig["targets"].items():
            t.setdefault("g", "product")
            t.setdefault("noise", 0.0)
            where = f"figures.{fname}.targets.{tname}"
            if t["k"] > t["d"]:
                raise ConfigError(f"config error at {where}.k: k = {t['k']} exceeds the input dimension d = {t['d']}; need k <= d")
            need = G_FUNCTIONS[t["g"]][1]
            if need is not None and t["k"] != need:
                raise ConfigError(f"config error at {where}.k: g = {t['g']!r} takes exactly k = {need}, got k = {t['k']}")
            if t["noise"] > 0 and fig["task"] == "classification":
                raise ConfigError(f"config error at {where}.noise: label noise is only defined for task = regression")
            if config["lrsearch"]["folds"] > t["n_train"]:
                raise ConfigError(f"config error at lrsearch.folds: {config['lrsearch']['folds']} folds exceed n_train = {t['n_train']} of {where}")
            for L in fig["depths"] if fig["kind"] == "depth_sweep" else []:
                try:
                    width_for_budget(t["d"], fig["budget"], L)
                except ValueError as err:
                    raise ConfigError(f"config error at figures.{fname}.budget: {err} (target {tname}, depth {L} in figures.{fname}.depths)") from None
    return config


def load(path: str | Path) -> dict:
    """Read a YAML config file and validate it."""
    return validate(yaml.safe_load(Path(path).read_text()))


# ---- per-job specs -----------------------------------------------------------------


def data_spec(config: dict, figure: str, target: str) -> dict:
    fig = config["figures"][figure]
    t = fig["targets"][target]
    return {
        "stage": "data",
        "target": {key: t[key] for key in ("k", "locality", "g", "d", "n_train", "noise")},
        "task": fig["task"],
        "n_test": fig["n_test"],
        "seed": config["seed"],
    }


def _training(config: dict, figure: str, max_epochs: int) -> dict:
    tr = config["training"]
    return {
        "batch_size": tr["batch_size"],
        "check_every": tr["check_every"],
        "loss_threshold": float(tr["loss_threshold"]),
        "max_epochs": max_epochs,
        "loss": "cross_entropy" if config["figures"][figure]["task"] == "classification" else "mse",
    }


def lrsearch_spec(config: dict, figure: str, target: str, depth: int) -> dict:
    ls = config["lrsearch"]
    return {
        "stage": "lrsearch",
        "data": data_spec(config, figure, target),
        "depth": depth,
        "budget": float(config["figures"][figure]["budget"]),
        "training": _training(config, figure, ls["max_epochs"]),
        "search": {
            "folds": ls["folds"],
            "log10_lr_bounds": [float(v) for v in ls["log10_lr_bounds"]],
            "init_points": ls["init_points"],
            "rounds": ls["rounds"],
            "candidates_per_round": ls["candidates_per_round"],
            "seed": config["seed"],
        },
    }


def train_spec(config: dict, figure: str, target: str, depth: int) -> dict:
    return {
        "stage": "train",
        "data": data_spec(config, figure, target),
        "depth": depth,
        "budget": float(config["figures"][figure]["budget"]),
        "training": _training(config, figure, config["training"]["max_epochs"]),
        "seeds": list(config["figures"][figure]["seeds"]),
    }


def sweep_spec(config: dict, figure: str, target: str, depth: int) -> dict:
    fig = config["figures"][figure]
    return {
        "stage": "sweep",
        "data": data_spec(config, figure, target),
        "depth": depth,
        "width": fig["width"],
        "lrs": [float(10.0**u) for u in sorted(fig["log10_lrs"])],
        "training": _training(config, figure, fig["max_epochs"]),
        "seeds": list(fig["seeds"]),
    }


def ntk_spec(config: dict, figure: str, target: str, depth: int) -> dict:
    return {
        "stage": "ntk",
        "data": data_spec(config, figure, target),
        "depth": depth,
        "beta": float(config["ntk"]["beta"]),
        "block": config["ntk"]["block"],
    }


def claims_spec(config: dict) -> dict:
    figs = config["figures"]
    scale = "; ".join(
        f"{name}: " + ", ".join(f"{t} (d={v['d']}, N={v['n_train']}" + (f", eps={v['noise']:g}" if v["noise"] else "") + ")"
                                for t, v in sorted(f["targets"].items()))
        + (f", P={f['budget']:g}" if f["kind"] == "depth_sweep" else f", h={f['width']}")
        + f", L={sorted(f['depths'])}, N_test={f['n_test']}, seeds={len(f['seeds'])}"
        for name, f in sorted(figs.items())
    )
    return {
        "stage": "claims",
        "figures": {name: f["kind"] for name, f in sorted(figs.items())},
        "scale_note": f"Scale: {scale}; CV folds={config['lrsearch']['folds']}.",
    }


def figure_spec(config: dict, figure: str) -> dict:
    fig = config["figures"][figure]
    return {
        "stage": "figure",
        "figure": figure,
        "kind": fig["kind"],
        "task": fig["task"],
        "depths": sorted(fig["depths"]),
        "targets": {name: data_spec(config, figure, name)["target"] for name in sorted(fig["targets"])},
    }
