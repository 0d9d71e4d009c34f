"""A quiet terminal: one line per finished job with the run's progress and an ETA; Snakemake's full output in a file.

Snakemake prints some 16 lines per job (3 039 for the 188 smoke jobs, some 5 200 characters wide).  The workflow
profile selects the logger plugin ``depthlab`` (the module ``snakemake_logger_plugin_depthlab``, a thin shell around
:class:`Terminal`), which prints instead

- at the start, two lines: the jobs to run with their planned core-time (the cost model of ``depthlab plan``), and
  the full log's path;
- per finished job, one line no wider than the terminal (at most 200 characters): jobs done / total, the job,
  planned core-time done / planned in all, and the ETA;
- while jobs run and nothing else was printed for ``DEPTHLAB_HEARTBEAT_S`` seconds (default 300, at least 10; 0 turns
  it off), a line saying how many jobs are running, the longest-running one and for how long, and the ETA (a fractal net runs
  for most of an hour: the terminal no longer sits silent that long);
- every warning and error in full (a failed job with its log, as Snakemake shows it), and Snakemake's
  "Nothing to be done";
- at the end, the wall time and again the full log's path.

Everything Snakemake logs (the default format, at its usual level) goes to ``<results>/logs/snakemake/<time>.log``
(and to Snakemake's own ``.snakemake/log/``).  ``VERBOSE=1`` (``make run VERBOSE=1``, i.e. ``DEPTHLAB_VERBOSE=1``),
``--verbose``, ``--printshellcmds`` and dry runs print Snakemake's own output instead.

The ETA: the Snakefile's ``onstart`` gives :func:`start` every job Snakemake will run with its planned seconds
(:func:`depthlab.costs.model.predict` on the job's spec, as ``depthlab plan`` does) and its rule.  Snakemake's job-started
and job-finished events time every job; each stage then corrects its own plan by what its finished jobs took
(:class:`Plan`), so a stage whose nets stop early (the fractal nets, planned at their whole epoch budget) no longer
drags the estimate of every other stage with it.  The timings go to ``<log>.jobs.tsv`` beside the full log, one line
per finished job, and :func:`replay` shows what the terminal said at 10, 25, 50 and 75 % of the jobs against the time
that was really left.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

ENV_VERBOSE = "DEPTHLAB_VERBOSE"
ENV_HEARTBEAT = "DEPTHLAB_HEARTBEAT_S"
HEARTBEAT_S = 300.0  # a "still running" line after this long without a line (DEPTHLAB_HEARTBEAT_S; 0: never)
HEARTBEAT_MIN_S = 10.0  # ... and never more often than this (0.001 printed 7 383 lines in 10 s)


def heartbeat_s() -> float:
    """Seconds of silence before a "still running" line: ``$DEPTHLAB_HEARTBEAT_S`` (0 turns it off; a positive value
    below ``HEARTBEAT_MIN_S`` is raised to it), else ``HEARTBEAT_S``; a value that is not a number >= 0 is ignored."""
    try:
        v = float(os.environ.get(ENV_HEARTBEAT, HEARTBEAT_S))
    except ValueError:
        return HEARTBEAT_S
    if not (math.isfinite(v) and v >= 0):
        return HEARTBEAT_S
    return 0.0 if v == 0 else max(v, HEARTBEAT_MIN_S)


MAX_WIDTH = 200
# Snakemake's info lines a user still wants on the quiet terminal (the rest is in the log file).
KEEP = ("Nothing to be done", "Will exit after finishing currently running jobs", "Shutting down, this might take")


def verbose_requested() -> bool:
    return os.environ.get(ENV_VERBOSE, "") not in ("", "0")


def width() -> int:
    return max(40, min(MAX_WIDTH, shutil.get_terminal_size((120, 24)).columns))


def fit(text: str, cols: int) -> str:
    """``text`` cut to ``cols`` characters, the middle replaced by '…' (a job's path keeps its start and its end)."""
    if len(text) <= cols:
        return text
    keep = cols - 1
    return text[: keep // 2] + "…" + text[len(text) - (keep - keep // 2) :]


def clip(text: str, cols: int) -> str:
    """``text`` cut at its end to ``cols`` characters."""
    return text if len(text) <= cols else text[: cols - 1] + "…"


def minutes(s: float) -> str:
    m = s / 60
    return f"{m:.1f}" if m < 10 else f"{m:.0f}"


def counter(done: int, total: int) -> str:
    """'[ 12/219] 20:41:07 ': the jobs done of all and the time, the head of every progress line."""
    return f"[{done:>{len(str(total))}}/{total}] {time.strftime('%H:%M:%S')} "


def clock_in(seconds: float) -> str:
    """The wall clock ``seconds`` from now, 'HH:MM' (the ETA's time of day)."""
    return time.strftime("%H:%M", time.localtime(time.time() + seconds))


def duration(s: float) -> str:
    s = max(0.0, s)
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


PRIOR_JOBS = 1.0  # pseudo-jobs at the spread JOB_SPREAD in a stage's estimate of its jobs' spread
JOB_SPREAD = 0.5  # a job's measured / planned seconds about its stage's ratio, before the stage has a spread
PLAN_VOTES = 1  # the plan's own vote (a ratio of 1) in the median that makes the pooled ratio
STAGE_SPREAD = 0.1  # the least scatter of the stages' log ratios about the pooled one (the plan's per-stage error)
MIN_MEASURED = 3  # finished jobs with a measured time before the pace is measured, not assumed
RESUMED_LEFT = 0.5  # the share of its corrected estimate a job resumed from a checkpoint still counts
OVERRUN_LEFT = 0.5  # a running job counts at least this share of the time it has run so far (see Plan)


@dataclass
class Plan:
    """The jobs of one run: Snakemake's job id -> (a short name, planned seconds[, its stage]), and what they took.

    The ETA: each stage corrects its own plan online.  Its ratio of measured to planned seconds over its
    finished jobs, shrunk towards the pooled ratio (the median of the stages' ratios) as far as the spread of its
    jobs leaves it uncertain (:meth:`ratios`), scales the planned seconds of its jobs still to run (a job the cost
    model does not know, planned 0 s, counts its stage's mean measured time); a stage with nothing finished yet takes
    the pooled ratio.  A running job counts what is left of its estimate, and at least ``OVERRUN_LEFT`` of the time it
    has run: a job past its estimate is likely a long one
    (under the growing stop window one fractal net took 0.83x its plan, the width-200 net over 3x), and counting it
    as done froze the ETA while it ran (the default run at 73ecc2d: "ETA 01:46 (64 min)", "02:01 (64 min)", "02:06
    (64 min)" ... while its longest job ran on).  The core-seconds left are divided by the run's measured concurrency
    (job-seconds per wall second, within 1 and ``cores``), so a cluster's queue and a DAG's narrow ends count as they happened.  Until
    ``MIN_MEASURED`` jobs have a measured time the run is assumed to do ``cores`` planned seconds per second.

    A job that resumes from a checkpoint (the 4th field of its tuple: its store had a ``.ckpt`` when the run started)
    has done an unknown part of its work in an earlier run.  Its measured time says nothing of its stage's pace, so it
    is left out of the ratios (after a restart, nets finishing their last epochs in minutes made the rest of the run
    look many times shorter than it was: "ETA 32 min" with 450 jobs and hours of work left), and it counts
    ``RESUMED_LEFT`` of its corrected estimate (its progress is not read: a checkpoint's layout differs per trainer and
    per growth round; a checkpoint the job then refuses, made by other code, leaves that job counted short)."""

    jobs: dict[int, tuple]
    cores: int
    log: Path | None
    t0: float | None = None
    done: dict[int, float] = field(default_factory=dict)  # job id -> planned seconds, of the jobs finished
    started: dict[int, float] = field(default_factory=dict)  # job id -> clock at its start, of the jobs running
    took: dict[int, float] = field(default_factory=dict)  # job id -> measured seconds, of the finished jobs
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self):
        if self.t0 is None:
            self.t0 = self.clock()

    def planned_of(self, jid: int) -> float:
        return float(self.jobs.get(jid, ("", 0.0))[1])

    def stage_of(self, jid: int) -> str:
        job = self.jobs.get(jid, ())
        return str(job[2]) if len(job) > 2 else "*"

    def resumed_of(self, jid: int) -> bool:
        job = self.jobs.get(jid, ())
        return bool(job[3]) if len(job) > 3 else False

    @property
    def planned(self) -> float:
        return sum(float(j[1]) for j in self.jobs.values())

    # ---- events ----
    def start_job(self, jid: int, now: float | None = None) -> None:
        if jid in self.jobs and jid not in self.done:
            self.started.setdefault(jid, self.clock() if now is None else now)

    def finish_job(self, jid: int, now: float | None = None) -> float | None:
        """Marks ``jid`` finished; returns its measured seconds (None when its start was not seen)."""
        now = self.clock() if now is None else now
        self.done[jid] = self.planned_of(jid)
        t = self.started.pop(jid, None)
        if t is not None:
            self.took[jid] = max(0.0, now - t)
        return self.took.get(jid)

    # ---- the estimate ----
    def ratios(self) -> tuple[float, dict[str, float], dict[str, float]]:
        """(pooled ratio, {stage: ratio}, {stage: mean measured seconds of its unplanned jobs}).

        Empirical Bayes on the logs of the ratios.  A stage's own ratio r_s = (its measured seconds) / (its planned
        seconds) has a sampling variance v_s from the spread of its jobs about it (the ratio estimator's
        n S^2 / (sum p)^2, S^2 the residuals' variance with ``PRIOR_JOBS`` pseudo-job at a relative spread
        ``JOB_SPREAD``, so that one job alone is uncertain by that spread).  The pooled ratio is the median of the
        stages' ratios and ``PLAN_VOTES`` votes for the plan itself (a ratio of 1: with one or two stages finished,
        one stage planned far off does not set the pace of every other).  The stages' log ratios scatter about the
        pooled one with a scale tau: the median of their squared distances less their sampling variances, at least
        ``STAGE_SPREAD``.  A stage's log ratio is then the posterior mean of its true one (:func:`shrunk`) under a
        Cauchy prior at the pooled log ratio with scale tau: a stage whose jobs agree with each other and lie far
        from the pooled pace keeps its own pace after a job or two (the fractal nets planned at ten times their
        time), and a stage whose first jobs are a few long ones among many short ones stays near the pooled pace
        until its spread says otherwise.  The case behind it: in the default run of 358a57c the Mori & Ueda rate
        searches of the hard targets ran first (4-5x their plan) and the 26 after them at 0.76x; the stage's own
        ratio after 14 of its 40 jobs (1.42), shrunk by one pseudo-job, put the ETA 30 % long at 10 % of the jobs."""
        per: dict[str, list[tuple[float, float]]] = {}  # stage -> [(measured, planned)] of its planned jobs
        unplanned_took: dict[str, list[float]] = {}  # stage -> measured seconds of its jobs planned 0 s
        for jid, secs in self.took.items():
            if self.resumed_of(jid):  # part of its work was done before this run: no measure of the pace
                continue
            st, p = self.stage_of(jid), self.planned_of(jid)
            if p > 0:
                per.setdefault(st, []).append((secs, p))
            else:
                unplanned_took.setdefault(st, []).append(secs)
        unplanned = {st: statistics.fmean(took) for st, took in unplanned_took.items()}
        own: dict[str, tuple[float, float]] = {}  # stage -> (log ratio, its sampling variance)
        for st, jobs in per.items():
            m, p, n = sum(j[0] for j in jobs), sum(j[1] for j in jobs), len(jobs)
            r = max(m / p, 1e-6)
            resid = sum((mi - r * pi) ** 2 for mi, pi in jobs)
            s2 = (resid + PRIOR_JOBS * (JOB_SPREAD * r * p / n) ** 2) / (n - 1 + PRIOR_JOBS)
            own[st] = (math.log(r), n * s2 / p**2 / r**2)
        if not own:
            return 1.0, {}, unplanned
        # the pooled ratio: the median of the stages' own ratios and the plan's votes, so that one stage planned far
        # off (the fractal nets planned at their whole budget) does not rescale every stage that has not started
        pooled_log = statistics.median([0.0] * PLAN_VOTES + [lr for lr, _ in own.values()])
        tau = math.sqrt(max(STAGE_SPREAD**2, statistics.median((lr - pooled_log) ** 2 - v for lr, v in own.values())))
        ratio = {st: math.exp(shrunk(lr, v, pooled_log, tau)) for st, (lr, v) in own.items()}
        return math.exp(pooled_log), ratio, unplanned

    def left(self, now: float | None = None) -> float:
        """Core-seconds left: every unfinished job's corrected estimate, less what a running job has done (at least
        ``OVERRUN_LEFT`` of its time so far)."""
        now = self.clock() if now is None else now
        pooled, ratio, unplanned = self.ratios()
        total = 0.0
        for jid in self.jobs:
            if jid in self.done:
                continue
            p, st = self.planned_of(jid), self.stage_of(jid)
            est = ratio.get(st, pooled) * p if p > 0 else unplanned.get(st, 0.0)
            if self.resumed_of(jid):
                est *= RESUMED_LEFT
            if jid in self.started:
                ran = max(0.0, now - self.started[jid])
                est = max(est - ran, OVERRUN_LEFT * ran)
            total += est
        return total

    def concurrency(self, now: float | None = None) -> float:
        """Job-seconds per wall second so far, within 1 and ``cores``."""
        now = self.clock() if now is None else now
        elapsed = now - self.t0
        busy = sum(self.took.values()) + sum(now - t for t in self.started.values())
        return min(float(self.cores), max(1.0, busy / elapsed)) if elapsed > 1 else float(self.cores)

    def rate(self, now: float | None = None) -> float:
        """Planned seconds per wall second, for runs whose job starts are not seen: ``cores`` until 3 jobs and 2 % of
        the plan are done, then as measured."""
        now = self.clock() if now is None else now
        elapsed, done = now - self.t0, sum(self.done.values())
        if len(self.done) >= 3 and done >= 0.02 * self.planned and elapsed > 1:
            return done / elapsed
        return float(max(1, min(self.cores, len(self.jobs))))

    def eta(self, now: float | None = None) -> float:
        now = self.clock() if now is None else now
        if sum(not self.resumed_of(j) for j in self.took) >= MIN_MEASURED:
            return self.left(now) / self.concurrency(now)
        if self.took or self.started:  # measured, but too few yet: the plan at `cores`, less what is done
            return self.left(now) / float(max(1, min(self.cores, len(self.jobs))))
        return max(0.0, self.planned - sum(self.done.values())) / max(self.rate(now), 1e-9)


def shrunk(x: float, v: float, mu: float, tau: float, points: int = 401) -> float:
    """The posterior mean of theta given x ~ N(theta, v) under a Cauchy prior on theta at ``mu`` with scale ``tau``:
    ``x`` pulled towards ``mu`` when it is within a few of its standard errors of it, left nearly where it is when it
    is far beyond them (a heavy-tailed prior: most stages follow the pooled pace, a few are planned far off).  A grid
    of ``points`` over the span of both and five standard errors either side."""
    sd = math.sqrt(max(v, 1e-12))
    lo, hi = min(x, mu) - 5 * max(sd, tau), max(x, mu) + 5 * max(sd, tau)
    step = (hi - lo) / (points - 1)
    num = den = 0.0
    for i in range(points):
        t = lo + i * step
        w = math.exp(-0.5 * (x - t) ** 2 / max(v, 1e-12)) / (1.0 + ((t - mu) / tau) ** 2)
        num += w * t
        den += w
    return num / den if den > 0 else x


PROGRESS = re.compile(rb"\b(epoch|step|iteration) (\d+)/(\d+)")  # a trainer's progress line in a job's log


def job_progress(results: Path, name: str, tail: int = 4096) -> str | None:
    """Where a running job stands, from the last progress line of its log ``<results>/logs/<name>.log`` ("epoch
    1208/1500"); None when it has none (yet), or the name would lead out of the logs folder."""
    logs = results / "logs"
    path = logs / f"{name}.log"
    if ".." in Path(name).parts or Path(name).is_absolute():
        return None
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - tail))
            found = PROGRESS.findall(f.read())
    except OSError:
        return None
    if not found:
        return None
    unit, at, of = found[-1]
    return f"{unit.decode()} {int(at)}/{int(of)}"


class Terminal:
    """What the plugin does with each record (see the module docstring).  ``stream``: the terminal (stderr);
    ``passthrough``: a handler printing Snakemake's own output (verbose and dry runs), else None."""

    def __init__(
        self,
        stream: TextIO,
        passthrough: logging.Handler | None,
        file_formatter: logging.Formatter,
        file_filter: logging.Filter,
    ):
        self.stream, self.passthrough = stream, passthrough
        self.file_formatter, self.file_filter = file_formatter, file_filter
        self.plan: Plan | None = None
        self.pending: list[str] = []  # the log file's text until its path is known
        self.file: TextIO | None = None
        self.progress: tuple[int, int] | None = None  # Snakemake's own (done, total)
        self.lock = threading.RLock()
        self.finished_line = False
        self.unsaid: list[str] = []  # info lines Snakemake would have printed, until a run starts
        self.last_said = time.monotonic()  # when the terminal last printed a line (the heartbeat waits for silence)
        self.stopped = threading.Event()  # set at the end: the heartbeat thread stops

    # ---- called from the Snakefile's onstart (main thread) ----
    def start(self, plan: Plan) -> None:
        with self.lock:
            self.plan = plan
            if plan.log is not None:
                try:
                    plan.log.parent.mkdir(parents=True, exist_ok=True)
                    self.file = open(plan.log, "a", encoding="utf-8")
                    self.file.write("".join(self.pending))
                    self.file.flush()
                except OSError as e:
                    self.say(f"depthlab: cannot write the full log {plan.log} ({e.strerror}); see .snakemake/log/")
                    plan.log, self.file = None, None
            self.pending, self.unsaid = [], []
            if self.passthrough is None:
                n = len(plan.jobs)
                self.say(
                    clip(
                        f"depthlab: {n} job{'s' * (n != 1)} to run, planned {minutes(plan.planned)} core-min, "
                        f"about {duration(plan.eta())} on {plan.cores} core{'s' * (plan.cores != 1)}",
                        width(),
                    )
                )
                if plan.log:
                    self.say(fit(f"depthlab: full log {plan.log}", MAX_WIDTH))
                every = heartbeat_s()
                if every > 0:
                    threading.Thread(
                        target=self._heartbeat, args=(every,), name="depthlab-heartbeat", daemon=True
                    ).start()

    def _heartbeat(self, every: float) -> None:
        """While jobs run: after ``every`` seconds without a line, one line on the running jobs and the ETA."""
        while not self.stopped.wait(min(every, 10.0)):
            with self.lock:
                if self.finished_line or self.plan is None:
                    return
                if time.monotonic() - self.last_said >= every and self.plan.started:
                    self.say(self.running_line())

    def running_line(self, now: float | None = None) -> str:
        """'[12/219] 20:41:07 running 2 jobs, the longest fractals/... for 41 min, epoch 640/1500 | ETA 23:10 (2.5 h)'
        (where the longest stands: the last progress line of its log, when it has one)."""
        plan = self.plan
        now = plan.clock() if now is None else now
        jid, t = min(plan.started.items(), key=lambda kv: kv[1])
        n, total, k, eta = len(plan.done), len(plan.jobs), len(plan.started), plan.eta(now)
        name = str(plan.jobs.get(jid, (f"job {jid}",))[0])
        at = job_progress(plan.log.parents[2], name) if plan.log is not None and len(plan.log.parents) > 2 else None
        head = counter(n, total) + f"running {k} job{'s' * (k != 1)}, the longest "
        tail = f" for {duration(now - t)}" + (f", {at}" if at else "") + f" | ETA {clock_in(eta)} ({duration(eta)})"
        cols = width()
        return fit(head + fit(name, max(16, cols - len(head) - len(tail))) + tail, cols)

    # ---- called from Snakemake's log listener thread ----
    def emit(self, record: logging.LogRecord) -> None:
        with self.lock:
            self._to_file(record)
            if self.passthrough is not None:
                self.passthrough.handle(record)
                return
            event = str(getattr(record, "event", "") or "")
            if event == "progress":
                self.progress = (int(getattr(record, "done", 0)), int(getattr(record, "total", 0)))
                if self.progress[1] and self.progress[0] >= self.progress[1]:
                    self._finished()
                return
            if event == "job_finished":
                self._job_finished(int(getattr(record, "job_id", -1)))
                return
            if event == "job_started":
                if self.plan is not None:
                    for jid in getattr(record, "jobs", None) or ():
                        try:
                            self.plan.start_job(int(jid))
                        except (TypeError, ValueError):
                            pass
                return
            if record.levelno >= logging.WARNING or event in ("job_error", "group_error", "error"):
                self.say(self.file_formatter.format(record))
                return
            msg = record.getMessage() if record.msg is not None else ""
            if any(k in msg for k in KEEP):
                self.say(msg.strip())
            elif self.plan is None and self.file_filter.filter(record):
                self.unsaid.append(self.file_formatter.format(record))

    def _to_file(self, record: logging.LogRecord) -> None:
        if not self.file_filter.filter(record):
            return
        try:
            text = self.file_formatter.format(record)
        except Exception as e:  # a record Snakemake's formatter cannot take: keep its message
            text = f"{record.getMessage()} [{type(e).__name__}]"
        if not text:
            return
        line = text if text.endswith("\n") else text + "\n"
        if self.file is not None:
            try:
                self.file.write(line)
                self.file.flush()
            except (OSError, ValueError):
                pass
        elif self.plan is None:
            self.pending.append(line)

    def _job_finished(self, jobid: int) -> None:
        plan = self.plan
        if plan is None:
            return
        name, secs = plan.jobs.get(jobid, (f"job {jobid}", 0.0))[:2]
        now = plan.clock()
        start = plan.started.get(jobid)
        plan.finish_job(jobid, now)
        self._record_job(jobid, name, secs, start, now)
        n, total, eta = len(plan.done), len(plan.jobs), plan.eta(now)
        clock = clock_in(eta)
        head = counter(n, total) + "done "
        cols = width()
        for tail in (
            f" | {minutes(sum(plan.done.values()))}/{minutes(plan.planned)} core-min | ETA {clock} ({duration(eta)})",
            f" | ETA {clock}",
            "",
        ):  # the shortest that leaves the job's name 16 characters
            if len(head) + 16 + len(tail) <= cols:
                break
        self.say(fit(head + fit(name, max(1, cols - len(head) - len(tail))) + tail, cols))

    def _record_job(self, jobid: int, name: str, planned: float, start: float | None, end: float) -> None:
        """One line per finished job in ``<log>.jobs.tsv`` (seconds since the run's start): what the ETA saw, for
        replaying it (``tests/test_progress.py``) and for recalibrating the plan."""
        plan = self.plan
        if plan is None or plan.log is None:
            return
        path = jobs_log(plan.log)
        try:
            new = not path.exists()
            with open(path, "a", encoding="utf-8") as f:
                if new:
                    f.write("jobid\tstage\tplanned_s\tstart_s\tend_s\tname\tresumed\n")
                st = "" if start is None else f"{start - plan.t0:.3f}"
                f.write(
                    f"{jobid}\t{plan.stage_of(jobid)}\t{planned:.3f}\t{st}\t{end - plan.t0:.3f}\t"
                    f"{name.replace(chr(9), ' ').replace(chr(10), ' ')}\t{int(plan.resumed_of(jobid))}\n"
                )
        except OSError:
            pass

    def _finished(self) -> None:
        if self.finished_line or self.plan is None:
            return
        self.finished_line = True
        plan = self.plan
        self.say(
            clip(
                f"depthlab: {len(plan.done)} job{'s' * (len(plan.done) != 1)} done in "
                f"{duration(time.monotonic() - plan.t0)} (planned {minutes(plan.planned)} core-min)",
                width(),
            )
        )
        if plan.log:
            self.say(fit(f"depthlab: full log {plan.log}", MAX_WIDTH))

    def say(self, text: str) -> None:
        with self.lock:
            self.last_said = time.monotonic()
            try:
                self.stream.write(text.rstrip("\n") + "\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        """A command that ran no jobs (``--lint``, ``--list-rules``, ``--summary``, an error before the run) never
        started the quiet terminal: Snakemake's own lines are printed now, as without the plugin."""
        self.stopped.set()
        with self.lock:
            if self.plan is None and self.passthrough is None:
                for text in self.unsaid:
                    if text and text.strip():
                        self.say(text)
            self.unsaid = []
            if self.file is not None:
                try:
                    self.file.close()
                except OSError:
                    pass
                self.file = None


# The terminal of this process's run (the plugin registers it; the Snakefile's onstart starts it).
_ACTIVE: Terminal | None = None


def register(terminal: Terminal | None) -> None:
    global _ACTIVE
    _ACTIVE = terminal


def active() -> Terminal | None:
    return _ACTIVE


def jobs_log(log: Path) -> Path:
    """The per-job timings beside a run's full log: ``<time>-<pid>.jobs.tsv``."""
    return log.with_name(log.name.removesuffix(".log") + ".jobs.tsv")


def read_jobs_log(path: str | Path) -> list[dict]:
    """The rows of a ``jobs.tsv`` (numbers as floats; a start not seen is None)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    rows = []
    for line in lines[1:]:
        row = dict(zip(head, line.split("\t")))
        rows.append(
            {
                "jobid": int(row["jobid"]),
                "stage": row["stage"],
                "planned_s": float(row["planned_s"]),
                "start_s": float(row["start_s"]) if row["start_s"] else None,
                "end_s": float(row["end_s"]),
                "name": row.get("name", ""),
                "resumed": row.get("resumed", "0") == "1",
            }
        )
    return rows


def replay(
    rows: list[dict], cores: int, at=(0.10, 0.25, 0.50, 0.75), starts: bool = True
) -> dict[float, tuple[float, float]]:
    """The ETA a run's terminal would have shown, replayed from its ``jobs.tsv``: {fraction of jobs done: (ETA shown,
    real time left)} at each fraction in ``at`` (at the first job that reaches it).  Only finished jobs are in the
    file, so the replay plans exactly those.  ``starts=False`` hides the job starts: the ETA of one pace
    of planned seconds per wall second for the whole run."""
    events = []
    for r in rows:
        if starts and r["start_s"] is not None:
            events.append((r["start_s"], 0, r["jobid"]))
        events.append((r["end_s"], 1, r["jobid"]))
    events.sort()
    plan = Plan(
        {r["jobid"]: (r["name"], r["planned_s"], r["stage"], r.get("resumed", False)) for r in rows},
        cores,
        None,
        t0=0.0,
        clock=lambda: 0.0,
    )
    end = max(r["end_s"] for r in rows)
    n, out, marks = len(rows), {}, sorted(at)
    for t, kind, jid in events:
        if kind == 0:
            plan.start_job(jid, t)
            continue
        plan.finish_job(jid, t)
        k = len(plan.done)
        while marks and k >= marks[0] * n:
            out[marks.pop(0)] = (plan.eta(t), end - t)
    return out


def log_path(results: str | Path) -> Path:
    return Path(results) / "logs" / "snakemake" / (time.strftime("%Y-%m-%dT%H%M%S") + f"-{os.getpid()}.log")


def start(jobs: dict[int, tuple[str, float]], cores: int, results: str | Path) -> None:
    """From the Snakefile's onstart: the run's jobs (id -> (name, planned seconds)) and cores; no-op without the
    plugin (``--logger`` not given, e.g. a job's own Snakemake on a compute node)."""
    term = _ACTIVE
    if term is not None:
        term.start(Plan(jobs, max(1, int(cores or 1)), log_path(results)))


def stream() -> TextIO:
    return sys.stderr
