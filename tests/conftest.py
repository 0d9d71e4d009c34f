import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))  # also importable when the package is not installed

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
