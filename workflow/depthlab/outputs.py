"""The one door for a path a user names as output: every command-line option and script argument that writes goes
through :func:`user_file` (a file) or :func:`user_folder` (a folder a command fills with a run of its own), before any
work.  Both are the checks below (never the file system's root, never inside a run's results folder, nothing
created outside one); this module only adds what the benchmarks share, so that no script grows its own variant.

``tests/test_writers.py`` walks every parser of the CLI and of the scripts under ``benchmarks/`` and ``docs/``: each
option is listed there as a writer (and refused where it must be) or as one that writes nothing."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from . import storage
from .provenance import PACKAGE_DIR, REPO


class OutputRefused(Exception):
    """A file a user named for a command's output would land somewhere it must not."""


RESULTS_MARKERS = (".depthlab.config.json", ".depthlab.fork.json")  # a folder holding one of these is a run's results


def results_folder_of(path: str | Path, extra: tuple = ()) -> Path | None:
    """The results folder that ``path`` (resolved, links followed) lies in or is, if any: a folder holding a run's owner
    or fork record, or one of ``extra`` (the folders a command reads)."""
    p = Path(path).resolve()
    roots = {Path(e).resolve() for e in extra}
    for q in (p, *p.parents):
        if q in roots or any((q / m).is_file() for m in RESULTS_MARKERS):
            return q
    return None


def check_output_folder(folder: str | Path, *, what: str = "--out") -> Path:
    """A folder a command will fill with a run of its own (``paper-check --out``, ``sweep --out``, a benchmark's
    ``--stores``): never the file system's root (resolved, links followed), nor inside another run's results folder.
    Raises :class:`OutputRefused` with one line naming it; returns the path."""
    folder = Path(folder)
    real = folder.resolve()
    if real == Path(real.anchor):
        raise OutputRefused(
            f"{what} {folder}: the file system's root{f' (through a link to {real})' if real != folder else ''}; "
            "give it a folder of its own"
        )
    inside = results_folder_of(real)
    if inside is not None:
        raise OutputRefused(
            f"{what} {folder}: lies in the results folder {inside}; give it a folder of its own (a run's "
            "folder holds only what its run wrote)"
        )
    return folder


def write_user_file(data: bytes, path: str | Path, *, protect: tuple = (), what: str = "the output") -> str:
    """Write a file a user named for a command's output (``diff --markdown`` / ``--plot``); returns the bytes' SHA-256.

    Unlike :func:`write_bytes`, which owns the results folders it writes into:

    * a path inside a results folder (:func:`results_folder_of`, ``protect`` included) is refused: the audit would then
      fail on a file the run did not write;
    * its folder must exist: nothing is created outside a results folder;
    * an existing symlink or special file (a terminal, ``/dev/stdout``, a FIFO) is written in place, never replaced by
      a regular file; an existing regular file, or a new one, is written atomically (a temporary file, renamed).

    Raises :class:`OutputRefused` with one line naming the path."""
    path = check_user_file(path, protect=protect, what=what)
    try:
        st = os.stat(path) if path.is_symlink() or path.exists() else None
    except OSError:
        st = None
    if path.is_symlink() or (st is not None and not stat.S_ISREG(st.st_mode)):
        with open(path, "wb") as f:  # in place: a device or FIFO is written to, a symlink keeps pointing where it did
            f.write(data)
        return hashlib.sha256(data).hexdigest()
    return storage.write_bytes(data, path)


def check_user_file(path: str | Path, *, protect: tuple = (), what: str = "the output") -> Path:
    """The checks of :func:`write_user_file`, before any work: raises :class:`OutputRefused`; returns the path."""
    path = Path(path)
    inside = results_folder_of(path, protect)
    if inside is not None:
        raise OutputRefused(
            f"{what} {path}: lies inside the results folder {inside}; write it elsewhere (a run's folder "
            "holds only what its run wrote, and its audit checks that)"
        )
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise OutputRefused(
            f"{what} {path}: its folder {parent} does not exist (nothing is created outside a results folder)"
        )
    if path.is_dir():
        raise OutputRefused(f"{what} {path}: is a folder; name a file")
    return path


BENCH_DIR = REPO / "results" / "bench"  # the benchmarks' default folder (git-ignored, not a run's results folder)


def user_file(path: str | Path, *, protect: tuple = (), what: str = "the output") -> Path:
    """A file the command will write: ``storage.check_user_file`` (raises :class:`OutputRefused`, one line), and never
    a file of the installed package (its shipped calibrations, say: a refit there would mark the checkout dirty and
    change what every later plan on this machine prints, unasked)."""
    real = Path(path).resolve()
    if real == PACKAGE_DIR or PACKAGE_DIR in real.parents:
        raise OutputRefused(
            f"{what} {path}: lies inside the depthlab package ({PACKAGE_DIR}); write it elsewhere and name it where "
            "it is read (plan --costs FILE / --gpu-costs FILE); to ship it, copy it in and commit"
        )
    return check_user_file(path, protect=protect, what=what)


def user_folder(path: str | Path, *, what: str = "--out") -> Path:
    """A folder the command fills with a run of its own: :func:`check_output_folder`."""
    return check_output_folder(path, what=what)


def bench_file(path: str | Path, *, what: str = "--out") -> Path:
    """A benchmark's JSON: checked as any user's file.  Only its default folder, the checkout's ``results/bench/``, is
    made when missing (a fresh clone has none); any other folder must exist."""
    path = Path(path)
    if path.parent.resolve() == BENCH_DIR.resolve():
        BENCH_DIR.mkdir(parents=True, exist_ok=True)
    return user_file(path, what=what)


def write_bench(data: str, path: str | Path, *, what: str = "--out") -> None:
    """Write a benchmark's JSON where :func:`bench_file` allowed it (atomically; a FIFO or terminal in place)."""
    write_user_file(data.encode(), path, what=what)


def links_leaving(folder: str | Path, limit: int = 5) -> list[str]:
    """Symbolic links below ``folder`` (stores' insides not walked) whose targets lie outside it, as 'link -> target'
    (at most ``limit``): a run would write through them, out of the folder the user named.  A link inside, and the
    folder itself being a link (a results folder on another disk), are fine."""
    root = os.path.realpath(folder)
    out: list[str] = []
    if not os.path.isdir(root):
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.endswith(".zarr") or os.path.islink(os.path.join(dirpath, d))]
        for name in (*dirnames, *filenames):
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                target = os.path.realpath(path)
                if target != root and not target.startswith(root + os.sep):
                    out.append(f"{path} -> {target}")
                    if len(out) >= limit:
                        return out
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
    return out


def inside(path: str | Path, folder: str | Path) -> bool:
    """Whether ``path``, every link on its way resolved, lies in ``folder`` (resolved too)."""
    root, real = os.path.realpath(folder), os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)
