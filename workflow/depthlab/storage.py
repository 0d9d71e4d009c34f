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

Nothing is ever unpickled: stores are zarr arrays and JSON text, and :func:`check_store` refuses a store whose
metadata names a pickling codec before zarr sees it, whatever numcodecs' settings or the environment say.  It also
refuses stores holding FIFOs, sockets or device files (reading one would hang or read a device).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import re
import shutil
import socket
import stat
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
import zarr

from . import records, safeio
from .provenance import canonical_json, record_hash

RECORD_ATTR = records.RECORD_ATTR


def content_hash(ds: xr.Dataset) -> str:
    """SHA-256 over every variable and coordinate: name, dims, dtype, shape and raw bytes (C order)."""
    h = hashlib.sha256()
    for name in sorted(map(str, ds.variables)):
        v = ds.variables[name]
        arr = np.ascontiguousarray(v.values)
        if (
            arr.dtype.kind in "OUT"
        ):  # strings (fixed, object or numpy's StringDType, as zarr 3 reads them back): their text
            payload = "\x1f".join(map(str, arr.ravel())).encode()
            dt = "str"
        else:
            payload = arr.tobytes()
            dt = arr.dtype.str
        h.update(f"{name}|{','.join(map(str, v.dims))}|{dt}|{arr.shape}|".encode())
        h.update(payload)
    return h.hexdigest()


class StoreError(ValueError):
    """A store depthlab refuses to open (a pickling codec, a special file inside it); the message names the file."""


_UNSAFE_CODEC = re.compile(r"pickle", re.IGNORECASE)
_METADATA = {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"}
MAX_METADATA_BYTES = 64 * 2**20


def _codec_names(meta: Any) -> list[str]:
    """Every codec/filter/compressor name or id in a zarr metadata document (v2 or v3, consolidated or not)."""
    out, stack = [], [meta]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("name", "id") and isinstance(v, str):
                    out.append(v)
                elif isinstance(v, (dict, list)):
                    stack.append(v)
        elif isinstance(node, list):
            stack.extend(node)
    return out


def check_store(path: str | Path) -> list[Path]:
    """Refuse (StoreError) a store holding anything but directories and regular files, or metadata that names a
    pickling codec; returns the symlinks inside it (the audit reports those leading elsewhere).  Never opens a
    special file: each entry is lstat'ed first."""
    root = Path(path)
    st_root = os.stat(root)
    if not stat.S_ISDIR(st_root.st_mode):
        raise StoreError(f"{root}: not a directory, so not a zarr store")
    links = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            f = Path(dirpath, name)
            mode = os.lstat(f).st_mode
            if stat.S_ISLNK(mode):
                links.append(f)
                mode = os.stat(f).st_mode
                if stat.S_ISDIR(mode) and name in dirnames:
                    raise StoreError(f"{f}: a symlinked directory inside a store")
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise StoreError(f"{f}: a FIFO, socket or device file, not data; depthlab does not open it")
            if name in _METADATA and stat.S_ISREG(mode):
                if os.stat(f).st_size > MAX_METADATA_BYTES:
                    raise StoreError(f"{f}: metadata larger than {MAX_METADATA_BYTES >> 20} MiB")
                try:
                    meta = json.loads(f.read_bytes())
                except (ValueError, RecursionError) as e:
                    raise StoreError(f"{f}: corrupt zarr metadata ({type(e).__name__}: {str(e)[:120]})") from None
                bad = sorted({c for c in _codec_names(meta) if _UNSAFE_CODEC.search(c)})
                if bad:
                    raise StoreError(
                        f"{f}: names the codec {', '.join(bad)}, which unpickles data; depthlab never "
                        "unpickles, whatever the environment allows"
                    )
    return links


def open_store(path: str | Path) -> xr.Dataset:
    """Open a store lazily (its arrays read on access, never dask), after its links are checked: for reading a few
    variables of a large store (the cost calibration's trained share)."""
    check_store(path)
    with warnings.catch_warnings():
        # Snakemake drops a .snakemake_timestamp file into directory outputs; zarr notes it is not an array
        warnings.filterwarnings("ignore", message=".*snakemake_timestamp.*")
        return xr.open_zarr(path, consolidated=False, chunks=None)  # lazily indexed numpy, never dask


def read_store(path: str | Path) -> xr.Dataset:
    """Open a store fully into memory (the provenance attr stripped: see :func:`read_record`)."""
    with open_store(path) as ds:
        out = ds.load()
    out.attrs.pop(RECORD_ATTR, None)
    return out


def read_record(path: str | Path) -> dict[str, Any]:
    """The provenance record of a store (:func:`depthlab.records.store_record`, after the store's links are checked:
    no FIFO or device opened); raises :class:`depthlab.records.RecordError`."""
    check_store(path)
    return records.store_record(path)


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


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


_HOST = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:40] or "host"
_RAND: dict[int, str] = {}
_OWNED: set[str] = set()  # outputs whose lock this process holds (depthlab.lock.OutputLock): no one else writes them


def own(path: str | Path, kind: str = "tmp") -> Path:
    """This process's ``<path>.<kind>-<pid>-<host>-<random>``: unique across hosts (a pid repeats on another node of a
    cluster) and across processes."""
    pid = os.getpid()
    rand = _RAND.setdefault(pid, os.urandom(4).hex())
    path = Path(path)
    return path.with_name(f"{path.name}.{kind}-{pid}-{_HOST}-{rand}")


@contextmanager
def owning(path: str | Path):
    """While held, :func:`remove_stale` of ``path`` treats every other temporary of it as stale: the caller holds the
    output's lock, so no live writer can own one (on this host or another)."""
    key = str(Path(path).resolve())
    _OWNED.add(key)
    try:
        yield
    finally:
        _OWNED.discard(key)


def remove_stale(path: str | Path) -> list[Path]:
    """Delete ``<path>.tmp-<pid>[-<host>-<random>]`` (a half-written new version) or ``<path>.old-...`` (the previous
    version, set aside while the new one was renamed in) left by a killed write of this same output (called before each
    write): exactly those names (not a sibling whose own name starts with them), never this process's own, and only
    when its writer is gone: its process on this host has ended, or this process holds the output's lock (no other job
    can be writing it, on any host).  A live writer's files are never touched.  Returns what was removed."""
    path = Path(path)
    pattern = re.compile(re.escape(path.name) + r"\.(?:tmp|old)-(\d+)(?:-([A-Za-z0-9]+)-([0-9a-f]+))?")
    locked = str(path.resolve()) in _OWNED
    removed = []
    for tmp in [
        *path.parent.glob(f"{glob_escape(path.name)}.tmp-*"),
        *path.parent.glob(f"{glob_escape(path.name)}.old-*"),
    ]:
        m = pattern.fullmatch(tmp.name)
        if m is None:
            continue
        pid, host, rand = int(m.group(1)), m.group(2), m.group(3)
        mine = pid == os.getpid() and (host is None or (host == _HOST and rand == _RAND.get(pid)))
        here = host is None or host == _HOST
        if mine or (not locked and (not here or _pid_alive(pid))):
            continue
        shutil.rmtree(tmp) if tmp.is_dir() and not tmp.is_symlink() else tmp.unlink(missing_ok=True)
        removed.append(tmp)
    return removed


def _remove_quietly(p: Path) -> None:
    """Remove ``p`` (a folder tree, a file or a link) if it is there; never raises.  It may turn from nothing into a
    folder between the check and the removal (see discard_own_tmp), hence the second try."""
    try:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    except IsADirectoryError:
        shutil.rmtree(p, ignore_errors=True)
    except OSError:
        pass


def discard_own_tmp(path: str | Path, settle: float = 0.0) -> bool:
    """Remove this process's ``<path>.tmp-<pid>`` (a write that failed), if any; never raises.

    A zarr write that failed (a full disk) leaves its writer threads running: the first error reaches the caller
    while other chunks are still being written, and each of them can re-create the folder after it was removed.
    With ``settle`` > 0 the removal repeats until the path has stayed gone for ``settle`` seconds (giving up after
    ``20 * settle``).  Returns whether the path is gone."""
    tmp = own(path)
    start = gone_since = time.monotonic()
    while True:
        if tmp.exists() or tmp.is_symlink():  # there (again): remove it and start the quiet period afresh
            gone_since = None
            _remove_quietly(tmp)
        now = time.monotonic()
        if tmp.exists() or tmp.is_symlink():
            gone_since = None
        elif gone_since is None:
            gone_since = now
        if gone_since is not None and now - gone_since >= settle:
            return True
        if now - start > 20 * settle:
            return gone_since is not None
        time.sleep(min(0.05, settle))


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


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
    # fixed-width strings as variable-length ones: zarr 3 has a spec for those only (and warns on the others); the text,
    # and so the content hash, is the same
    out = ds.copy().map(_vlen_strings, keep_attrs=True)
    out = out.assign_coords({k: _vlen_strings(v) for k, v in out.coords.items() if v.dtype.kind == "U"})
    for name, var in out.variables.items():  # CF-style labels on every variable and coordinate
        var.attrs.setdefault("long_name", str(var.attrs.get("description") or str(name).replace("_", " ")))
        var.attrs.setdefault("units", units_of(str(name)))
    out.attrs = {**attrs, RECORD_ATTR: canonical_json(rec)}
    tmp = own(path)
    with warnings.catch_warnings():
        # zarr 3 notes that consolidated metadata is outside the v3 spec; xarray and zarr-python read it, and it is what
        # lets a plain xr.open_zarr(store) open without a warning (the audit checks it against the arrays' own metadata)
        warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")
        try:
            out.to_zarr(tmp, mode="w", consolidated=False)
            failpoint("store")  # the arrays are written, the store is not yet whole
            zarr.consolidate_metadata(str(tmp))
            failpoint("consolidation")  # whole, not yet in place
        except BaseException:  # a full disk, a kill (SIGTERM raises here): leave no half-written store behind
            _remove_quietly(tmp)
            raise
    replace_dir(tmp, path)
    return rec


def failpoint(name: str) -> None:
    """Fault injection for the chaos test (tests/test_chaos.py); nothing unless the environment asks for it.

    With ``DEPTHLAB_FAILPOINT=<name>:<n>`` and ``DEPTHLAB_FAILPOINT_COUNTER=<file>``, the n-th time any job of the run
    reaches the point ``name`` (counted in that file: one byte per arrival) it SIGKILLs its whole process group,
    Snakemake and every job, as ``kill -9`` of the run would.  The points: ``store`` (a store's arrays written, its
    metadata not consolidated), ``consolidation`` (the store whole under its temporary name), ``figure`` (a figure's
    CSV written, its PNG, PDF and provenance not), ``claims`` (a study's claims.json written, its claims.md and
    provenance not), ``index`` (the claims index written, its provenance not)."""
    want = os.environ.get("DEPTHLAB_FAILPOINT")
    if not want:
        return
    kind, _, nth = want.partition(":")
    if kind != name:
        return
    counter = os.environ.get("DEPTHLAB_FAILPOINT_COUNTER")
    if counter:
        fd = os.open(counter, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, b".")
        finally:
            os.close(fd)
        if os.path.getsize(counter) < int(nth or 1):
            return
    import signal

    os.killpg(os.getpgrp(), signal.SIGKILL)


UNITS = {
    "epochs": "epoch",
    "stopped_epoch": "epoch",
    "check_epoch": "epoch",
    "epoch": "epoch",
    "stopped_step": "step",
    "check_step": "step",
    "step": "step",
    "steps": "step",
    "to_target": "iteration",
    "rule_to_target": "iteration",
    "diverged_at": "iteration",
    "rule_diverged_at": "iteration",
    "angle": "rad",
    "seconds": "s",
}


def units_of(name: str) -> str:
    """CF ``units`` of a variable by its name: counts of epochs, steps or iterations, angles in radians; "1" (CF's
    dimensionless) for everything else, which in depthlab is errors, accuracies, rates, losses, inputs and counts."""
    return UNITS.get(name, "1")


def _vlen_strings(v: xr.DataArray) -> xr.DataArray:
    return v.astype(object) if v.dtype.kind == "U" else v


def replace_dir(new: Path, path: Path) -> None:
    """Put the folder ``new`` at ``path`` with renames only: the old version (if any) is renamed aside to
    ``<path>.old-<pid>``, the new one renamed in, then the old one deleted.  A reader sees the old store or the new one,
    never a half-deleted one; a kill in between leaves no store at ``path`` (which the workflow rebuilds) and a leftover
    that :func:`remove_stale` clears."""
    aside = own(path, "old")
    if path.exists() or path.is_symlink():
        os.replace(path, aside)
    os.replace(new, path)
    _remove_quietly(aside)


def consolidated_mismatches(path: str | Path) -> list[str] | None:
    """Names whose consolidated metadata (the copy in the root ``zarr.json`` that ``xr.open_zarr`` reads by default)
    differs from the array's own ``zarr.json`` (what the audit's hashes cover), plus any name present in only one of
    them; None if the store has no consolidated metadata."""
    path = Path(path)
    root = safeio.read_json(path / "zarr.json")
    cons = root.get("consolidated_metadata")
    if cons is None:
        return None
    meta = cons.get("metadata", {}) if isinstance(cons, dict) else {}
    own = {p.parent.relative_to(path).as_posix(): p for p in path.glob("*/zarr.json")}
    bad = sorted(set(meta) ^ set(own))
    for name in sorted(set(meta) & set(own)):
        if safeio.read_json(own[name]) != meta[name]:
            bad.append(name)
    return bad


def write_bytes(data: bytes, path: str | Path) -> str:
    """Atomic write (tmp file + rename); returns the SHA-256 of the bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path)
    tmp = own(path)
    try:
        tmp.write_bytes(data)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()


def write_text(text: str, path: str | Path) -> str:
    return write_bytes(text.encode(), path)


def write_json(obj: Any, path: str | Path) -> str:
    return write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", path)


def file_hash(path: str | Path) -> str:
    return safeio.file_hash(path)


def png_pixels_hash(png: bytes | str | Path) -> str:
    """SHA-256 of a PNG's decoded pixels, every frame of it (mode, size, RGBA bytes): what a reader sees, whatever its
    chunks say.  depthlab writes one frame; an animated PNG's extra frames change the hash."""
    from PIL import Image, ImageSequence

    src = io.BytesIO(png) if isinstance(png, bytes) else png
    h = hashlib.sha256()
    with Image.open(src) as im:
        for n, frame in enumerate(ImageSequence.Iterator(im)):
            rgba = frame.convert("RGBA")
            h.update((f"{rgba.mode}|{rgba.size}|" if n == 0 else f"|frame {n}|{rgba.mode}|{rgba.size}|").encode())
            h.update(rgba.tobytes())
    return h.hexdigest()


def png_frames(png: bytes | str | Path) -> int:
    from PIL import Image

    with Image.open(io.BytesIO(png) if isinstance(png, bytes) else png) as im:
        return int(getattr(im, "n_frames", 1))


def png_text(png: bytes | str | Path, key: str) -> str | None:
    from PIL import Image

    with Image.open(io.BytesIO(png) if isinstance(png, bytes) else png) as im:
        return im.text.get(key)


def _pdf_literal(data: bytes, start: int) -> bytes:
    """The bytes of the PDF literal string opening at data[start] == '(' (escapes, octal codes, balanced parentheses)."""
    out, depth, i = bytearray(), 0, start
    simple = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("f"): 12}
    while i < len(data):
        c = data[i]
        if c == 0x5C:  # backslash
            i += 1
            e = data[i]
            if e in simple:
                out.append(simple[e])
            elif 0x30 <= e <= 0x37:
                j = i
                while j < min(i + 3, len(data)) and 0x30 <= data[j] <= 0x37:
                    j += 1
                out.append(int(data[i:j], 8) & 0xFF)
                i = j - 1
            elif e in (10, 13):  # line continuation
                pass
            else:
                out.append(e)
        elif c == 0x28:
            depth += 1
            if depth > 1:
                out.append(c)
        elif c == 0x29:
            depth -= 1
            if depth == 0:
                return bytes(out)
            out.append(c)
        else:
            out.append(c)
        i += 1
    raise ValueError("unterminated string")


def pdf_subject(pdf: bytes | str | Path) -> str | None:
    """The Subject of a PDF's document info dictionary (the last one: an incremental update wins), or None.
    Reads the literal string matplotlib writes; UTF-16 strings (with their byte-order mark) are decoded."""
    data = pdf if isinstance(pdf, bytes) else Path(pdf).read_bytes()
    at = data.rfind(b"/Subject")
    if at < 0:
        return None
    i = at + len(b"/Subject")
    while i < len(data) and data[i] in b" \t\r\n":
        i += 1
    if i >= len(data) or data[i] != 0x28:
        raise ValueError("its /Subject is not a literal string")
    raw = _pdf_literal(data, i)
    return raw[2:].decode("utf-16-be") if raw.startswith(b"\xfe\xff") else raw.decode("latin-1")


def figure_inputs(study: Any, inputs: dict[str, str]) -> list:
    """The stores a figure reads, each a ``study.StoreInput`` with the stage and typed job its provenance record names
    (never parsed from paths).  It lives here, not in cli, so that audit and reproduce read a figure's inputs as the
    figure stage does without importing the command line (which imports them)."""
    from .study import StoreInput

    out = []
    for _, p in sorted(inputs.items()):
        rec = read_record(p)
        out.append(StoreInput(rec["stage"], study.stage(rec["stage"]).job(rec["job"]), read_store(p)))
    return out
