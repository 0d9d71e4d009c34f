"""Malach & Shalev-Shwartz (fractals): the cross-field config rules and one typed spec per stage.

Jobs, paths under ``<results>/fractals/``:

  data   {fractal}/n{n}/pdeg{pdeg}/data.zarr                       training and test samples of one distribution
  train  {fractal}/n{n}/pdeg{pdeg}/depth{depth}/w{width}.zarr      nets of one (depth, width): every lr x seed, one batch

``n`` is the fractal's depth, ``pdeg`` names its approximation curve, ``depth`` counts the
net's hidden layers (the authors' T) and ``width`` its units per layer.  The grid is the union
of what the figures need: fig4 (the coarse 2-D Cantor set: depth x width), fig5 (one net depth,
every curve), fig6 (the fine Vicsek set: depth x width) and the tables (other fractals,
coarse and fine); the ``samples`` figure only needs data.
"""

from __future__ import annotations

from pathlib import Path

from dataclasses import dataclass, field

from depthlab import memory as mem
from depthlab.config import ConfigError
from depthlab.core.shapes import layer_sizes
from depthlab.core.shapes import batches
from depthlab.study import ClaimsBase, ClaimsJob, FigureJob, Job, Ref, Spec, budget_share

from .chance import CHANCE
from .distributions import level_weights

STUDY = "fractals"
FIGURES = ("fig4", "fig5", "fig6", "tables", "training_curves", "fig7", "samples")


def section(config: dict) -> dict:
    return config["studies"][STUDY]


def check(sec: dict, config: dict) -> None:
    where = f"studies.{STUDY}"
    if sec["data"]["n_train"] % 2 or sec["data"]["n_test"] % 2:
        raise ConfigError(f"config error at {where}.data: n_train and n_test must be even (exactly half of each class)")
    for name, f, n, pdegs in _distributions(sec):  # noqa: B007 (a store stage's code: kept, its fingerprint too)
        for p in pdegs:
            try:
                level_weights(n, p)
            except ValueError as e:
                raise ConfigError(f"config error at {where}.{name}: {e}") from None
    for name in ("fig4", "fig6", "tables"):
        if name in sec and not sec[name]["depths"]:
            raise ConfigError(f"config error at {where}.{name}.depths: empty")
    t = sec["training"]
    if t.get("onset_checks") is not None and t["onset_checks"] < t["patience"]:
        raise ConfigError(
            f"config error at {where}.training.onset_checks: {t['onset_checks']} is below training.patience "
            f"({t['patience']}); allowed: null (no onset rule) or an integer >= patience"
        )
    f4 = sec.get("fig4", {})
    for i, e in enumerate(f4.get("extra_nets", [])):
        if e["depth"] not in f4["depths"] or e["width"] in f4["widths"]:
            raise ConfigError(
                f"config error at {where}.fig4.extra_nets[{i}]: depth {e['depth']}, width {e['width']}: the depth must "
                f"be one of fig4.depths {sorted(f4['depths'])} and the width not one of fig4.widths {sorted(f4['widths'])} "
                "(those nets are already trained)"
            )
    f7 = sec.get("fig7")
    if f7 is not None:
        from .image_sets import ImageDataError, check_cifar_folder

        if f7["dataset"] == "cifar10":
            if not f7.get("cifar10_dir"):
                raise ConfigError(
                    f"config error at {where}.fig7.cifar10_dir: dataset cifar10 needs the folder of your local copy "
                    "of CIFAR-10's binary version (data_batch_1.bin ... test_batch.bin); nothing is downloaded"
                )
            try:
                check_cifar_folder(f7["cifar10_dir"])
            except ImageDataError as e:
                raise ConfigError(f"config error at {where}.fig7.cifar10_dir: {e}") from None
        size = 8 if f7["dataset"] == "digits" else (f7["crop"] if f7["augment"] else 32)
        if f7["augment"] and f7["crop"] > 32:
            raise ConfigError(f"config error at {where}.fig7.crop: {f7['crop']} exceeds CIFAR-10's 32 pixels")
        if f7["augment"] and f7["dataset"] == "digits":
            raise ConfigError(
                f"config error at {where}.fig7.augment: crop-and-flip augmentation is for cifar10 (a flipped digit is another digit)"
            )
        if f7["dataset"] == "digits" and not 10 <= f7["n_test"] <= 1787:
            raise ConfigError(
                f"config error at {where}.fig7.n_test: digits has 1797 images; hold out 10 ... 1787, got {f7['n_test']}"
            )
        if size < 4:
            raise ConfigError(f"config error at {where}.fig7: images of side {size} leave no pixel after the two pools")


def figures(config: dict) -> list[str]:
    s = section(config)
    has = {"training_curves": "fig4" in s or "fig5" in s, "samples": True}
    return [f for f in FIGURES if f in s or has.get(f, False)]


def claims_inputs(config: dict) -> list[str]:
    return [f for f in ("fig4", "fig5", "fig6", "tables", "fig7") if f in section(config)]


def _distributions(sec: dict) -> list[tuple[str, str, int, list[int]]]:
    """(config key, fractal, n, pdegs) of every experiment."""
    out = []
    for key in ("fig4", "fig6"):
        if key in sec:
            e = sec[key]
            out.append((key, e["fractal"], e["fractal_depth"], [e["pdeg"]]))
    if "fig5" in sec:
        e = sec["fig5"]
        out.append(("fig5", e["fractal"], e["fractal_depth"], list(e["pdegs"])))
    if "tables" in sec:
        e = sec["tables"]
        out += [("tables", f, e["fractal_depth"], [e["coarse_pdeg"], e["fine_pdeg"]]) for f in e["fractals"]]
    out += [("samples", s["fractal"], s["fractal_depth"], [s["pdeg"]]) for s in sec["samples"]["show"]]
    return out


@dataclass(frozen=True)
class ImagesJob(Job):
    dataset: str = field(metadata={"pattern": "digits|cifar10"})


@dataclass(frozen=True)
class CnnJob(Job):
    dataset: str = field(metadata={"pattern": "digits|cifar10"})
    depth: int
    width: int


@dataclass(frozen=True)
class DataJob(Job):
    fractal: str = field(metadata={"pattern": "[a-z0-9]+"})
    n: int
    pdeg: int


@dataclass(frozen=True)
class TrainJob(Job):
    fractal: str = field(metadata={"pattern": "[a-z0-9]+"})
    n: int
    pdeg: int
    depth: int
    width: int

    @property
    def data(self) -> DataJob:
        return DataJob(self.fractal, self.n, self.pdeg)


def _unique(jobs: list) -> list:
    return list(dict.fromkeys(jobs))


def _nets(sec: dict, key: str) -> list[TrainJob]:
    """The (fractal, n, pdeg, depth, width) nets one figure or table needs."""
    if key == "training_curves":  # the deepest nets of Fig. 4 and every net of Fig. 5
        fig4 = [j for j in _nets(sec, "fig4") if j.depth == max(sec["fig4"]["depths"])] if "fig4" in sec else []
        return _unique(fig4 + _nets(sec, "fig5"))
    e = sec.get(key)
    if e is None:
        return []
    if key in ("fig4", "fig6"):
        extra = {(x["depth"], x["width"]) for x in e.get("extra_nets", [])}
        return [
            TrainJob(e["fractal"], e["fractal_depth"], e["pdeg"], T, k)
            for T, k in sorted({(T, k) for T in e["depths"] for k in e["widths"]} | extra)
        ]
    if key == "fig5":
        return [
            TrainJob(e["fractal"], e["fractal_depth"], p, e["depth"], k)
            for p in e["pdegs"]
            for k in sorted(e["widths"])
        ]
    return [
        TrainJob(f, e["fractal_depth"], p, T, k)
        for f in e["fractals"]
        for p in (e["coarse_pdeg"], e["fine_pdeg"])
        for T in sorted(e["depths"])
        for k in sorted(e["widths"])
    ]


@dataclass(frozen=True)
class DataSpec(Spec):
    STUDY = STUDY
    STAGE = "data"
    job: DataJob
    n_train: int
    n_test: int
    seed: int

    @classmethod
    def jobs(cls, config: dict) -> list[DataJob]:
        return _unique([DataJob(f, n, p) for _, f, n, ps in _distributions(section(config)) for p in ps])

    @classmethod
    def from_config(cls, config: dict, job: DataJob) -> "DataSpec":
        d = section(config)["data"]
        return cls(job=job, n_train=d["n_train"], n_test=d["n_test"], seed=config["seed"])

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        return float(self.n_train + self.n_test)

    def memory(self) -> dict[str, int]:
        # rejection sampling holds a second copy
        return {f"studies.{STUDY}.data.n_train": 2 * mem.data(self.n_train + self.n_test, 2)}


@dataclass(frozen=True)
class Training:
    """The authors' training (hinge loss, Adam, batch 100; test accuracy at every check), each net until its test accuracy
    stops improving, at a grid of rates that grows at its edges (depthlab/studies/fractals/train.py)."""

    batch_size: int
    check_every: int
    max_epochs: int  # the budget
    patience: int  # checks without a rise of the best test accuracy by more than abs_tol: converged
    abs_tol: float
    plateau_growth: float  # the plateau window: max(patience, plateau_growth x checks so far)
    onset_checks: (
        int | None
    )  # a net still at chance (best accuracy <= 0.5 + onset_margin) runs at least this many checks
    onset_margin: float | None  # None without an onset rule (the CNNs: a value there would only be a rerun trigger)
    lr_factor: float  # growth of the rate grid beyond an edge choice
    lr_rounds: int
    log10_lr_limits: tuple[float, float]


def _training(t: dict) -> Training:
    g = t["lr_growth"]
    return Training(
        batch_size=t["batch_size"],
        check_every=t["check_every"],
        max_epochs=t["max_epochs"],
        patience=t["patience"],
        abs_tol=float(t["abs_tol"]),
        plateau_growth=float(t["plateau_growth"]),
        onset_checks=t.get("onset_checks"),
        onset_margin=None if t.get("onset_checks") is None else float(t["onset_margin"]),
        lr_factor=float(g["factor"]),
        lr_rounds=g["rounds"],
        log10_lr_limits=tuple(float(v) for v in g["log10_limits"]),
    )


@dataclass(frozen=True)
class TrainSpec(Spec):
    STUDY = STUDY
    STAGE = "train"
    job: TrainJob
    data: DataSpec
    init: str
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    training: Training

    @classmethod
    def jobs(cls, config: dict) -> list[TrainJob]:
        s = section(config)
        return _unique([j for key in ("fig4", "fig5", "fig6", "tables") for j in _nets(s, key)])

    @classmethod
    def from_config(cls, config: dict, job: TrainJob) -> "TrainSpec":
        t = section(config)["training"]
        return cls(
            job=job,
            data=DataSpec.from_config(config, job.data),
            init="truncated_normal",
            lrs=tuple(float(v) for v in sorted(t["lrs"])),
            seeds=tuple(t["seeds"]),
            training=_training(t),
        )

    def inputs(self) -> dict[str, Ref]:
        return {"data": Ref("data", self.job.data)}

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        sizes = layer_sizes(2, self.job.width, self.job.depth)
        P = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
        return 6.0 * P * self.data.n_train * len(self.lrs) * len(self.seeds) * self.training.max_epochs

    def calls(self) -> float:
        """Optimiser steps of the stacked rates x seeds at the epoch budget, times the layers (depthlab.costs.model.calls_of)."""
        return float(
            batches(self.data.n_train, self.training.batch_size) * self.training.max_epochs * (self.job.depth + 1)
        )

    def trained(self, ds) -> float | None:
        """Epochs trained (``stopped_epoch``, grown rates included) over the planned rates x seeds x ``max_epochs``."""
        return budget_share(ds, "stopped_epoch", len(self.lrs) * len(self.seeds), self.training.max_epochs)

    def gpu_shape(self) -> tuple[dict, float]:
        """(the stack's shape, its planned model-epochs at the budget) for depthlab.gpumodel (Adam)."""
        d = 1 if self.job.fractal == "cantor1d" else 2
        sizes = layer_sizes(d, self.job.width, self.job.depth)
        P = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
        M = len(self.lrs) * len(self.seeds)
        shape = {
            "d": d,
            "n": self.data.n_train,
            "P": float(P),
            "L": self.job.depth,
            "h": float(self.job.width),
            "M": M,
            "B": self.training.batch_size,
            "adam": True,
        }
        return shape, float(M * self.training.max_epochs)

    def memory(self) -> dict[str, int]:
        M = len(self.lrs) * len(self.seeds)
        sizes = layer_sizes(1 if self.job.fractal == "cantor1d" else 2, self.job.width, self.job.depth)
        return {
            f"studies.{STUDY}.training": self.data.memory()[f"studies.{STUDY}.data.n_train"]
            + mem.nets(M, sizes, self.training.batch_size, self.data.n_test, adam=True)
        }


@dataclass(frozen=True)
class ImagesSpec(Spec):
    STUDY = STUDY
    STAGE = "images"
    job: ImagesJob
    cifar10_dir: str | None  # the local copy of CIFAR-10's binary version (cifar10 only)
    n_train: int  # the first n training images (0: all of them: 1347 digits, 50 000 CIFAR-10 images)
    n_test: int  # digits: held out by a seeded split; cifar10: the first n test images (0: all 10 000)
    seed: int

    @classmethod
    def jobs(cls, config: dict) -> list[ImagesJob]:
        f7 = section(config).get("fig7")
        return [ImagesJob(f7["dataset"])] if f7 else []

    @classmethod
    def from_config(cls, config: dict, job: ImagesJob) -> "ImagesSpec":
        f7 = section(config)["fig7"]
        return cls(
            job=job,
            cifar10_dir=str(f7["cifar10_dir"]) if job.dataset == "cifar10" else None,
            n_train=f7["n_train"],
            n_test=f7["n_test"],
            seed=config["seed"],
        )

    def files(self) -> dict[str, str]:
        """cifar10: the six binary files of the user's copy (rule inputs, hashed into the record, audited)."""
        if self.job.dataset != "cifar10" or not self.cifar10_dir:
            return {}
        from .image_sets import CIFAR_TEST, CIFAR_TRAIN

        return {n: str(Path(self.cifar10_dir) / n) for n in (*CIFAR_TRAIN, CIFAR_TEST)}

    def memory(self) -> dict[str, int]:
        n = (self.n_train or 50000) + (self.n_test or 10000) if self.job.dataset == "cifar10" else 1797
        side = 32 if self.job.dataset == "cifar10" else 8
        return {f"studies.{STUDY}.fig7.dataset": 4 * n * 3 * side * side * mem.F64}


@dataclass(frozen=True)
class CnnSpec(Spec):
    STUDY = STUDY
    STAGE = "cnn"
    job: CnnJob
    data: ImagesSpec
    kernel: int
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    training: Training  # max_epochs: fig7's epochs
    augment: bool
    crop: int

    @classmethod
    def jobs(cls, config: dict) -> list[CnnJob]:
        f7 = section(config).get("fig7")
        return [CnnJob(f7["dataset"], T, w) for T in sorted(f7["depths"]) for w in sorted(f7["widths"])] if f7 else []

    @classmethod
    def from_config(cls, config: dict, job: CnnJob) -> "CnnSpec":
        f7 = section(config)["fig7"]
        return cls(
            job=job,
            data=ImagesSpec.from_config(config, ImagesJob(job.dataset)),
            kernel=f7["kernel"],
            lrs=tuple(float(v) for v in sorted(f7["lrs"])),
            seeds=tuple(f7["seeds"]),
            training=_training({**f7, "max_epochs": f7["epochs"]}),
            augment=f7["augment"],
            crop=f7["crop"] if f7["augment"] else 0,
        )

    def inputs(self) -> dict[str, Ref]:
        return {"data": Ref("images", ImagesJob(self.job.dataset))}

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        side = 32 if self.job.dataset == "cifar10" else 8
        n = self.data.n_train or (50000 if self.job.dataset == "cifar10" else 1347)
        per_image = self.job.depth * self.job.width**2 * self.kernel**2 * side * side
        return 6.0 * per_image * n * self.training.max_epochs * len(self.lrs) * len(self.seeds)

    def calls(self) -> float:
        """Optimiser steps of the stacked rates x seeds at the epoch budget, times the layers (depthlab.costs.model.calls_of)."""
        n = self.data.n_train or (50000 if self.job.dataset == "cifar10" else 1347)
        return float(batches(n, self.training.batch_size) * self.training.max_epochs * (self.job.depth + 1))

    def trained(self, ds) -> float | None:
        """Epochs trained (``stopped_epoch``, grown rates included) over the planned rates x seeds x ``max_epochs``."""
        return budget_share(ds, "stopped_epoch", len(self.lrs) * len(self.seeds), self.training.max_epochs)

    def memory(self) -> dict[str, int]:
        side = 32 if self.job.dataset == "cifar10" else 8
        acts = self.training.batch_size * self.job.width * side * side * self.job.depth * 4 * mem.F32
        return {f"studies.{STUDY}.fig7.widths": self.data.memory()[f"studies.{STUDY}.fig7.dataset"] + acts}


@dataclass(frozen=True)
class FigureSpec(Spec):
    STUDY = STUDY
    STAGE = "figure"
    job: FigureJob
    nets: tuple[TrainJob, ...]  # the trained nets the figure reads
    cnns: tuple[CnnJob, ...]  # fig7's CNNs
    samples: tuple[DataJob, ...]  # the data sets the samples figure draws
    points: int  # samples drawn per panel
    steps_per_epoch: int  # Adam steps per epoch of the fractal nets (the training curves' x axis)

    @classmethod
    def from_config(cls, config: dict, job: FigureJob) -> "FigureSpec":
        s = section(config)
        steps = s["data"]["n_train"] // s["training"]["batch_size"]
        if job.figure == "samples":
            shown = _unique([DataJob(x["fractal"], x["fractal_depth"], x["pdeg"]) for x in s["samples"]["show"]])
            return cls(
                job=job, nets=(), cnns=(), samples=tuple(shown), points=s["samples"]["points"], steps_per_epoch=steps
            )
        if job.figure == "fig7":
            return cls(job=job, nets=(), cnns=tuple(CnnSpec.jobs(config)), samples=(), points=0, steps_per_epoch=steps)
        return cls(job=job, nets=tuple(_nets(s, job.figure)), cnns=(), samples=(), points=0, steps_per_epoch=steps)

    def inputs(self) -> dict[str, Ref]:
        refs = (
            [Ref("train", j) for j in self.nets]
            + [Ref("cnn", j) for j in self.cnns]
            + [Ref("data", j) for j in self.samples]
        )
        return {"/".join([r.stage, *(str(v) for v in r.job.values().values())]): r for r in refs}


@dataclass(frozen=True)
class ClaimsSpec(ClaimsBase):
    STUDY = STUDY
    STAGE = "claims"
    job: ClaimsJob
    near_perfect: float
    near_chance: float
    m4_margin: float  # M4: a one-layer CNN within this much of the best net
    scale_note: str
    n_test: int = 0  # test examples of the fractal nets: each accuracy's binomial SE (0: none)
    n_test_real: int = 0  # ... of the Fig. 7 CNNs
    steps_per_epoch: int = 0  # Adam steps per epoch of the fractal nets (how many steps a net at chance trained)

    @classmethod
    def from_config(cls, config: dict, job: ClaimsJob) -> "ClaimsSpec":
        s = section(config)
        t, d = s["training"], s["data"]
        steps = t["max_epochs"] * (d["n_train"] // t["batch_size"])
        f7 = s.get("fig7")
        real = (
            f"; Fig. 7: {f7['dataset']} CNNs, depths {sorted(f7['depths'])} x widths {sorted(f7['widths'])}, "
            f"{f7['kernel']}x{f7['kernel']} kernels, Adam lr {sorted(f7['lrs'])}, {f7['epochs']} epochs, seeds {list(f7['seeds'])}"
            if f7
            else ""
        )
        return cls(
            job=job,
            near_perfect=0.95,
            near_chance=0.6,
            m4_margin=float(f7["margin"]) if f7 else 0.0,
            n_test=int(d["n_test"]),
            n_test_real=(int(f7["n_test"]) or 10000) if f7 else 0,
            steps_per_epoch=int(d["n_train"] // t["batch_size"]),
            scale_note=f"Scale: {d['n_train']} training / {d['n_test']} test examples, Adam lr {sorted(t['lrs'])} (the best "
            f"reported), batch {t['batch_size']}, {t['max_epochs']} epochs = {steps} steps (paper: 1e6), test "
            f"accuracy every {t['check_every']} epochs, best along the run; a net stops when its best test "
            f"accuracy has not risen by {t['abs_tol']:g} for {t['patience']} checks"
            + (
                f" (a net still at chance, best <= {CHANCE + t['onset_margin']:g}: not before {t['onset_checks']} checks "
                f"= {t['onset_checks'] * t['check_every']} epochs)"
                if t.get("onset_checks") is not None
                else ""
            )
            + f"; seeds {list(t['seeds'])}{real}.",
        )
