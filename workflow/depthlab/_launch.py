"""The ``depthlab`` command's entry point: the CLI with Python's cyclic garbage collector held off during start-up.

A pipeline job imports torch, xarray, zarr and (for figures) matplotlib and seaborn: about a million long-lived objects
and next to no garbage, yet the collector walks them again and again while they load, and once more when the
interpreter exits.  So the command starts with the collector off, and ``runner.start_gc`` turns it back on once the
job's modules are loaded, after ``gc.freeze()`` has moved everything loaded so far out of its sight.  The job itself
runs with the collector on.  ``benchmarks/bench_startup.py`` measures what this saves per job.
"""

from __future__ import annotations

import gc
import os
import sys

POOLS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def stage_threads(argv: list[str]) -> int | None:
    """The threads of a ``depthlab stage`` command line (``--threads N``, else $DEPTHLAB_THREADS, else 1); None for any
    other command."""
    if "stage" not in argv[:2]:
        return None
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv) and argv[i + 1].isdigit():
            return max(1, int(argv[i + 1]))
        if a.startswith("--threads=") and a.split("=", 1)[1].isdigit():
            return max(1, int(a.split("=", 1)[1]))
    env = os.environ.get("DEPTHLAB_THREADS", "1")
    return max(1, int(env)) if env.isdigit() else 1


def pin_pools(threads: int | None) -> None:
    """Give the BLAS and OpenMP pools a stage's thread count through the environment, before numpy and scipy load them
    (switching two OpenBLAS libraries' thread counts at run time with threadpoolctl, numpy's and scipy's,
    crashed scipy's dpotrf at N = 20 000; a count set by the environment avoids it).  A value already set is kept."""
    if threads is not None:
        for var in POOLS:
            os.environ.setdefault(var, str(threads))


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
MMAP_THRESHOLD = 32 << 20  # the largest glibc accepts on a 64-bit machine (DEFAULT_MMAP_THRESHOLD_MAX)


def keep_heap() -> bool:
    """Keep freed memory in the process for the next allocation (glibc only; elsewhere nothing changes).

    A training step allocates and frees the same few tensors again and again; at the fractal width 200 they are
    320-640 kB, above glibc's first mmap threshold, and each step took 827 fresh zeroed pages from the kernel
    (``benchmarks/fractal_step.py`` counts them): a tenth of the step.  Served from the heap, and the heap never trimmed,
    the step faults no page.  Allocation only: which memory holds a tensor changes no arithmetic (torch aligns every
    block to 64 bytes either way)."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, 1 << 30))


def main() -> None:
    gc.disable()
    from .machine import apply_portable

    apply_portable()  # before MKL, torch and OpenBLAS load and read their kernel variables
    threads = stage_threads(sys.argv[1:])
    pin_pools(threads)
    if threads is not None:
        keep_heap()
    from .cli import main as cli_main

    cli_main()
