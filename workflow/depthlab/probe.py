"""A speed probe: the same small workload on any machine, so that a cost model fitted on one machine (or on
one day of a shared machine) can be scaled to another.

Two runs of the same jobs with the same bits measured 1.29-2.06x apart per stage on the machines here: the machine's
speed moved, not the work.  :func:`measure` times a fixed workload of a few hundredths of a second on one BLAS thread (as every job
of the default profile runs), a few times, and reports the fastest: a repeat slowed by another process on the same
core says nothing about the machine (the median of 5 moved by 1.6x beside the test suite's other worker).

- ``depthlab plan --calibrate`` records the probe of the calibration runs (each run writes its own at its start, in
  ``<results>/logs/probe.json``) in the calibration file as ``probe_s``;
- ``depthlab plan CONFIG`` measures the probe here and scales every planned second by ``probe here / probe_s``;
- ``depthlab plan --check RESULTS`` scales by the probe that run recorded and prints the ratio beside the stages';
- every run's terminal scales its plan (the first ETA) by the probe taken at its start.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

FILE = Path("logs") / "probe.json"  # below a results folder


def measure(repeats: int = 5) -> float:
    """The fastest of ``repeats`` runs of the fixed workload (after one warm-up), in seconds, on one BLAS thread.

    numpy only, so that Snakemake's own process can take it at the start of a run without importing torch (2 s and
    some 300 MB): a depth-3, width-100 ReLU MLP on a batch of 100, forward, backward and an SGD step, 240 times (about 0.07 s here), the
    small matrix products and the per-call overhead that small training steps are made of."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((100, 16)), rng.standard_normal((100, 1))
    w0 = [
        rng.standard_normal((16, 100)) * 0.25,
        rng.standard_normal((100, 100)) * 0.1,
        rng.standard_normal((100, 1)) * 0.1,
    ]

    def work():
        w = [m.copy() for m in w0]
        for _ in range(240):
            h1 = np.maximum(x @ w[0], 0.0)
            h2 = np.maximum(h1 @ w[1], 0.0)
            g = 2.0 * (h2 @ w[2] - y) / len(x)
            g2 = (g @ w[2].T) * (h2 > 0)
            g1 = (g2 @ w[1].T) * (h1 > 0)
            w[2] -= 1e-3 * (h2.T @ g)
            w[1] -= 1e-3 * (h1.T @ g2)
            w[0] -= 1e-3 * (x.T @ g1)

    with threadpool_limits(limits=1, user_api="blas"):
        work()
        times = []
        for _ in range(max(1, repeats)):
            t = time.perf_counter()
            work()
            times.append(time.perf_counter() - t)
    return float(min(times))


@dataclass(frozen=True)
class Reading:
    """A probe and what the machine was doing meanwhile: the load average per core (Linux' 1-minute figure) and the
    share of CPU time the hypervisor stole during the probe (None where /proc does not say)."""

    seconds: float
    load_per_core: float | None
    steal: float | None


def _cpu_times() -> tuple[int, int] | None:
    """(steal, total) jiffies of all CPUs from /proc/stat, or None."""
    try:
        with open("/proc/stat", encoding="ascii", errors="replace") as f:
            fields = f.readline().split()
        ticks = [int(v) for v in fields[1:]]
        return ticks[7] if len(ticks) > 7 else 0, sum(ticks[:8])
    except (OSError, ValueError, IndexError):
        return None


def measure_machine(repeats: int = 9) -> Reading:
    """:func:`measure` with the load and steal read beside it (more repeats: the fastest of them is the likeliest to
    have had its core to itself)."""
    before = _cpu_times()
    seconds = measure(repeats)
    after = _cpu_times()
    steal = None
    if before and after and after[1] > before[1]:
        steal = (after[0] - before[0]) / (after[1] - before[1])
    try:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
    except (OSError, AttributeError):
        load = None
    return Reading(seconds, load, steal)


BUSY_RATIO = 2.0  # a probe this much off the calibration's speed, either way, measured the load, not the CPU
BUSY_LOAD = 1.0  # ... as did one taken while more runnable processes than cores waited (load average per core)


def judge(reading: Reading | None, calibration: float | None, use_probe: bool = False) -> tuple[float, str]:
    """The factor for planned CPU seconds, and a note for the plan's first line ('' when the probe is trusted).

    The probe scales the plan only where it is plausible as a CPU speed: within ``BUSY_RATIO`` of the calibration's,
    taken on a machine not oversubscribed.  Otherwise the plan stays at the calibration's speed and the note gives
    both numbers and what the machine was doing (three plans beside eight busy processes read the probe at x8.6,
    x1.6 and x11.5: the load, not the CPU); ``use_probe`` scales by it anyway."""
    if reading is None:
        return 1.0, ""
    r = ratio(reading.seconds, calibration)
    if calibration is None or use_probe:
        return r, ""
    busy = reading.load_per_core is not None and reading.load_per_core > BUSY_LOAD
    if 1 / BUSY_RATIO <= r <= BUSY_RATIO and not busy:
        return r, ""
    doing = []
    if reading.load_per_core is not None:
        doing.append(f"load average {reading.load_per_core:.1f} per core")
    if reading.steal is not None:
        doing.append(f"{100 * reading.steal:.0f} % of CPU time stolen")
    why = f"x{r:.2f} the calibration's time" + (" on a busy machine" if busy else "")
    return 1.0, (
        f"note: the speed probe took {reading.seconds:.3f} s against the calibration's {calibration:.3f} s ({why}"
        + (f"; {', '.join(doing)}" if doing else "")
        + "): it measured the load, not the CPU, so CPU times are as calibrated (--use-probe scales by it)"
    )


def record(results: str | Path, seconds: float) -> None:
    """Append this run's probe to ``<results>/logs/probe.json`` (a list, newest last)."""
    path = Path(results) / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    runs = recorded(results)
    runs.append({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "probe_s": seconds})
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(runs[-100:], indent=1) + "\n")
    tmp.replace(path)


def recorded(results: str | Path) -> list[dict]:
    """The probes a results folder's runs recorded (checked: untrusted input; a damaged file gives none)."""
    from . import safeio

    try:
        doc = safeio.read_json(Path(results) / FILE)
    except (OSError, ValueError):
        return []
    if not isinstance(doc, list):
        return []
    out = []
    for r in doc:
        s = plausible(r.get("probe_s") if isinstance(r, dict) else None)
        if s is not None:
            out.append({"time": str(r.get("time", "")), "probe_s": s})
    return out


def plausible(value) -> float | None:
    """A probe read from untrusted input as seconds, or None unless it is a finite number in (0, 3600)."""
    try:
        s = float(value)
    except (TypeError, ValueError):
        return None
    return s if math.isfinite(s) and 0 < s < 3600 else None


def of_runs(results: list[str | Path]) -> float | None:
    """The median probe the runs in ``results`` recorded (None when none did)."""
    vals = [r["probe_s"] for res in results if Path(res).is_dir() for r in recorded(res)]
    return float(statistics.median(vals)) if vals else None


def ratio(here: float | None, calibration: float | None) -> float:
    """How much slower this machine is than the calibration's (1 when either probe is unknown or not a plausible
    probe)."""
    here, calibration = plausible(here), plausible(calibration)
    if here is None or calibration is None:
        return 1.0
    return here / calibration
