"""All I/O: zarr stores with provenance attrs, atomic writes, content hashes.

Every store carries in its attrs (JSON strings, zarr-safe):
  depthlab_spec   the canonical spec (exact config values) that produced it
  config_hash     SHA-256 of that spec
  content_hash    SHA-256 of every array in the store (names, dims, dtypes, bytes)
  code_version    git commit of the repository, '+dirty' if it had uncommitted changes
  packages        versions of the packages that shape the numbers
  device          where it was computed
  inputs          {name: {path, content_hash, config_hash}} of the stores it was made from
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import os
import shutil
import subprocess
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .config import canonical_json, spec_hash

REPO = Path(__file__).resolve().parents[2]
PROVENANCE_PACKAGES = ("depthlab", "torch", "numpy", "scipy", "xarray", "zarr", "bayesian-optimization", "snakemake")


def content_hash(ds: xr.Dataset) -> str:
    """SHA-256 over every variable and coordinate: name, dims, dtype, shape and raw bytes (C order)."""
    h = hashlib.sha256()
    for name in sorted(map(str, ds.variables)):
        v = ds.variables[name]
        arr = np.ascontiguousarray(v.values)
        if arr.dtype.kind in "OU":  # strings: hash their UTF-8 text
            payload = "\x1f".join(map(str, arr.ravel())).encode()
        else:
            payload = arr.tobytes()
        h.update(f"{name}|{','.join(v.dims)}|{arr.dtype.str if arr.dtype.kind not in 'OU' else 'str'}|{arr.shape}|".encode())
        h.update(payload)
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """'<git commit>' or '<git commit>+dirty'; 'unknown' outside a git checkout."""
    env = os.environ.get("DEPTHLAB_CODE_VERSION")
    if env:
        return env
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


@functools.lru_cache(maxsize=1)
def package_versions() -> dict[str, str]:
    out = {}
    for name in PROVENANCE_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def read_attrs(path: str | Path) -> dict[str, Any]:
    """Provenance attrs of a store, JSON-decoded where they are JSON."""
    ds = _open(path)
    out = {}
    for k, v in ds.attrs.items():
        try:
            out[k] = json.loads(v) if isinstance(v, str) and k in ("depthlab_spec", "packages", "inputs", "extra") else v
        except json.JSONDecodeError:
            out[k] = v
    ds.close()
    return out


def _open(path: str | Path) -> xr.Dataset:
    with warnings.catch_warnings():
        # Snakemake drops a .snakemake_timestamp file into directory outputs; zarr notes it is not an array
        warnings.filterwarnings("ignore", message=".*snakemake_timestamp.*")
        return xr.open_zarr(path, consolidated=False)


def read_store(path: str | Path) -> xr.Dataset:
    """Open a store fully into memory (stores are small next to RAM at laptop scale)."""
    with _open(path) as ds:
        return ds.load()


def input_record(path: str | Path) -> dict[str, str]:
    a = read_attrs(path)
    return {"path": str(path), "content_hash": a["content_hash"], "config_hash": a["config_hash"]}


def provenance_attrs(spec: dict, ds: xr.Dataset, inputs: dict[str, str | Path], device: str) -> dict[str, str]:
    return {
        "depthlab_spec": canonical_json(spec),
        "config_hash": spec_hash(spec),
        "content_hash": content_hash(ds),
        "code_version": code_version(),
        "packages": json.dumps(package_versions(), sort_keys=True),
        "device": device,
        "inputs": json.dumps({k: input_record(p) for k, p in sorted(inputs.items())}, sort_keys=True),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def write_store(ds: xr.Dataset, path: str | Path, spec: dict, inputs: dict[str, str | Path], device: str) -> Path:
    """Write ``ds`` to a zarr store at ``path`` atomically, with provenance attrs.

    The store is written to ``<path>.tmp-<pid>`` and renamed into place only once
    complete, so an interrupted job never leaves a store that looks finished.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    out = ds.copy()
    out.attrs = {**{k: v for k, v in ds.attrs.items()}, **provenance_attrs(spec, ds, inputs, device)}
    out.to_zarr(tmp, mode="w", consolidated=False)
    if path.exists():
        shutil.rmtree(path)
    os.replace(tmp, path)
    return path


def write_text(text: str, path: str | Path) -> None:
    """Atomic text write (tmp file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_json(obj: Any, path: str | Path) -> None:
    """Atomic JSON write (tmp file + rename)."""
    write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", path)


def save_figure(fig: Any, stem: str | Path, provenance: dict[str, Any]) -> list[Path]:
    """Save a matplotlib Figure as <stem>.png and <stem>.pdf with the input hashes in their metadata.

    PNG: text chunk 'depthlab-provenance'; PDF: the info dict's 'Subject'.  Both
    hold the canonical JSON of ``provenance``; written atomically.
    """
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    blob = canonical_json(provenance)
    paths = []
    for ext, meta in (("png", {"depthlab-provenance": blob, "Software": "depthlab"}),
                      ("pdf", {"Subject": blob, "Creator": "depthlab", "CreationDate": None})):
        final = stem.with_suffix(f".{ext}")
        tmp = final.with_name(f"{final.stem}.tmp-{os.getpid()}.{ext}")
        # PNG metadata must not carry a timestamp either, so reruns give identical bytes
        fig.savefig(tmp, format=ext, metadata=meta, dpi=150)
        os.replace(tmp, final)
        paths.append(final)
    return paths
