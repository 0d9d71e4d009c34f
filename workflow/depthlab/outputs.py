"""The one door for a path a user names as output: every command-line option and script argument that writes goes
through :func:`user_file` (a file) or :func:`user_folder` (a folder a command fills with a run of its own), before any
work.  Both are ``storage``'s checks (never the file system's root, never inside a run's results folder, nothing
created outside one); this module only adds what the benchmarks share, so that no script grows its own variant.

``tests/test_writers.py`` walks every parser of the CLI and of the scripts under ``benchmarks/`` and ``docs/``: each
option is listed there as a writer (and refused where it must be) or as one that writes nothing."""

from __future__ import annotations

from pathlib import Path

from . import storage
from .provenance import PACKAGE_DIR, REPO

BENCH_DIR = REPO / "results" / "bench"  # the benchmarks' default folder (git-ignored, not a run's results folder)
OutputRefused = storage.OutputRefused


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
    return storage.check_user_file(path, protect=protect, what=what)


def user_folder(path: str | Path, *, what: str = "--out") -> Path:
    """A folder the command fills with a run of its own: ``storage.check_output_folder``."""
    return storage.check_output_folder(path, what=what)


def bench_file(path: str | Path, *, what: str = "--out") -> Path:
    """A benchmark's JSON: checked as any user's file.  Only its default folder, the checkout's ``results/bench/``, is
    made when missing (a fresh clone has none); any other folder must exist."""
    path = Path(path)
    if path.parent.resolve() == BENCH_DIR.resolve():
        BENCH_DIR.mkdir(parents=True, exist_ok=True)
    return user_file(path, what=what)


def write_bench(data: str, path: str | Path, *, what: str = "--out") -> None:
    """Write a benchmark's JSON where :func:`bench_file` allowed it (atomically; a FIFO or terminal in place)."""
    storage.write_user_file(data.encode(), path, what=what)
