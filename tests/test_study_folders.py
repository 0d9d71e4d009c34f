"""A study folder is untrusted code's declaration: its store paths stay below the results folder it is given, and a
broken folder on $DEPTHLAB_STUDY_PATH is one line naming the file, never a traceback (depthlab.study, depthlab.studies).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import ROOT

from depthlab.study import Stage, inside_path

DEPTHLAB = [str(Path(sys.executable).parent / "depthlab")]
TINY = ROOT / "docs" / "example_study" / "tiny"


def _tiny_config(tmp_path: Path) -> Path:
    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    cfg["results"] = str(tmp_path / "r")
    cfg["studies"] = {"tiny": {"sizes": [5]}}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _run(*args: str, studies: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*DEPTHLAB, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "DEPTHLAB_STUDY_PATH": str(studies)},
    )


@pytest.mark.parametrize(
    "pattern", ["../../escape/n{n}.zarr", "/abs/n{n}.zarr", "draws/../../n{n}.zarr", "draws//n{n}.zarr", "~/n{n}.zarr"]
)
def test_a_store_path_pattern_that_leaves_the_study_folder_is_refused_naming_the_stage(pattern):
    with pytest.raises(ValueError, match=r"stage draws: its store path .* must stay below"):
        Stage("draws", object, ".draws:make_draws", path=pattern)


def test_a_store_path_pattern_below_the_folder_is_accepted():
    assert Stage("draws", object, ".draws:make_draws", path="draws/n{n}.zarr").path == "draws/n{n}.zarr"
    assert inside_path("a/b/c.zarr") is None
    assert inside_path("a/../c.zarr") and inside_path("/c.zarr") and inside_path("a\\..\\c.zarr")


@pytest.mark.parametrize(
    "edit, says",
    [
        (('path="draws/n{n}.zarr"', 'path="../../escape/n{n}.zarr"'), "stage draws: its store path"),
        (('path="draws/n{n}.zarr"', 'path="/tmp/escape/n{n}.zarr"'), "stage draws: its store path"),
        (
            ("STUDY = Study(", 'raise RuntimeError("broken on purpose")\nSTUDY = Study('),
            "RuntimeError: broken on purpose",
        ),
        (("STUDY = Study(", "STUDY = 42\n_unused = Study("), "must define STUDY = Study(name='tiny'"),
    ],
)
def test_a_broken_study_folder_is_one_line_naming_it_for_validate_and_plan(tmp_path, edit, says):
    """A study on $DEPTHLAB_STUDY_PATH whose store path leaves its folder (up, or absolute), whose __init__ raises, or
    whose STUDY is not a Study: `validate` and `plan` each say so in one line naming the study's file, exit 2, and
    write nothing (before, the escaping study validated and its run wrote two folders above the results)."""
    studies = tmp_path / "studies"
    shutil.copytree(TINY, studies / "tiny")
    init = studies / "tiny" / "__init__.py"
    init.write_text(init.read_text().replace(*edit))
    cfg = _tiny_config(tmp_path)
    for command in ("validate", "plan"):
        p = _run(command, str(cfg), studies=studies, cwd=tmp_path)
        assert p.returncode == 2, (command, p.stdout, p.stderr)
        assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert says in p.stderr and "tiny" in p.stderr, p.stderr
    assert not (tmp_path / "r").exists() and not (tmp_path / "escape").exists()


def test_an_invalid_schema_yaml_is_one_line_naming_the_file(tmp_path):
    studies = tmp_path / "studies"
    shutil.copytree(TINY, studies / "tiny")
    (studies / "tiny" / "schema.yaml").write_text("type: object\nproperties: {sizes: [unclosed\n")
    cfg = _tiny_config(tmp_path)
    for command in ("validate", "plan"):
        p = _run(command, str(cfg), studies=studies, cwd=tmp_path)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert str(studies / "tiny" / "schema.yaml") in p.stderr, p.stderr
