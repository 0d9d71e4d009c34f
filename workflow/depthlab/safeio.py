"""Reading a user's file without trusting it: regular files only, with a size cap, errors naming the file.

Every reader of a path a user or a results folder supplies (a config, a store's metadata, a provenance record, a
benchmark file, a claims JSON, a lock file) goes through :func:`read_bytes`.  The file is opened without blocking
(``O_NONBLOCK``: a FIFO opens at once instead of waiting for a writer) and checked on the open descriptor (``fstat``,
so nothing can be swapped in between): a directory, FIFO, socket or device (``/dev/zero``) is refused unread, and a
regular file is read up to ``max_bytes`` and refused beyond, so no input hangs a tool or fills its memory.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

MAX_BYTES = 64 * 2**20  # a config, record, benchmark row or metadata document is far smaller


class UnsafeFile(ValueError):
    """A path that is not a regular file, too large, unreadable or not what it should hold; the message names it."""


def _kind(mode: int) -> str:
    return (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )


def read_bytes(path: str | Path, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), at most ``max_bytes``; UnsafeFile otherwise.
    FileNotFoundError passes through (callers say "missing" their own way)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise UnsafeFile(f"{path}: cannot be read ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(f"{path}: {_kind(st.st_mode)}, not a regular file: not read")
        if st.st_size > max_bytes:
            raise UnsafeFile(f"{path}: {st.st_size} bytes, more than the {max_bytes} such a file may hold: not read")
        chunks, got = [], 0
        while True:
            b = os.read(fd, min(1 << 20, max_bytes + 1 - got))
            if not b:
                break
            chunks.append(b)
            got += len(b)
            if got > max_bytes:  # it grew while being read
                raise UnsafeFile(f"{path}: more than {max_bytes} bytes: not read")
        return b"".join(chunks)
    except OSError as e:
        raise UnsafeFile(f"{path}: cannot be read ({e.strerror})") from None
    finally:
        os.close(fd)


def read_text(path: str | Path, max_bytes: int = MAX_BYTES) -> str:
    try:
        return read_bytes(path, max_bytes).decode("utf-8")
    except UnicodeDecodeError as e:
        raise UnsafeFile(f"{path}: not UTF-8 text (byte {e.start})") from None


def read_json(path: str | Path, max_bytes: int = MAX_BYTES) -> Any:
    """A JSON document from ``path``: UnsafeFile naming the file if it is special, huge, not JSON or nested too deeply.
    NaN and infinities are refused (they are not JSON, and no record of ours holds one)."""
    return parse_json(read_text(path, max_bytes), str(path))


MAX_DEPTH = 64  # no record of ours nests deeper than a dozen levels


def parse_json(text: str, where: str) -> Any:
    """JSON text read from ``where`` (a file, a store's attribute): UnsafeFile naming it if it is not JSON, holds NaN or
    an infinity, or nests deeper than MAX_DEPTH (checked on the text before parsing, so no RecursionError)."""
    depth = top = 0
    in_str = esc = False
    for ch in text:  # bracket depth outside strings
        if in_str:
            esc, in_str = (False, True) if esc else (ch == "\\", ch != '"')
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            top = max(top, depth)
            if top > MAX_DEPTH:
                raise UnsafeFile(f"{where}: nested deeper than {MAX_DEPTH} levels: not one of depthlab's records")
        elif ch in "]}":
            depth -= 1
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise UnsafeFile(f"{where}: nested too deeply to be one of depthlab's files") from None
    except ValueError as e:
        raise UnsafeFile(f"{where}: not valid JSON ({str(e)[:160]})") from None


RECORD_TYPES = {
    "job": dict,
    "inputs": dict,
    "spec": dict,
    "attrs": dict,
    "path": str,
    "study": str,
    "stage": str,
    "content_hash": str,
    "record_hash": str,
}


def parse_record(text: str, where: str) -> dict:
    """A provenance record (a store's attribute, a figure's or claims' .provenance.json) through :func:`parse_json`, with
    its top-level types checked: UnsafeFile naming ``where`` and the field otherwise (NaN, 100 000
    brackets or ``"job": "not-a-dict"`` crashed ``ls``, ``audit`` and ``open_results``)."""
    rec = parse_json(text, where)
    if not isinstance(rec, dict):
        raise UnsafeFile(f"{where}: its provenance record is a {type(rec).__name__}, not a JSON object")
    for k, t in RECORD_TYPES.items():
        if k in rec and not isinstance(rec[k], t):
            raise UnsafeFile(f"{where}: its provenance record's {k!r} is a {type(rec[k]).__name__}, not a {t.__name__}")
    return rec


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def is_regular(path: str | Path) -> bool:
    """True for a regular file (symlinks followed); never opens it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def file_hash(path: str | Path, max_bytes: int = 4 * 2**30) -> str:
    """SHA-256 of the regular file ``path``, read in chunks (a figure's PDF or PNG, a CSV): UnsafeFile for a special or
    huge file."""
    import hashlib

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise UnsafeFile(f"{path}: cannot be read ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(f"{path}: {_kind(st.st_mode)}, not a regular file: not read")
        if st.st_size > max_bytes:
            raise UnsafeFile(f"{path}: {st.st_size} bytes, more than {max_bytes}: not read")
        h = hashlib.sha256()
        while b := os.read(fd, 1 << 20):
            h.update(b)
        return h.hexdigest()
    finally:
        os.close(fd)
