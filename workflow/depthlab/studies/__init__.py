"""The study registry: every depth study, its stages and its spec builders, by name.

A study is a subpackage ``depthlab.studies.<name>`` whose ``__init__`` defines
``STUDY`` (a :class:`Study`).  Stage entries are "module:function" strings, so
looking a study up imports nothing heavy: the CLI imports only the module of
the stage it runs, and :mod:`depthlab.provenance` fingerprints exactly that
module and what it imports.

Stage kinds and their entry functions' signatures:

* ``store``:  fn(spec, inputs: {name: xr.Dataset}, ctx: StageContext) -> xr.Dataset  (a zarr store)
* ``figure``: fn(spec, inputs: {name: xr.Dataset}) -> (matplotlib Figure, pandas DataFrame)
* ``claims``: fn(spec, tables: {figure name: DataFrame}) -> list[depthlab.claims.Verdict]
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

STUDIES = ("mori_ueda", "spectra", "separation", "fractals")


@dataclass(frozen=True)
class Stage:
    entry: str  # "module:function"
    kind: str = "store"  # store | figure | claims

    @property
    def module(self) -> str:
        return self.entry.partition(":")[0]

    def function(self) -> Callable[..., Any]:
        mod, _, fn = self.entry.partition(":")
        return getattr(importlib.import_module(mod), fn)


@dataclass(frozen=True)
class Study:
    name: str
    title: str  # shown in figure captions, the claims index and the HTML report
    specs_module: str  # check(section, config), spec(config, stage, job), and the job grid helpers
    stages: dict[str, Stage] = field(default_factory=dict)

    def specs(self) -> ModuleType:
        return importlib.import_module(self.specs_module)

    def stage(self, name: str) -> Stage:
        if name not in self.stages:
            raise KeyError(f"study {self.name} has no stage {name!r}; stages: {', '.join(sorted(self.stages))}")
        return self.stages[name]


def get_study(name: str) -> Study:
    """The registered study ``name`` (KeyError naming the known studies otherwise)."""
    if name not in STUDIES:
        raise KeyError(f"unknown study {name!r}; known studies: {', '.join(STUDIES)}")
    return importlib.import_module(f"{__name__}.{name}").STUDY
