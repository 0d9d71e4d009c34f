"""The ``depthlab`` command's start-up (depthlab._launch): the garbage collector is off while a job's modules load and
on, with start-up frozen, while the job runs; calling ``cli.main`` in-process (tests, notebooks) changes nothing."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

from depthlab import cli
from depthlab import config as cfg
from depthlab.studies import get_study

from helpers import ROOT

# Records the collector's state when the stage's own code starts (run_store is what calls it), then runs the command.
_PROBE = r"""
import gc, json, sys
from depthlab import runner
seen = {}
_run_store = runner.run_store
def probe(*args, **kw):
    seen.update(enabled=gc.isenabled(), frozen=gc.get_freeze_count(), torch="torch" in sys.modules)
    return _run_store(*args, **kw)
runner.run_store = probe
sys.argv = ["depthlab", *sys.argv[1:]]
from depthlab._launch import main
main()
seen.update(enabled_after=gc.isenabled())
print("PROBE " + json.dumps(seen))
"""


def _probe(args: list[str], cwd) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.split("PROBE ", 1)[1])


def test_a_stage_job_runs_with_the_collector_on_and_its_start_up_frozen(tmp_path):
    config = cfg.load(ROOT / "config/smoke.yaml")
    spec = get_study("mori_ueda").spec(config, "data", {"figure": "fig1", "target": "1-local"})
    out = tmp_path / "results" / "data.zarr"
    seen = _probe(
        ["stage", "--spec", json.dumps(spec.to_dict()), "--output", str(out), "--results", str(tmp_path / "results")],
        tmp_path,
    )
    assert out.is_dir()
    assert seen["enabled"] and seen["enabled_after"]
    assert seen["frozen"] > 10_000  # the modules loaded before the job ran (numpy, xarray, zarr, depthlab ...)


def test_every_other_command_turns_the_collector_back_on_before_it_works(tmp_path):
    seen = _probe(["validate", str(ROOT / "config/smoke.yaml")], tmp_path)
    assert seen == {"enabled_after": True}


def test_calling_main_in_process_leaves_the_collector_alone(capsys):
    frozen = gc.get_freeze_count()
    cli.main(["validate", str(ROOT / "config/smoke.yaml")])
    assert gc.isenabled() and gc.get_freeze_count() == frozen
