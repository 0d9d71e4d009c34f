# The only Python of the workflow: config validation, the job grid, named input/param functions.
# Every path, spec and fingerprint comes from the study registry (depthlab.studies), so the rules stay
# thin, a new study needs no edit here, and the audit can recompute any job's spec from what its store records.
import functools
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))  # use the checkout's package

import depthlab.config as dlc
import depthlab.plan as dlplan
import depthlab.provenance as dlp
from depthlab.studies import get_study
from depthlab.study import ClaimsJob, FigureJob, Ref

# Snakemake has parsed the config files already, silently keeping the last of duplicate keys: parse them again
# strictly (duplicates are an error), then validate the merged config (filling in every default).
for _configfile in workflow.configfiles:
    dlc.read_yaml(_configfile)
config = dlc.validate(config, source=workflow.configfiles[-1] if workflow.configfiles else None)
try:  # the package's calibration, checked before any job (a damaged costs.json: one line naming the file and key)
    dlplan.shipped_costs()
except dlplan.CostsError as e:
    sys.exit(f"depthlab: {e}")
R = config["results"].rstrip("/")  # results root: every output lands below it (quoted wherever it reaches a shell)
STUDIES = sorted(config["studies"])
CONDA_ENV = "../../envs/depthlab.yaml"
# The device reaches jobs through the environment, recorded in every store but deliberately not in params:
# switching it reruns nothing. `envvars` passes it (and the study search path) on to SLURM and other remote executors.
os.environ.update(
    DEPTHLAB_DEVICE=config["device"],
    DEPTHLAB_DEVICE_BY_STUDY=dlc.canonical_json(config["device_by_study"]),
    DEPTHLAB_CPU_KERNELS=config["cpu_kernels"],
)
os.environ.setdefault("DEPTHLAB_STUDY_PATH", "")
os.environ.setdefault("DEPTHLAB_TEST_HOLD", "")  # tests only (depthlab.checkpoint): a job waits after a checkpoint


envvars:
    "DEPTHLAB_DEVICE",
    "DEPTHLAB_DEVICE_BY_STUDY",
    "DEPTHLAB_CPU_KERNELS",
    "DEPTHLAB_TEST_HOLD",
    "DEPTHLAB_STUDY_PATH",


# Under a cluster executor every store job belongs to one group: each connected chain of store jobs (a data set, its
# rate searches, nets and kernels) is one submission, and the SLURM profile's `group-components` packs several chains
# into one. Its `cores` caps a submission's CPUs: jobs beyond them run one after another in it. Ignored locally.
STORE_GROUP = "depthlab_stores"


# One shell command for every store, figure and claims job: the spec names the study and stage.
STAGE_SHELL = (
    "depthlab stage --spec {params.spec:q} --inputs {params.inputs:q} --output {params.output:q}"
    " --results {params.results:q} --threads {threads} > {log:q} 2>&1"
)


wildcard_constraints:
    study="|".join(STUDIES) or "-",
    figure="[A-Za-z0-9][A-Za-z0-9_.-]*",


def _named(fn, name):
    fn.__name__ = name
    return fn


@functools.lru_cache(maxsize=None)
def _spec(study, stage, job):
    """The typed spec of one job (built once per job, however many input and params functions ask)."""
    return get_study(study).spec(config, stage, job)


def _job(study, stage, wildcards):
    st = get_study(study).stage(stage)
    return st.job_type.from_wildcards({k: wildcards[k] for k in st.job_type.constraints()})


def _path(study, ref):
    return f"{R}/{study}/{get_study(study).path(ref)}"


def _inputs(study, spec):
    return {name: _path(study, ref) for name, ref in spec.inputs().items()}


def _files(spec):
    """Files from outside the results folder a job reads (a user's CIFAR-10 copy): rule inputs, so a changed one reruns it."""
    return {"file_" + "".join(c if c.isalnum() else "_" for c in n): p for n, p in spec.files().items()}


# ---- paths ------------------------------------------------------------------------


def store_pattern(study, stage):
    """Output pattern of a store stage, e.g. results/mori_ueda/{figure}/train/{target}/L{depth}.zarr."""
    return f"{R}/{study}/{get_study(study).stage(stage).path}"


def log_pattern(study, stage):
    return f"{R}/logs/{study}/{get_study(study).stage(stage).path.removesuffix('.zarr')}.log"


def bench_pattern(study, stage):
    return f"{R}/benchmarks/{study}/{get_study(study).stage(stage).path.removesuffix('.zarr')}.tsv"


def figure_files(study, figure):
    stem = f"{R}/{study}/figures/{figure}"
    return [f"{stem}.png", f"{stem}.pdf", f"{stem}.csv", f"{stem}.provenance.json"]


def lineage(study, refs):
    """Every store the stores ``refs`` read, directly or not, and themselves (paths): a target list naming them makes
    Snakemake rebuild a store deleted by hand (or lost to a kill) even while the figures downstream of it exist, and then
    everything downstream (their inputs were updated)."""
    out, todo = {}, list(refs)
    while todo:
        ref = todo.pop()
        path = _path(study, ref)
        if path not in out:
            out[path] = ref
            todo += list(_spec(study, ref.stage, ref.job).inputs().values())
    return sorted(out)


def study_stores(study):
    st = get_study(study)
    return lineage(study, [Ref(s.name, j) for s in st.store_stages() for j in st.jobs(config, s.name)])


def figure_targets(study, figure):
    return figure_files(study, figure) + lineage(study, get_study(study).figure_inputs(config, figure).values())


def study_targets(study):
    return (
        [f for fig in get_study(study).figures(config) for f in figure_files(study, fig)]
        + [f"{R}/{study}/claims.md", f"{R}/{study}/claims.html"]  # the page too: a run older than it makes it
        + study_stores(study)
    )


def check_targets():
    """A message for the first requested target that is neither a rule nor a path ('' if none); close matches, and where
    the whole list is (`make help`, `depthlab targets CONFIG`)."""
    import difflib

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


def all_targets(wildcards):
    return [f for s in STUDIES for f in study_targets(s)] + [
        f"{R}/claims.md",
        f"{R}/claims.html",
        f"{R}/config.used.yaml",
        f"{R}/config.used.html",
    ]


# ---- store stages: named input and param functions per (study, stage) ----------------


def results_root(wildcards):
    """The results root, for the CLI (records name files relative to it)."""
    return R


def first_output(wildcards, output):
    return output[0]


def figure_stem(wildcards, output):
    return output.png.removesuffix(".png")


def inputs_of(study, stage):
    """The job's input stores and the outside files it reads."""

    def fn(wildcards):
        spec = _spec(study, stage, _job(study, stage, wildcards))
        return {**_inputs(study, spec), **_files(spec)}

    return _named(fn, f"{study}_{stage}_inputs")


def inputs_json_of(study, stage):
    """The job's input stores (by the names its stage function reads them under), as JSON for `depthlab stage`."""
    return _named(
        lambda wildcards: dlc.canonical_json(_inputs(study, _spec(study, stage, _job(study, stage, wildcards)))),
        f"{study}_{stage}_inputs_json",
    )


def spec_of(study, stage):
    """The job's spec as canonical JSON: a change of any config value it depends on reruns it."""
    return _named(
        lambda wildcards: _spec(study, stage, _job(study, stage, wildcards)).to_json(), f"{study}_{stage}_spec"
    )


def declared_gpus():
    """The run's `--resources gpu=N` (its profile's `resources:`), or None when it declares none."""
    try:
        res = workflow.global_resources.get("gpu")
        value = getattr(res, "value", res)
        return None if value is None else int(value)
    except Exception:  # no such resource declared
        return None


# Locally, GPU jobs share the GPUs found: unless the run declares `--resources gpu=N` (or its profile's `resources:`),
# at most as many jobs that asked for a GPU run at once as this machine has GPUs ($CUDA_VISIBLE_DEVICES, else
# `nvidia-smi -L`), while CPU jobs fill the cores.  With none found, no job asks for one (and device: auto runs on the
# CPU).
if not workflow.non_local_exec and not workflow.remote_exec and declared_gpus() is None:
    workflow.register_resource("gpu", dlplan.local_gpus())


def gpus_exist():
    """Whether a job may ask for a GPU: when the run has at least one, declared (`--resources gpu=N`) or, locally,
    found.  So a CPU-only cluster gets no GPU request from `device: auto` (a job asking for a GPU there would never
    start); on the compute node itself (remote execution) the request was made already."""
    if workflow.remote_exec:
        return True
    return (declared_gpus() or 0) >= 1


@functools.lru_cache(maxsize=None)
def _resources(study, stage, job, attempt):
    """All of one job's cluster requests, computed once (three resource functions ask, on every scheduler pass)."""
    gpu = get_study(study).stage(stage).gpu and gpus_exist()
    return dlplan.job_resources(_spec(study, stage, job), study, stage, gpu, dlc.device_of(config, study), attempt)


def resource_of(study, stage, name):
    """One of the job's cluster requests (mem_mb, runtime in minutes, gpu) from its spec's memory and cost estimates
    (depthlab.plan.job_resources), growing with the attempt: SLURM's --mem, --time and --gpus per job."""
    return _named(
        lambda wildcards, attempt: _resources(study, stage, _job(study, stage, wildcards), attempt)[name],
        f"{study}_{stage}_{name}",
    )


@functools.lru_cache(maxsize=1)
def _priorities():
    return dlplan.chain_priorities(config, spec_of=_spec)


def priority_of(study, stage):
    """The job's scheduler priority: its predicted one-core seconds plus those of the longest chain of store jobs
    waiting on it (depthlab.plan.chain_priorities). Not a rerun trigger: Snakemake records no priority."""
    return _named(
        lambda wildcards: _priorities()[(study, Ref(stage, _job(study, stage, wildcards)))],
        f"{study}_{stage}_priority",
    )


def code_of(study, stage):
    """The fingerprint of the code the stage runs: editing that code reruns the job (depthlab.provenance)."""
    return dlp.code_fingerprint(get_study(study).stage(stage).fingerprint_modules)


# ---- figures and claims (report.smk) ----------------------------------------------------


def _figure_spec(wildcards):
    st = get_study(wildcards.study)
    return _spec(wildcards.study, st.kind_stage("figure").name, FigureJob(wildcards.figure))


def figure_inputs(wildcards):
    return _inputs(wildcards.study, _figure_spec(wildcards))


def figure_inputs_json(wildcards):
    return dlc.canonical_json(figure_inputs(wildcards))


def figure_spec(wildcards):
    return _figure_spec(wildcards).to_json()


def figure_code(wildcards):
    return code_of(wildcards.study, get_study(wildcards.study).kind_stage("figure").name)


def _claims_spec(wildcards):
    return _spec(wildcards.study, get_study(wildcards.study).kind_stage("claims").name, ClaimsJob())


def claims_inputs(wildcards):
    s = wildcards.study
    return {f: f"{R}/{s}/figures/{f}.csv" for f in get_study(s).claims_figures(config)}


def claims_inputs_json(wildcards):
    return dlc.canonical_json(claims_inputs(wildcards))


def claims_spec(wildcards):
    return _claims_spec(wildcards).to_json()


def claims_code(wildcards):
    return code_of(wildcards.study, get_study(wildcards.study).kind_stage("claims").name)


def index_inputs(wildcards):
    return {s: f"{R}/{s}/claims.json" for s in STUDIES}


def index_inputs_json(wildcards):
    return dlc.canonical_json(index_inputs(wildcards))


def config_json(wildcards):
    """The config for the snapshot, less `device` and `device_by_study`: where jobs ran is recorded per store, and is no
    rerun trigger."""
    return dlc.canonical_json({k: v for k, v in config.items() if k not in ("device", "device_by_study")})


# ---- progress (depthlab.progress: the quiet terminal's ETA) ------------------------------


def _planned_seconds(job):
    """A job's planned seconds, from the cost model of `depthlab plan` (0 for the config snapshot and the index)."""
    rname, wc = job.rule.name, job.wildcards
    costs = dlplan.shipped_costs()
    for study in STUDIES:
        for st in get_study(study).store_stages():
            if rname == f"{study}_{st.name}":
                spec = _spec(study, st.name, _job(study, st.name, wc))
                return dlplan.spec_seconds(
                    dlplan.stage_cost(costs, f"{study}/{st.name}"), spec, dlplan.fallback_rate(costs)
                )
    if rname in ("figure", "claims"):
        return dlplan.output_seconds(costs, wc["study"], rname, config, wc["figure"] if rname == "figure" else None)
    return 0.0


def _resumes(job):
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


def planned_jobs(dag, speed=1.0):
    """Every job this run will execute: Snakemake's job id -> (its output below the results folder, planned seconds, its
    rule: the stage whose measured-to-planned ratio corrects it in the ETA, whether it resumes from a checkpoint),
    seconds times ``speed`` (the probe)."""
    out = {}
    for job in dag.needrun_jobs():
        name = os.path.relpath(str(job.output[0]), R) if job.output else job.rule.name
        try:
            secs = _planned_seconds(job)
        except Exception:  # a job the cost model does not know: no share of the ETA
            secs = 0.0
        out[dag.jobid(job)] = (name.removesuffix(".zarr"), speed * secs, job.rule.name, _resumes(job))
    return out


def parallel_jobs(wf):
    """How many jobs run at once: the cores of a local run, the --jobs of a cluster run (1 when neither is known)."""
    for get in (lambda: wf.nodes if wf.non_local_exec else None, lambda: wf.cores):
        try:
            n = get()
        except Exception:
            n = None
        if isinstance(n, int) and 0 < n < 10**6:
            return n
    return 1


# ---- the HTML report's labels (every item: study, figure, stage) -------------------------


def report_labels(stage):
    """The labels of a report item: its study's title, the figure (or what the item is) and the stage that made it."""

    def labels(wildcards):
        study = wildcards.get("study")
        title = get_study(study).title if study else "every study"
        what = {
            "figure": wildcards.get("figure", ""),
            "claims": "verdicts",
            "forest": "verdicts, forest plot",
            "index": "claims index",
            "config": "config",
        }
        return {"study": title.replace("{", "(").replace("}", ")"), "figure": what[stage], "stage": stage}

    return _named(labels, f"report_labels_{stage}")
