"""Every numeric key of every study's schema at its minimum and at its maximum: the validator refuses the value in one
line, or every store job of the config builds its spec, and the data jobs at the minimum run.  A value the schema allows
whose job cannot run is a schema that lies (separation.radial.dims up to 4 096 validated while the Eldan-Shamir data
job overflowed from d = 450: tests/studies/separation/test_radial.py runs that data past the overflow).

The data jobs at the maxima are built, not run: they are the expensive ones (acceleration's synthetic data at the
schema's d = 10 000 took 16 minutes on 2 cores), and running them all would take hours."""

from __future__ import annotations

import copy
import math

import pytest
import yaml
from helpers import ROOT

import depthlab.config as dlc
from depthlab.config import load_schema
from depthlab.jobs import JobGraph
from depthlab.provenance import canonical_json
from depthlab.runner import StageContext
from depthlab.studies import get_study, names


def numeric_keys(node: dict, path: tuple = ()) -> list[tuple[tuple, float | None, float | None, bool]]:
    """(path, minimum, maximum, integer) of every bounded number in a schema; "[]" stands for an array's items."""
    out = []
    if not isinstance(node, dict):
        return out
    types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
    if ("integer" in types or "number" in types) and ("minimum" in node or "maximum" in node):
        out.append((path, node.get("minimum"), node.get("maximum"), "integer" in types))
    for k, v in node.get("properties", {}).items():
        out += numeric_keys(v, (*path, k))
    if isinstance(node.get("items"), dict):
        out += numeric_keys(node["items"], (*path, "[]"))
    return out


def _set(section: dict, path: tuple, value) -> bool:
    """Set ``path`` in the validated section (an array of numbers: every item); False where the smoke config has no
    such key (an optional part it leaves out)."""
    node = section
    for k in path[:-1]:
        if k == "[]" or not isinstance(node, dict) or k not in node:
            return False
        node = node[k]
    last = path[-1]
    if last == "[]":
        return False  # handled by the parent key below (the list as a whole)
    if not isinstance(node, dict) or last not in node:
        return False
    node[last] = [value] if isinstance(node[last], list) else value
    return True


@pytest.mark.parametrize("study", sorted(names()))
def test_every_numeric_bound_is_refused_in_one_line_or_its_data_jobs_build_and_run(study):
    smoke = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    base = {**smoke, "studies": {study: smoke["studies"][study]}, "results": "/nonexistent/bounds"}
    full = dlc.validate(copy.deepcopy(base), memory=False)
    keys = numeric_keys(load_schema(study))
    for path, lo, hi, integer in keys:  # an array of numbers is set through its own key
        if path and path[-1] == "[]":
            keys.append((path[:-1], lo, hi, integer))
    seen, tried, ran = set(), 0, 0
    for path, lo, hi, integer in keys:
        for bound in (lo, hi):
            if bound is None or (path and path[-1] == "[]"):
                continue
            cfg = copy.deepcopy(full)
            if not _set(cfg["studies"][study], path, int(bound) if integer else float(bound)):
                continue
            tried += 1
            try:
                valid = dlc.validate(cfg, memory=True)
            except dlc.ConfigError as e:
                assert len(str(e).strip().splitlines()) == 1, (path, bound, str(e))
                continue
            graph = JobGraph(valid)
            for stage in get_study(study).store_stages():  # every job's spec builds, at every bound
                nodes = graph.stage(study, stage.name)
                if bound != lo or not stage.name.endswith("data"):
                    continue
                for node in nodes:
                    key = canonical_json(node.spec.to_dict())
                    if key in seen:
                        continue
                    seen.add(key)
                    ds = stage.function()(node.spec, {}, StageContext("cpu", lambda _: None, None))
                    floats = [v for v in ds.data_vars.values() if v.dtype.kind == "f" and v.size]
                    assert all(math.isfinite(float(abs(v).max())) for v in floats), (path, bound, stage.name)
                    ran += 1
    assert tried > 0 and ran > 0, (study, tried, ran)
