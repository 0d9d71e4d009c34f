"""The ``depthlab`` command's entry point: the CLI with Python's cyclic garbage collector held off during start-up.

A pipeline job imports torch, xarray, zarr and (for figures) matplotlib and seaborn: about a million long-lived objects
and next to no garbage, yet the collector walks them again and again while they load, and once more when the
interpreter exits.  So the command starts with the collector off, and ``cli.start_gc`` turns it back on once the
job's modules are loaded, after ``gc.freeze()`` has moved everything loaded so far out of its sight.  The job itself
runs with the collector on.  ``benchmarks/bench_startup.py`` measures what this saves per job.
"""

from __future__ import annotations

import gc


def main() -> None:
    gc.disable()
    from .cli import main as cli_main

    cli_main()
