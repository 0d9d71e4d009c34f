"""Every stage's code fingerprint closure (the modules whose code decides its output) against a golden file, so that a
change of what a stage's fingerprint covers is a reviewed diff, not a silent rerun of every job of the stage.

After a deliberate change: ``DEPTHLAB_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_fingerprint_closures.py``
rewrites tests/golden/fingerprint_closures.txt; review its diff with the change."""

from __future__ import annotations

import os
from pathlib import Path

from depthlab import provenance as prov
from depthlab.studies import get_study, names

GOLDEN = Path(__file__).resolve().parent / "golden" / "fingerprint_closures.txt"
# what no claims stage may cover: the cost model, placement, forks, the config layer and the I/O layer (a recalibrated
# cost table or a moved store writer would rerun every claims job)
NOT_IN_CLAIMS = (
    "depthlab.costs",
    "depthlab.placement",
    "depthlab.fork",
    "depthlab.config",
    "depthlab.storage",
    "depthlab.decide",
    "depthlab.jobs",
    "depthlab.probe",
    "depthlab.gpumodel",
)


def closures() -> str:
    lines = []
    for study in names():
        for stage in get_study(study).stages:
            lines.append(f"{study} {stage.name}: " + " ".join(prov.closure(stage.fingerprint_modules)))
    return "\n".join(lines) + "\n"


def test_every_stages_fingerprint_closure_is_the_reviewed_one():
    now = closures()
    if os.environ.get("DEPTHLAB_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(now)
    assert now == GOLDEN.read_text(), "a fingerprint closure changed: review it, then DEPTHLAB_UPDATE_GOLDEN=1 (above)"


def test_no_claims_stage_covers_the_cost_model_or_the_io_layer():
    for study in names():
        stage = get_study(study).kind_stage("claims")
        bad = [m for m in prov.closure(stage.fingerprint_modules) if m.startswith(NOT_IN_CLAIMS)]
        assert not bad, (study, bad)
