"""The specs of the radial targets' stages (Eldan & Shamir; Safran, Eldan & Shamir; ES16) and of the RZG23 learner on them:
their data sets, the nets of every depth at matched budgets, and the learner's widths."""

from __future__ import annotations

from dataclasses import dataclass, field

from depthlab import memory as mem
from depthlab.core.search_settings import SearchSettings
from depthlab.core.seeds import seed
from depthlab.core.shapes import layer_sizes, n_params, width_for_params
from depthlab.core.shapes import batches
from depthlab.study import Job, Ref, Spec, budget_share

from .base import STUDY, Training, _training, section


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
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        return float((self.n_train + self.n_test) * self.job.d)

    def memory(self) -> dict[str, int]:
        return {f"studies.{STUDY}.radial.n_train": mem.data(self.n_train + self.n_test, self.job.d)}


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
    search: SearchSettings  # the core's own settings, as the search runs them
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
            search=SearchSettings(
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
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        return (
            6.0
            * self.n_params
            * (self._search_examples() + len(self.seeds) * self.training.max_epochs * self.data.n_train)
        )

    def calls(self) -> float:
        """Optimiser steps at the planned budgets, times the layers (depthlab.costs.model.calls_of): each round of the rate search trains
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
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
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
        """Full-batch steps at the budget (every rate x seed stacked), times the three layers (depthlab.costs.model.calls_of)."""
        return float(self.steps * 3)

    def memory(self) -> dict[str, int]:
        n = max(self.data.n_train, self.data.n_test)
        from .meanfield import BLOCK_ELEMENTS

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
