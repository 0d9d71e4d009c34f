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
from depthlab.core.seeds import seed
from depthlab.core.shapes import layer_sizes, n_params, width_for_params
from depthlab.plan import batches
from depthlab.study import ClaimsBase, ClaimsJob, FigureJob, Job, Ref, Spec, budget_share

STUDY = "separation"
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


def section(config: dict) -> dict:
    return config["studies"][STUDY]


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


def learner_widths(r: dict, d: int) -> list[int]:
    """The learner's first-layer widths at d: k d for each k of widths_per_d (poly(d)), then the fixed widths (not)."""
    lr = r["learner"]
    return list(dict.fromkeys([k * d for k in lr["widths_per_d"]] + list(lr["fixed_widths"])))


def learner_rule(r: dict, d: int, m: int) -> str:
    """How the width m was chosen at d: "4d" for k d (the first k of widths_per_d that gives m), else "m" itself (a
    fixed width, say "8")."""
    k = next((k for k in r["learner"]["widths_per_d"] if k * d == m), None)
    return f"{k}d" if k is not None else str(m)


def matched_budget(r: dict, d: int) -> int:
    """R3's budget at d: the learner's parameter count at its first poly(d) width."""
    return learner_params(r, d, r["learner"]["widths_per_d"][0] * d)


def learner_params(r: dict, d: int, m: int) -> int:
    """The learner's parameter count: m d (first layer) + 2 m2 (the second layer's weights and biases)."""
    return m * d + 2 * r["learner"]["second_width"]


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


# ---- jobs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Single(Job):
    """The one job of a stage with no coordinates."""


@dataclass(frozen=True)
class SawtoothJob(Job):
    level: int
    arch: str = field(metadata={"pattern": "(deep|shallow|construct)-w[0-9]+"})


@dataclass(frozen=True)
class RadialDataJob(Job):
    target: str = field(metadata={"pattern": "relu|ball|es16"})
    dist: str = field(metadata={"pattern": "eldan_shamir|shell"})
    d: int


@dataclass(frozen=True)
class RadialJob(Job):
    target: str = field(metadata={"pattern": "relu|ball|es16"})
    dist: str = field(metadata={"pattern": "eldan_shamir|shell"})
    d: int
    budget: int
    depth: int


# ---- specs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Training:
    optimizer: str  # adam | sgd
    batch_size: int
    check_every: int
    loss_threshold: float
    max_epochs: int  # the budget
    patience: int  # plateau rule: checks without a fall of the training MSE by rel_tol of its best + abs_tol Var(y)
    rel_tol: float
    abs_tol: float  # in units of the training targets' variance
    plateau_growth: float  # the plateau window: max(patience, plateau_growth x checks so far)


def _training(t: dict, max_epochs: int | None = None) -> Training:
    return Training(
        optimizer=t["optimizer"],
        batch_size=t["batch_size"],
        check_every=t["check_every"],
        loss_threshold=float(t["loss_threshold"]),
        max_epochs=t["max_epochs"] if max_epochs is None else max_epochs,
        patience=t["patience"],
        rel_tol=float(t["rel_tol"]),
        abs_tol=float(t["abs_tol"]),
        plateau_growth=float(t["plateau_growth"]),
    )


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
        """Element-operations of this job (depthlab.plan's cost model: seconds = overhead + work / rate)."""
        return 6.0 * self.n_params * self.data.n_train * len(self.lrs) * len(self.seeds) * self.training.max_epochs

    def calls(self) -> float:
        """Optimiser steps of the stacked rates x seeds at the epoch budget, times the layers (depthlab.plan.calls_of)."""
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
class RadialDataSpec(Spec):
    STUDY = STUDY
    STAGE = "radial_data"
    job: RadialDataJob
    n_train: int
    n_test: int
    es_quantile: float | None
    shell_halfwidth: float | None
    es16_shells_per_sqrt_d: float | None  # the ES16 target: N = ceil(this * sqrt(d)) shells
    seed: int

    @classmethod
    def jobs(cls, config: dict) -> list[RadialDataJob]:
        r = section(config)["radial"]
        jobs = [
            RadialDataJob(t, q, d)
            for t in sorted(r["targets"])
            for q in sorted(r["distributions"])
            for d in sorted(r["dims"])
        ]
        if "learner" in r:  # the learner trains on ReLU(1 - |x|/r0) on both laws
            jobs += [RadialDataJob("relu", q, d) for q in sorted(r["distributions"]) for d in sorted(r["dims"])]
        if "es16" in r:
            jobs += [RadialDataJob("es16", "eldan_shamir", d) for d in sorted(r["dims"])]
        return list(dict.fromkeys(jobs))

    @classmethod
    def from_config(cls, config: dict, job: RadialDataJob) -> "RadialDataSpec":
        r = section(config)["radial"]
        return cls(
            job=job,
            n_train=r["n_train"],
            n_test=r["n_test"],
            es_quantile=float(r["es_quantile"]) if job.dist == "eldan_shamir" else None,
            shell_halfwidth=float(r["shell_halfwidth"]) if job.dist == "shell" else None,
            es16_shells_per_sqrt_d=float(r["es16"]["shells_per_sqrt_d"]) if job.target == "es16" else None,
            seed=config["seed"],
        )

    def work(self) -> float:
        """Element-operations of this job (depthlab.plan's cost model: seconds = overhead + work / rate)."""
        return float((self.n_train + self.n_test) * self.job.d)

    def memory(self) -> dict[str, int]:
        return {f"studies.{STUDY}.radial.n_train": mem.data(self.n_train + self.n_test, self.job.d)}


@dataclass(frozen=True)
class Search:
    folds: int
    use_folds: int
    log10_lr_bounds: tuple[float, float]
    init_points: int
    rounds: int
    candidates_per_round: int
    seed: int
    grow_rounds: int
    log10_lr_limits: tuple[float, float]


@dataclass(frozen=True)
class RadialSpec(Spec):
    STUDY = STUDY
    STAGE = "radial"
    job: RadialJob
    data: RadialDataSpec
    depth: int
    width: int
    n_params: int
    init: str
    search: Search
    search_training: Training
    training: Training
    seeds: tuple[int, ...]

    @classmethod
    def jobs(cls, config: dict) -> list[RadialJob]:
        r = section(config)["radial"]
        jobs = [
            RadialJob(t, q, d, P, L)
            for t in sorted(r["targets"])
            for q in sorted(r["distributions"])
            for d in sorted(r["dims"])
            for P in sorted(r["budgets"])
            for L in sorted(r["depths"])
        ]
        if "es16" in r:  # R2: the ES16 target on the Eldan-Shamir density, 1 vs 2 hidden layers
            jobs += [
                RadialJob("es16", "eldan_shamir", d, P, L)
                for d in sorted(r["dims"])
                for P in sorted(r["budgets"])
                for L in sorted(r["es16"]["depths"])
            ]
        if "learner" in r:  # R3: one hidden layer with the parameter count of the learner at its first poly(d) width
            jobs += [
                RadialJob("relu", q, d, matched_budget(r, d), 1)
                for q in sorted(r["distributions"])
                for d in sorted(r["dims"])
            ]
        return list(dict.fromkeys(jobs))

    @classmethod
    def from_config(cls, config: dict, job: RadialJob) -> "RadialSpec":
        r = section(config)["radial"]
        se = r["search"]
        h = width_for_params(d=job.d, depth=job.depth, budget=job.budget)
        return cls(
            job=job,
            data=RadialDataSpec.from_config(config, RadialDataJob(job.target, job.dist, job.d)),
            depth=job.depth,
            width=h,
            n_params=n_params(job.d, h, job.depth),
            init=r["init"],
            search=Search(
                folds=se["folds"],
                use_folds=se["use_folds"],
                log10_lr_bounds=tuple(float(v) for v in se["log10_lr_bounds"]),
                init_points=se["init_points"],
                rounds=se["rounds"],
                candidates_per_round=se["candidates_per_round"],
                seed=seed(config["seed"], "search", job.d, job.depth, job.budget),
                grow_rounds=se["grow_rounds"],
                log10_lr_limits=tuple(float(v) for v in se["log10_lr_limits"]),
            ),
            search_training=_training(r["training"], se["max_epochs"]),
            training=_training(r["training"]),
            seeds=tuple(r["seeds"]),
        )

    def inputs(self) -> dict[str, Ref]:
        return {"data": Ref("radial_data", RadialDataJob(self.job.target, self.job.dist, self.job.d))}

    def work(self) -> float:
        """Element-operations of this job (depthlab.plan's cost model: seconds = overhead + work / rate)."""
        return (
            6.0
            * self.n_params
            * (self._search_examples() + len(self.seeds) * self.training.max_epochs * self.data.n_train)
        )

    def calls(self) -> float:
        """Optimiser steps at the planned budgets, times the layers (depthlab.plan.calls_of): each round of the rate search trains
        its candidates x folds stacked, then the seeds train stacked."""
        s, n = self.search, self.data.n_train
        search = (
            (1 + s.rounds)
            * batches(n * (s.folds - 1) // s.folds, self.search_training.batch_size)
            * self.search_training.max_epochs
        )
        return float((search + batches(n, self.training.batch_size) * self.training.max_epochs) * (self.depth + 1))

    def _search_examples(self) -> float:
        """The rate search's planned training, in examples seen (epochs x the training set)."""
        s = self.search
        evals = s.init_points + s.rounds * s.candidates_per_round
        return evals * s.use_folds * self.search_training.max_epochs * self.data.n_train * (s.folds - 1) / s.folds

    def trained(self, ds) -> float | None:
        """The final nets' epochs (``epochs``) over seeds x ``max_epochs``, in the units of :meth:`work`; the rate
        search (its runs' epochs are not recorded) counted at its budget."""
        return budget_share(
            ds,
            "epochs",
            len(self.seeds),
            self.training.max_epochs,
            fixed=self._search_examples(),
            per_unit=self.data.n_train,
        )

    def gpu_shape(self) -> tuple[dict, float]:
        """(a stack's shape, its planned model-epochs: the search's, in epochs of the full training set, and the final
        nets') for depthlab.gpumodel (Adam)."""
        s = self.search
        M = max(s.init_points, s.candidates_per_round, len(self.seeds)) * s.use_folds
        shape = {
            "d": self.job.d,
            "n": self.data.n_train,
            "P": float(self.n_params),
            "L": self.depth,
            "h": float(self.width),
            "M": M,
            "B": self.training.batch_size,
            "adam": True,
        }
        return shape, self._search_examples() / self.data.n_train + len(self.seeds) * self.training.max_epochs

    def memory(self) -> dict[str, int]:
        s = self.search
        M = max(s.init_points, s.candidates_per_round, len(self.seeds)) * s.use_folds
        return {
            f"studies.{STUDY}.radial.budgets": self.data.memory()[f"studies.{STUDY}.radial.n_train"]
            + mem.nets(
                M,
                layer_sizes(self.job.d, self.width, self.depth),
                self.training.batch_size,
                self.data.n_train,
                adam=True,
            )
        }


@dataclass(frozen=True)
class LearnerJob(Job):
    dist: str = field(metadata={"pattern": "eldan_shamir|shell"})
    d: int
    width: int  # m, first-layer neurons


@dataclass(frozen=True)
class LearnerSpec(Spec):
    STUDY = STUDY
    STAGE = "learner"
    job: LearnerJob
    data: RadialDataSpec
    width_rule: str  # "4d" (k d, poly(d)) or "8" (a fixed width that does not grow with d)
    second_width: int  # m2
    lrs: tuple[
        float, ...
    ]  # the mean-field rates tried: each neuron moves by lr times its gradient times its layer's width
    flow_lrs: tuple[
        float, ...
    ]  # small rates trained beside, whole curves kept: R4 is judged in the gradient-flow regime
    lr_factor: float  # the grid's growth beyond an edge choice
    lr_rounds: int
    lr_limits: tuple[float, float]
    steps: int  # the budget of full-batch gradient steps
    check_every: int
    patience: int  # plateau rule on the training loss
    rel_tol: float
    abs_tol: float  # in nMSE units (training MSE / Var(y_train))
    plateau_growth: float  # the plateau window: max(patience, plateau_growth x checks so far)
    min_steps: int  # no plateau stop before this many steps
    scale_inputs: str  # r0 | none
    n_train: int  # the first n training points of the data set (0: all)
    seeds: tuple[int, ...]
    directions: int  # great circles on which F/alpha is drawn
    profile_points: int

    @classmethod
    def jobs(cls, config: dict) -> list[LearnerJob]:
        r = section(config)["radial"]
        if "learner" not in r:
            return []
        return [
            LearnerJob(q, d, m)
            for q in sorted(r["distributions"])
            for d in sorted(r["dims"])
            for m in learner_widths(r, d)
        ]

    @classmethod
    def from_config(cls, config: dict, job: LearnerJob) -> "LearnerSpec":
        r = section(config)["radial"]
        lr = r["learner"]
        return cls(
            job=job,
            data=RadialDataSpec.from_config(config, RadialDataJob("relu", job.dist, job.d)),
            width_rule=learner_rule(r, job.d, job.width),
            second_width=lr["second_width"],
            lrs=tuple(float(v) for v in sorted(lr["lrs"])),
            flow_lrs=tuple(float(v) for v in sorted(lr.get("flow_lrs", []))),
            lr_factor=float(lr["lr_growth"]["factor"]),
            lr_rounds=lr["lr_growth"]["rounds"],
            lr_limits=tuple(float(v) for v in lr["lr_growth"]["limits"]),
            steps=lr["steps"],
            check_every=lr["check_every"],
            patience=lr["patience"],
            rel_tol=float(lr["rel_tol"]),
            abs_tol=float(lr["abs_tol"]),
            plateau_growth=float(lr["plateau_growth"]),
            min_steps=int(lr["min_steps"]),
            scale_inputs=lr["scale_inputs"],
            n_train=lr["n_train"],
            seeds=tuple(lr["seeds"]),
            directions=lr["directions"],
            profile_points=lr["profile_points"],
        )

    def inputs(self) -> dict[str, Ref]:
        return {"data": Ref("radial_data", RadialDataJob("relu", self.job.dist, self.job.d))}

    def work(self) -> float:
        """Element-operations of this job (depthlab.plan's cost model: seconds = overhead + work / rate)."""
        d, m = self.job.d, self.job.width
        n = min(self.n_train or self.data.n_train, self.data.n_train)
        return (
            6.0
            * len(self.seeds)
            * (len(self.lrs) + len(self.flow_lrs))
            * self.steps
            * (n + self.data.n_test / max(1, self.check_every))
            * m
            * (d + self.second_width)
        )

    def gpu_shape(self) -> tuple[dict, float]:
        """(the stack's shape, its planned model-epochs) for depthlab.gpumodel: a full-batch step is an epoch of its n
        points (B = n), the first layer's m neurons of d inputs dominating its arithmetic (6 m d n per step, as the
        trainer's 6 P n)."""
        n = min(self.n_train or self.data.n_train, self.data.n_train)
        M = len(self.seeds) * max(len(self.lrs), len(self.flow_lrs))
        shape = {
            "d": self.job.d,
            "n": n,
            "P": float(self.job.width * self.job.d + 2 * self.second_width),
            "L": 2,
            "h": float(self.job.width),
            "M": M,
            "B": n,
            "adam": False,
        }
        return shape, float(len(self.seeds) * (len(self.lrs) + len(self.flow_lrs)) * self.steps)

    def calls(self) -> float:
        """Full-batch steps at the budget (every rate x seed stacked), times the three layers (depthlab.plan.calls_of)."""
        return float(self.steps * 3)

    def memory(self) -> dict[str, int]:
        n = max(self.data.n_train, self.data.n_test)
        from .learner import BLOCK_ELEMENTS

        M = len(self.seeds) * max(len(self.lrs), len(self.flow_lrs))
        # the [M, rows, m] pre-activations in row blocks of at most BLOCK_ELEMENTS (learner.row_blocks): twelve such arrays
        # at once (measured: tests/core/test_memory_model.py); the layers' parameters, their gradients and copies
        acts = 12 * min(M * n * self.job.width, BLOCK_ELEMENTS) * mem.F32
        params = 6 * M * self.job.width * (self.job.d + self.second_width) * mem.F32
        return {
            f"studies.{STUDY}.radial.learner.widths_per_d": acts
            + params
            + self.data.memory()[f"studies.{STUDY}.radial.n_train"]
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
