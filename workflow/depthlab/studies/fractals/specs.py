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

from dataclasses import dataclass, field

from depthlab import memory as mem
from depthlab.config import ConfigError
from depthlab.core.shapes import layer_sizes
from depthlab.study import ClaimsJob, FigureJob, Job, Ref, Spec

from .distributions import level_weights

STUDY = "fractals"
FIGURES = ("fig4", "fig5", "fig6", "tables", "samples")


def section(config: dict) -> dict:
    return config["studies"][STUDY]


def check(sec: dict, config: dict) -> None:
    where = f"studies.{STUDY}"
    if sec["data"]["n_train"] % 2 or sec["data"]["n_test"] % 2:
        raise ConfigError(f"config error at {where}.data: n_train and n_test must be even (exactly half of each class)")
    for name, f, n, pdegs in _distributions(sec):
        for p in pdegs:
            try:
                level_weights(n, p)
            except ValueError as e:
                raise ConfigError(f"config error at {where}.{name}: {e}") from None
    for name in ("fig4", "fig6", "tables"):
        if name in sec and not sec[name]["depths"]:
            raise ConfigError(f"config error at {where}.{name}.depths: empty")


def figures(config: dict) -> list[str]:
    s = section(config)
    return [f for f in FIGURES if f in s or f == "samples"]


def claims_inputs(config: dict) -> list[str]:
    return [f for f in ("fig4", "fig5", "fig6", "tables") if f in section(config)]


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
    e = sec.get(key)
    if e is None:
        return []
    if key in ("fig4", "fig6"):
        return [TrainJob(e["fractal"], e["fractal_depth"], e["pdeg"], T, k) for T in sorted(e["depths"]) for k in sorted(e["widths"])]
    if key == "fig5":
        return [TrainJob(e["fractal"], e["fractal_depth"], p, e["depth"], k) for p in e["pdegs"] for k in sorted(e["widths"])]
    return [TrainJob(f, e["fractal_depth"], p, T, k) for f in e["fractals"]
            for p in (e["coarse_pdeg"], e["fine_pdeg"]) for T in sorted(e["depths"]) for k in sorted(e["widths"])]


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

    def memory(self) -> dict[str, int]:
        # rejection sampling holds a second copy
        return {f"studies.{STUDY}.data.n_train": 2 * mem.data(self.n_train + self.n_test, 2)}


@dataclass(frozen=True)
class Training:
    """The authors' training: hinge loss, Adam, batch 100; test accuracy at every check, no early stop."""

    batch_size: int
    check_every: int
    max_epochs: int


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
        return cls(job=job, data=DataSpec.from_config(config, job.data), init="truncated_normal",
                   lrs=tuple(float(v) for v in sorted(t["lrs"])), seeds=tuple(t["seeds"]),
                   training=Training(batch_size=t["batch_size"], check_every=t["check_every"], max_epochs=t["max_epochs"]))

    def inputs(self) -> dict[str, Ref]:
        return {"data": Ref("data", self.job.data)}

    def memory(self) -> dict[str, int]:
        M = len(self.lrs) * len(self.seeds)
        sizes = layer_sizes(1 if self.job.fractal == "cantor1d" else 2, self.job.width, self.job.depth)
        return {f"studies.{STUDY}.training": self.data.memory()[f"studies.{STUDY}.data.n_train"]
                + mem.nets(M, sizes, self.training.batch_size, self.data.n_test, adam=True)}


@dataclass(frozen=True)
class FigureSpec(Spec):
    STUDY = STUDY
    STAGE = "figure"
    job: FigureJob
    nets: tuple[TrainJob, ...]  # the trained nets the figure reads
    samples: tuple[DataJob, ...]  # the data sets the samples figure draws
    points: int  # samples drawn per panel
    pdegs: tuple[int, ...]  # fig5: the curves in the config's order

    @classmethod
    def from_config(cls, config: dict, job: FigureJob) -> "FigureSpec":
        s = section(config)
        if job.figure == "samples":
            shown = _unique([DataJob(x["fractal"], x["fractal_depth"], x["pdeg"]) for x in s["samples"]["show"]])
            return cls(job=job, nets=(), samples=tuple(shown), points=s["samples"]["points"], pdegs=())
        pdegs = tuple(s["fig5"]["pdegs"]) if job.figure == "fig5" else ()
        return cls(job=job, nets=tuple(_nets(s, job.figure)), samples=(), points=0, pdegs=pdegs)

    def inputs(self) -> dict[str, Ref]:
        refs = [Ref("train", j) for j in self.nets] + [Ref("data", j) for j in self.samples]
        return {"/".join([r.stage, *(str(v) for v in r.job.values().values())]): r for r in refs}


@dataclass(frozen=True)
class ClaimsSpec(Spec):
    STUDY = STUDY
    STAGE = "claims"
    job: ClaimsJob
    near_perfect: float
    near_chance: float
    fig5_depth: int | None
    scale_note: str

    @classmethod
    def from_config(cls, config: dict, job: ClaimsJob) -> "ClaimsSpec":
        s = section(config)
        t, d = s["training"], s["data"]
        steps = t["max_epochs"] * (d["n_train"] // t["batch_size"])
        return cls(job=job, near_perfect=0.95, near_chance=0.6, fig5_depth=s["fig5"]["depth"] if "fig5" in s else None,
                   scale_note=f"Scale: {d['n_train']} training / {d['n_test']} test examples, Adam lr {sorted(t['lrs'])}, batch "
                              f"{t['batch_size']}, {t['max_epochs']} epochs = {steps} steps (paper: 1e6), test accuracy every "
                              f"{t['check_every']} epochs, best along the run reported; seeds {list(t['seeds'])}.")
