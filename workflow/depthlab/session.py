"""What a Snakemake run of depthlab does around its jobs, so that the Snakefile stays declarative: at parse time
(:func:`at_parse`: the run id, a cluster job of a replaced run stepping aside, a restart settling a killed run, a dry
run's folder check; :func:`check_targets`), when jobs start (:func:`on_start`: the paths a cluster job's shell sees,
the run lock, the folder claim, the scheduler patch, the speed probe, the quiet terminal's plan) and the ETA's plan
(:func:`planned_jobs`, :func:`parallel_jobs`).

Every function takes Snakemake's ``workflow`` object and the validated config; none runs outside a Snakemake process.
A stop here is ``sys.exit`` with one line, as Snakemake shows a Snakefile's own.
"""

from __future__ import annotations

import difflib
import os
import sys
from typing import Any, Callable


def _logger():
    from snakemake.logging import logger

    return logger


def dry_run(workflow) -> bool:
    """Whether this is a dry run (-n): at parse time the executor is not set yet, so ``workflow.dryrun`` reads False;
    the flag is in ``output_settings``."""
    return bool(getattr(workflow.output_settings, "dryrun", False) or workflow.dryrun)


def _config_file(workflow) -> str | None:
    return workflow.configfiles[-1] if workflow.configfiles else None


def at_parse(workflow, config: dict, results: str) -> None:
    """A killed and restarted run (depthlab.lock): every run gets an id that its jobs inherit (sbatch passes the
    environment on); a job that a cluster starts for a run that has been replaced since (requeued, or still pending when
    the submit host died) exits here, before its Snakemake removes the outputs that the replacing run writes; the restart
    cancels the killed run's queued jobs and waits for its running ones; and a store that such a job finished after its
    Snakemake died is kept by the job that reruns it, not computed again.  A dry run says what the real run would: a
    folder that belongs to another config with other values stops it, naming the keys (the real run checks under the
    folder's lock, in :func:`on_start`)."""
    import depthlab.lock as lock

    log = _logger()
    if workflow.remote_exec:
        superseded = lock.superseded(results)
        if superseded:
            log.warning(f"depthlab: this job does nothing: {superseded}")
            sys.exit(0)
        lock.register_cluster_job(results)
        return
    if workflow.subprocess_exec:
        return
    dry = dry_run(workflow)
    lock.start_run()
    if not dry and lock.killed_before() and lock.try_acquire(results):
        # a restart after a kill: the lock file now names this run, so a job of the killed run that starts from now on
        # does nothing; those still queued are cancelled, those running waited for, and the stores they finished kept
        lock.settle_orphans(say=log.warning, results=results)
        for store in lock.adopt_finished(results):
            log.info(
                f"depthlab: {store} was finished by a job of the killed run after its Snakemake died: its job will keep it"
            )
    if dry:
        import depthlab.folder as folder

        try:
            folder.check(results, config, _config_file(workflow), folder.continuing())
        except folder.FolderTaken as e:
            sys.exit(f"depthlab: {e}")


def on_start(workflow, config: dict, results: str, planned: Callable[[Any, float], dict]) -> None:
    """When jobs start: refuse a path a cluster job's shell could run as code, take the results folder's lock (one run
    per folder, whatever the working directory), claim the folder for this config, patch the scheduler's re-evaluation
    timers, run the speed probe and start the quiet terminal with ``planned(dag, speed)`` (:func:`planned_jobs`)."""
    import depthlab.config as dlc
    import depthlab.folder as folder
    import depthlab.lock as lock
    from .costs import model as cost_model
    import depthlab.progress as progress
    import depthlab.scheduler as scheduler

    log = _logger()
    # Under a cluster executor the working directory and the config paths reach each job script's shell, quoted with
    # Python's repr (not shell quoting): refuse one that could run as code there, before anything is submitted.
    if workflow.non_local_exec and not workflow.remote_exec:
        try:
            dlc.check_remote_paths(
                [("the working directory", os.getcwd()), ("the workflow folder", workflow.basedir)]
                + [("the config file", f) for f in workflow.configfiles]
            )
        except dlc.ConfigError as e:
            sys.exit(str(e))
    from .outputs import links_leaving

    leaving = links_leaving(results)  # a study, figures or logs folder linked elsewhere: the run would write there
    if leaving:
        sys.exit(
            f"depthlab: {results} holds links out of it, which the run would write through: {'; '.join(leaving)}. "
            "Remove them (the results folder itself may be a link)."
        )
    try:
        lock.acquire(results)
    except lock.ResultsInUse as e:
        sys.exit(f"depthlab: {e}")
    # The folder belongs to one config (depthlab.folder): another config file with other values stops here, before any job.
    try:
        log.info(folder.claim(results, config, _config_file(workflow), folder.continuing()))
    except folder.FolderTaken as e:
        sys.exit(f"depthlab: {e}")
    # Snakemake's job-rate limiter otherwise adds a re-evaluation timer chain per finished job (depthlab.scheduler).
    log.info(scheduler.coalesce_reevaluations(getattr(workflow, "scheduler", None)))
    # The speed probe (depthlab.probe): this machine against the calibration's, recorded in <results>/logs/probe.json
    # and scaling the plan; DEPTHLAB_PROBE=0 skips it.
    speed = 1.0
    if os.environ.get("DEPTHLAB_PROBE", "1") != "0":
        import depthlab.probe as probe

        try:
            reading = probe.measure_machine()
            probe.record(results, reading.seconds)
            speed, note = probe.judge(reading, cost_model.calibration_probe())
            log.info(f"depthlab: speed probe {reading.seconds:.3f} s; planned seconds x {speed:.2f} (depthlab.probe)")
            if note:
                log.info(f"depthlab: {note}")
        except Exception as e:  # the probe informs the ETA; it never stops a run
            log.warning(f"depthlab: the speed probe failed ({type(e).__name__}: {e}); the plan is not scaled")
    # The quiet terminal (depthlab.progress, the `depthlab` logger plugin): the jobs to run and their planned cost.
    # Parallelism: the cores of a local run, the --jobs of a cluster run (until jobs finish and the pace is measured).
    progress.start(planned(workflow.dag, speed), parallel_jobs(workflow), results)


def check_targets(workflow) -> str:
    """A message for the first requested target that is neither a rule nor a path ('' if none); close matches, and where
    the whole list is (`make help`, `depthlab targets CONFIG`)."""
    names = sorted(r.name for r in workflow.rules)
    # Snakemake hands its targets to the workflow only after parsing the Snakefile: read them from its command line
    try:
        from snakemake.cli import get_argument_parser

        requested = get_argument_parser().parse_known_args(sys.argv[1:])[0].targets or []
    except (Exception, SystemExit):
        requested = []
    if not os.path.basename(sys.argv[0]).startswith("snakemake") or workflow.remote_exec:
        requested = []
    for t in sorted(requested):
        if t in names or os.sep in t or "." in t:
            continue
        close = difflib.get_close_matches(t, names, n=4, cutoff=0.6)
        return (
            f"depthlab: no target {t!r}"
            + (f"; did you mean {', '.join(close)}?" if close else ".")
            + " `make help` (or `depthlab targets CONFIG`) lists every target"
        )
    return ""


# ---- the quiet terminal's plan (depthlab.progress: the ETA) ------------------------------


def planned_seconds(job, config: dict, studies: list[str], spec_of: Callable[[str, str, Any], Any]) -> float:
    """A job's planned seconds, from the cost model of `depthlab plan` (0 for the config snapshot and the index);
    ``spec_of(study, stage, wildcards)`` is the rules' typed spec of a store job."""
    from .costs import model as cost_model
    from .costs import report as cost_report
    from depthlab.studies import get_study

    rname, wc = job.rule.name, job.wildcards
    costs = cost_model.shipped_costs()
    for study in studies:
        for st in get_study(study).store_stages():
            if rname == f"{study}_{st.name}":
                return cost_model.spec_seconds(
                    cost_model.stage_cost(costs, f"{study}/{st.name}"),
                    spec_of(study, st.name, wc),
                    cost_model.fallback_rate(costs),
                )
    if rname in ("figure", "claims"):
        return cost_report.output_seconds(
            costs, wc["study"], rname, config, wc["figure"] if rname == "figure" else None
        )
    return 0.0


def resumes(job) -> bool:
    """Whether one of the job's outputs has a checkpoint (``<output>.ckpt`` or a child ``<output>.ckpt.<name>``), i.e.
    the job resumes work done by an earlier run.  Listed, not globbed: a results folder may hold ``[``."""
    for o in job.output:
        folder, name = os.path.split(str(o))
        try:
            if any(f == name + ".ckpt" or f.startswith(name + ".ckpt.") for f in os.listdir(folder or ".")):
                return True
        except OSError:
            continue
    return False


def planned_jobs(dag, speed: float, results: str, config: dict, studies: list[str], spec_of) -> dict:
    """Every job this run will execute: Snakemake's job id -> (its output below the results folder, planned seconds, its
    rule: the stage whose measured-to-planned ratio corrects it in the ETA, whether it resumes from a checkpoint),
    seconds times ``speed`` (the probe)."""
    out = {}
    for job in dag.needrun_jobs():
        name = os.path.relpath(str(job.output[0]), results) if job.output else job.rule.name
        try:
            secs = planned_seconds(job, config, studies, spec_of)
        except Exception:  # a job the cost model does not know: no share of the ETA
            secs = 0.0
        out[dag.jobid(job)] = (name.removesuffix(".zarr"), speed * secs, job.rule.name, resumes(job))
    return out


def parallel_jobs(wf) -> int:
    """How many jobs run at once: the cores of a local run, the --jobs of a cluster run (1 when neither is known)."""
    for get in (lambda: wf.nodes if wf.non_local_exec else None, lambda: wf.cores):
        try:
            n = get()
        except Exception:
            n = None
        if isinstance(n, int) and 0 < n < 10**6:
            return n
    return 1
