"""Bietti & Bach (spectra): the cross-field config rules and one typed spec per stage.

Jobs, paths under ``<results>/spectra/``:

  eigen     eigen/{kernel}/d{d}.zarr     mu_k, k = 0..k_max, of one kernel on S^(d-1), for every depth
                                         of that kernel, by two quadratures; decay fits per depth and parity
  krr_data  krr/data.zarr                sphere points and bump targets, one set per trial
  krr       krr/{kernel}/L{depth}.zarr   KRR test MSE per (trial, n, ridge), best over ridges, fitted rate

One eigen job holds every depth of its (kernel, d): a job costs about 1.8 s of start-up
(torch, xarray, zarr imports) and its quadratures about 0.1 s per depth, so per-depth
jobs would spend most of the study's time starting Python.
"""

from __future__ import annotations

from dataclasses import dataclass

from depthlab import memory as mem
from depthlab.config import ConfigError
from depthlab.study import ClaimsBase, ClaimsJob, FigureJob, Job, Ref, Spec

from .families import FIXED_DEPTH

STUDY = "spectra"
FIGURES = ("eigenvalues", "mori_ueda_eigenvalues", "slopes", "learning_curves")


def section(config: dict) -> dict:
    return config["studies"][STUDY]


def check(sec: dict, config: dict) -> None:
    where = f"studies.{STUDY}"
    e = sec["eigen"]
    if e["fit_k_min"] >= e["k_max"]:
        raise ConfigError(
            f"config error at {where}.eigen.fit_k_min: {e['fit_k_min']} must be below eigen.k_max = {e['k_max']}"
        )
    k = sec["krr"]
    for i, entry in enumerate(k["kernels"]):
        fixed = FIXED_DEPTH.get(entry["kernel"])
        if fixed is not None and entry["depth"] != fixed:
            raise ConfigError(
                f"config error at {where}.krr.kernels.{i}.depth: kernel {entry['kernel']} exists at depth "
                f"{fixed} only, got {entry['depth']}"
            )
        if fixed is None and entry["depth"] < 1:
            raise ConfigError(
                f"config error at {where}.krr.kernels.{i}.depth: kernel {entry['kernel']} needs depth >= 1"
            )
    if max(k["n_train"]) < 2:
        raise ConfigError(f"config error at {where}.krr.n_train: need a training-set size of at least 2")


def figures(config: dict) -> list[str]:
    kernels = section(config)["eigen"]["kernels"]
    return [f for f in FIGURES if f != "mori_ueda_eigenvalues" or any(k.startswith("mu_") for k in kernels)]


def claims_inputs(config: dict) -> list[str]:
    return [f for f in figures(config) if f in ("slopes", "learning_curves")]


def depths_of(config: dict, kernel: str) -> list[int]:
    """The depths an eigen job computes for ``kernel``."""
    e = section(config)["eigen"]
    if kernel in FIXED_DEPTH:
        return [FIXED_DEPTH[kernel]]
    return sorted(e["mori_ueda_depths"] if kernel.startswith("mu_") else e["depths"])


@dataclass(frozen=True)
class EigenJob(Job):
    kernel: str
    d: int


@dataclass(frozen=True)
class KrrDataJob(Job):
    pass


@dataclass(frozen=True)
class KrrJob(Job):
    kernel: str
    depth: int


@dataclass(frozen=True)
class EigenSpec(Spec):
    STUDY = STUDY
    STAGE = "eigen"
    job: EigenJob
    depths: tuple[int, ...]
    beta: float | None  # the Mori & Ueda kernels' bias scale (None for the others)
    k_max: int
    panels: int
    rtol: float
    fit_k_min: int

    @classmethod
    def jobs(cls, config: dict) -> list[EigenJob]:
        e = section(config)["eigen"]
        return [EigenJob(k, d) for k in e["kernels"] for d in sorted(e["dims"])]

    @classmethod
    def from_config(cls, config: dict, job: EigenJob) -> "EigenSpec":
        e = section(config)["eigen"]
        return cls(
            job=job,
            depths=tuple(depths_of(config, job.kernel)),
            beta=float(e["beta"]) if job.kernel.startswith("mu_") else None,
            k_max=e["k_max"],
            panels=e["panels"],
            rtol=float(e["rtol"]),
            fit_k_min=e["fit_k_min"],
        )

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        return float(len(self.depths) * self.k_max * self.panels)

    def memory(self) -> dict[str, int]:
        nodes = self.panels * 24 + 2 * 40 * 24
        return {f"studies.{STUDY}.eigen.k_max": 3 * (self.k_max + 1) * nodes * mem.F64}


@dataclass(frozen=True)
class KrrDataSpec(Spec):
    STUDY = STUDY
    STAGE = "krr_data"
    job: KrrDataJob
    d: int
    n_train: int  # the largest training-set size of the curve
    n_test: int
    threshold: float
    trials: int
    seed: int

    @classmethod
    def jobs(cls, config: dict) -> list[KrrDataJob]:
        return [KrrDataJob()]

    @classmethod
    def from_config(cls, config: dict, job: KrrDataJob) -> "KrrDataSpec":
        k = section(config)["krr"]
        return cls(
            job=job,
            d=k["d"],
            n_train=max(k["n_train"]),
            n_test=k["n_test"],
            threshold=float(k["threshold"]),
            trials=k["trials"],
            seed=config["seed"],
        )

    def memory(self) -> dict[str, int]:
        return {f"studies.{STUDY}.krr.n_test": self.trials * mem.data(self.n_train + self.n_test, self.d)}


@dataclass(frozen=True)
class KrrSpec(Spec):
    STUDY = STUDY
    STAGE = "krr"
    job: KrrJob
    data: KrrDataSpec
    n_train: tuple[int, ...]
    log10_ridges: tuple[float, ...]  # largest ridge first
    fit_n_min: int

    @classmethod
    def jobs(cls, config: dict) -> list[KrrJob]:
        return [KrrJob(e["kernel"], e["depth"]) for e in section(config)["krr"]["kernels"]]

    @classmethod
    def from_config(cls, config: dict, job: KrrJob) -> "KrrSpec":
        k = section(config)["krr"]
        return cls(
            job=job,
            data=KrrDataSpec.from_config(config, KrrDataJob()),
            n_train=tuple(sorted(k["n_train"])),
            log10_ridges=tuple(float(v) for v in sorted(k["log10_ridges"], reverse=True)),
            fit_n_min=k["fit_n_min"],
        )

    def inputs(self) -> dict[str, Ref]:
        return {"data": Ref("krr_data", KrrDataJob())}

    def work(self) -> float:
        """Element-operations of this job (the cost model of depthlab.costs.model: seconds = overhead + work / rate)."""
        t = self.data.n_test
        return float(sum(4 * n**3 + 2 * t * n + n * n * len(self.log10_ridges) for n in self.n_train))

    # float64 arrays of N x N and N_test x N that a krr job holds at its peak, per unit of depth and beyond it: the
    # kernel's elementwise temporaries grow with the depth; eigh holds its copy, the eigenvectors and syevd's 2 N^2 of
    # workspace beside the Gram matrices.  Measured in a child process (tests/core/test_memory_model.py), N = 2 000:
    # rf_bias L1 10.5 N^2 + 7.4 Nt N, ntk_bias L1 11.2 + 8.6, rf and ntk L3 12.9 + 9.7, laplace 6.9 + 1.1.  `make
    # paper-check` saw rf_bias L1 at n = 5 000 peak at 2.05 GiB against the 0.80 of the old count (4 N^2 + 3 Nt N).
    GRAM_SQ = (11.0, 1.2)  # N^2 copies: 11 + 1.2 x depth
    GRAM_TEST = (9.0, 1.0)  # N_test x N copies: 9 + 1.0 x depth

    def memory(self) -> dict[str, int]:
        N, Nt, L = self.data.n_train, self.data.n_test, max(1, int(self.job.depth))
        sq, test = self.GRAM_SQ[0] + self.GRAM_SQ[1] * L, self.GRAM_TEST[0] + self.GRAM_TEST[1] * L
        return {
            f"studies.{STUDY}.krr.n_train": mem.data(N + Nt, self.data.d) + int((sq * N * N + test * Nt * N) * mem.F64)
        }


@dataclass(frozen=True)
class TheorySpec(Spec):
    STUDY = STUDY
    STAGE = "theory"
    job: KrrJob
    d: int
    threshold: float
    n_train: tuple[int, ...]
    log10_ridges: tuple[float, ...]
    k_max: int  # degrees of the spectrum computed (beyond: the trace identity)
    panels: int
    rtol: float

    @classmethod
    def jobs(cls, config: dict) -> list[KrrJob]:
        return KrrSpec.jobs(config)

    @classmethod
    def from_config(cls, config: dict, job: KrrJob) -> "TheorySpec":
        k = section(config)["krr"]
        return cls(
            job=job,
            d=k["d"],
            threshold=float(k["threshold"]),
            n_train=tuple(sorted(k["n_train"])),
            log10_ridges=tuple(float(v) for v in sorted(k["log10_ridges"], reverse=True)),
            k_max=k["theory_k_max"],
            panels=k["theory_panels"],
            rtol=float(section(config)["eigen"]["rtol"]),
        )

    def memory(self) -> dict[str, int]:
        return {f"studies.{STUDY}.krr.theory_k_max": 3 * (self.k_max + 1) * (self.panels * 24 + 2 * 40 * 24) * mem.F64}


@dataclass(frozen=True)
class FigureSpec(Spec):
    STUDY = STUDY
    STAGE = "figure"
    job: FigureJob
    refs: tuple[tuple[str, str, int], ...]  # (stage, kernel, d or depth) of every store the figure reads

    @classmethod
    def from_config(cls, config: dict, job: FigureJob) -> "FigureSpec":
        if job.figure == "learning_curves":
            refs = [(stage, j.kernel, j.depth) for j in KrrSpec.jobs(config) for stage in ("krr", "theory")]
        else:
            mu = job.figure == "mori_ueda_eigenvalues"
            refs = [
                ("eigen", j.kernel, j.d)
                for j in EigenSpec.jobs(config)
                if job.figure == "slopes" or j.kernel.startswith("mu_") == mu
            ]
        return cls(job=job, refs=tuple(refs))

    def inputs(self) -> dict[str, Ref]:
        return {
            f"{stage}/{kernel}/{'d' if stage == 'eigen' else 'L'}{n}": Ref(
                stage, EigenJob(kernel, n) if stage == "eigen" else KrrJob(kernel, n)
            )
            for stage, kernel, n in self.refs
        }


@dataclass(frozen=True)
class ClaimsSpec(ClaimsBase):
    STUDY = STUDY
    STAGE = "claims"
    job: ClaimsJob
    slope_tolerance: float
    depth_spread: float
    rate_spread: float
    theory_factor: float  # B3: predicted and measured best-over-ridge test MSE within this factor
    theory_n_min: int  # B3: judged over n >= this
    rate_n_min: int  # B2: the rates (and their SEs) are fitted over n >= this (the KRR stage's fit_n_min)
    scale_note: str

    @classmethod
    def from_config(cls, config: dict, job: ClaimsJob) -> "ClaimsSpec":
        e, k = section(config)["eigen"], section(config)["krr"]
        return cls(
            job=job,
            slope_tolerance=0.1,
            depth_spread=0.2,
            rate_spread=0.1,
            theory_factor=1.25,
            theory_n_min=100,
            rate_n_min=k["fit_n_min"],
            scale_note=f"Scale: eigenvalues k = 0..{e['k_max']} on S^(d-1) for d = {sorted(e['dims'])}, "
            f"depths {sorted(e['depths'])} (Mori & Ueda kernel: {sorted(e['mori_ueda_depths'])}, beta = {e['beta']}), "
            f"{e['panels']} quadrature panels, agreement rtol {e['rtol']:g}, fits against log(k + (d-2)/2) over the reliable "
            f"k = {e['fit_k_min']} ... {e['k_max']}; "
            f"KRR on S^{k['d'] - 1}, n = {sorted(k['n_train'])}, {k['n_test']} test points, "
            f"{k['trials']} trial(s), rates over n >= {k['fit_n_min']}.",
        )
