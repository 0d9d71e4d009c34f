"""Implicit acceleration: the cross-field config rules and one typed spec per stage.

Jobs, paths under ``<results>/acceleration/``:

  data      {dataset}/data.zarr                              standardised data, optimum and target loss per p
  train     {dataset}/p{p}/{init}/depth{depth}.zarr          the depth-N net and its end-to-end rule, every rate x seed
  baseline  {dataset}/p{p}/baselines/{method}.zarr           one optimiser of the depth-1 model, every rate x seed
"""

from __future__ import annotations

from dataclasses import dataclass, field

from depthlab import memory as mem
from depthlab.config import ConfigError
from depthlab.study import ClaimsBase, ClaimsJob, FigureJob, Job, Ref, Spec

STUDY = "acceleration"
FIGURES = ("loss_curves", "iterations", "distance")


def section(config: dict) -> dict:
    return config["studies"][STUDY]


def check(sec: dict, config: dict) -> None:
    where = f"studies.{STUDY}"
    if "uci" in sec["datasets"]:
        from .datasets import DataError, uci_files

        if not sec.get("uci_file"):
            raise ConfigError(
                f"config error at {where}.uci_file: dataset uci needs the path of your copy of the UCI Gas Sensor "
                "Array Drift data (a batch*.dat file or their folder); nothing is downloaded"
            )
        try:
            uci_files(sec["uci_file"])
        except DataError as e:
            raise ConfigError(f"config error at {where}.uci_file: {e}") from None
    if sec["patience_factor"] < len(sec["seeds"]):
        raise ConfigError(
            f"config error at {where}.patience_factor: {sec['patience_factor']:g} is below the number of seeds "
            f"({len(sec['seeds'])}); a batch stopped then could miss a rate whose mean over seeds is the best"
        )
    lo, hi = sec["log10_lr_range"]
    if not lo < hi:
        raise ConfigError(f"config error at {where}.log10_lr_range: need low < high, got [{lo}, {hi}]")


def figures(config: dict) -> list[str]:
    return list(FIGURES)


def synthetic_name(decay: float) -> str:
    """The data set id of the synthetic task with covariance decay j^-decay: synthetic-j1, synthetic-j2, synthetic-j1.5."""
    return f"synthetic-j{decay:g}"


def datasets(config: dict) -> list[str]:
    """The data set ids: the synthetic task once per decay, then the others in config order."""
    s = section(config)
    out = []
    for name in s["datasets"]:
        out += [synthetic_name(float(v)) for v in s["synthetic"]["decays"]] if name == "synthetic" else [name]
    return out


DATASET = "synthetic-j[0-9]+(?:[.][0-9]+)?|diabetes|uci"


@dataclass(frozen=True)
class DataJob(Job):
    dataset: str = field(metadata={"pattern": DATASET})


@dataclass(frozen=True)
class TrainJob(Job):
    dataset: str = field(metadata={"pattern": DATASET})
    p: int
    init: str = field(metadata={"pattern": "balanced|gaussian"})
    depth: int


@dataclass(frozen=True)
class BaselineJob(Job):
    dataset: str = field(metadata={"pattern": DATASET})
    p: int
    method: str = field(metadata={"pattern": "momentum|adagrad|adadelta|adam"})


@dataclass(frozen=True)
class Synthetic:
    n: int
    d: int
    decay: float  # the covariance's eigenvalues fall as j^(-decay)
    noise: float  # noise std relative to the teacher's output std


@dataclass(frozen=True)
class DataSpec(Spec):
    STUDY = STUDY
    STAGE = "data"
    job: DataJob
    synthetic: Synthetic | None
    uci_file: str | None
    ps: tuple[int, ...]
    target_fractions: tuple[float, ...]  # descending: loosest first
    seed: int

    @classmethod
    def jobs(cls, config: dict) -> list[DataJob]:
        return [DataJob(d) for d in datasets(config)]

    @classmethod
    def from_config(cls, config: dict, job: DataJob) -> "DataSpec":
        s = section(config)
        syn = s["synthetic"]
        decay = float(job.dataset.removeprefix("synthetic-j")) if job.dataset.startswith("synthetic-j") else None
        return cls(
            job=job,
            synthetic=Synthetic(syn["n"], syn["d"], decay, float(syn["noise"])) if decay is not None else None,
            uci_file=str(s["uci_file"]) if job.dataset == "uci" else None,
            ps=tuple(sorted(s["ps"])),
            target_fractions=tuple(sorted((float(f) for f in s["target_fractions"]), reverse=True)),
            seed=config["seed"],
        )

    def shape(self) -> tuple[int, int]:
        """(examples, features): the synthetic task's, diabetes' 442 x 10, the UCI ethanol subset's at most 3000 x 128."""
        if self.synthetic:
            return self.synthetic.n, self.synthetic.d
        return (442, 10) if self.job.dataset == "diabetes" else (3000, 128)

    def memory(self) -> dict[str, int]:
        n, d = (self.synthetic.n, self.synthetic.d) if self.synthetic else (3000, 128)
        return {f"studies.{STUDY}.synthetic.n": 4 * n * d * mem.F64}


def _run_fields(config: dict) -> dict:
    s = section(config)
    return {
        "log10_lr_range": tuple(float(v) for v in s["log10_lr_range"]),
        "lr_points": s["lr_points"],
        "budget": Budget(s["max_iterations"], s["min_iterations"], float(s["patience_factor"])),
        "seeds": tuple(s["seeds"]),
        "init_scale": float(s["init_scale"]),
    }


@dataclass(frozen=True)
class Budget:
    """How long a batch of runs goes on (depthlab/studies/acceleration/trajectory.py: run)."""

    max_iterations: int
    min_iterations: int
    patience_factor: float


@dataclass(frozen=True)
class TrainSpec(Spec):
    STUDY = STUDY
    STAGE = "train"
    job: TrainJob
    data: DataSpec
    init: str  # balanced | gaussian
    width: int  # hidden width h
    init_scale: float  # |w_e(0)| of every start
    weight_decay: float
    log10_lr_range: tuple[float, float]
    lr_points: int
    budget: Budget
    seeds: tuple[int, ...]

    @classmethod
    def jobs(cls, config: dict) -> list[TrainJob]:
        s = section(config)
        return [
            TrainJob(ds, p, init, N)
            for ds in datasets(config)
            for p in sorted(s["ps"])
            for init in s["inits"]
            for N in sorted(s["depths"])
        ]

    @classmethod
    def from_config(cls, config: dict, job: TrainJob) -> "TrainSpec":
        s = section(config)
        return cls(
            job=job,
            data=DataSpec.from_config(config, DataJob(job.dataset)),
            init=job.init,
            width=s["width"],
            weight_decay=float(s["weight_decay"]),
            **_run_fields(config),
        )

    def inputs(self) -> dict[str, Ref]:
        return {"data": Ref("data", DataJob(self.job.dataset))}

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        n, d = self.data.shape()
        per_step = n * d + self.job.depth * self.width**2 + self.width * d  # the loss gradient, then the factors
        return (
            2.0 * 2 * per_step * self.budget.max_iterations * self.lr_points * len(self.seeds)
        )  # the net and the rule beside it

    def calls(self) -> float:
        """Full-batch iterations at the budget (rates x seeds stacked), times the factors, for the net and the rule
        beside it (depthlab.costs.model.calls_of)."""
        return float(2 * self.budget.max_iterations * (self.job.depth + 1))

    def memory(self) -> dict[str, int]:
        n, d = (self.data.synthetic.n, self.data.synthetic.d) if self.data.synthetic else (3000, 128)
        M = self.lr_points * len(self.seeds)
        return {f"studies.{STUDY}.lr_points": (4 * M * n + 4 * n * d) * mem.F64 + 3 * M * 4096 * mem.F64}


@dataclass(frozen=True)
class BaselineSpec(Spec):
    STUDY = STUDY
    STAGE = "baseline"
    job: BaselineJob
    data: DataSpec
    init_scale: float
    log10_lr_range: tuple[float, float]
    lr_points: int
    budget: Budget
    seeds: tuple[int, ...]

    @classmethod
    def jobs(cls, config: dict) -> list[BaselineJob]:
        s = section(config)
        return [BaselineJob(ds, p, m) for ds in datasets(config) for p in sorted(s["ps"]) for m in s["baselines"]]

    @classmethod
    def from_config(cls, config: dict, job: BaselineJob) -> "BaselineSpec":
        return cls(job=job, data=DataSpec.from_config(config, DataJob(job.dataset)), **_run_fields(config))

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        n, d = self.data.shape()
        return 2.0 * n * d * self.budget.max_iterations * self.lr_points * len(self.seeds)

    def calls(self) -> float:
        """Full-batch iterations at the budget, rates x seeds stacked (depthlab.costs.model.calls_of)."""
        return float(self.budget.max_iterations)

    def inputs(self) -> dict[str, Ref]:
        return {"data": Ref("data", DataJob(self.job.dataset))}


@dataclass(frozen=True)
class FigureSpec(Spec):
    STUDY = STUDY
    STAGE = "figure"
    job: FigureJob
    nets: tuple[TrainJob, ...]
    baselines: tuple[BaselineJob, ...]
    flow_tolerance: float  # A3's flow criterion: the curves figures draw each net at its largest rate within it

    @classmethod
    def from_config(cls, config: dict, job: FigureJob) -> "FigureSpec":
        base = tuple(BaselineSpec.jobs(config)) if job.figure == "iterations" else ()
        return cls(
            job=job,
            nets=tuple(TrainSpec.jobs(config)),
            baselines=base,
            flow_tolerance=float(section(config)["flow_tolerance"]),
        )

    def inputs(self) -> dict[str, Ref]:
        refs = [Ref("train", j) for j in self.nets] + [Ref("baseline", j) for j in self.baselines]
        return {"/".join([r.stage, *(str(v) for v in r.job.values().values())]): r for r in refs}


@dataclass(frozen=True)
class ClaimsSpec(ClaimsBase):
    STUDY = STUDY
    STAGE = "claims"
    job: ClaimsJob
    small_gain: float  # A2: a speed-up below this factor is "small or absent"
    tracking: float  # A3: the net's w_e within this relative distance of the rule's while the loss falls
    same_speed: float  # A3: the rule's iterations to target within this factor of the net's
    flow_tolerance: (
        float  # A3: the flow regime (halving the rate changes the loss curve in flow time by less than this)
    )
    scale_note: str

    @classmethod
    def from_config(cls, config: dict, job: ClaimsJob) -> "ClaimsSpec":
        s = section(config)
        syn = s["synthetic"]
        note = (
            f"Scale: data {', '.join(datasets(config))} (synthetic: {syn['n']} x {syn['d']}, covariance eigenvalues ~ j^-decay for "
            f"decay {', '.join(f'{v:g}' for v in syn['decays'])}, noise {syn['noise']:g}), standardised; l_p losses p = "
            f"{sorted(s['ps'])}; depths {sorted(s['depths'])}, hidden width {s['width']}; starts {', '.join(s['inits'])}, every "
            f"one at |w_e(0)| = {s['init_scale']:g} (Gaussian: independent Gaussian factors scaled together to that norm); weight "
            f"decay {s['weight_decay']:g}; full-batch, a budget of {s['max_iterations']} iterations (a batch stops once every run "
            f"is at the tightest target, or at {s['patience_factor']:g} times the iterations its fastest rate needed, and not "
            f"before {s['min_iterations']}); {s['lr_points']} rates 10^{s['log10_lr_range'][0]:g} ... "
            f"10^{s['log10_lr_range'][1]:g} per method and depth, each method at its own best per target (fewest mean "
            f"iterations, no seed diverged); seeds {list(s['seeds'])}; targets: L* + f (L(0) - L*) for f = "
            f"{', '.join(f'{f:g}' for f in sorted(s['target_fractions'], reverse=True))}, L* the optimum."
        )
        return cls(
            job=job,
            small_gain=2.0,
            tracking=0.1,
            same_speed=1.25,
            flow_tolerance=float(s["flow_tolerance"]),
            scale_note=note,
        )
