# The only Python of the workflow: config validation, the job grid, named input/param functions.
# Every path, spec and fingerprint comes from the study registry (depthlab.studies), so the rules stay
# thin, a new study needs no edit here, and the audit can recompute any job's spec from what its store records.
import functools
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))  # use the checkout's package

import depthlab.config as dlc
import depthlab.costs.model as dlcosts
import depthlab.placement as dlplace
import depthlab.provenance as dlp
import depthlab.session as dls
from depthlab.jobs import JobGraph
from depthlab.studies import get_study
from depthlab.study import ClaimsJob, FigureJob, Ref

# Snakemake has parsed the config files already, silently keeping the last of duplicate keys: parse them again
# strictly (duplicates are an error), then validate the merged config (filling in every default).
for _configfile in workflow.configfiles:
    dlc.read_yaml(_configfile)
config = dlc.validate(config, source=workflow.configfiles[-1] if workflow.configfiles else None)
try:  # the package's calibration, checked before any job (a damaged costs.json: one line naming the file and key)
    dlcosts.shipped_costs()
except dlcosts.CostsError as e:
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


# The config's job graph (depthlab.jobs): every store job's spec, path and inputs, each spec built once however many
# input, params and resource functions ask.
GRAPH = JobGraph(config)


@functools.lru_cache(maxsize=None)
def _spec(study, stage, job):
    """The typed spec of one job: a store job's from the graph; a figure's or claims job's built once."""
    if get_study(study).stage(stage).kind == "store":
        return GRAPH.spec(study, stage, job)
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
    return sorted(f"{R}/{p}" for p in GRAPH.lineage(study, refs))


def study_stores(study):
    st = get_study(study)
    return lineage(study, [n.ref for s in st.store_stages() for n in GRAPH.stage(study, s.name)])


def figure_targets(study, figure):
    return figure_files(study, figure) + lineage(study, get_study(study).figure_inputs(config, figure).values())


def study_targets(study):
    return (
        [f for fig in get_study(study).figures(config) for f in figure_files(study, fig)]
        + [f"{R}/{study}/claims.md", f"{R}/{study}/claims.html"]  # the page too: a run older than it makes it
        + study_stores(study)
    )


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
    workflow.register_resource("gpu", dlplace.local_gpus())


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
    return dlplace.job_resources(_spec(study, stage, job), study, stage, gpu, dlc.device_of(config, study), attempt)


def resource_of(study, stage, name):
    """One of the job's cluster requests (mem_mb, runtime in minutes, gpu) from its spec's memory and cost estimates
    (depthlab.placement.job_resources), growing with the attempt: SLURM's --mem, --time and --gpus per job."""
    return _named(
        lambda wildcards, attempt: _resources(study, stage, _job(study, stage, wildcards), attempt)[name],
        f"{study}_{stage}_{name}",
    )


@functools.lru_cache(maxsize=1)
def _priorities():
    return dlplace.chain_priorities(config, graph=GRAPH)


def priority_of(study, stage):
    """The job's scheduler priority: its predicted one-core seconds plus those of the longest chain of store jobs
    waiting on it (depthlab.placement.chain_priorities). Not a rerun trigger: Snakemake records no priority."""
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


# ---- progress (depthlab.session: the quiet terminal's ETA) ------------------------------


def planned_jobs(dag, speed=1.0):
    """Every job this run will execute, with its planned seconds times ``speed`` (depthlab.session.planned_jobs)."""
    return dls.planned_jobs(
        dag, speed, R, config, STUDIES, lambda study, stage, wc: _spec(study, stage, _job(study, stage, wc))
    )


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
