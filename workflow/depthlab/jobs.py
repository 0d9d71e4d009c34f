"""The job graph of a config: every store job of every configured study, with its typed spec, its path and the jobs it
reads and is read by, built once.

Everything that walks a config's jobs walks this: the validator's memory check (:func:`depthlab.config.job_memory`),
the plan's table (:mod:`depthlab.costs.report`), the scheduler's priorities (:mod:`depthlab.placement`), the fork, the
paper check, ``open_results``'s completeness check and the workflow's rules (``rules/common.smk``).  A spec is built
at most once per job, however many of them ask.

    graph = JobGraph(config)
    for node in graph:                        # every store job: sorted studies, each study's stage order, job order
        node.study, node.stage, node.job, node.spec, node.path, node.inputs
    graph.stage("mori_ueda", "train")         # one stage's jobs
    graph.node("mori_ueda", ref)              # one job by its Ref
    graph.readers(node)                       # the store jobs that read its output
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from .study import Ref, Spec


@dataclass(frozen=True)
class Node:
    """One store job: where it lies (``path``, below the results root), what it is (``spec``) and what it reads
    (``inputs``: the input name its stage function reads under -> the (study, Ref) of that store)."""

    study: str
    stage: str
    job: Any
    spec: Spec
    path: str

    @property
    def ref(self) -> Ref:
        return Ref(self.stage, self.job)

    @property
    def key(self) -> tuple[str, Ref]:
        return (self.study, self.ref)

    @property
    def inputs(self) -> dict[str, tuple[str, Ref]]:
        return {name: (self.study, ref) for name, ref in self.spec.inputs().items()}


class JobGraph:
    """The store jobs of ``config`` (a validated config).  Nodes are built on first use, stage by stage."""

    def __init__(self, config: dict):
        self.config = config
        self.studies = sorted(config["studies"])
        self._stages: dict[tuple[str, str], list[Node]] = {}
        self._nodes: dict[tuple[str, Ref], Node] = {}
        self._readers: dict[tuple[str, Ref], list[Node]] | None = None

    @staticmethod
    def _study(name: str):
        from .studies import get_study

        return get_study(name)

    def stage(self, study: str, stage: str) -> list[Node]:
        """Every job of one store stage, in the order its spec lists them."""
        key = (study, stage)
        if key not in self._stages:
            jobs = self._study(study).stage(stage).spec.jobs(self.config)
            self._stages[key] = [self.node(study, Ref(stage, job)) for job in jobs]
        return self._stages[key]

    def spec(self, study: str, stage: str, job: Any) -> Spec:
        """One job's spec, built once (a job the config does not list too: a rule's wildcards may name one)."""
        return self.node(study, Ref(stage, job)).spec

    def node(self, study: str, ref: Ref) -> Node:
        key = (study, ref)
        if key not in self._nodes:
            st = self._study(study)
            self._nodes[key] = Node(
                study, ref.stage, ref.job, st.spec(self.config, ref.stage, ref.job), f"{study}/{st.path(ref)}"
            )
        return self._nodes[key]

    def __iter__(self) -> Iterator[Node]:
        for study in self.studies:
            for st in self._study(study).store_stages():
                yield from self.stage(study, st.name)

    def readers(self, node: Node) -> list[Node]:
        """The store jobs of the config that read ``node``'s output."""
        if self._readers is None:
            self._readers = {}
            for n in self:
                for key in n.inputs.values():
                    self._readers.setdefault(key, []).append(n)
        return self._readers.get(node.key, [])

    def lineage(self, study: str, refs) -> dict[str, Node]:
        """Every store the stores ``refs`` read, directly or not, and themselves: path below the results root -> node."""
        out: dict[str, Node] = {}
        todo = list(refs)
        while todo:
            node = self.node(study, todo.pop())
            if node.path not in out:
                out[node.path] = node
                todo += list(node.spec.inputs().values())
        return out
