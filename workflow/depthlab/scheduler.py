"""Keep Snakemake's own scheduler from busy-looping: at most one pending re-evaluation timer per run.

Snakemake (9.x) rate-limits job starts (``--max-jobs-per-timespan``, default ``100/1s``).  With the limiter
on, every pass of its scheduler loop that ends with jobs still waiting (ready, but no free core) starts a
new ``threading.Timer(timespan)`` whose only effect is another pass.  Each pass thus schedules the next,
and every job that finishes starts one more such chain beside those already running.  With a backlog of
ready jobs (the default config keeps dozens waiting for most of its two hours) the number of chains grows
with the number of jobs finished, so the passes per second do too, and each pass stats every input of
every waiting job and re-evaluates their params and resources.  Measured on the 2-core dev machine: a
profiled smoke run (188 jobs, 2 cores) made 50 062 scheduler passes and started 50 064 timer threads.

:func:`coalesce_reevaluations` replaces the scheduler's ``_schedule_reevalutation`` (sic) on the running
instance with one that starts a timer only when none is pending.  The rate limit keeps its meaning (a
waiting job is still looked at again within ``timespan``), passes triggered by finished jobs are
unchanged, and the timer is a daemon thread, so it never delays exit.  If a Snakemake release renames what
this relies on, it changes nothing and says so.  ``DEPTHLAB_STOCK_SCHEDULER=1`` leaves Snakemake as it is
(``benchmarks/bench_workflow.py`` measures the two side by side).

Snakemake 9.10 put the choice of which jobs run behind a plugin interface (``--scheduler``); the re-evaluation timer
is outside it (the job scheduler's own loop), so no plugin can replace this.  The patch therefore stays, behind a
version check: on a Snakemake release it was not tested against (``TESTED``, the pin in ``envs/constraints.txt``) it
is off and says so, and ``tests/test_scheduler.py`` pins the internals it touches.
"""

from __future__ import annotations

import os
import threading
from typing import Any

ENV_STOCK = "DEPTHLAB_STOCK_SCHEDULER"
TESTED = ("9.27",)  # Snakemake releases (major.minor) whose scheduler internals this patch was tested against


def _snakemake_version() -> str:
    try:
        from snakemake import __version__
    except Exception:  # no Snakemake importable: nothing to patch
        return "unknown"
    return str(__version__)


def coalesce_reevaluations(scheduler: Any, version: str | None = None) -> str:
    """Patch ``scheduler`` (a Snakemake JobScheduler) in place; returns a line saying what was done."""
    if os.environ.get(ENV_STOCK, "") not in ("", "0"):
        return f"depthlab: {ENV_STOCK} is set: Snakemake's scheduler left as it is"
    version = _snakemake_version() if version is None else version
    if ".".join(version.split(".")[:2]) not in TESTED:
        return (
            f"depthlab: warning: Snakemake {version} is not one the scheduler patch was tested against "
            f"({', '.join(TESTED)}): its scheduler left as it is (job starts may cost more CPU; see depthlab.scheduler)"
        )
    if (
        scheduler is None
        or not callable(getattr(scheduler, "_schedule_reevalutation", None))
        or not hasattr(scheduler, "_open_jobs")
    ):
        return "depthlab: this Snakemake's scheduler has no _schedule_reevalutation/_open_jobs: left as it is"
    if getattr(scheduler, "_depthlab_coalesced", False):
        return "depthlab: scheduler re-evaluations already coalesced"
    lock = threading.Lock()
    pending: list[threading.Timer] = []

    def fire() -> None:
        with lock:
            pending.clear()
        scheduler._open_jobs.release()

    def schedule_once(delay: float) -> None:
        with lock:
            if pending:
                return
            timer = threading.Timer(delay, fire)
            timer.daemon = True
            pending.append(timer)
        timer.start()

    scheduler._schedule_reevalutation = schedule_once
    scheduler._depthlab_coalesced = True
    return "depthlab: scheduler re-evaluations coalesced (at most one pending timer)"
