"""Which config a results folder belongs to: two configs with the same file name (``a/same.yaml``
and ``b/same.yaml``, or any ``config.yaml`` and ``default.yaml``) share ``results/<name>``, and the second used to
rewrite the first's figures and claims without a word.

A run records its config in ``<results>/.depthlab.config.json``: the file it came from (absolute path) and its
validated values.  At the start of the next run (under the folder's lock, before any job):

* the same config file, edited: the folder follows it (the incremental rerun of a changed knob);
* another config file with the same values (a copy, ``config.used.yaml``): it runs, the folder still belongs to the first;
* another config file with other values: the run stops, naming both files and the keys that differ, and saying how to
  go on: a ``results:`` of its own, or ``DEPTHLAB_CONTINUE=1`` (``make run CONTINUE=1``) to make the folder this config's.

``device`` and ``device_by_study`` are not compared: neither is a rerun trigger.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

OWNER = ".depthlab.config.json"
IGNORED = ("device", "device_by_study", "cpu_kernels")


class FolderTaken(Exception):
    """The results folder belongs to another config with other values."""


def _values(config: dict) -> dict:
    return json.loads(json.dumps({k: v for k, v in config.items() if k not in IGNORED}, sort_keys=True, default=str))


def differences(a: Any, b: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two nested mappings (a key only one has counts)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            key = f"{prefix}.{k}" if prefix else str(k)
            if k not in a or k not in b:
                out.append(key)
            else:
                out += differences(a[k], b[k], key)
        return out
    return [] if a == b else [prefix or "(the whole config)"]


def _read(path: Path) -> dict | None:
    """The recorded owner, or None when there is none or it is unreadable (then the run records itself)."""
    try:
        if not path.is_file():
            return None
        rec = json.loads(path.read_text(), parse_constant=lambda c: None)
    except (OSError, ValueError, RecursionError):
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("config"), dict) else None


def owner_config(results: str | Path) -> Path | None:
    """The config file a results folder belongs to, where it still is a file (None: no record, or the file is gone)."""
    rec = _read(Path(results) / OWNER)
    src = rec.get("source") if rec else None
    return Path(src) if isinstance(src, str) and Path(src).is_file() else None


def check(results: str | Path, config: dict, source: str | Path | None, force: bool = False) -> None:
    """What :func:`claim` would refuse, without recording anything (a dry run).  Raises
    :class:`FolderTaken`."""
    results = Path(results)
    rec = _read(results / OWNER)
    if rec is None or force:
        return
    src = str(Path(source).resolve()) if source else "(no config file)"
    values = _values(config)
    if rec.get("source") == src or rec["config"] == values:
        return
    _refuse(results, rec, src, values)


def _refuse(results: Path, rec: dict, src: str, values: dict) -> None:
    keys = differences(rec["config"], values)
    shown = ", ".join(keys[:12]) + (f" and {len(keys) - 12} more" if len(keys) > 12 else "")
    raise FolderTaken(
        f"results folder {results} belongs to the config {rec.get('source')}, and {src} differs from it at: {shown}. "
        f"Give this config a folder of its own (a `results:` key), or, to make {results} this config's (its "
        f"stores are reused where their jobs are unchanged), run again with DEPTHLAB_CONTINUE=1 "
        f"(make run CONTINUE=1)"
    )


def claim(results: str | Path, config: dict, source: str | Path | None, force: bool = False) -> str:
    """Check that ``results`` belongs to this config (module docstring) and record it; returns a line for the log.
    Raises :class:`FolderTaken` naming both files and the differing keys."""
    from . import storage

    results = Path(results)
    path = results / OWNER
    src = str(Path(source).resolve()) if source else "(no config file)"
    values = _values(config)
    rec = _read(path)
    if rec is not None and not force:
        if rec.get("source") == src:
            if rec["config"] == values:
                return f"depthlab: {results} belongs to {src}" + _fork_note(results)
        elif rec["config"] == values:
            return f"depthlab: {results} belongs to {rec.get('source')}; {src} has the same values"
        else:
            _refuse(results, rec, src, values)
    results.mkdir(parents=True, exist_ok=True)
    storage.write_json({"source": src, "config": values}, path)
    return f"depthlab: {results} now belongs to {src}" + _fork_note(results)


def _fork_note(results: Path) -> str:
    """A note for a folder whose fork was interrupted (depthlab.fork: every store it took is whole, so the run computes
    the rest; running the fork again first would take more of them)."""
    from . import fork

    base = fork.incomplete(results)
    return (
        (
            f"; its fork from {base} was interrupted: this run computes what it did not take (`depthlab fork` with the "
            "same arguments takes the rest from its base first)"
        )
        if base
        else ""
    )


def continuing() -> bool:
    return os.environ.get("DEPTHLAB_CONTINUE", "") not in ("", "0")
