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
from depthlab.study import ClaimsJob, FigureJob, Job, Ref, Spec

STUDY = "acceleration"
FIGURES = ("loss_curves", "iterations", "distance")


def section(config: dict) -> dict:
    return config["studies"][STUDY]


def check(sec: dict, config: dict) -> None:
    where = f"studies.{STUDY}"
    if "uci" in sec["datasets"]:
        from .datasets import DataError, uci_files

        if not sec.get("uci_file"):
            raise ConfigError(f"config error at {where}.uci_file: dataset uci needs the path of your copy of the UCI Gas Sensor "
                              "Array Drift data (a batch*.dat file or their folder); nothing is downloaded")
        try:
            uci_files(sec["uci_file"])
        except DataError as e:
            raise ConfigError(f"config error at {where}.uci_file: {e}") from None
    lo, hi = sec["log10_lr_range"]
    if not lo < hi:
        raise ConfigError(f"config error at {where}.log10_lr_range: need low < high, got [{lo}, {hi}]")


def figures(config: dict) -> list[str]:
    return list(FIGURES)


def datasets(config: dict) -> list[str]:
    return list(section(config)["datasets"])


@dataclass(frozen=True)
class DataJob(Job):
    dataset: str = field(metadata={"pattern": "synthetic|diabetes|uci"})


@dataclass(frozen=True)
class TrainJob(Job):
    dataset: str = field(metadata={"pattern": "synthetic|diabetes|uci"})
    p: int
    init: str = field(metadata={"pattern": "balanced|gaussian"})
    depth: int


@dataclass(frozen=True)
class BaselineJob(Job):
    dataset: str = field(metadata={"pattern": "synthetic|diabetes|uci"})
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
    target_fraction: float
    seed: int

    @classmethod
    def jobs(cls, config: dict) -> list[DataJob]:
        return [DataJob(d) for d in datasets(config)]

    @classmethod
    def from_config(cls, config: dict, job: DataJob) -> "DataSpec":
        s = section(config)
        syn = s["synthetic"]
        return cls(job=job, synthetic=Synthetic(syn["n"], syn["d"], float(syn["decay"]), float(syn["noise"])) if job.dataset == "synthetic" else None,
                   uci_file=str(s["uci_file"]) if job.dataset == "uci" else None, ps=tuple(sorted(s["ps"])),
                   target_fraction=float(s["target_fraction"]), seed=config["seed"])

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
    return {"log10_lr_range": tuple(float(v) for v in s["log10_lr_range"]), "lr_points": s["lr_points"],
            "iterations": s["iterations"], "seeds": tuple(s["seeds"]), "init_scale": float(s["init_scale"])}


@dataclass(frozen=True)
class TrainSpec(Spec):
    STUDY = STUDY
    STAGE = "train"
    job: TrainJob
    data: DataSpec
    init: str  # balanced | gaussian
    width: int  # hidden width h
    init_scale: float  # |w_e| at a balanced start
    gaussian_std: float  # entries' std at a Gaussian start
    weight_decay: float
    log10_lr_range: tuple[float, float]
    lr_points: int
    iterations: int
    seeds: tuple[int, ...]

    @classmethod
    def jobs(cls, config: dict) -> list[TrainJob]:
        s = section(config)
        return [TrainJob(ds, p, init, N) for ds in datasets(config) for p in sorted(s["ps"]) for init in s["inits"]
                for N in sorted(s["depths"])]

    @classmethod
    def from_config(cls, config: dict, job: TrainJob) -> "TrainSpec":
        s = section(config)
        return cls(job=job, data=DataSpec.from_config(config, DataJob(job.dataset)), init=job.init, width=s["width"],
                   gaussian_std=float(s["gaussian_std"]), weight_decay=float(s["weight_decay"]), **_run_fields(config))

    def inputs(self) -> dict[str, Ref]:
        return {"data": Ref("data", DataJob(self.job.dataset))}

    def work(self) -> float:
        """Element-operations of this job (depthlab.plan's cost model: seconds = overhead + work / rate)."""
        n, d = self.data.shape()
        per_step = n * d + self.job.depth * self.width**2 + self.width * d  # the loss gradient, then the factors
        return 2.0 * 2 * per_step * self.iterations * self.lr_points * len(self.seeds)  # the net and the rule beside it

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
    iterations: int
    seeds: tuple[int, ...]

    @classmethod
    def jobs(cls, config: dict) -> list[BaselineJob]:
        s = section(config)
        return [BaselineJob(ds, p, m) for ds in datasets(config) for p in sorted(s["ps"]) for m in s["baselines"]]

    @classmethod
    def from_config(cls, config: dict, job: BaselineJob) -> "BaselineSpec":
        return cls(job=job, data=DataSpec.from_config(config, DataJob(job.dataset)), **_run_fields(config))

    def work(self) -> float:
        """Element-operations of this job (depthlab.plan's cost model: seconds = overhead + work / rate)."""
        n, d = self.data.shape()
        return 2.0 * n * d * self.iterations * self.lr_points * len(self.seeds)

    def inputs(self) -> dict[str, Ref]:
        return {"data": Ref("data", DataJob(self.job.dataset))}


@dataclass(frozen=True)
class FigureSpec(Spec):
    STUDY = STUDY
    STAGE = "figure"
    job: FigureJob
    nets: tuple[TrainJob, ...]
    baselines: tuple[BaselineJob, ...]

    @classmethod
    def from_config(cls, config: dict, job: FigureJob) -> "FigureSpec":
        base = tuple(BaselineSpec.jobs(config)) if job.figure == "iterations" else ()
        return cls(job=job, nets=tuple(TrainSpec.jobs(config)), baselines=base)

    def inputs(self) -> dict[str, Ref]:
        refs = [Ref("train", j) for j in self.nets] + [Ref("baseline", j) for j in self.baselines]
        return {"/".join([r.stage, *(str(v) for v in r.job.values().values())]): r for r in refs}


@dataclass(frozen=True)
class ClaimsSpec(Spec):
    STUDY = STUDY
    STAGE = "claims"
    job: ClaimsJob
    small_gain: float  # A2: a speed-up below this factor is "small or absent"
    tracking: float  # A3: the net's w_e within this relative distance of the rule's while the loss falls
    same_speed: float  # A3: the rule's iterations to target within this factor of the net's
    scale_note: str

    @classmethod
    def from_config(cls, config: dict, job: ClaimsJob) -> "ClaimsSpec":
        s = section(config)
        syn = s["synthetic"]
        note = (f"Scale: data {', '.join(s['datasets'])} (synthetic: {syn['n']} x {syn['d']}, covariance eigenvalues ~ j^-{syn['decay']:g}, "
                f"noise {syn['noise']:g}), standardised; l_p losses p = {sorted(s['ps'])}; depths {sorted(s['depths'])}, hidden width "
                f"{s['width']}; starts {', '.join(s['inits'])} (balanced: |w_e| = {s['init_scale']:g}; Gaussian: entries' std "
                f"{s['gaussian_std']:g}); weight decay {s['weight_decay']:g}; full-batch, {s['iterations']} iterations; "
                f"{s['lr_points']} rates 10^{s['log10_lr_range'][0]:g} ... 10^{s['log10_lr_range'][1]:g} per method and depth, "
                f"each method at its own best (fewest iterations to the target, not diverged); seeds {list(s['seeds'])}; target: "
                f"L* + {s['target_fraction']:g} (L(0) - L*), L* the optimum.")
        return cls(job=job, small_gain=2.0, tracking=0.1, same_speed=1.25, scale_note=note)
