"""The study contract, checked on every registered study (as scikit-learn's ``check_estimator`` checks an estimator):
what the workflow, the plan, the audit and the report rely on a study folder to provide.  A new study that breaks it
fails here, naming the study, the stage and the rule, before any run.

The rules: a stage's entry is a callable of its kind's signature (store ``(spec, inputs, ctx)``, figure
``(spec, inputs)``, claims ``(spec, tables)``), in the module named after the stage (figures: ``figures.py``); the
figure module has ``make_table(spec, inputs)``; a store stage's path pattern
names exactly its job's fields and ends in ``.zarr``; specs are frozen dataclasses; the schema describes every key;
and on the smoke config every store job's spec round-trips through its record, prices itself (``work``, ``memory``),
has a path of its own and reads only jobs the config has.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re

import pytest
import yaml

from helpers import ROOT

from depthlab.config import load
from depthlab.jobs import JobGraph
from depthlab.studies import get_study, names

SIGNATURES = {"store": ["spec", "inputs", "ctx"], "figure": ["spec", "inputs"], "claims": ["spec", "tables"]}
STUDIES = names()


@pytest.fixture(scope="module")
def smoke():
    return load(ROOT / "config" / "smoke.yaml")


@pytest.mark.parametrize("name", STUDIES)
def test_every_stage_entry_has_its_kinds_signature_in_the_module_named_after_it(name):
    study = get_study(name)
    for st in study.stages:
        fn = st.function()
        assert callable(fn), f"{name}/{st.name}: {st.entry} is not callable"
        params = list(inspect.signature(fn).parameters)
        assert params == SIGNATURES[st.kind], f"{name}/{st.name}: {st.entry} takes {params}, not {SIGNATURES[st.kind]}"
        want = "figures" if st.kind == "figure" else st.name
        assert st.module == f"{study.package}.{want}", (
            f"{name}/{st.name}: its entry lives in {st.module}, not {want}.py"
        )
    assert study.kind_stage("figure").table_function() is not None, (
        f"{name}: figures.py has no make_table(spec, inputs)"
    )


@pytest.mark.parametrize("name", STUDIES)
def test_store_paths_name_their_jobs_fields_and_specs_are_frozen(name):
    study = get_study(name)
    assert study.store_stages(), f"{name}: no store stage"
    for st in study.stages:
        assert dataclasses.is_dataclass(st.spec) and st.spec.__dataclass_params__.frozen, (
            f"{name}/{st.name}: not frozen"
        )
        assert "job" in {f.name for f in dataclasses.fields(st.spec)}, f"{name}/{st.name}: its spec has no job field"
        if st.kind != "store":
            continue
        fields = set(st.job_type.__dataclass_fields__)
        wildcards = set(re.findall(r"{(\w+)}", st.path))
        assert wildcards == fields, f"{name}/{st.name}: path {st.path} names {wildcards}, its job has {fields}"
        assert st.path.endswith(".zarr") and not st.path.startswith("/"), f"{name}/{st.name}: path {st.path}"


@pytest.mark.parametrize("name", STUDIES)
def test_the_schema_describes_every_key(name):
    schema = yaml.safe_load(get_study(name).schema_path.read_text())
    missing = []

    def walk(node, where):
        for k, v in (node.get("properties") or {}).items():
            if not (isinstance(v, dict) and v.get("description")):
                missing.append(f"{where}{k}")
            if isinstance(v, dict):
                walk(v, f"{where}{k}.")
        for pat, v in (node.get("patternProperties") or {}).items():
            walk(v, f"{where}<{pat}>.")

    walk(schema, "")
    assert schema.get("description") and not missing, f"{name}: keys without a description: {missing}"


@pytest.mark.parametrize("name", [n for n in STUDIES])
def test_every_smoke_job_round_trips_prices_itself_and_reads_only_jobs_of_the_config(name, smoke):
    if name not in smoke["studies"]:
        pytest.skip(f"{name} is not in config/smoke.yaml")
    study = get_study(name)
    graph = JobGraph(smoke)
    listed = {n.key for n in graph if n.study == name}
    paths = {}
    for node in (n for n in graph if n.study == name):
        spec = node.spec
        assert study.spec_from_dict(spec.to_dict()) == spec, f"{node.path}: its spec does not round-trip"
        work = spec.work()
        assert isinstance(work, float) and math.isfinite(work) and work >= 0, f"{node.path}: work() = {work!r}"
        mem = spec.memory()
        assert isinstance(mem, dict) and all(isinstance(v, int) and v >= 0 for v in mem.values()), node.path
        assert node.path not in paths, f"{node.path}: two jobs, {paths.get(node.path)} and {node.job}"
        paths[node.path] = node.job
        for input_name, key in node.inputs.items():
            assert key in listed, f"{node.path}: its input {input_name} is {key}, a job the config does not have"
    assert paths, f"{name}: no store job on the smoke config"


@pytest.mark.parametrize("name", STUDIES)
def test_each_stage_declares_its_precision_and_training_step_and_its_spec_has_what_they_name(name, smoke):
    """What the shared code asks of a stage is declared on its Stage, never looked up by name: its precision (the
    reproduction's tolerance), its training step (the cost model's stack shape: the spec has gpu_shape(), whose shape
    the cost model reads) and whether its spec counts its training calls (calls()).  A spec with gpu_shape() or calls()
    whose stage does not declare it would be priced without them, so the declaration and the spec must agree; a stage
    that trains in torch's float32 (its closure holds the trainer or a CNN) declares float32."""
    from depthlab import provenance as prov

    study = get_study(name)
    for st in study.stages:
        assert st.precision in ("float32", "float64") and st.step in ("", "mlp", "learner"), st.name
        assert bool(st.step) == hasattr(st.spec, "gpu_shape"), f"{name}/{st.name}: step {st.step!r}"
        assert st.calls == hasattr(st.spec, "calls"), f"{name}/{st.name}: calls {st.calls}"
        if st.kind != "store":
            continue
        closure = set(prov.closure(st.fingerprint_modules))
        trains = {"depthlab.core.trainer", "depthlab.core.optim.adam"} & closure
        if trains and st.name != "baseline":  # acceleration's linear nets and baselines train in float64
            assert st.precision == "float32" or name == "acceleration", f"{name}/{st.name} trains in float32"
    if name in smoke["studies"]:  # each job of a stage with a step has a stack shape the cost model can read
        for node in (n for n in JobGraph(smoke) if n.study == name and study.stage(n.stage).step):
            shape, epochs = node.spec.gpu_shape()
            assert {"d", "n", "P", "L", "h", "M", "B"} <= set(shape) and epochs >= 0, node.path
