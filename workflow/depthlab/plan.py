"""What a config costs before it runs: ``depthlab plan CONFIG`` (``make plan CONFIG=...``) and ``--calibrate``.

For every study and stage: the number of jobs (and how many of them have no store yet in the config's
results folder), the estimated peak memory of the largest job (each spec's ``memory()``, the same
estimate the validator uses), and the estimated runtime of a job on one CPU core, from a cost model:

    seconds(job) = overhead(stage) + calls(job) x call_s(stage) + work(job) / rate(stage)

``work()`` is each spec's element-operation count from its shapes (epochs x examples x parameters for a
training stage, n^3 / 3 for a Cholesky, ...; 0 for a job whose time is its start-up), ``calls()`` the framework calls
of its training loop (optimiser steps x layers; 0 without one), and the constants per stage are *measured*: ``depthlab plan --calibrate RESULTS`` fits them to the runtimes a
finished run recorded (``RESULTS/benchmarks/**.tsv``, one row per job, matched to the spec its store
records), with every stage's total unbiased (:func:`fit`), and writes them where the user says (``--costs FILE``; never into the package).  A stage with no
measured jobs falls back to the median rate of the calibrated stages and says so (``modelled``).

The GPU column comes from a second calibration, ``costs_gpu.json``, fitted the same way to runs whose jobs ran on
CUDA (``depthlab plan --calibrate RESULTS --costs my/costs_gpu.json``, read with ``--gpu-costs``; the file records the
device and how the run shared it).  It is printed for the stages that can use a GPU, marked ``measured`` where that stage's jobs
were timed on the GPU and ``modelled`` where its rate is borrowed; a stage with no GPU timing says ``not measured``.
``--measure RESULTS`` prints a run's timings as JSON, which ``--calibrate`` accepts in place of a results folder
(for runs whose results stay on another machine).

The code lives in the cost-model package (:mod:`depthlab.costs`: ``model``, ``calibrate``, ``report``) and in
:mod:`depthlab.placement` (devices, resources, priorities, GPUs); this module is the command's face and re-exports what
the CLI, the rules and the studies use, under the names they have always used.
"""

from __future__ import annotations

from .costs.model import (  # noqa: F401
    COSTS,
    COSTS_GPU,
    GPU_TIMED,
    StageCost,
    MAX_SECONDS,
    plausible_seconds,
    gpu_calibration,
    calibration_probe,
    CostsError,
    MIN_RATE,
    COST_FIELDS,
    validate_costs,
    load_costs,
    stage_cost,
    fallback_rate,
    predict,
    batches,
    calls_of,
    spec_seconds,
    shipped_gpu_costs,
    shipped_costs,
)
from .costs.calibrate import (  # noqa: F401
    stores_with_records,
    tsv_seconds,
    measurements,
    START_UP_CAP_S,
    figure_input_seconds,
    START_UP_FLOOR_S,
    TORCH_START_UP_S,
    START_UP_PROBE_S,
    fit,
    default_output,
    start_up_scale,
    calibrate,
    gpu_points,
    measure,
    read_measurements,
)
from .costs.report import (  # noqa: F401
    figure_work,
    output_seconds,
    Row,
    plan,
    render,
    Check,
    check,
    render_check,
    check_studies,
)
from .placement import (  # noqa: F401
    MAX_RUNTIME_MIN,
    job_seconds,
    job_priority,
    chain_priorities,
    job_resources,
    cpu_is_faster,
    local_gpus,
)
