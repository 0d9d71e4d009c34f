import sys
from pathlib import Path

import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))  # also importable when the package is not installed
sys.path.insert(0, str(ROOT / "tests"))  # the shared helpers

from helpers import SmokeRun, smk  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> SmokeRun:
    """config/smoke.yaml, every study, run once for the whole session (the runs that are only read share it)."""
    work = tmp_path_factory.mktemp("smoke")
    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    cfg_path = work / "smoke.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    smk(work, "--configfile", str(cfg_path))
    import depthlab.config as dlc

    return SmokeRun(work, dlc.validate(cfg), cfg_path)  # validated: defaults filled in, as the workflow sees it


def pytest_collection_modifyitems(config, items):
    """Run the SLURM test last: once slurm-wlm is installed, a stopped cluster makes the SLURM executor plugin's
    import-time probe (`scontrol show config`) wait ~9 s in every later Snakemake call."""
    items.sort(key=lambda item: "test_slurm.py" in str(item.fspath))
