"""Mori & Ueda: the cross-field config rules and one typed spec per stage.

Jobs, paths under ``<results>/mori_ueda/``:

  data      {figure}/data/{target}.zarr                 training and test sets of one target
  lrsearch  {figure}/lrsearch/{target}/L{depth}.zarr    CV + BO choice of the lr (depth_sweep figures)
  train     {figure}/train/{target}/L{depth}.zarr       final nets: every lr x seed of one (target, depth)
  ntk       {figure}/ntk/{target}/L{depth}.zarr         kernel regression with the NTK and the NNGP kernel
  entk      {figure}/entk/{target}/L{depth}.zarr        the trained nets' own tangent kernel at init (lr_sweep figures)

A depth_sweep figure trains at the lr its ``lrsearch`` store chose; an lr_sweep figure (Fig. 3) trains every lr of its
grid.  The width is computed here, once, from the budget (Eq. 3), and travels in the spec."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from depthlab import memory as mem
from depthlab.config import ConfigError
from depthlab.core.search_settings import SearchSettings
from depthlab.core.seeds import seed
from depthlab.core.training_settings import Training
from depthlab.core.shapes import layer_sizes, n_params, width_for_hidden_weights
from depthlab.core.shapes import batches
from depthlab.study import ClaimsBase, ClaimsJob, FigureJob, Job, Ref, Spec, budget_share

from .targets import TargetError, check_target

STUDY = "mori_ueda"


def section(config: dict) -> dict:
    return config["studies"][STUDY]


def check(sec: dict, config: dict) -> None:
    """Cross-field rules of the mori_ueda section (after the schema, with its defaults filled in)."""
    where0 = f"studies.{STUDY}"
    lo, hi = sec["lrsearch"]["log10_lr_bounds"]
    if not lo < hi:
        raise ConfigError(f"config error at {where0}.lrsearch.log10_lr_bounds: need low < high, got [{lo}, {hi}]")
    screen = sec["lrsearch"].get("halving", {}).get("first_rung_folds", 0)
    if screen >= sec["lrsearch"]["folds"]:
        raise ConfigError(
            f"config error at {where0}.lrsearch.halving.first_rung_folds: {screen} must be below "
            f"lrsearch.folds = {sec['lrsearch']['folds']}; allowed: 0 (every fold) .. {sec['lrsearch']['folds'] - 1}"
        )
    se = sec["lrsearch"].get("halving", {}).get("first_rung_se", 0)
    if se and not screen:  # the SE rule belongs to the one-fold screen: alone it was ignored without a word
        raise ConfigError(
            f"config error at {where0}.lrsearch.halving.first_rung_se: {se} needs a one-fold screen "
            "(halving.first_rung_folds: 1 .. folds - 1); without one, set first_rung_se: 0 or leave it out"
        )
    every, train_every = sec["lrsearch"].get("check_every"), sec["training"]["check_every"]
    if every is not None and train_every % every:
        allowed = ", ".join(str(v) for v in range(1, train_every + 1) if train_every % v == 0)
        raise ConfigError(
            f"config error at {where0}.lrsearch.check_every: {every} does not divide training.check_every = "
            f"{train_every} (the plateau window keeps its length in epochs); allowed: {allowed}"
        )
    for fname, fig in sec["figures"].items():
        for tname, t in fig["targets"].items():
            where = f"{where0}.figures.{fname}.targets.{tname}"
            try:
                check_target(t["k"], t["d"], t["locality"], t["g"])
            except TargetError as e:
                raise ConfigError(f"config error at {where}.{e.key}: {e}") from None
            if t["noise"] > 0 and fig["task"] == "classification":
                raise ConfigError(f"config error at {where}.noise: label noise is only defined for task = regression")
            if sec["lrsearch"]["folds"] > t["n_train"]:
                raise ConfigError(
                    f"config error at {where0}.lrsearch.folds: {sec['lrsearch']['folds']} folds exceed "
                    f"n_train = {t['n_train']} of {where}"
                )
            for L in fig["depths"] if fig["kind"] == "depth_sweep" else []:
                try:
                    width_for_hidden_weights(d=t["d"], depth=L, budget=fig["budget"])
                except ValueError as err:
                    raise ConfigError(
                        f"config error at {where0}.figures.{fname}.budget: {err} "
                        f"(target {tname}, depth {L} in figures.{fname}.depths)"
                    ) from None


def figures(config: dict) -> list[str]:
    return sorted(section(config)["figures"])


def _fig(config: dict, figure: str) -> dict:
    return section(config)["figures"][figure]


# ---- jobs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataJob(Job):
    figure: str = field(metadata={"pattern": "fig[0-9]+"})
    target: str


@dataclass(frozen=True)
class DepthJob(Job):
    figure: str = field(metadata={"pattern": "fig[0-9]+"})
    target: str
    depth: int


def _depth_jobs(config: dict, kind: str | None) -> list[DepthJob]:
    return [
        DepthJob(f, t, L)
        for f in figures(config)
        if kind is None or _fig(config, f)["kind"] == kind
        for t in sorted(_fig(config, f)["targets"])
        for L in sorted(_fig(config, f)["depths"])
    ]


# ---- specs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    k: int  # locality order
    locality: str  # local | global
    g: str  # product | sin | tanh_sin
    d: int
    n_train: int
    noise: float  # label noise eps on the training labels


@dataclass(frozen=True)
class DataSpec(Spec):
    STUDY = STUDY
    STAGE = "data"
    job: DataJob
    target: Target
    task: str  # regression | classification
    n_test: int
    seed: int  # the master seed

    @classmethod
    def jobs(cls, config: dict) -> list[DataJob]:
        return [DataJob(f, t) for f in figures(config) for t in sorted(_fig(config, f)["targets"])]

    @classmethod
    def from_config(cls, config: dict, job: DataJob) -> "DataSpec":
        fig = _fig(config, job.figure)
        t = fig["targets"][job.target]
        return cls(
            job=job,
            target=Target(**{k: t[k] for k in ("k", "locality", "g", "d", "n_train", "noise")}),
            task=fig["task"],
            n_test=fig["n_test"],
            seed=config["seed"],
        )

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        return float((self.target.n_train + self.n_test) * self.target.d)

    def memory(self) -> dict[str, int]:
        key = f"studies.{STUDY}.figures.{self.job.figure}"
        return {
            f"{key}.n_test": mem.data(self.n_test, self.target.d),
            f"{key}.targets.{self.job.target}.n_train": mem.data(self.target.n_train, self.target.d),
        }


def _training(config: dict, figure: str, max_epochs: int) -> Training:
    tr = section(config)["training"]
    sweep = _fig(config, figure)["kind"] == "lr_sweep"
    return Training(  # plain SGD on MSE (regression) or the logistic loss (classification), Mori & Ueda Sec. 2.3
        optimizer="sgd",
        batch_size=tr["batch_size"],
        check_every=tr["check_every"],
        loss_threshold=float(tr["loss_threshold"]),
        max_epochs=max_epochs,
        loss="logistic" if _fig(config, figure)["task"] == "classification" else "mse",
        patience=None if sweep else tr["patience"],
        rel_tol=float(tr["rel_tol"]),
        plateau_growth=0.0 if sweep else float(tr["plateau_growth"]),
    )


def search_check_every(config: dict) -> int:
    """Epochs between the cross-validation nets' checks: ``lrsearch.check_every``, or training's when it is not set."""
    sec = section(config)
    return int(sec["lrsearch"].get("check_every") or sec["training"]["check_every"])


def _search_training(config: dict, figure: str) -> Training:
    """The cross-validation nets' settings: training's, with ``lrsearch.max_epochs`` and ``lrsearch.check_every``.  The
    plateau window keeps its length in epochs (patience x training.check_every), so a finer check changes when a net is
    seen to stop, not what stopping means; it also lets the halving's first rung sit at 1/9 of the budget, not at the
    first of training's checks."""
    t = _training(config, figure, section(config)["lrsearch"]["max_epochs"])
    every = search_check_every(config)
    if every == t.check_every:
        return t
    return replace(t, check_every=every, patience=None if t.patience is None else t.patience * (t.check_every // every))


@dataclass(frozen=True)
class Shape:
    """The net of one depth: from the budget by Eq. 3 (depth sweeps) or the figure's fixed width (lr sweeps)."""

    depth: int
    width: int
    n_params: int  # exact count, biases included
    budget: float | None  # Eq. 3's P (None: a fixed width)

    @classmethod
    def of(cls, config: dict, job: DepthJob) -> "Shape":
        fig = _fig(config, job.figure)
        d = fig["targets"][job.target]["d"]
        if fig["kind"] == "lr_sweep":
            return cls(job.depth, fig["width"], n_params(d, fig["width"], job.depth), None)
        h = width_for_hidden_weights(d=d, depth=job.depth, budget=fig["budget"])
        return cls(job.depth, h, n_params(d, h, job.depth), float(fig["budget"]))

    def sizes(self, d: int) -> list[int]:
        return layer_sizes(d, self.width, self.depth)

    def width_key(self, figure: str) -> str:
        return f"studies.{STUDY}.figures.{figure}." + ("width" if self.budget is None else "budget")


def _data(config: dict, job: DepthJob) -> DataSpec:
    return DataSpec.from_config(config, DataJob(job.figure, job.target))


def _data_ref(job: DepthJob) -> dict[str, Ref]:
    return {"data": Ref("data", DataJob(job.figure, job.target))}


@dataclass(frozen=True)
class LrSearchSpec(Spec):
    STUDY = STUDY
    STAGE = "lrsearch"
    job: DepthJob
    data: DataSpec
    shape: Shape
    training: Training
    search: SearchSettings  # the core's own settings, as the search runs them

    @classmethod
    def jobs(cls, config: dict) -> list[DepthJob]:
        return _depth_jobs(config, "depth_sweep")

    @classmethod
    def from_config(cls, config: dict, job: DepthJob) -> "LrSearchSpec":
        ls = section(config)["lrsearch"]
        search = SearchSettings(
            folds=ls["folds"],
            log10_lr_bounds=tuple(float(v) for v in ls["log10_lr_bounds"]),
            init_points=ls["init_points"],
            rounds=ls["rounds"],
            candidates_per_round=ls["candidates_per_round"],
            seed=seed(config["seed"], "search", job.depth, ls["seed"]),
            grow_rounds=ls["grow_rounds"],
            log10_lr_limits=tuple(float(v) for v in ls["log10_lr_limits"]),
            halving_eta=int(ls["halving"]["eta"]),
            halving_rungs=int(ls["halving"]["rungs"]),
            first_rung_folds=int(ls["halving"].get("first_rung_folds", 0)),
            first_rung_se=float(ls["halving"].get("first_rung_se", 0.0)),
        )
        shape, training, data = Shape.of(config, job), _search_training(config, job.figure), _data(config, job)
        per = mem.nets(search.folds, shape.sizes(data.target.d), training.batch_size, data.target.n_train)
        search = replace(
            search,
            max_candidates=mem.per_stack(
                max(search.init_points, search.candidates_per_round), per, mem.stack_budget(config)
            ),
        )
        return cls(job=job, data=data, shape=shape, training=training, search=search)

    def inputs(self) -> dict[str, Ref]:
        return _data_ref(self.job)

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        s, n, t = self.search, self.data.target.n_train, self.training
        # candidate-epochs of the initial design and of each round (successive halving cuts them), each trains `folds`
        # nets on (folds - 1)/folds of n; growth rounds, when the choice sits at an edge, are absorbed by the fitted rate
        epochs = s.trained_epochs(t.max_epochs, t.check_every, s.init_points) + s.rounds * s.trained_epochs(
            t.max_epochs, t.check_every, s.candidates_per_round
        )
        return 6.0 * self.shape.n_params * n * (s.folds - 1) * epochs

    def calls(self) -> float:
        """Optimiser steps at the epoch budget, times the layers (depthlab.costs.model.calls_of): each round (the initial points, then
        each round of candidates) trains its candidates x folds stacked on (folds - 1)/folds of the data."""
        s, n, t = self.search, self.data.target.n_train, self.training
        steps = batches(n * (s.folds - 1) // s.folds, t.batch_size)  # per epoch of the stack
        # with halving the stack runs to the budget still (its last survivors): the calls are those of the full search
        return float((1 + s.rounds) * steps * t.max_epochs * (self.shape.depth + 1))

    def gpu_shape(self) -> tuple[dict, float]:
        """(the stack's shape, its planned model-epochs at the budget) for depthlab.gpumodel: candidates x folds nets of
        width h on (folds - 1)/folds of the training points."""
        s, t, n = self.search, self.training, self.data.target.n_train
        C = max(s.init_points, s.candidates_per_round)
        shape = {
            "d": self.data.target.d,
            "n": n * (s.folds - 1) // s.folds,
            "P": float(self.shape.n_params),
            "L": self.shape.depth,
            "h": float(self.shape.width),
            "M": min(C, s.max_candidates or C) * s.folds,
            "B": t.batch_size,
            "adam": False,
        }
        epochs = s.folds * (
            s.trained_epochs(t.max_epochs, t.check_every, s.init_points)
            + s.rounds * s.trained_epochs(t.max_epochs, t.check_every, s.candidates_per_round)
        )
        return shape, float(epochs)

    def memory(self) -> dict[str, int]:
        C = max(self.search.init_points, self.search.candidates_per_round)
        M = min(C, self.search.max_candidates or C) * self.search.folds  # a round in parts when it outgrows a stack
        nets = mem.nets(M, self.shape.sizes(self.data.target.d), self.training.batch_size, self.data.target.n_train)
        return {**self.data.memory(), self.shape.width_key(self.job.figure): nets}


@dataclass(frozen=True)
class TrainSpec(Spec):
    STUDY = STUDY
    STAGE = "train"
    job: DepthJob
    data: DataSpec
    shape: Shape
    lrs: tuple[float, ...] | None  # the grid of an lr sweep; None: the one rate the lrsearch input chose
    training: Training
    seeds: tuple[int, ...]
    stack_lrs: int = 0  # rates (x seeds) per stack: an lr sweep larger than this trains in parts (0: all at once)

    @classmethod
    def jobs(cls, config: dict) -> list[DepthJob]:
        return _depth_jobs(config, None)

    @classmethod
    def from_config(cls, config: dict, job: DepthJob) -> "TrainSpec":
        fig = _fig(config, job.figure)
        sweep = fig["kind"] == "lr_sweep"
        spec = cls(
            job=job,
            data=_data(config, job),
            shape=Shape.of(config, job),
            lrs=tuple(float(10.0**u) for u in sorted(fig["log10_lrs"])) if sweep else None,
            training=_training(
                config, job.figure, fig["max_epochs"] if sweep else section(config)["training"]["max_epochs"]
            ),
            seeds=tuple(fig["seeds"]),
        )
        if not sweep:
            return spec
        per = mem.nets(
            len(spec.seeds), spec.shape.sizes(spec.data.target.d), spec.training.batch_size, spec.data.target.n_train
        )
        return replace(spec, stack_lrs=mem.per_stack(len(spec.lrs), per, mem.stack_budget(config)))

    def inputs(self) -> dict[str, Ref]:
        return {**_data_ref(self.job), **({"lrsearch": Ref("lrsearch", self.job)} if self.lrs is None else {})}

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        M = (len(self.lrs) if self.lrs is not None else 1) * len(self.seeds)
        return 6.0 * self.shape.n_params * M * (self.data.target.n_train * self.training.max_epochs + self.data.n_test)

    def calls(self) -> float:
        """Optimiser steps of the stacked rates x seeds at the epoch budget, times the layers (depthlab.costs.model.calls_of)."""
        return float(
            batches(self.data.target.n_train, self.training.batch_size)
            * self.training.max_epochs
            * (self.shape.depth + 1)
        )

    def trained(self, ds) -> float | None:
        """Epochs trained (``epochs``) over the planned nets x ``max_epochs``, in the units of :meth:`work` (the test
        predictions counted as done; a rate halved after a divergence is not recorded and not counted)."""
        M = (len(self.lrs) if self.lrs is not None else 1) * len(self.seeds)
        return budget_share(
            ds, "epochs", M, self.training.max_epochs, fixed=M * self.data.n_test, per_unit=self.data.target.n_train
        )

    def gpu_shape(self) -> tuple[dict, float]:
        """(the stack's shape, its planned model-epochs at the budget) for depthlab.gpumodel."""
        C = len(self.lrs) if self.lrs is not None else 1
        t = self.data.target
        shape = {
            "d": t.d,
            "n": t.n_train,
            "P": float(self.shape.n_params),
            "L": self.shape.depth,
            "h": float(self.shape.width),
            "M": min(C, self.stack_lrs or C) * len(self.seeds),
            "B": self.training.batch_size,
            "adam": False,
        }
        return shape, float(C * len(self.seeds) * self.training.max_epochs)

    def memory(self) -> dict[str, int]:
        C = len(self.lrs) if self.lrs is not None else 1
        M = C * len(self.seeds)
        key, t = f"studies.{STUDY}.figures.{self.job.figure}", self.data.target
        parts = self.data.memory()
        parts[f"{key}.n_test"] += 2 * M * self.data.n_test * mem.F64  # predictions
        stack = min(C, self.stack_lrs or C) * len(self.seeds)  # an lr sweep in parts when it outgrows a stack
        # the stack training, and the finished parts' parameters kept on the CPU (one copy each)
        done = (M - stack) * mem.nets(1, self.shape.sizes(t.d), 0, 0) // 4
        parts[self.shape.width_key(self.job.figure)] = (
            mem.nets(stack, self.shape.sizes(t.d), self.training.batch_size, t.n_train) + done
        )
        return parts


@dataclass(frozen=True)
class NtkSpec(Spec):
    STUDY = STUDY
    STAGE = "ntk"
    job: DepthJob
    data: DataSpec
    depth: int
    beta: float
    block: int

    @classmethod
    def jobs(cls, config: dict) -> list[DepthJob]:
        return _depth_jobs(config, None)

    @classmethod
    def from_config(cls, config: dict, job: DepthJob) -> "NtkSpec":
        k = section(config)["ntk"]
        return cls(job=job, data=_data(config, job), depth=job.depth, beta=float(k["beta"]), block=k["block"])

    def inputs(self) -> dict[str, Ref]:
        return _data_ref(self.job)

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        n, t, d = self.data.target.n_train, self.data.n_test, self.data.target.d
        return n**3 / 3 + (n * n + t * n) * (d + 4 * self.depth)

    def memory(self) -> dict[str, int]:
        n = self.data.target.n_train
        parts = self.data.memory()
        parts[f"studies.{STUDY}.figures.{self.job.figure}.targets.{self.job.target}.n_train"] += 3 * 2 * n * n * mem.F64
        # one Sigma^(0) block of test rows (kernel_regression: min(block, 2^22 // n) rows) plus its products
        parts[f"studies.{STUDY}.ntk.block"] = 2 * min(self.block, max(1, (1 << 22) // n)) * n * mem.F64
        return parts


@dataclass(frozen=True)
class EntkSpec(Spec):
    STUDY = STUDY
    STAGE = "entk"
    job: DepthJob
    data: DataSpec
    shape: Shape
    seeds: tuple[int, ...]

    @classmethod
    def jobs(cls, config: dict) -> list[DepthJob]:
        return _depth_jobs(config, "lr_sweep")

    @classmethod
    def from_config(cls, config: dict, job: DepthJob) -> "EntkSpec":
        fig = _fig(config, job.figure)
        if fig["kind"] != "lr_sweep":
            raise KeyError(f"{job.figure} is not an lr_sweep figure: it has no entk stores")
        return cls(job=job, data=_data(config, job), shape=Shape.of(config, job), seeds=tuple(fig["seeds"]))

    def inputs(self) -> dict[str, Ref]:
        return _data_ref(self.job)

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        n, t = self.data.target.n_train, self.data.n_test
        return len(self.seeds) * (
            (n + t) * self.shape.n_params * 2 + n**3 / 3 + t * n * self.shape.width * self.shape.depth
        )

    def memory(self) -> dict[str, int]:
        """The layers' features of the training points and of one block of rows (core.tangent: 4096 at a time), the
        n x n kernel and its Cholesky factor; the test rows go through in blocks, never as an n_test x n kernel
        (that was 16 GB of the 77.8 GiB planned at the paper's shapes)."""
        key, t, n_test = f"studies.{STUDY}.figures.{self.job.figure}", self.data.target, self.data.n_test
        data = self.data.memory()
        rows = min(4096, max(t.n_train, n_test))
        return {
            self.shape.width_key(self.job.figure): (t.n_train + rows)
            * self.shape.width
            * (self.shape.depth + 1)
            * 2
            * mem.F64,
            f"{key}.targets.{self.job.target}.n_train": data[f"{key}.targets.{self.job.target}.n_train"]
            + 3 * t.n_train**2 * mem.F64,
            f"{key}.n_test": data[f"{key}.n_test"] + 4 * rows * t.n_train * mem.F64,
        }  # a block's kernel, its products


def _kinds(kind: str) -> tuple[str, ...]:
    """The store stages a figure of this kind reads per (target, depth)."""
    return ("train", "ntk", "entk") if kind == "lr_sweep" else ("train", "ntk")


@dataclass(frozen=True)
class FigureSpec(Spec):
    STUDY = STUDY
    STAGE = "figure"
    job: FigureJob
    kind: str  # depth_sweep | lr_sweep
    task: str
    depths: tuple[int, ...]
    targets: dict[str, Target]

    @classmethod
    def from_config(cls, config: dict, job: FigureJob) -> "FigureSpec":
        fig = _fig(config, job.figure)
        return cls(
            job=job,
            kind=fig["kind"],
            task=fig["task"],
            depths=tuple(sorted(fig["depths"])),
            targets={t: DataSpec.from_config(config, DataJob(job.figure, t)).target for t in sorted(fig["targets"])},
        )

    def inputs(self) -> dict[str, Ref]:
        """Per (target, depth) the train and ntk stores (entk too for an lr sweep); per target its data store, whose test
        labels give each kernel's test error its standard error over the test points."""
        return {
            **{
                f"{stage}/{t}/L{L}": Ref(stage, DepthJob(self.job.figure, t, L))
                for t in self.targets
                for L in self.depths
                for stage in _kinds(self.kind)
            },
            **{f"data/{t}": Ref("data", DataJob(self.job.figure, t)) for t in self.targets},
        }


@dataclass(frozen=True)
class FigureKind:
    kind: str  # depth_sweep | lr_sweep
    variant: str | None  # which robustness check of claim 6 a figure is (noise, classification, another g), or None


def _variant(fig: dict) -> str | None:
    ts = fig["targets"].values()
    if fig["task"] == "classification":
        return "classification"
    if any(t["noise"] > 0 for t in ts):
        return "label noise"
    if any(t["g"] != "product" for t in ts):
        return "generalized g"
    return None


@dataclass(frozen=True)
class ClaimsSpec(ClaimsBase):
    STUDY = STUDY
    STAGE = "claims"
    job: ClaimsJob
    figures: dict[str, FigureKind]
    scale_note: str

    @classmethod
    def from_config(cls, config: dict, job: ClaimsJob) -> "ClaimsSpec":
        figs = section(config)["figures"]
        scale = "; ".join(
            f"{name}: "
            + ", ".join(
                f"{t} (d={v['d']}, N={v['n_train']}" + (f", eps={v['noise']:g}" if v["noise"] else "") + ")"
                for t, v in sorted(f["targets"].items())
            )
            + (f", P={f['budget']:g}" if f["kind"] == "depth_sweep" else f", h={f['width']}")
            + f", L={sorted(f['depths'])}, N_test={f['n_test']}, seeds={len(f['seeds'])}"
            for name, f in sorted(figs.items())
        )
        return cls(
            job=job,
            figures={name: FigureKind(f["kind"], _variant(f)) for name, f in sorted(figs.items())},
            scale_note=f"Scale: {scale}; CV folds={section(config)['lrsearch']['folds']}.",
        )
