"""Code fingerprints: which modules a stage depends on, and what changes a fingerprint."""

import shutil

import pytest

from depthlab import provenance as prov
from depthlab.studies import get_study


def test_closures_follow_imports_and_separate_stages():
    mu = get_study("mori_ueda")
    train = prov.closure(mu.stage("train").module)
    assert "depthlab.core.trainer" in train and "depthlab.core.optim" in train and "depthlab.core.losses" in train
    assert "depthlab.studies.mori_ueda.plots" not in train and "depthlab.storage" not in train
    figure = prov.closure(mu.stage("figure").module)
    assert "depthlab.studies.mori_ueda.plots" in figure and "depthlab.plotstyle" in figure
    assert "depthlab.core.trainer" not in figure
    assert "depthlab.core.trainer" not in prov.closure(mu.stage("data").module)
    assert "depthlab.core.kernels" in prov.closure(mu.stage("ntk").module)


@pytest.fixture
def package_copy(tmp_path):
    dst = tmp_path / "depthlab"
    shutil.copytree(prov.PACKAGE_DIR, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_comments_docstrings_and_formatting_do_not_change_a_fingerprint_but_code_does(package_copy):
    entry = get_study("mori_ueda").stage("train").module
    before = prov.code_fingerprint(entry, package_copy)
    assert before == prov.code_fingerprint(entry)  # a copy fingerprints the same
    trainer = package_copy / "core" / "trainer.py"
    _edit(trainer, '"""The training loop', '"""A reworded docstring. The training loop')
    _edit(trainer, "    t0 = time.perf_counter()\n", "    # a new comment\n    t0 = time.perf_counter()   \n\n")
    assert prov.code_fingerprint(entry, package_copy) == before
    _edit(package_copy / "core" / "losses.py", "r * (2.0 / out.shape[1])", "r * (3.0 / out.shape[1])")
    after = prov.code_fingerprint(entry, package_copy)
    assert after != before
    # the plotting code is not part of the training stage's fingerprint
    fig_entry = get_study("mori_ueda").stage("figure").module
    fig_before = prov.code_fingerprint(fig_entry, package_copy)
    _edit(package_copy / "plotstyle.py", 'NTK = "--"', 'NTK = ":"')
    assert prov.code_fingerprint(entry, package_copy) == after
    assert prov.code_fingerprint(fig_entry, package_copy) != fig_before
