"""Depth separation: the cross-field config rules and one typed spec per stage.

Jobs, paths under ``<results>/separation/``:

  sawtooth_data  sawtooth/data.zarr                           x ~ U[0, 1]: training, test and plotting points
  construction   sawtooth/construction.zarr                   the hand-built nets, their exactness and pieces
  sawtooth       sawtooth/L{level}/{arch}.zarr                nets trained on Delta^L: every lr x seed as one batch
  radial_data    radial/{target}/{dist}/d{d}/data.zarr        one radial data set
  radial         radial/{target}/{dist}/d{d}/P{budget}/depth{depth}.zarr   lr search on a validation split + final nets

Sawtooth architectures (``arch``): ``deep-w<k>`` (depth L = the level, width k, random init),
``shallow-w<k>`` (one hidden layer with the parameter count of deep-w<k>), ``construct-w2``
(the hand-built depth-L width-2 net plus Gaussian noise on every parameter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from depthlab import memory as mem
from depthlab.config import ConfigError
from depthlab.core.shapes import layer_sizes, n_params, width_for_params
from depthlab.core.shapes import batches
from depthlab.study import ClaimsBase, ClaimsJob, FigureJob, Job, Ref, Spec, budget_share

from .base import STUDY, Training, _training, section

# the radial and learner specs live in radial_specs; the study registers them from here
from .radial_specs import (  # noqa: F401
    LearnerJob,
    LearnerSpec,
    RadialDataJob,
    RadialDataSpec,
    RadialJob,
    RadialSpec,
    matched_budget,
)


FIGURES = (
    "sawtooth_error",
    "sawtooth_pieces",
    "sawtooth_functions",
    "radial_error",
    "es16_error",
    "learner_error",
    "learner_alpha",
    "learner_first_layer",
)


ARCH = re.compile(r"^(deep|shallow|construct)-w([0-9]+)$")


def check(sec: dict, config: dict) -> None:
    where = f"studies.{STUDY}"
    r = sec["radial"]
    es_depths = r["es16"]["depths"] if "es16" in r else []
    for d in r["dims"]:
        for key, depths in (("depths", r["depths"]), ("es16.depths", es_depths)):
            for L in depths:
                for P in r["budgets"]:
                    try:
                        width_for_params(d=d, depth=L, budget=P)
                    except ValueError as e:
                        raise ConfigError(f"config error at {where}.radial.budgets (with radial.{key}): {e}") from None
    lo, hi = r["search"]["log10_lr_bounds"]
    if not lo < hi:
        raise ConfigError(f"config error at {where}.radial.search.log10_lr_bounds: need low < high, got [{lo}, {hi}]")
    if r["search"]["use_folds"] > r["search"]["folds"]:
        raise ConfigError(
            f"config error at {where}.radial.search.use_folds: {r['search']['use_folds']} exceeds folds = {r['search']['folds']}"
        )


def figures(config: dict) -> list[str]:
    r = section(config)["radial"]
    off = set() if "es16" in r else {"es16_error"}
    off |= set() if "learner" in r else {"learner_error", "learner_alpha", "learner_first_layer"}
    return [f for f in FIGURES if f not in off]


def claims_inputs(config: dict) -> list[str]:
    return [
        f
        for f in ("sawtooth_error", "radial_error", "es16_error", "learner_error", "learner_alpha")
        if f in figures(config)
    ]


def archs(config: dict) -> list[str]:
    widths = sorted(section(config)["sawtooth"]["deep_widths"])
    return [f"deep-w{k}" for k in widths] + [f"shallow-w{k}" for k in widths] + ["construct-w2"]


def arch_shape(arch: str, level: int) -> tuple[str, int, int]:
    """(kind, depth, width) of a sawtooth architecture at level L: a shallow net has deep-w<k>'s parameter count."""
    m = ARCH.match(arch)
    if m is None:
        raise ValueError(f"unknown sawtooth architecture {arch!r}")
    kind, k = m[1], int(m[2])
    if kind == "shallow":
        return kind, 1, width_for_params(d=1, depth=1, budget=n_params(1, k, level))
    return kind, level, k


@dataclass(frozen=True)
class Single(Job):
    """The one job of a stage with no coordinates."""


@dataclass(frozen=True)
class SawtoothJob(Job):
    level: int
    arch: str = field(metadata={"pattern": "(deep|shallow|construct)-w[0-9]+"})


@dataclass(frozen=True)
class SawtoothDataSpec(Spec):
    STUDY = STUDY
    STAGE = "sawtooth_data"
    job: Single
    n_train: int
    n_test: int
    plot_points: int
    seed: int

    @classmethod
    def jobs(cls, config: dict) -> list[Single]:
        return [Single()]

    @classmethod
    def from_config(cls, config: dict, job: Single) -> "SawtoothDataSpec":
        sw = section(config)["sawtooth"]
        return cls(
            job=job, n_train=sw["n_train"], n_test=sw["n_test"], plot_points=sw["plot_points"], seed=config["seed"]
        )

    def memory(self) -> dict[str, int]:
        return {f"studies.{STUDY}.sawtooth.n_test": mem.data(self.n_train + self.n_test + self.plot_points, 1)}


@dataclass(frozen=True)
class ConstructionSpec(Spec):
    STUDY = STUDY
    STAGE = "construction"
    job: Single
    levels: tuple[int, ...]
    plot_points: int

    @classmethod
    def jobs(cls, config: dict) -> list[Single]:
        return [Single()]

    @classmethod
    def from_config(cls, config: dict, job: Single) -> "ConstructionSpec":
        sw = section(config)["sawtooth"]
        return cls(job=job, levels=tuple(sorted(sw["levels"])), plot_points=sw["plot_points"])


@dataclass(frozen=True)
class SawtoothSpec(Spec):
    STUDY = STUDY
    STAGE = "sawtooth"
    job: SawtoothJob
    data: SawtoothDataSpec
    kind: str  # deep | shallow | construct
    depth: int
    width: int
    n_params: int
    init: str
    perturbation: float | None  # noise on the hand-built net (construct only)
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    training: Training

    @classmethod
    def jobs(cls, config: dict) -> list[SawtoothJob]:
        return [SawtoothJob(L, a) for L in sorted(section(config)["sawtooth"]["levels"]) for a in archs(config)]

    @classmethod
    def from_config(cls, config: dict, job: SawtoothJob) -> "SawtoothSpec":
        sw = section(config)["sawtooth"]
        kind, depth, width = arch_shape(job.arch, job.level)
        return cls(
            job=job,
            data=SawtoothDataSpec.from_config(config, Single()),
            kind=kind,
            depth=depth,
            width=width,
            n_params=n_params(1, width, depth),
            init=sw["init"],
            perturbation=float(sw["perturbation"]) if kind == "construct" else None,
            lrs=tuple(float(v) for v in sorted(sw["lrs"])),
            seeds=tuple(sw["seeds"]),
            training=_training(sw["training"]),
        )

    def inputs(self) -> dict[str, Ref]:
        return {"data": Ref("sawtooth_data", Single())}

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        return 6.0 * self.n_params * self.data.n_train * len(self.lrs) * len(self.seeds) * self.training.max_epochs

    def calls(self) -> float:
        """Optimiser steps of the stacked rates x seeds at the epoch budget, times the layers (depthlab.costs.model.calls_of)."""
        return float(batches(self.data.n_train, self.training.batch_size) * self.training.max_epochs * (self.depth + 1))

    def trained(self, ds) -> float | None:
        """Epochs trained (``epochs``) over the planned rates x seeds x ``max_epochs``."""
        return budget_share(ds, "epochs", len(self.lrs) * len(self.seeds), self.training.max_epochs)

    def memory(self) -> dict[str, int]:
        M = len(self.lrs) * len(self.seeds)
        return {
            f"studies.{STUDY}.sawtooth.deep_widths": mem.nets(
                M, layer_sizes(1, self.width, self.depth), self.training.batch_size, self.data.n_test, adam=True
            )
            + M * (self.data.n_test + self.data.plot_points) * mem.F64
        }


@dataclass(frozen=True)
class FigureSpec(Spec):
    STUDY = STUDY
    STAGE = "figure"
    job: FigureJob
    sawtooth: tuple[SawtoothJob, ...]  # the sawtooth figures' nets (with the construction)
    radial: tuple[RadialJob, ...]  # the radial figures' nets
    learners: tuple[LearnerJob, ...]  # the learner figures' runs

    @classmethod
    def from_config(cls, config: dict, job: FigureJob) -> "FigureSpec":
        r = section(config)["radial"]
        radial = RadialSpec.jobs(config)
        if job.figure == "radial_error":
            return cls(
                job=job,
                sawtooth=(),
                radial=tuple(j for j in radial if j.target in r["targets"] and j.budget in r["budgets"]),
                learners=(),
            )
        if job.figure == "es16_error":
            return cls(job=job, sawtooth=(), radial=tuple(j for j in radial if j.target == "es16"), learners=())
        if job.figure.startswith("learner"):
            matched = (
                tuple(j for j in radial if j.target == "relu" and j.depth == 1 and j.budget == matched_budget(r, j.d))
                if job.figure == "learner_error"
                else ()
            )
            return cls(job=job, sawtooth=(), radial=matched, learners=tuple(LearnerSpec.jobs(config)))
        return cls(job=job, sawtooth=tuple(SawtoothSpec.jobs(config)), radial=(), learners=())

    def inputs(self) -> dict[str, Ref]:
        refs = [Ref("radial", j) for j in self.radial] + [Ref("learner", j) for j in self.learners]
        if self.sawtooth:
            refs += [Ref("construction", Single())] + [Ref("sawtooth", j) for j in self.sawtooth]
        return {"/".join([r.stage, *(str(v) for v in r.job.values().values())]): r for r in refs}


@dataclass(frozen=True)
class ClaimsSpec(ClaimsBase):
    STUDY = STUDY
    STAGE = "claims"
    job: ClaimsJob
    found_mse: float
    near_variance: float  # R2: a 1-hidden-layer nMSE within this of 1 counts as "at the variance"
    learner_small: float  # R3: a test nMSE at or below this counts as "small"
    deviation_growth: float  # R4: the deviation's maximum over training at most this multiple of its start
    deviation_max: float  # R4: ... and at most this, at every recorded step ("stays small")
    alpha_gap: float  # R4: alpha of the finite net within this relative gap of the reduced model's
    flow_tolerance: (
        float  # R4: a rate is in the flow regime when its curve in flow time is within this of the next smaller's
    )
    scale_note: str

    @classmethod
    def from_config(cls, config: dict, job: ClaimsJob) -> "ClaimsSpec":
        sw, r = section(config)["sawtooth"], section(config)["radial"]
        lr = r.get("learner")
        es = r.get("es16")
        extra = (
            f"; ES16 target: N = ceil({es['shells_per_sqrt_d']:g} sqrt(d)) equal-mass shells between the 5 % and 95 % radii, "
            f"depths {sorted(es['depths'])}"
            if es
            else ""
        ) + (
            f"; learner: m = {lr['widths_per_d']} x d and fixed {lr['fixed_widths']}, m2 = {lr['second_width']}, mean-field "
            f"rates {sorted(lr['lrs'])} (growing by x{lr['lr_growth']['factor']:g} at an edge), a budget of {lr['steps']} "
            f"full-batch steps, R4 at the flow rates {sorted(lr.get('flow_lrs', []))} (stops on a plateau of the training loss: {lr['patience']} checks of {lr['check_every']} "
            f"steps without a {lr['rel_tol']:g} relative fall), inputs "
            + ("divided by r0" if lr["scale_inputs"] == "r0" else "unscaled")
            + f", seeds {list(lr['seeds'])}"
            if lr
            else ""
        )
        return cls(
            job=job,
            found_mse=1e-3 / 12,
            near_variance=0.1,
            learner_small=0.2,
            deviation_growth=2.0,
            deviation_max=0.25,
            alpha_gap=0.1,
            flow_tolerance=float(lr.get("flow_tolerance", 0.05)) if lr else 0.05,
            scale_note=f"Scale: sawtooth L = {sorted(sw['levels'])}, deep widths {sorted(sw['deep_widths'])}, "
            f"N = {sw['n_train']}, {sw['training']['optimizer']} {sw['training']['max_epochs']} epochs, "
            f"lrs {sorted(sw['lrs'])} x seeds {list(sw['seeds'])}; radial d = {sorted(r['dims'])}, "
            f"depths {sorted(r['depths'])}, budgets {sorted(r['budgets'])}, N = {r['n_train']}, "
            f"{r['training']['max_epochs']} epochs, Eldan-Shamir radius truncated at its {r['es_quantile']} quantile, "
            f"shell radius U[{1 - r['shell_halfwidth']:g}, {1 + r['shell_halfwidth']:g}]; r0: the shell's median radius, "
            f"the Eldan-Shamir law's lobe maximum nearest its median{extra}.",
        )
