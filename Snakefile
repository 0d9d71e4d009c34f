# depthlab: what depth does for neural networks, one pipeline for several depth studies.
# Run: `make run` (config/config.yaml), or `snakemake --workflow-profile workflow/profiles/default --configfile FILE [TARGET ...]`.
# Targets: all (default), one per study (e.g. mori_ueda), one per figure (e.g. mori_ueda_fig2), or any output file.
from snakemake.logging import logger
from snakemake.utils import min_version

min_version("9.0")

# config/config.yaml unless a config was given on the command line (no silent deep-merge of two configs)
if not config:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/stores.smk"
include: "workflow/rules/report.smk"


# A killed and restarted run (depthlab.lock): every run gets an id that its jobs inherit (sbatch passes the environment
# on); a job that a cluster starts for a run that has been replaced since (requeued, or still pending when the submit
# host died) exits here, before its Snakemake removes the outputs that the replacing run writes; the restart cancels the
# killed run's queued jobs and waits for its running ones; and a store that such a job finished after its Snakemake died
# is kept by the job that reruns it, not computed again.
import depthlab.lock

# A dry run (-n): at parse time the executor is not set yet, so workflow.dryrun reads False; the flag is in output_settings.
DRY_RUN = bool(getattr(workflow.output_settings, "dryrun", False) or workflow.dryrun)
if workflow.remote_exec:
    _superseded = depthlab.lock.superseded(R)
    if _superseded:
        logger.warning(f"depthlab: this job does nothing: {_superseded}")
        sys.exit(0)
    depthlab.lock.register_cluster_job(R)
elif not workflow.subprocess_exec:
    depthlab.lock.start_run()
    if not DRY_RUN and depthlab.lock.killed_before() and depthlab.lock.try_acquire(R):
        # a restart after a kill: the lock file now names this run, so a job of the killed run that starts from now on
        # does nothing; those still queued are cancelled, those running waited for, and the stores they finished kept
        depthlab.lock.settle_orphans(say=logger.warning, results=R)
        for _store in depthlab.lock.adopt_finished(R):
            logger.info(
                f"depthlab: {_store} was finished by a job of the killed run after its Snakemake died: its job will keep it"
            )


# A dry run says what the real run would: a folder that belongs to another config with other values
# stops it too, naming the keys (the real run checks under the folder's lock, in onstart, and records the owner).
if DRY_RUN and not workflow.remote_exec and not workflow.subprocess_exec:
    import depthlab.folder

    try:
        depthlab.folder.check(
            R, config, workflow.configfiles[-1] if workflow.configfiles else None, depthlab.folder.continuing()
        )
    except depthlab.folder.FolderTaken as e:
        sys.exit(f"depthlab: {e}")


# One run per results folder, whatever the working directory (depthlab.lock): taken when jobs start, held until exit.
# And Snakemake's scheduler keeps at most one pending re-evaluation timer (depthlab.scheduler).
onstart:
    import depthlab.lock
    import depthlab.progress
    import depthlab.scheduler

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
    try:
        depthlab.lock.acquire(R)
    except depthlab.lock.ResultsInUse as e:
        sys.exit(f"depthlab: {e}")
    # The folder belongs to one config (depthlab.folder): another config file with other values stops here, before any job.
    import depthlab.folder

    try:
        logger.info(
            depthlab.folder.claim(
                R, config, workflow.configfiles[-1] if workflow.configfiles else None, depthlab.folder.continuing()
            )
        )
    except depthlab.folder.FolderTaken as e:
        sys.exit(f"depthlab: {e}")
    # Snakemake's job-rate limiter otherwise adds a re-evaluation timer chain per finished job (depthlab.scheduler).
    logger.info(depthlab.scheduler.coalesce_reevaluations(getattr(workflow, "scheduler", None)))
    # The quiet terminal (depthlab.progress, the `depthlab` logger plugin): the jobs to run and their planned cost.
    # Parallelism: the cores of a local run, the --jobs of a cluster run (until jobs finish and the pace is measured).
    # The speed probe (depthlab.probe): this machine against the calibration's, recorded in <results>/logs/probe.json
    # and scaling the plan; DEPTHLAB_PROBE=0 skips it.
    speed = 1.0
    if os.environ.get("DEPTHLAB_PROBE", "1") != "0":
        import depthlab.probe

        try:
            here = depthlab.probe.measure()
            depthlab.probe.record(R, here)
            speed = depthlab.probe.ratio(here, dlplan.calibration_probe())
            logger.info(f"depthlab: speed probe {here:.3f} s; planned seconds x {speed:.2f} (depthlab.probe)")
        except Exception as e:  # the probe informs the ETA; it never stops a run
            logger.warning(f"depthlab: the speed probe failed ({type(e).__name__}: {e}); the plan is not scaled")
    depthlab.progress.start(planned_jobs(workflow.dag, speed), parallel_jobs(workflow), R)


rule all:
    default_target: True
    input:
        all_targets,


# one target per configured study and per figure: `snakemake mori_ueda`, `snakemake mori_ueda_fig2`
for _study in STUDIES:

    rule:
        name:
            _study
        input:
            study_targets(_study),

    for _figure in get_study(_study).figures(config):

        rule:
            name:
                f"{_study}_{_figure}"
            input:
                figure_targets(_study, _figure),


# A target that is no rule and no path: one line naming the close matches, not Snakemake's generic error.
unknown_target = check_targets()
if unknown_target:
    sys.exit(unknown_target)
