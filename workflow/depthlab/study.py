"""The contract every study implements: a :class:`Study` of :class:`Stage` s, each with a typed :class:`Spec`.

A study is one folder, ``depthlab/studies/<name>/`` (or ``<dir>/<name>/`` for a ``<dir>`` on
``$DEPTHLAB_STUDY_PATH``), holding

* ``__init__.py`` that defines ``STUDY = Study(...)``: its name, title, stages and figures;
* ``schema.yaml``: the JSON schema of its config section (``studies.<name>``);
* ``specs.py``: one frozen dataclass per stage (a :class:`Spec` subclass), built once from the
  validated config by ``from_config``, enumerated by ``jobs``, serialised canonically for
  Snakemake's ``params`` and parsed back once by the CLI;
* the stage modules the stages name (``"module:function"``), the figure and claims code.

The workflow generates one Snakemake rule per store stage from this registry, so nothing
outside the folder (and a config section) names a study.

Stage functions, by kind:

* ``store``:  ``fn(spec, inputs: {name: xr.Dataset}, ctx) -> xr.Dataset`` (written as a zarr store)
* ``figure``: ``fn(spec, inputs: list[StoreInput]) -> (matplotlib Figure, pandas DataFrame)``
* ``claims``: ``fn(spec, tables: {figure: DataFrame}) -> (list[Verdict], notes)``

This module imports nothing heavy (no numpy, no torch): the workflow and the validator use it.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import re
import types
import typing
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Literal, NamedTuple

KINDS = ("store", "figure", "claims")
PRECISIONS = ("float64", "float32")  # a stage's arithmetic (Stage.precision)
STEPS = ("", "mlp", "learner")  # the training step shapes the cost model prices (Stage.step)
NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def inside_path(path: str) -> str | None:
    """Why ``path`` (a store's path below its study's results folder) could leave that folder, or None: it is absolute,
    has a '..' or empty segment, a backslash, a drive or a control character."""
    if not path:
        return "it is empty"
    if path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", path):
        return "it is absolute"
    if "\\" in path or any(ord(c) < 32 for c in path):
        return "it holds a backslash or a control character"
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "a segment is '..', '.' or empty"
    return None


# a wildcard of type str matches this unless the Job field says otherwise (metadata "pattern")
DEFAULT_PATTERN = "[A-Za-z0-9][A-Za-z0-9_.-]*"


# ---- plain data <-> typed dataclasses ------------------------------------------------------


def to_plain(obj: Any) -> Any:
    """A dataclass (nested dataclasses, tuples, dicts) as JSON-able plain data; tuples become lists."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, (tuple, list)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    return obj


class SpecError(ValueError):
    """Plain data does not fit the typed spec; the message names the field."""


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    """A dataclass's resolved field types (cached: Snakemake builds thousands of job specs from wildcards)."""
    return typing.get_type_hints(cls)


def from_plain(tp: Any, value: Any, where: str = "spec") -> Any:
    """Build a value of type ``tp`` from plain data (the inverse of :func:`to_plain`), checking every type."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if isinstance(tp, type) and is_dataclass(tp):
        if not isinstance(value, dict):
            raise SpecError(f"{where}: expected a mapping for {tp.__name__}, got {type(value).__name__}")
        hints = _hints(tp)
        known = {f.name for f in fields(tp) if f.init}
        unknown = sorted(set(value) - known)
        if unknown:
            raise SpecError(f"{where}: unknown field(s) {', '.join(unknown)} for {tp.__name__}")
        missing = sorted(
            f.name
            for f in fields(tp)
            if f.init
            and f.name not in value
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        )
        if missing:
            raise SpecError(f"{where}: missing field(s) {', '.join(missing)} of {tp.__name__}")
        return tp(**{k: from_plain(hints[k], v, f"{where}.{k}") for k, v in value.items()})
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        errors = []
        for a in rest:
            try:
                return from_plain(a, value, where)
            except SpecError as e:
                errors.append(str(e))
        raise SpecError(errors[0] if len(errors) == 1 else f"{where}: {value!r} fits none of {rest}")
    if origin is Literal:
        if value not in args:
            raise SpecError(f"{where}: {value!r} is not one of {list(args)}")
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise SpecError(f"{where}: expected a list, got {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_plain(args[0], v, f"{where}.{i}") for i, v in enumerate(value))
        if len(args) != len(value):
            raise SpecError(f"{where}: expected {len(args)} items, got {len(value)}")
        return tuple(from_plain(a, v, f"{where}.{i}") for i, (a, v) in enumerate(zip(args, value)))
    if origin is dict:
        if not isinstance(value, dict):
            raise SpecError(f"{where}: expected a mapping, got {type(value).__name__}")
        return {str(k): from_plain(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp in (str, bool):
        if not isinstance(value, tp):
            raise SpecError(f"{where}: expected {tp.__name__}, got {value!r}")
        return value
    raise SpecError(f"{where}: cannot build a value of type {tp!r}")


# ---- jobs, specs, stages -----------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """The coordinates of one job: a frozen dataclass whose fields are the wildcards of its store's path.

    Fields are ``int`` or ``str``; a ``str`` field matches :data:`DEFAULT_PATTERN` unless its
    ``metadata={"pattern": ...}`` says otherwise.
    """

    def values(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_wildcards(cls, wildcards: dict[str, str]) -> "Job":
        """Parse Snakemake's wildcard strings (``{"depth": "3"}``) into typed coordinates."""
        hints = _hints(cls)
        return cls(
            **{f.name: int(wildcards[f.name]) if hints[f.name] is int else str(wildcards[f.name]) for f in fields(cls)}
        )

    @classmethod
    def constraints(cls) -> dict[str, str]:
        """Snakemake wildcard constraints: integers are digits, names match their pattern."""
        hints = _hints(cls)
        return {
            f.name: "[0-9]+" if hints[f.name] is int else f.metadata.get("pattern", DEFAULT_PATTERN)
            for f in fields(cls)
        }


@dataclass(frozen=True)
class FigureJob(Job):
    figure: str


@dataclass(frozen=True)
class ClaimsJob(Job):
    pass


class Ref(NamedTuple):
    """One store a job reads: the stage that makes it and that stage's job."""

    stage: str
    job: Job


class StoreInput(NamedTuple):
    """What a figure receives per input store: the stage and job that made it (from its record), and its arrays."""

    stage: str
    job: Job
    data: Any  # xarray.Dataset


@dataclass(frozen=True)
class Spec:
    """Exactly the config values one job depends on (the job's coordinates included), as a frozen dataclass.

    Subclasses set ``STUDY`` and ``STAGE`` and implement ``jobs`` and ``from_config``; store
    stages that read other stores implement ``inputs``.  Everything a stage computes from the
    config (a width from a budget, a seed) is computed here, once, and travels in the spec: the
    spec's canonical JSON is the job's Snakemake ``params`` (a change reruns the job) and its
    hash the ``config_hash`` its store records.
    """

    STUDY: ClassVar[str] = ""
    STAGE: ClassVar[str] = ""
    job: Job

    @classmethod
    def jobs(cls, config: dict) -> list[Job]:
        """Every job of this stage under ``config``."""
        raise NotImplementedError

    @classmethod
    def from_config(cls, config: dict, job: Job) -> "Spec":
        raise NotImplementedError

    def inputs(self) -> dict[str, Ref]:
        """The stores this job reads, by the name its stage function sees them under."""
        return {}

    def files(self) -> dict[str, str]:
        """Files from outside the results folder that this job reads (name -> path), e.g. a user's CIFAR-10 copy: they
        are inputs of its Snakemake rule (a changed file reruns it), their SHA-256 goes into its store's record, and
        the audit checks them."""
        return {}

    def memory(self) -> dict[str, int]:
        """Estimated peak bytes of this job, as parts keyed by the config key that drives each (the validator
        names the key of the largest part when a job does not fit); empty for a job too small to matter."""
        return {}

    def work(self) -> float:
        """Element-operations of this job, from the spec's shapes (the cost model of depthlab.costs: seconds =
        overhead + calls x call_s + work / rate, the constants measured per stage; a training spec's ``calls()``:
        depthlab.costs.model.calls_of).  0 (the default): a job whose time is its start-up."""
        return 0.0

    def trained(self, ds: Any) -> float | None:
        """The share of :meth:`work` this job really did, read from its finished store ``ds`` (an xarray Dataset).
        ``work`` charges every net its whole epoch budget; nets that stop early train a part of it, which depthlab.costs
        learns per stage from a calibration's stores.  None (the default): the store does not record it."""
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"study": self.STUDY, "stage": self.STAGE, **to_plain(self)}

    def to_json(self) -> str:
        from .provenance import canonical_json

        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Spec":
        data = dict(data)
        study, stage = data.pop("study", None), data.pop("stage", None)
        if (study, stage) != (cls.STUDY, cls.STAGE):
            raise SpecError(f"a {study}/{stage} spec is not a {cls.STUDY}/{cls.STAGE} spec")
        return from_plain(cls, data)


@dataclass(frozen=True)
class ClaimsBase(Spec):
    """The base of every study's claims spec: ``config``, the study's config section and the keys a plan needs (set by
    :meth:`Study.spec`, never by the study), against which the claims stage prices what would decide each inconclusive
    row (depthlab.decide).  Never the device or kernel keys (folder.IGNORED): they change no result."""

    config: dict[str, Any] = field(default_factory=dict, kw_only=True)


def claims_context(config: dict, study: str) -> dict[str, Any]:
    """What :class:`ClaimsBase` carries: the master seed, the memory limit and the study's own section."""
    return {
        "seed": config.get("seed", 0),
        "max_memory_gib": config.get("max_memory_gib"),
        "studies": {study: config["studies"][study]},
    }


@dataclass(frozen=True)
class Stage:
    """One stage of a study: its kind, its typed spec, the function that runs it and, for stores, the path pattern."""

    name: str
    spec: type[Spec]
    entry: str  # "module:function"; a module starting with "." is relative to the study's package
    kind: str = "store"  # store | figure | claims
    path: str = ""  # store path below <results>/<study>/, with the job's fields as {wildcards}
    threads: int = 1  # threads a job uses (torch intra-op); one job per core by default
    gpu: bool = False  # a job can use a GPU (asked for on a cluster when the config's device allows it)
    # the arithmetic its numbers come from: "float32" (torch training, reproduced within 1e-2) or "float64" (1e-9)
    precision: str = "float64"
    # its jobs' training step, as the cost model prices it: "" (none), "mlp" (the batched trainer's stack) or
    # "learner" (the RZG23 full-batch step); a stage with a step has a spec with gpu_shape()
    step: str = ""
    calls: bool = False  # its spec counts its training loop's framework calls (calls()), which the cost model charges
    package: str = ""  # filled in by Study: the study's package, for relative entries

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"stage {self.name}: kind must be one of {KINDS}, got {self.kind!r}")
        for key, value, allowed in (("precision", self.precision, PRECISIONS), ("step", self.step, STEPS)):
            if value not in allowed:
                raise ValueError(f"stage {self.name}: {key} must be one of {allowed}, got {value!r}")
        if (self.step or self.calls) and self.kind != "store":
            raise ValueError(f"stage {self.name}: only a store stage trains (step, calls)")
        if (self.kind == "store") != bool(self.path):
            raise ValueError(f"stage {self.name}: a store stage needs a path pattern, other kinds none")
        if self.path:
            # the pattern with every {field} as a plain name: a pattern that leaves its folder before any value
            why = inside_path(re.sub(r"\{[^{}]*\}", "x", self.path))
            if why is not None or not self.path.endswith(".zarr"):
                raise ValueError(
                    f"stage {self.name}: its store path {self.path!r} must stay below the study's results folder and "
                    f"end in .zarr ({why or 'it does not end in .zarr'})"
                )

    @property
    def module(self) -> str:
        mod = self.entry.partition(":")[0]
        return f"{self.package}{mod}" if mod.startswith(".") else mod

    def function(self) -> Callable[..., Any]:
        return getattr(importlib.import_module(self.module), self.entry.partition(":")[2])

    def table_function(self) -> Callable[..., Any] | None:
        """A figure stage's ``make_table(spec, inputs)`` (same module as its entry): the figure's table without plotting,
        which the audit re-derives from the stores and compares with the CSV.  None if the study does not provide one."""
        return getattr(importlib.import_module(self.module), "make_table", None) if self.kind == "figure" else None

    @property
    def fingerprint_modules(self) -> list[str]:
        """The modules whose code (and what they import) decides this stage's output: a code fingerprint's roots."""
        return (
            [self.module]
            + (["depthlab.render"] if self.kind in ("figure", "claims") else [])
            + (["depthlab.forest"] if self.kind == "claims" else [])
        )

    @property
    def job_type(self) -> type[Job]:
        return _hints(self.spec)["job"]

    def job(self, plain: dict[str, Any]) -> Job:
        """Typed job coordinates from a record's plain ``job`` dict."""
        return from_plain(self.job_type, plain, f"{self.name} job")


@dataclass(frozen=True)
class Study:
    """A study: name, title, stages (store stages, one ``figure`` and one ``claims`` stage), its rules and figures.

    ``check(section, config)`` applies the cross-field rules of the study's config section (after
    the schema, whose defaults are already filled in); ``figures(config)`` lists the figures a
    config builds; ``claims_inputs(config)`` the figures whose tables the claims read (default: all).
    """

    name: str
    title: str
    stages: tuple[Stage, ...]
    figures: Callable[[dict], list[str]]
    check: Callable[[dict, dict], None] = lambda section, config: None
    claims_inputs: Callable[[dict], list[str]] | None = None
    package: str = field(default="", compare=False)
    folder: Path = field(default=Path("."), compare=False)

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"study name {self.name!r} must match {NAME.pattern}")
        names = [s.name for s in self.stages]
        if len(set(names)) != len(names):
            raise ValueError(f"study {self.name}: duplicate stage names in {names}")
        kinds = [s.kind for s in self.stages]
        if kinds.count("figure") != 1 or kinds.count("claims") != 1:
            raise ValueError(f"study {self.name}: needs exactly one figure and one claims stage")
        for s in self.stages:
            if (s.spec.STUDY, s.spec.STAGE) != (self.name, s.name):
                raise ValueError(
                    f"study {self.name}: stage {s.name}'s spec {s.spec.__name__} says it belongs to "
                    f"{s.spec.STUDY}/{s.spec.STAGE}"
                )

    @property
    def schema_path(self) -> Path:
        return self.folder / "schema.yaml"

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"study {self.name} has no stage {name!r}; stages: {', '.join(s.name for s in self.stages)}")

    def store_stages(self) -> list[Stage]:
        return [s for s in self.stages if s.kind == "store"]

    def kind_stage(self, kind: str) -> Stage:
        return next(s for s in self.stages if s.kind == kind)

    def jobs(self, config: dict, stage: str) -> list[Job]:
        """Every job of ``stage`` (KeyError naming the stages for a misspelled one)."""
        st = self.stage(stage)
        if st.kind == "figure":
            return [FigureJob(f) for f in self.figures(config)]
        if st.kind == "claims":
            return [ClaimsJob()]
        return st.spec.jobs(config)

    def spec(self, config: dict, stage: str, job: Job | dict[str, Any]) -> Spec:
        """The typed spec of one job; ``job`` may be plain data (a record's ``job``)."""
        st = self.stage(stage)
        if not isinstance(job, Job):
            job = st.job(job)
        if st.kind == "figure" and job.figure not in self.figures(config):
            raise KeyError(
                f"study {self.name} has no figure {job.figure!r} in this config; figures: "
                f"{', '.join(self.figures(config))}"
            )
        spec = st.spec.from_config(config, job)
        if isinstance(spec, ClaimsBase) and config.get("studies", {}).get(self.name) is not None:
            spec = dataclasses.replace(spec, config=to_plain(claims_context(config, self.name)))
        return spec

    def spec_from_dict(self, data: dict[str, Any]) -> Spec:
        return self.stage(data.get("stage", "")).spec.from_dict(data)

    def path(self, ref: Ref) -> str:
        """A store's path relative to the study's results folder; a job whose values would lead it out of that folder
        (a value holding '/' or '..') is refused, naming the study, stage and value."""
        path = self.stage(ref.stage).path.format(**ref.job.values())
        why = inside_path(path)
        if why is not None:
            raise ValueError(
                f"study {self.name}, stage {ref.stage}: the job's store path {path!r} would leave the study's folder ({why})"
            )
        return path

    def figure_inputs(self, config: dict, figure: str) -> dict[str, Ref]:
        return self.spec(config, self.kind_stage("figure").name, FigureJob(figure)).inputs()

    def claims_figures(self, config: dict) -> list[str]:
        return (self.claims_inputs or self.figures)(config)


def bind(study: Study, package: str) -> Study:
    """The study with its package and folder filled in (relative stage entries resolve against the package)."""
    mod = importlib.import_module(package)
    folder = Path(mod.__file__).resolve().parent
    stages = tuple(dataclasses.replace(s, package=package) for s in study.stages)
    return dataclasses.replace(study, stages=stages, package=package, folder=folder)


def load_json(text: str) -> dict[str, Any]:
    """Parse a spec's JSON (the CLI's --spec)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise SpecError(f"a spec is a JSON object, got {type(data).__name__}")
    return data


def budget_share(
    ds: Any, var: str, nets: int, budget: float, fixed: float = 0.0, per_unit: float = 1.0
) -> float | None:
    """(fixed + per_unit x the sum of ``ds[var]``) / (fixed + per_unit x nets x budget): the share of a job's planned
    work done when each of its ``nets`` planned nets had a budget of ``budget`` epochs (or steps) and ``var`` records
    how many each trained (nets that a grown rate grid added count too, so the share can pass 1).  ``fixed``: planned
    work not recorded per net, counted as done.  None when ``ds`` lacks ``var`` or the plan is empty."""
    import numpy as np

    den = fixed + per_unit * nets * budget
    if var not in ds.variables or not den > 0:
        return None
    v = np.asarray(ds[var].values, dtype=float).ravel()
    v = v[np.isfinite(v) & (v >= 0)]
    return float((fixed + per_unit * v.sum()) / den)
