"""The tiny study's jobs and typed specs (built once from the validated config)."""

from __future__ import annotations

from dataclasses import dataclass

from depthlab.study import ClaimsJob, FigureJob, Job, Ref, Spec

STUDY = "tiny"


def figures(config: dict) -> list[str]:
    return ["means"]


@dataclass(frozen=True)
class DrawsJob(Job):
    n: int


@dataclass(frozen=True)
class DrawsSpec(Spec):
    STUDY = STUDY
    STAGE = "draws"
    job: DrawsJob
    seed: int

    @classmethod
    def jobs(cls, config: dict) -> list[DrawsJob]:
        return [DrawsJob(n) for n in sorted(config["studies"][STUDY]["sizes"])]

    @classmethod
    def from_config(cls, config: dict, job: DrawsJob) -> "DrawsSpec":
        return cls(job=job, seed=config["seed"])

    def memory(self) -> dict[str, int]:
        """Peak bytes, keyed by the config key that drives them: the draws, a float64 copy and the store's buffer."""
        return {f"studies.{STUDY}.sizes": 3 * 8 * self.job.n}

    def work(self) -> float:
        """Element-operations (depthlab plan's cost model): one per draw."""
        return float(self.job.n)


@dataclass(frozen=True)
class FigureSpec(Spec):
    STUDY = STUDY
    STAGE = "figure"
    job: FigureJob
    sizes: tuple[int, ...]

    @classmethod
    def from_config(cls, config: dict, job: FigureJob) -> "FigureSpec":
        return cls(job=job, sizes=tuple(j.n for j in DrawsSpec.jobs(config)))

    def inputs(self) -> dict[str, Ref]:
        return {f"draws/n{n}": Ref("draws", DrawsJob(n)) for n in self.sizes}


@dataclass(frozen=True)
class ClaimsSpec(Spec):
    STUDY = STUDY
    STAGE = "claims"
    job: ClaimsJob
    sigmas: float

    @classmethod
    def from_config(cls, config: dict, job: ClaimsJob) -> "ClaimsSpec":
        return cls(job=job, sigmas=float(config["studies"][STUDY]["sigmas"]))
