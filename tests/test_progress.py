"""The quiet terminal (depthlab.progress): one line per finished job within the width, the ETA's arithmetic,
warnings and errors in full, everything in the log file."""

from __future__ import annotations

import io
import logging
import math
import time

import pytest

from depthlab import progress


def record(msg, level=logging.INFO, **extra) -> logging.LogRecord:
    r = logging.LogRecord("snakemake", level, __file__, 1, msg, None, None)
    r.__dict__.update(extra)
    return r


class Fmt(logging.Formatter):
    def format(self, record):
        return f"FULL {record.getMessage()}"


def terminal(tmp_path, cols=80, monkeypatch=None):
    out = io.StringIO()
    term = progress.Terminal(out, None, Fmt(), logging.Filter())
    return term, out


def test_fit_keeps_both_ends_within_the_width():
    s = "mori_ueda/fig2/train/2-local/" + "x" * 300 + "/L5"
    for cols in (10, 41, 80, 200):
        cut = progress.fit(s, cols)
        assert len(cut) == cols and cut.startswith("mori_ueda"[: min(9, (cols - 1) // 2)]) and cut.endswith("L5")
    assert progress.fit("short", 80) == "short"


def test_the_eta_is_the_planned_work_left_over_the_pace_measured_once_jobs_finish():
    plan = progress.Plan({i: (f"j{i}", s) for i, s in enumerate([10.0, 10.0, 10.0, 70.0])}, cores=2, log=None)
    assert plan.eta() == pytest.approx(100.0 / 2)  # nothing done: cores planned seconds per second
    plan.t0 = time.monotonic() - 100.0
    plan.done = {0: 10.0, 1: 10.0}
    assert plan.eta() == pytest.approx(80.0 / 2)  # two jobs are too few to measure a pace
    plan.done[2] = 10.0  # 30 planned seconds in 100 s of wall time: 0.3 per second, 70 left
    assert plan.eta() == pytest.approx(70.0 / 0.3, rel=1e-3)


def test_one_line_per_job_warnings_in_full_and_everything_in_the_log(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "width", lambda: 60)
    term, out = terminal(tmp_path)
    term.emit(record("Building DAG of jobs..."))  # before the start: kept for the log file only
    log = tmp_path / "logs" / "snakemake" / "run.log"
    term.start(
        progress.Plan(
            {7: ("mori_ueda/fig2/train/2-local/" + "d" * 100 + "/L3", 30.0), 8: ("claims.md", 0.0)}, cores=2, log=log
        )
    )
    term.emit(record(" Rule: x, Jobid: 7", event="job_info"))
    term.emit(record("Select jobs to execute..."))
    term.emit(record("None", event="job_finished", job_id=7))
    term.emit(record("careful", level=logging.WARNING))
    term.emit(record("Error in rule x, jobid: 8", level=logging.ERROR, event="job_error"))
    term.emit(record("Nothing to be done (all requested files are present and up to date)."))
    term.emit(record("None", event="job_finished", job_id=8))
    term.emit(record("None", event="progress", done=2, total=2))
    term.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "depthlab: 2 jobs to run, planned 0.5 core-min, about 15 s on 2 cores"[:59] + "…", lines[0]
    assert lines[1] == f"depthlab: full log {log}"
    assert lines[2].startswith("[1/2] ") and "…" in lines[2] and lines[2].endswith("/L3 | ETA " + lines[2][-5:]), lines[
        2
    ]
    assert lines[3:6] == [
        "FULL careful",
        "FULL Error in rule x, jobid: 8",
        "Nothing to be done (all requested files are present and up to date).",
    ]
    assert lines[6].startswith("[2/2] ") and "claims.md" in lines[6]
    assert lines[7].startswith("depthlab: 2 jobs done in ") and lines[8] == lines[1] and len(lines) == 9, lines
    assert all(len(ln) <= 60 for i, ln in enumerate(lines) if i not in (1, 3, 4, 5, 8)), lines
    text = log.read_text()
    for needle in ("FULL Building DAG", "FULL  Rule: x, Jobid: 7", "FULL Select jobs", "FULL careful", "FULL Error"):
        assert needle in text, text


def test_verbose_passes_snakemakes_own_output_through(tmp_path):
    out, seen = io.StringIO(), []

    class Keep(logging.Handler):
        def emit(self, r):
            seen.append(r.getMessage())

    term = progress.Terminal(out, Keep(), Fmt(), logging.Filter())
    term.start(progress.Plan({1: ("a", 1.0)}, cores=1, log=None))
    term.emit(record("Select jobs to execute..."))
    term.emit(record("None", event="job_finished", job_id=1))
    assert seen == ["Select jobs to execute...", "None"] and out.getvalue() == ""


def test_the_logger_plugin_imports_nothing_of_depthlab():
    """Snakemake loads the plugin before the Snakefile puts its checkout's workflow/ on the path: were the plugin to
    import depthlab, a run of an edited checkout copy would fingerprint the installed package's code (this broke the
    rerun-after-a-code-edit tests once)."""
    import subprocess
    import sys

    code = (
        "import sys, snakemake_logger_plugin_depthlab; "
        "bad = sorted(m for m in sys.modules if m == 'depthlab' or m.startswith('depthlab.')); "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_each_stage_corrects_its_own_plan_and_a_running_job_counts_what_is_left_of_it():
    """Two stages planned 10 s a job: stage a's first job took 2 s.  The pooled ratio is the median of stage a's ratio
    (0.2) and the plan's own vote (1): sqrt(0.2) in logs.  Stage a's other job is estimated from its own ratio pulled
    towards the pooled one (one job says little of its stage); stage b, nothing finished, takes the pooled ratio; a
    running job counts its estimate less the time it has run; a job planned 0 s counts its stage's mean."""
    now = [0.0]
    jobs = {
        1: ("a1", 10.0, "a"),
        2: ("a2", 10.0, "a"),
        3: ("b1", 10.0, "b"),
        4: ("b2", 10.0, "b"),
        5: ("c1", 0.0, "c"),
        6: ("c2", 0.0, "c"),
        7: ("b3", 10.0, "b"),
    }
    plan = progress.Plan(jobs, cores=2, log=None, clock=lambda: now[0])
    for jid, t0, t1 in ((1, 0.0, 2.0), (5, 0.0, 4.0), (6, 4.0, 8.0)):
        plan.start_job(jid, t0)
        plan.finish_job(jid, t1)
    plan.start_job(3, 8.0)
    now[0] = 9.0
    pooled, ratio, unplanned = plan.ratios()
    assert pooled == pytest.approx(math.sqrt(0.2)) and unplanned["c"] == pytest.approx(4.0)
    assert 0.2 < ratio["a"] < pooled
    left = ratio["a"] * 10.0 + max(0.0, pooled * 10.0 - 1.0) + 2 * pooled * 10.0  # a2, b1 (running 1 s), b2, b3
    assert plan.left() == pytest.approx(left)
    busy = 2.0 + 4.0 + 4.0 + 1.0  # finished and running job-seconds in 9 s of wall time
    assert plan.concurrency() == pytest.approx(busy / 9.0)
    assert plan.eta() == pytest.approx(left / (busy / 9.0))


def test_a_stages_ratio_is_the_posterior_mean_under_a_cauchy_prior():
    """progress.shrunk (a grid) against scipy's quadrature of the same posterior mean; and its two ends: a measure
    many standard errors from the prior's centre stays where it is, one within its standard error moves to the
    centre's side."""
    from scipy import integrate

    def quad(x, v, mu, tau):
        f = lambda t, k: t**k * math.exp(-0.5 * (x - t) ** 2 / v) / (1 + ((t - mu) / tau) ** 2)  # noqa: E731
        lo, hi = min(x, mu) - 40, max(x, mu) + 40
        pts = sorted({x, mu})
        return (
            integrate.quad(f, lo, hi, args=(1,), points=pts, limit=400)[0]
            / integrate.quad(f, lo, hi, args=(0,), points=pts, limit=400)[0]
        )

    for x, v, mu, tau in ((0.35, 0.07, 0.0, 0.1), (-2.3, 0.25, 0.0, 0.1), (1.0, 0.01, 0.2, 0.5), (0.1, 1.0, 0.0, 0.3)):
        assert progress.shrunk(x, v, mu, tau) == pytest.approx(quad(x, v, mu, tau), abs=2e-3), (x, v, mu, tau)
    assert progress.shrunk(-2.3, 0.001, 0.0, 0.1) == pytest.approx(-2.3, abs=0.01)
    assert 0.0 < progress.shrunk(0.35, 0.07, 0.0, 0.1) < 0.35 / 2


def test_a_job_running_past_its_estimate_keeps_counting_and_the_eta_does_not_freeze():
    """A job planned 100 s that runs on: within its estimate it counts what is left; past 2/3 of it, half the time it has
    run (progress.OVERRUN_LEFT), so the ETA grows while it runs long instead of holding still as it did with the job
    counted done (the default run's "ETA ... (64 min)" heartbeat lines for an hour)."""
    now = [0.0]
    plan = progress.Plan({1: ("long", 100.0, "a"), 2: ("next", 100.0, "a")}, cores=1, log=None, clock=lambda: now[0])
    plan.start_job(1, 0.0)
    now[0] = 50.0
    assert plan.left() == pytest.approx(50.0 + 100.0)
    now[0] = 300.0
    assert plan.left() == pytest.approx(progress.OVERRUN_LEFT * 300.0 + 100.0)
    etas = []
    for t in (300.0, 600.0, 900.0):
        now[0] = t
        etas.append(t + plan.eta())  # the clock time the terminal would show
    assert etas[0] < etas[1] < etas[2]


def test_the_eta_replayed_from_a_real_smoke_run_is_within_a_quarter_of_the_time_left():
    """The timings of a real smoke run (tests/data/smoke_jobs.tsv: the ``<log>.jobs.tsv`` that a clean `make run
    CONFIG=config/smoke.yaml` wrote, 201 jobs on 2 cores) replayed through the ETA: at 10, 25, 50 and 75 % of the jobs
    done, the time left it shows is within 25 % of the time that was left (the plan was calibrated on another smoke run).
    Then the same timings with one stage planned ten times too long (planned
    at their whole epoch budget, stopped early): each stage correcting its own plan is never further off than one
    pace for the whole run (the ETA before) once that stage has a finished job, and is within 25 % where it was off
    by more than half."""
    from pathlib import Path

    rows = progress.read_jobs_log(Path(__file__).parent / "data" / "smoke_jobs.tsv")
    assert len(rows) == 201 and all(r["start_s"] is not None for r in rows)
    now = progress.replay(rows, cores=2)
    assert sorted(now) == [0.10, 0.25, 0.50, 0.75]
    for f, (eta, real) in now.items():
        assert abs(eta - real) <= 0.25 * real, (f, eta, real)
    # each stage of 5 jobs or more in turn planned ten times too long: once one of its jobs has finished, the ETA is
    # never further off than one pace for the run, and somewhere it is within 25 % where that pace is off by half
    end = max(r["end_s"] for r in rows)
    rescued = []
    for st in sorted({r["stage"] for r in rows}):
        if sum(r["stage"] == st for r in rows) < 5:
            continue
        first = min(r["end_s"] for r in rows if r["stage"] == st)
        off = [{**r, "planned_s": r["planned_s"] * (10 if r["stage"] == st else 1)} for r in rows]
        new, old = progress.replay(off, cores=2), progress.replay(off, cores=2, starts=False)
        for f, (eta, real) in new.items():
            if end - real < first:
                continue
            e_new, e_old = abs(eta - real) / real, abs(old[f][0] - real) / real
            assert e_new <= max(0.25, e_old) + 0.02, (st, f, e_new, e_old)
            if e_new <= 0.25 < 0.5 < e_old:
                rescued.append((st, f))
    assert rescued


def test_a_job_resumed_from_a_checkpoint_does_not_set_its_stages_pace():
    """After a restart, a net that resumes near its end finishes in a fraction of its planned time.  Counted as a
    measure of the pace, it made its stage (and, through the pooled ratio, every stage) look many times faster than
    planned: "ETA 32 min" with 450 jobs of a 5-hour run left.  A job marked resumed (its store had a checkpoint at the
    run's start) is left out of the ratios and counts half of its corrected estimate while it has not finished."""
    # the arithmetic on a hand-made plan: stage "f", 2 jobs planned 100 s; "f1" resumed and done in 5 s, "f2" done
    # in 200 s; stage "g" not started
    t = [0.0]
    plan = progress.Plan(
        {
            1: ("f1", 100.0, "f", True),
            2: ("f2", 100.0, "f", False),
            3: ("f3", 100.0, "f", False),
            4: ("f4", 100.0, "f", True),
            5: ("g1", 50.0, "g"),
        },
        2,
        None,
        clock=lambda: t[0],
    )
    plan.start_job(1, 0.0), plan.start_job(2, 0.0)
    t[0] = 5.0
    plan.finish_job(1, 5.0)
    assert plan.ratios() == (1.0, {}, {})  # nothing fresh finished: no measured pace
    t[0] = 200.0
    plan.finish_job(2, 200.0)
    pooled, ratio, _ = plan.ratios()
    assert pooled == pytest.approx(math.sqrt(2.0))  # f2 alone (200 / 100) and the plan's vote (1)
    assert pooled < ratio["f"] < 2.0
    assert plan.left(200.0) == pytest.approx(
        ratio["f"] * 100.0 + progress.RESUMED_LEFT * ratio["f"] * 100.0 + pooled * 50.0
    )

    # a replayed run shaped like the default after a restart: two long nets resume and finish in 50 s each, then 100
    # short jobs of another stage, then 18 nets of 1 000 s (2 cores).  Unmarked, the two resumed nets set the nets'
    # pace, and the ETA at 10 % of the jobs is far too short; marked, it is within 25 % of the time left.
    rows, clock = [], [0.0, 0.0]
    shapes = (
        [("train", 1000.0, 50.0, True)] * 2
        + [("figure", 10.0, 10.0, False)] * 100
        + [("train", 1000.0, 1000.0, False)] * 18
    )
    for i, (stage, planned, took, resumed) in enumerate(shapes):
        c = min(range(2), key=lambda k: clock[k])
        rows.append(
            {
                "jobid": i,
                "stage": stage,
                "planned_s": planned,
                "start_s": clock[c],
                "end_s": clock[c] + took,
                "name": f"job{i}",
                "resumed": resumed,
            }
        )
        clock[c] += took
    marked = progress.replay(rows, cores=2, at=(0.10,))
    unmarked = progress.replay([{**r, "resumed": False} for r in rows], cores=2, at=(0.10,))
    (eta, real), (eta0, real0) = marked[0.10], unmarked[0.10]
    assert real == real0
    assert abs(eta - real) <= 0.25 * real, (eta, real)
    assert eta0 < 0.5 * real0, (eta0, real0)  # the bug this guards against


def test_the_jobs_log_records_and_reads_back_a_resumed_job(tmp_path):
    import io

    term = progress.Terminal(io.StringIO(), None, logging.Formatter(), logging.Filter())
    plan = progress.Plan({7: ("a/b", 10.0, "s", True), 8: ("a/c", 10.0, "s", False)}, 1, tmp_path / "run.log")
    term.start(plan)
    for jid in (7, 8):
        plan.start_job(jid)
        term._job_finished(jid)
    rows = progress.read_jobs_log(progress.jobs_log(tmp_path / "run.log"))
    assert [(r["jobid"], r["resumed"]) for r in rows] == [(7, True), (8, False)]
    old = tmp_path / "old.jobs.tsv"  # a log written before the column existed reads as not resumed
    old.write_text("jobid\tstage\tplanned_s\tstart_s\tend_s\tname\n1\ts\t1.0\t0.0\t1.0\tx\n")
    assert progress.read_jobs_log(old)[0]["resumed"] is False


def test_the_heartbeat_says_where_the_longest_job_stands_from_its_logs_last_progress_line(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "width", lambda: 160)
    results = tmp_path / "results" / "default"
    name = "fractals/cantor/n5/pdeg0/depth5/w200"
    log = results / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True)
    log.write_text(
        "00:10:01 depthlab fractals/train: ...\n"
        + "".join(
            f"00:{m:02d}:00 epoch {4 * m}/1500: 1 of 1 models still training, 0 converged, {m}.0s\n"
            for m in range(1, 303)
        )
    )
    now = [60.0]
    plan = progress.Plan(
        {1: (name, 3000.0, "fractals/train")},
        cores=2,
        log=results / "logs" / "snakemake" / "run.log",
        t0=0.0,
        clock=lambda: now[0],
    )
    term, _ = terminal(tmp_path)
    term.plan = plan
    plan.start_job(1, 0.0)
    line = term.running_line()
    assert f"the longest {name} for 60 s, epoch 1208/1500 | ETA " in line, line
    assert progress.job_progress(results, "../../etc/passwd") is None
    assert progress.job_progress(results, "fractals/none") is None  # no log yet
    plan.log = None
    assert ", epoch" not in term.running_line()


def test_a_silent_stretch_of_a_long_job_gets_a_line_on_what_runs_and_the_eta(tmp_path, monkeypatch):
    """The default run's first jobs are fractal nets of most of an hour: the terminal said nothing for 40 minutes.
    After DEPTHLAB_HEARTBEAT_S seconds without a line it says what runs, for how long, and the ETA; never after the
    run's end, and 0 turns it off."""
    monkeypatch.setattr(progress, "width", lambda: 120)
    monkeypatch.setattr(progress, "HEARTBEAT_MIN_S", 0.1)  # the floor (10 s) lowered for the test's sake
    monkeypatch.setenv("DEPTHLAB_HEARTBEAT_S", "0.2")
    term, out = terminal(tmp_path)
    term.start(
        progress.Plan(
            {
                1: ("fractals/cantor/n5/pdeg5/depth5/w100", 2400.0, "fractals/train"),
                2: ("fractals/cantor/n5/pdeg0/depth5/w200", 3000.0, "fractals/train"),
            },
            cores=2,
            log=None,
        )
    )
    term.emit(record("None", event="job_started", jobs=[1]))
    time.sleep(0.05)
    term.emit(record("None", event="job_started", jobs=[2]))
    deadline = time.monotonic() + 20
    while "running" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    beat = [ln for ln in out.getvalue().splitlines() if "running" in ln][0]
    assert beat.startswith("[0/2] ") and "running 2 jobs, the longest fractals/cantor/n5/pdeg5/depth5/w100 for " in beat
    assert " | ETA " in beat and " done " not in beat and len(beat) <= 120, beat
    term.emit(record("None", event="job_finished", job_id=1))
    term.emit(record("None", event="job_finished", job_id=2))
    term.emit(record("None", event="progress", done=2, total=2))
    term.close()
    n = len(out.getvalue().splitlines())
    time.sleep(0.5)
    assert len(out.getvalue().splitlines()) == n, "no line after the run's end"
    monkeypatch.setenv("DEPTHLAB_HEARTBEAT_S", "0")
    term, out = terminal(tmp_path)
    term.start(progress.Plan({1: ("x", 10.0)}, cores=1, log=None))
    term.emit(record("None", event="job_started", jobs=[1]))
    time.sleep(0.4)
    assert "running" not in out.getvalue()
    monkeypatch.setenv("DEPTHLAB_HEARTBEAT_S", "nan")
    assert progress.heartbeat_s() == progress.HEARTBEAT_S


def test_a_tiny_heartbeat_is_raised_to_its_floor(monkeypatch):
    """DEPTHLAB_HEARTBEAT_S=0.001 printed 7 383 lines in 10 s, and 1e-300 printed 21 933."""
    for v in ("0.001", "1e-300", "9.99"):
        monkeypatch.setenv("DEPTHLAB_HEARTBEAT_S", v)
        assert progress.heartbeat_s() == progress.HEARTBEAT_MIN_S == 10.0
    monkeypatch.setenv("DEPTHLAB_HEARTBEAT_S", "0")
    assert progress.heartbeat_s() == 0.0
    monkeypatch.setenv("DEPTHLAB_HEARTBEAT_S", "42")
    assert progress.heartbeat_s() == 42.0


def test_a_stage_whose_few_long_jobs_finish_first_does_not_set_the_pace_of_its_many_short_ones():
    """The default run of 358a57c: the Mori & Ueda rate searches, planned about 50 s each, ran the hard targets first
    (4-5x their plan), then 26 searches at 0.76x; the stage's own ratio after 14 of its 40 jobs (1.42), shrunk by one
    pseudo-job, put the ETA 30 % long at 10 % of the jobs.  A run shaped like it, on 2 cores: five small stages of 4
    jobs that keep their plan, 40 nets planned 100 s (95-105 s), 40 searches planned 50 s (the 1st and the 8th take
    225 s, the rest of the first 14 take 45 s, the others 38 s), 40 figures of 5 s.

    After 12 searches (their own ratio 1.5, their jobs far apart) the searches' ratio moves less than halfway (in logs)
    from the pooled one towards their own; the ETA while the searches run is never more than 45 % long (with the
    stage's own ratio shrunk by one pseudo-job, the estimator before: 75 %).
    The same run with the nets planned at 1 000 s, their jobs agreeing with each other: their ratio is their own
    (0.1) after 3 of them, and the ETA while the searches run is as with the nets planned right."""

    def run(net_plan: float) -> list[dict]:
        rows, clock = [], [0.0, 0.0]
        shapes = (
            [(f"data{k}", 10.0, 9.0 + k / 2) for k in range(5) for _ in range(4)]
            + [("nets", net_plan, 95.0 + 5.0 * (i % 3)) for i in range(40)]
            + [("search", 50.0, 225.0 if i in (0, 7) else (45.0 if i < 14 else 38.0)) for i in range(40)]
            + [("figures", 5.0, 5.0)] * 40
        )
        for i, (stage, planned, took) in enumerate(shapes):
            c = min(range(2), key=lambda k: clock[k])
            rows.append(
                {
                    "jobid": i,
                    "stage": stage,
                    "planned_s": planned,
                    "start_s": clock[c],
                    "end_s": clock[c] + took,
                    "name": f"job{i}",
                    "resumed": False,
                }
            )
            clock[c] += took
        return rows

    def plan_after(rows: list[dict], k_stage: str, k: int) -> progress.Plan:
        """The run's Plan when the k-th job of ``k_stage`` has just finished."""
        end = sorted(r["end_s"] for r in rows if r["stage"] == k_stage)[k - 1]
        plan = progress.Plan(
            {r["jobid"]: (r["name"], r["planned_s"], r["stage"]) for r in rows}, 2, None, t0=0.0, clock=lambda: end
        )
        for r in rows:
            if r["end_s"] <= end:
                plan.start_job(r["jobid"], r["start_s"])
                plan.finish_job(r["jobid"], r["end_s"])
        return plan

    right, off = run(100.0), run(1000.0)
    pooled, ratio, _ = plan_after(right, "search", 12).ratios()
    own = sum(
        r["end_s"] - r["start_s"]
        for r in right
        if r["stage"] == "search" and r["end_s"] <= sorted(x["end_s"] for x in right if x["stage"] == "search")[11]
    ) / (12 * 50.0)
    assert own == pytest.approx(1.5) and abs(math.log(ratio["search"] / pooled)) < 0.5 * math.log(own / pooled)
    assert plan_after(off, "nets", 3).ratios()[1]["nets"] == pytest.approx(0.1, rel=0.1)
    n = len(right)
    at = tuple(k / n for k in range(63, 100, 3))  # from the 3rd search done to the figures
    errs = {}
    for name, rows in (("right", right), ("off", off)):
        errs[name] = [eta / real - 1 for eta, real in progress.replay(rows, cores=2, at=at).values()]
        assert max(errs[name]) <= 0.45 and min(errs[name]) >= -0.25, (name, errs[name])
    assert errs["off"] == pytest.approx(errs["right"], abs=0.02)
