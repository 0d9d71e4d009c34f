"""All I/O: zarr stores with a provenance record, atomic writes, content hashes, figures.

A store's attrs hold its own attributes (``n_params``, ...) and one more,
``depthlab_provenance``: the canonical JSON of its provenance record

  study, stage, job     which job of which study made it (the audit recomputes its spec from these)
  path                  the store's path relative to the results root
  spec, config_hash     the exact config values it was made from, and their SHA-256
  content_hash          SHA-256 of every array (names, dims, dtypes, shapes, bytes)
  attrs                 the store's other attributes (they feed numbers too)
  code_version          git commit of the checkout, '+dirty' if it had uncommitted changes
  code_fingerprint      fingerprint of the stage's code (depthlab.provenance)
  packages, device      versions of the packages that shape the numbers; where it ran
  inputs                {name: {path, content_hash, record_hash}} of the stores it was made from
  created, record_hash  wall-clock time (not hashed); SHA-256 of everything else

Nothing is ever unpickled: stores are zarr arrays and JSON text.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .provenance import canonical_json, record_hash

RECORD_ATTR = "depthlab_provenance"


def content_hash(ds: xr.Dataset) -> str:
    """SHA-256 over every variable and coordinate: name, dims, dtype, shape and raw bytes (C order)."""
    h = hashlib.sha256()
    for name in sorted(map(str, ds.variables)):
        v = ds.variables[name]
        arr = np.ascontiguousarray(v.values)
        if arr.dtype.kind in "OU":  # strings: hash their UTF-8 text
            payload = "\x1f".join(map(str, arr.ravel())).encode()
            dt = "str"
        else:
            payload = arr.tobytes()
            dt = arr.dtype.str
        h.update(f"{name}|{','.join(map(str, v.dims))}|{dt}|{arr.shape}|".encode())
        h.update(payload)
    return h.hexdigest()


def _open(path: str | Path) -> xr.Dataset:
    with warnings.catch_warnings():
        # Snakemake drops a .snakemake_timestamp file into directory outputs; zarr notes it is not an array
        warnings.filterwarnings("ignore", message=".*snakemake_timestamp.*")
        return xr.open_zarr(path, consolidated=False, chunks=None)  # lazily indexed numpy, never dask


def read_store(path: str | Path) -> xr.Dataset:
    """Open a store fully into memory (the provenance attr stripped: see :func:`read_record`)."""
    with _open(path) as ds:
        out = ds.load()
    out.attrs.pop(RECORD_ATTR, None)
    return out


def read_record(path: str | Path) -> dict[str, Any]:
    """The provenance record of a store (raises KeyError if it has none)."""
    with _open(path) as ds:
        return json.loads(ds.attrs[RECORD_ATTR])


def plain_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """JSON-able copy of dataset attrs (numpy scalars to Python), as zarr stores them."""
    return json.loads(json.dumps({k: v for k, v in attrs.items() if k != RECORD_ATTR}, default=lambda o: o.item()))


def input_record(path: str | Path, results: str | Path) -> dict[str, str]:
    """What a consumer records of an input store: its path under the results root and its hashes."""
    rec = read_record(path)
    return {"path": relpath(path, results), "content_hash": rec["content_hash"], "record_hash": rec["record_hash"]}


def relpath(path: str | Path, results: str | Path) -> str:
    """``path`` relative to the results root, '/'-separated (how every record names a file)."""
    return Path(os.path.relpath(Path(path).resolve(), Path(results).resolve())).as_posix()


def finish_record(record: dict[str, Any]) -> dict[str, Any]:
    """Add the wall-clock time and the record hash."""
    rec = {**record, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    rec["record_hash"] = record_hash(rec)
    return rec


def remove_stale(path: str | Path) -> None:
    """Delete ``<path>.tmp-*`` left by a killed write of this same output (called before each write)."""
    path = Path(path)
    for tmp in path.parent.glob(f"{path.name}.tmp-*"):
        shutil.rmtree(tmp) if tmp.is_dir() else tmp.unlink(missing_ok=True)


def write_store(ds: xr.Dataset, path: str | Path, record: dict[str, Any]) -> dict[str, Any]:
    """Write ``ds`` to a zarr store at ``path`` atomically, with its provenance record; returns the record.

    ``record`` holds the fields the caller knows (study, stage, job, path, spec, ...);
    the content hash, the attrs, the time and the record hash are added here.  The
    store is written to ``<path>.tmp-<pid>`` and renamed into place only once
    complete, so an interrupted job never leaves a store that looks finished.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path)
    attrs = plain_attrs(ds.attrs)
    rec = finish_record({**record, "content_hash": content_hash(ds), "attrs": attrs})
    out = ds.copy()
    out.attrs = {**attrs, RECORD_ATTR: canonical_json(rec)}
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    with warnings.catch_warnings():
        # zarr 3 notes that consolidated metadata is outside the v3 spec; xarray and zarr-python read it, and it is what
        # lets a plain xr.open_zarr(store) open without a warning (the audit checks it against the arrays' own metadata)
        warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")
        out.to_zarr(tmp, mode="w", consolidated=True)
    if path.exists():
        shutil.rmtree(path)
    os.replace(tmp, path)
    return rec


def consolidated_mismatches(path: str | Path) -> list[str] | None:
    """Names whose consolidated metadata (the copy in the root ``zarr.json`` that ``xr.open_zarr`` reads by default)
    differs from the array's own ``zarr.json`` (what the audit's hashes cover), plus any name present in only one of
    them; None if the store has no consolidated metadata."""
    path = Path(path)
    root = json.loads((path / "zarr.json").read_text())
    cons = root.get("consolidated_metadata")
    if cons is None:
        return None
    meta = cons.get("metadata", {}) if isinstance(cons, dict) else {}
    own = {p.parent.relative_to(path).as_posix(): p for p in path.glob("*/zarr.json")}
    bad = sorted(set(meta) ^ set(own))
    for name in sorted(set(meta) & set(own)):
        if json.loads(own[name].read_text()) != meta[name]:
            bad.append(name)
    return bad


def write_bytes(data: bytes, path: str | Path) -> str:
    """Atomic write (tmp file + rename); returns the SHA-256 of the bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()


def write_text(text: str, path: str | Path) -> str:
    return write_bytes(text.encode(), path)


def write_json(obj: Any, path: str | Path) -> str:
    return write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", path)


def file_hash(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def png_pixels_hash(png: bytes | str | Path) -> str:
    """SHA-256 of a PNG's decoded pixels (mode, size, RGBA bytes): what a reader sees, whatever its chunks say."""
    from PIL import Image

    src = io.BytesIO(png) if isinstance(png, bytes) else png
    with Image.open(src) as im:
        im = im.convert("RGBA")
        return hashlib.sha256(f"{im.mode}|{im.size}|".encode() + im.tobytes()).hexdigest()


def png_text(png: bytes | str | Path, key: str) -> str | None:
    from PIL import Image

    with Image.open(io.BytesIO(png) if isinstance(png, bytes) else png) as im:
        return im.text.get(key)
