"""One run per results folder: an exclusive lock on ``<results>/.depthlab.lock``, whatever the working directory.

Snakemake's own lock lives in ``.snakemake/`` of the working directory, so two runs started from two
directories on one results folder would both go ahead, and one's clean-up could delete the other's live
temporary store.  Every run takes this lock when it starts executing jobs (the Snakefile's ``onstart``; a
dry run takes none) and holds it for its whole life: the operating system releases an ``flock`` when its
process ends, however it ends (SIGKILL included), so a killed run never leaves a stale lock.  The file
names the holder (pid, host, working directory, start time), and a second run fails with that name.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import socket
import stat
from pathlib import Path

from . import safeio

LOCK_NAME = ".depthlab.lock"
_held: dict[str, int] = {}  # results folder -> open file descriptor (kept open: the lock lives as long as it does)


class ResultsInUse(RuntimeError):
    pass


def acquire(results: str | Path) -> Path:
    """Take the results folder's lock for this process, or raise ResultsInUse naming the run that holds it."""
    root = Path(results).resolve()
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_NAME
    if str(root) in _held:
        return path
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as e:  # a directory, a symlink, a file we may not write
        raise ResultsInUse(f"{path}: cannot be opened as depthlab's lock file ({e.strerror}); remove it if it is yours, or "
                           f"use another `results` folder") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ResultsInUse(f"{path}: not a regular file (a FIFO, socket or device), so not depthlab's lock file; remove it "
                           f"if it is yours, or use another `results` folder")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = holder_of(path)
        os.close(fd)
        raise ResultsInUse(f"results folder {root} is in use by another run ({holder}); wait for it to finish, or use "
                           f"another `results` folder. The lock is released when that process ends.") from None
    me = {"pid": os.getpid(), "host": socket.gethostname(), "cwd": os.getcwd(),
          "started": _dt.datetime.now().astimezone().isoformat(timespec="seconds")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
    _held[str(root)] = fd
    return path


def holder_of(path: str | Path) -> str:
    try:
        h = json.loads(safeio.read_text(path, 4096))
        return f"pid {h['pid']} on {h['host']}, started {h['started']} from {h['cwd']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


def release(results: str | Path) -> None:
    fd = _held.pop(str(Path(results).resolve()), None)
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
