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
import time
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
        raise ResultsInUse(
            f"{path}: cannot be opened as depthlab's lock file ({e.strerror}); remove it if it is yours, or "
            f"use another `results` folder"
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ResultsInUse(
            f"{path}: not a regular file (a FIFO, socket or device), so not depthlab's lock file; remove it "
            f"if it is yours, or use another `results` folder"
        )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = holder_of(path)
        os.close(fd)
        raise ResultsInUse(
            f"results folder {root} is in use by another run ({holder}); wait for it to finish, or use "
            f"another `results` folder. The lock is released when that process ends."
        ) from None
    me = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "cwd": os.getcwd(),
        "started": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "run": os.environ.get(RUN_ENV),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
    _held[str(root)] = fd
    return path


# ---- runs that replace a killed run ----------------------------------------------------------------------------------

RUN_ENV = (
    "DEPTHLAB_RUN"  # the id of the Snakemake run that submitted a job; sbatch passes the environment on (--export=ALL)
)


def start_run() -> str:
    """Give this (the submitting) Snakemake process a fresh run id, which every job it starts inherits; ``acquire``
    records it in the results folder's lock file, so the lock file always names the latest run that executed jobs."""
    run = os.urandom(8).hex()
    os.environ[RUN_ENV] = run
    return run


def superseded(results: str | Path) -> str:
    """Why a job that a cluster starts now must do nothing ('' when it may run): it was submitted by a run whose
    Snakemake has been killed and restarted since (a job requeued or still pending when the submit host died).  The
    restart has submitted its own job for the same outputs; this one would remove them and write them a second time.
    Checked when the job's Snakemake reads the Snakefile, before it removes any output.  A job already running when the
    restart began goes on: the output's lock (:class:`OutputLock`) keeps the restart's job from writing beside it."""
    mine = os.environ.get(RUN_ENV)
    if not mine:
        return ""
    path = Path(results) / LOCK_NAME
    try:
        h = json.loads(safeio.read_text(path, 4096))
    except (OSError, ValueError):
        return ""
    current = h.get("run") if isinstance(h, dict) else None
    if not current or current == mine:
        return ""
    return (
        f"it was submitted by run {mine}, and run {current} ({holder_of(path)}) has started on {Path(results)} "
        f"since: that run submits its own job for these outputs"
    )


def _marks(snakemake_dir: str | Path) -> list[Path]:
    """Snakemake's incomplete marks: one file per output of a job it started and did not see finish."""
    inc = Path(snakemake_dir) / "incomplete"
    return sorted(p for p in inc.rglob("*") if p.is_file() and not p.is_symlink()) if inc.is_dir() else []


ADOPT = (
    "adopt"  # <store>.adopt-<random>: a whole store a killed run's job finished, set aside for the job that reruns it
)


def adopt_finished(results: str | Path, snakemake_dir: str | Path = ".snakemake") -> list[str]:
    """Set aside every store below ``results`` that Snakemake marks incomplete but that is whole: a job of a killed run
    finished it after its Snakemake died.  A store reaches its path only complete (``storage.write_store`` renames it
    into place last, and Snakemake removes a job's outputs before it starts), so that job wrote it, once.  Snakemake
    reruns the job (its output is missing now), and the job, finding ``<store>.adopt-*`` with its own spec and code,
    moves it back into place instead of computing it again (``depthlab stage``): Snakemake's own records of the job,
    which its rerun triggers compare against, are then written as for any finished job.  Returns the stores set aside."""
    import base64

    from . import storage

    inc = Path(snakemake_dir) / "incomplete"
    root = Path(results).resolve()
    adopted: list[str] = []
    for marker in _marks(snakemake_dir):
        parts = marker.relative_to(inc).parts
        try:  # Snakemake's key: the output path, urlsafe base64, split into '@'-prefixed chunks at the name-length limit
            out = base64.urlsafe_b64decode("".join(q.removeprefix("@") for q in parts)).decode()
        except (ValueError, UnicodeDecodeError):
            continue
        store = Path(out)
        if (
            store.suffix != ".zarr"
            or not store.resolve().is_relative_to(root)
            or not store.is_dir()
            or store.is_symlink()
        ):
            continue
        try:
            if not storage.read_record(store).get("content_hash"):
                continue
        except Exception:  # not whole, or not a depthlab store: Snakemake removes it and reruns the job
            continue
        os.rename(store, store.with_name(f"{store.name}.{ADOPT}-{os.urandom(4).hex()}"))
        adopted.append(out)
    return adopted


_ACTIVE_ELSEWHERE = {
    "RUNNING",
    "COMPLETING",
    "CONFIGURING",
    "SUSPENDED",
    "STOPPED",
    "SIGNALING",
    "STAGE_OUT",
    "RESIZING",
}


def _slurm_jobs() -> dict[str, str] | None:
    """State of every job in SLURM's queue (None when there is no squeue here, or it fails)."""
    import shutil
    import subprocess

    if shutil.which("squeue") is None:
        return None
    try:
        p = subprocess.run(["squeue", "-h", "-o", "%i|%T"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    return dict(line.strip().split("|", 1) for line in p.stdout.splitlines() if line.count("|") == 1)


JOBS_DIR = ".depthlab.jobs"  # <results>/.depthlab.jobs/<SLURM job id>.json: the cluster jobs running now, and their run


def register_cluster_job(results: str | Path) -> Path | None:
    """Record the SLURM job this process runs in (its id and run) under ``results`` until it exits: Snakemake's
    incomplete marks name a cluster job only until it starts (its jobstep marks the same outputs again, without the
    id), so a restart finds the running jobs of a killed run here (:func:`settle_orphans`)."""
    import atexit

    jid, run = os.environ.get("SLURM_JOB_ID", ""), os.environ.get(RUN_ENV)
    if not jid.isdigit() or not run:
        return None
    d = Path(results) / JOBS_DIR
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"{jid}.json"
    f.write_text(json.dumps({"job": jid, "run": run, "host": socket.gethostname(), "pid": os.getpid()}))
    atexit.register(lambda: f.unlink(missing_ok=True))
    return f


def killed_before(snakemake_dir: str | Path = ".snakemake") -> bool:
    """True when Snakemake marks some output incomplete: a run in this working directory was killed (or is running)."""
    return bool(_marks(snakemake_dir))


def settle_orphans(
    snakemake_dir: str | Path = ".snakemake", say=print, poll: float = 5.0, results: str | Path | None = None
) -> dict[str, list[str]]:
    """Before a restarted run builds its plan: the cluster jobs that the killed run left in SLURM (Snakemake's
    'incomplete' marks name those still queued, the ledger under ``results`` those that started) are settled, so that none writes a store beside the restart's own job, nor after it.
    Queued ones are cancelled (they would do nothing when started: :func:`superseded`); running ones are waited for,
    and the stores they finish are then adopted (:func:`adopt_finished`).  Called with the results folder's lock held,
    so the lock file names the restart's run.  Returns the job ids cancelled and waited for."""
    import subprocess

    ids: set[str] = set()
    for marker in _marks(snakemake_dir):
        try:
            jid = json.loads(safeio.read_text(marker, 4096)).get("external_jobid")
        except (OSError, ValueError, AttributeError):
            continue
        if jid:
            ids.add(str(jid).split(";")[0].strip())
    ledger = sorted((Path(results) / JOBS_DIR).glob("*.json")) if results is not None else []
    mine = os.environ.get(RUN_ENV)
    for f in ledger:  # the cluster jobs of earlier runs that had started (their jobstep replaced the marks' ids)
        try:
            rec = json.loads(safeio.read_text(f, 4096))
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict) and str(rec.get("job", "")).isdigit() and rec.get("run") != mine:
            ids.add(str(rec["job"]))
    done: dict[str, list[str]] = {"cancelled": [], "waited": []}
    queue = _slurm_jobs() if ids else None
    if not queue:
        return done
    queued = sorted(j for j in ids if queue.get(j) in ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED"))
    if queued:
        subprocess.run(["scancel", *queued], capture_output=True, timeout=60)
        say(f"depthlab: cancelled {len(queued)} job(s) the killed run left queued in SLURM: {', '.join(queued)}")
        done["cancelled"] = queued
    running = sorted(j for j in ids if queue.get(j) in _ACTIVE_ELSEWHERE)
    if running:
        say(
            f"depthlab: waiting for {len(running)} job(s) of the killed run still running in SLURM, so that none writes "
            f"a store beside this run's jobs: {', '.join(running)}"
        )
        done["waited"] = running
        while True:
            queue = _slurm_jobs()
            if queue is None or not any(queue.get(j) in _ACTIVE_ELSEWHERE for j in running):
                break
            time.sleep(poll)
    queue = _slurm_jobs() if ledger else None
    for f in ledger:  # entries of jobs SLURM no longer runs (killed at a time limit, cancelled): gone
        if queue is not None and f.stem not in queue:
            f.unlink(missing_ok=True)
    return done


def holder_of(path: str | Path) -> str:
    try:
        h = json.loads(safeio.read_text(path, 4096))
        return f"pid {h['pid']} on {h['host']}, started {h['started']} from {h['cwd']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


def try_acquire(results: str | Path) -> bool:
    """:func:`acquire`, or False when another run holds the lock (the Snakefile's onstart then stops with its name)."""
    try:
        acquire(results)
    except ResultsInUse:
        return False
    return True


def release(results: str | Path) -> None:
    fd = _held.pop(str(Path(results).resolve()), None)
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


# ---- one writer per output ----------------------------------------------------------------------------------------


class OutputInUse(RuntimeError):
    pass


STALE_AFTER = (
    600.0  # seconds without a heartbeat after which a holder on another host counts as gone ($DEPTHLAB_LOCK_STALE)
)


class OutputLock:
    """An exclusive lock on one job's output (``<output>.lock``), so that no store, figure or claims file is written by
    two jobs at once: not by a job orphaned when Snakemake was killed and its replacement started by the next run, nor by
    two jobs on two hosts of a cluster after the submit host's Snakemake was restarted.

    The lock file is created with O_EXCL (atomic on a local disk and on NFS v3 and later) and names its holder: host, pid,
    a random token and the start time.  The holder refreshes its modification time every ``stale_after / 4`` seconds.
    A second job waits for it.  The lock is taken over, never shared, when its holder is gone: a process of this host that
    no longer exists, or a holder anywhere whose heartbeat stopped ``stale_after`` seconds ago (a killed node).
    """

    def __init__(self, output: str | Path, stale_after: float | None = None, poll: float = 1.0, say=None):
        self.path = Path(f"{output}.lock")
        self.stale_after = float(
            stale_after if stale_after is not None else os.environ.get("DEPTHLAB_LOCK_STALE", STALE_AFTER)
        )
        self.poll = poll
        self.say = say or (lambda text: None)
        self.token = os.urandom(8).hex()
        self._stop = None
        self._thread = None

    def _holder(self) -> dict:
        try:
            h = json.loads(safeio.read_text(self.path, 4096))
            return h if isinstance(h, dict) else {}
        except (OSError, ValueError, RecursionError):
            return {}

    def _stale(self, h: dict) -> str:
        """Why the current holder is gone ('' if it may be alive)."""
        pid = h.get("pid")
        if (
            h.get("host") == socket.gethostname()
            and isinstance(pid, int)
            and not isinstance(pid, bool)
            and not _alive(pid)
        ):
            return f"its process {pid} on this host has ended" if pid > 0 else f"it names no process (pid {pid})"
        try:
            age = time.time() - os.stat(self.path).st_mtime
        except FileNotFoundError:
            return "it is gone"
        if age > self.stale_after:
            return f"no heartbeat for {age:.0f} s"
        if (
            age < -self.stale_after
        ):  # a heartbeat in the future: another host's clock (NFS clients skew); it proves nothing
            return f"its heartbeat is dated {-age:.0f} s in the future (another host's clock): unknown, so stale"
        return ""

    def _take_over(self, h: dict) -> None:
        """Remove the stale lock ``h``, unless another job replaced it meanwhile (then leave that one in place)."""
        aside = self.path.with_name(f"{self.path.name}.stale-{self.token}")
        try:
            os.replace(self.path, aside)
        except FileNotFoundError:
            return
        try:
            seen = json.loads(safeio.read_text(aside, 4096))
            if not isinstance(seen, dict) or seen.get("token") == h.get("token"):
                return
            os.link(aside, self.path)  # not the lock we judged stale: put it back (fails if a new one appeared)
        except (OSError, ValueError, RecursionError):
            pass
        finally:
            try:
                aside.unlink(missing_ok=True)
            except OSError:
                pass

    def acquire(self, wait: float | None = None) -> "OutputLock":
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputInUse(
                f"{self.path.parent}: cannot be made ({e.strerror}): no lock, so no job can write there"
            ) from None
        t0, told = time.monotonic(), False
        while True:
            if self.path.is_dir() and not self.path.is_symlink():
                raise OutputInUse(f"{self.path}: a directory stands where the lock file goes; remove it and rerun")
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o644)
            except FileExistsError:
                h = self._holder()
                why = self._stale(h)
                if why:
                    self.say(f"taking over the lock of {self.path.name} from {_who(h)}: {why}")
                    self._take_over(h)
                    continue
                if not told:
                    self.say(
                        f"waiting: {self.path.name.removesuffix('.lock')} is being written by another job ({_who(h)})"
                    )
                    told = True
                if wait is not None and time.monotonic() - t0 > wait:
                    raise OutputInUse(
                        f"{self.path.name.removesuffix('.lock')} is being written by another job ({_who(h)})"
                    ) from None
                time.sleep(self.poll)
                continue
            except OSError as e:
                raise OutputInUse(f"{self.path}: cannot be created as a lock file ({e.strerror})") from None
            with os.fdopen(fd, "w") as f:
                json.dump(
                    {
                        "host": socket.gethostname(),
                        "pid": os.getpid(),
                        "token": self.token,
                        "started": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                    },
                    f,
                )
            self._heartbeat()
            return self

    def _heartbeat(self) -> None:
        import threading

        self._stop = threading.Event()

        def beat():
            while not self._stop.wait(self.stale_after / 4):
                try:
                    os.utime(self.path)
                except OSError:
                    return

        self._thread = threading.Thread(target=beat, name="depthlab-lock-heartbeat", daemon=True)
        self._thread.start()

    def release(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._holder().get("token") == self.token:
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> "OutputLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host; a pid <= 0 (which os.kill reads as a process group, or every process:
    always 'alive' for root) or beyond the kernel's range names none."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError, ValueError):
        return False
    except PermissionError:
        return True
    return True


def _who(h: dict) -> str:
    return f"pid {h.get('pid', '?')} on {h.get('host', '?')}, since {h.get('started', '?')}" if h else "holder unknown"
