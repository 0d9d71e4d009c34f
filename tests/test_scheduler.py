"""depthlab.scheduler: Snakemake's re-evaluation timers coalesced to at most one pending."""

from __future__ import annotations

import threading
import time

from helpers import ROOT

from depthlab.scheduler import coalesce_reevaluations


class FakeScheduler:
    """What the patch touches of Snakemake's JobScheduler: the semaphore a pass waits on and the timer method."""

    def __init__(self):
        self._open_jobs = threading.Semaphore(0)
        self.stock_calls = 0

    def _schedule_reevalutation(self, delay):
        self.stock_calls += 1
        threading.Timer(delay, self._open_jobs.release).start()


def _drain(sem: threading.Semaphore) -> int:
    n = 0
    while sem.acquire(blocking=False):
        n += 1
    return n


def test_stock_behaviour_multiplies_timers():
    """The stock method starts a timer per call: 5 calls, 5 releases (the chains the patch removes)."""
    s = FakeScheduler()
    for _ in range(5):
        s._schedule_reevalutation(0.05)
    time.sleep(0.3)
    assert _drain(s._open_jobs) == 5


def test_coalesced_keeps_one_pending_timer_and_rearms(monkeypatch):
    monkeypatch.delenv("DEPTHLAB_STOCK_SCHEDULER", raising=False)
    s = FakeScheduler()
    assert "coalesced" in coalesce_reevaluations(s)
    before = threading.active_count()
    for _ in range(50):
        s._schedule_reevalutation(0.1)
    assert threading.active_count() - before <= 1  # one timer thread, not fifty
    assert s.stock_calls == 0
    time.sleep(0.4)
    assert _drain(s._open_jobs) == 1  # one pass, not fifty
    # after it fired, the next call arms a new timer: a waiting job is still looked at again
    s._schedule_reevalutation(0.05)
    time.sleep(0.3)
    assert _drain(s._open_jobs) == 1
    assert "already" in coalesce_reevaluations(s)


def test_timer_is_daemon(monkeypatch):
    monkeypatch.delenv("DEPTHLAB_STOCK_SCHEDULER", raising=False)
    s = FakeScheduler()
    coalesce_reevaluations(s)
    s._schedule_reevalutation(5.0)
    timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
    assert timers and all(t.daemon for t in timers)
    for t in timers:
        t.cancel()


def test_stock_switch_and_unknown_scheduler_leave_it_alone(monkeypatch):
    monkeypatch.setenv("DEPTHLAB_STOCK_SCHEDULER", "1")
    s = FakeScheduler()
    assert "left as it is" in coalesce_reevaluations(s)
    assert s._schedule_reevalutation.__func__ is FakeScheduler._schedule_reevalutation
    monkeypatch.delenv("DEPTHLAB_STOCK_SCHEDULER")
    assert "left as it is" in coalesce_reevaluations(object())
    assert "left as it is" in coalesce_reevaluations(None)


def test_snakemake_still_has_what_the_patch_relies_on():
    """If a Snakemake upgrade renames these, the patch silently does nothing: this test says so instead."""
    from snakemake.scheduling.job_scheduler import JobScheduler

    assert callable(getattr(JobScheduler, "_schedule_reevalutation", None))
    import inspect

    src = inspect.getsource(JobScheduler)
    assert "self._open_jobs" in src and "self._schedule_reevalutation(self.job_rate_limiter.timespan)" in src


def test_an_untested_snakemake_leaves_the_scheduler_alone_and_says_so():
    s = FakeScheduler()
    line = coalesce_reevaluations(s, version="10.1.0")
    assert "warning" in line and "10.1.0" in line and "left as it is" in line
    assert s._schedule_reevalutation.__func__ is FakeScheduler._schedule_reevalutation
    assert "coalesced" in coalesce_reevaluations(FakeScheduler(), version="9.27.1")


def test_the_tested_release_is_the_pinned_one():
    """The patch is on for the Snakemake that make setup installs: its version is in TESTED (a pin bump must revisit
    the internals above, then add the release)."""
    import re

    import snakemake

    import depthlab.scheduler as ds

    pin = re.search(r"^snakemake==(\S+)", (ROOT / "envs" / "constraints.txt").read_text(), re.M).group(1)
    assert snakemake.__version__ == pin and ".".join(pin.split(".")[:2]) in ds.TESTED
