"""A quiet terminal: one line per finished job with the run's progress and an ETA; Snakemake's full output in a file.

Snakemake prints some 16 lines per job (3 039 for the 188 smoke jobs, some 5 200 characters wide).  The workflow
profile selects the logger plugin ``depthlab`` (the module ``snakemake_logger_plugin_depthlab``, a thin shell around
:class:`Terminal`), which prints instead

- at the start, two lines: the jobs to run with their planned core-time (the cost model of ``depthlab plan``), and
  the full log's path;
- per finished job, one line no wider than the terminal (at most 200 characters): jobs done / total, the job,
  planned core-time done / planned in all, and the ETA;
- every warning and error in full (a failed job with its log, as Snakemake shows it), and Snakemake's
  "Nothing to be done";
- at the end, the wall time and again the full log's path.

Everything Snakemake logs (the default format, at its usual level) goes to ``<results>/logs/snakemake/<time>.log``
(and to Snakemake's own ``.snakemake/log/``).  ``VERBOSE=1`` (``make run VERBOSE=1``, i.e. ``DEPTHLAB_VERBOSE=1``),
``--verbose``, ``--printshellcmds`` and dry runs print Snakemake's own output instead.

The ETA: the Snakefile's ``onstart`` gives :func:`start` every job Snakemake will run with its planned seconds
(:func:`depthlab.plan.predict` on the job's spec, as ``depthlab plan`` does).  Until a few jobs have finished the run
is assumed to do ``cores`` planned seconds per second; then it is the planned seconds finished per wall second so
far, which also absorbs the cost model's bias on this machine, the queue of a cluster (jobs submitted but not
finished count as left) and a run resumed after an interruption (only the jobs still to do are planned).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

ENV_VERBOSE = "DEPTHLAB_VERBOSE"
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
    return text[: keep // 2] + "…" + text[len(text) - (keep - keep // 2):]


def clip(text: str, cols: int) -> str:
    """``text`` cut at its end to ``cols`` characters."""
    return text if len(text) <= cols else text[: cols - 1] + "…"


def minutes(s: float) -> str:
    m = s / 60
    return f"{m:.1f}" if m < 10 else f"{m:.0f}"


def duration(s: float) -> str:
    s = max(0.0, s)
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


@dataclass
class Plan:
    """The jobs of one run: Snakemake's job id -> (a short name, planned seconds)."""

    jobs: dict[int, tuple[str, float]]
    cores: int
    log: Path | None
    t0: float = field(default_factory=time.monotonic)
    done: dict[int, float] = field(default_factory=dict)  # job id -> planned seconds, of the jobs finished

    @property
    def planned(self) -> float:
        return sum(s for _, s in self.jobs.values())

    def rate(self) -> float:
        """Planned seconds per wall second: ``cores`` until 3 jobs and 2 % of the plan are done, then as measured."""
        elapsed, done = time.monotonic() - self.t0, sum(self.done.values())
        if len(self.done) >= 3 and done >= 0.02 * self.planned and elapsed > 1:
            return done / elapsed
        return float(max(1, min(self.cores, len(self.jobs))))

    def eta(self) -> float:
        return max(0.0, self.planned - sum(self.done.values())) / max(self.rate(), 1e-9)


class Terminal:
    """What the plugin does with each record (see the module docstring).  ``stream``: the terminal (stderr);
    ``passthrough``: a handler printing Snakemake's own output (verbose and dry runs), else None."""

    def __init__(self, stream: TextIO, passthrough: logging.Handler | None, file_formatter: logging.Formatter,
                 file_filter: logging.Filter):
        self.stream, self.passthrough = stream, passthrough
        self.file_formatter, self.file_filter = file_formatter, file_filter
        self.plan: Plan | None = None
        self.pending: list[str] = []  # the log file's text until its path is known
        self.file: TextIO | None = None
        self.progress: tuple[int, int] | None = None  # Snakemake's own (done, total)
        self.lock = threading.RLock()
        self.finished_line = False
        self.unsaid: list[str] = []  # info lines Snakemake would have printed, until a run starts

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
                self.say(clip(f"depthlab: {n} job{'s' * (n != 1)} to run, planned {minutes(plan.planned)} core-min, "
                              f"about {duration(plan.eta())} on {plan.cores} core{'s' * (plan.cores != 1)}", width()))
                if plan.log:
                    self.say(fit(f"depthlab: full log {plan.log}", MAX_WIDTH))

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
        name, secs = plan.jobs.get(jobid, (f"job {jobid}", 0.0))
        plan.done[jobid] = secs
        n, total, eta = len(plan.done), len(plan.jobs), plan.eta()
        clock = time.strftime('%H:%M', time.localtime(time.time() + eta))
        head = f"[{n:>{len(str(total))}}/{total}] {time.strftime('%H:%M:%S')} done "
        cols = width()
        for tail in (f" | {minutes(sum(plan.done.values()))}/{minutes(plan.planned)} core-min | ETA {clock} ({duration(eta)})",
                     f" | ETA {clock}", ""):  # the shortest that leaves the job's name 16 characters
            if len(head) + 16 + len(tail) <= cols:
                break
        self.say(fit(head + fit(name, max(1, cols - len(head) - len(tail))) + tail, cols))

    def _finished(self) -> None:
        if self.finished_line or self.plan is None:
            return
        self.finished_line = True
        plan = self.plan
        self.say(clip(f"depthlab: {len(plan.done)} job{'s' * (len(plan.done) != 1)} done in "
                      f"{duration(time.monotonic() - plan.t0)} (planned {minutes(plan.planned)} core-min)", width()))
        if plan.log:
            self.say(fit(f"depthlab: full log {plan.log}", MAX_WIDTH))

    def say(self, text: str) -> None:
        with self.lock:
            try:
                self.stream.write(text.rstrip("\n") + "\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        """A command that ran no jobs (``--lint``, ``--list-rules``, ``--summary``, an error before the run) never
        started the quiet terminal: Snakemake's own lines are printed now, as without the plugin."""
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
