"""Code fingerprints: which modules a stage depends on, what changes a fingerprint, and which stages an edit reruns.

The rerun rules of the layout (README "What reruns") are checked here in-process, on an edited copy of the
package: a stage reruns exactly when its fingerprint changes (tests/test_workflow.py shows once, with Snakemake,
that the fingerprint in a job's params is what reruns it).
"""

import shutil

import pytest

from depthlab import provenance as prov
from depthlab.studies import get_study, names


def test_closures_follow_imports_and_separate_stages():
    mu = get_study("mori_ueda")
    train = prov.closure(mu.stage("train").fingerprint_modules)
    assert {"depthlab.core.trainer", "depthlab.core.optim.sgd", "depthlab.core.losses.mse"} <= set(train)
    assert "depthlab.core.losses.hinge" not in train and "depthlab.core.optim.adam" not in train
    assert "depthlab.studies.mori_ueda.plots" not in train and "depthlab.storage" not in train
    assert "depthlab.studies.mori_ueda.specs" not in train, "type-hint-only imports are not followed"
    figure = prov.closure(mu.stage("figure").fingerprint_modules)
    assert {"depthlab.studies.mori_ueda.plots", "depthlab.plotstyle", "depthlab.render"} <= set(figure)
    assert "depthlab.core.trainer" not in figure
    assert "depthlab.core.trainer" not in prov.closure(mu.stage("data").module)
    assert "depthlab.core.kernel_regression" in prov.closure(mu.stage("ntk").module)


@pytest.fixture
def package_copy(tmp_path):
    dst = tmp_path / "depthlab"
    shutil.copytree(prov.PACKAGE_DIR, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def test_comments_docstrings_and_formatting_do_not_change_a_fingerprint_but_code_does(package_copy):
    entry = get_study("mori_ueda").stage("train").fingerprint_modules
    before = prov.code_fingerprint(entry, package_copy)
    assert before == prov.code_fingerprint(entry)  # a copy fingerprints the same
    trainer = package_copy / "core" / "trainer.py"
    _edit(trainer, '"""The training loop', '"""A reworded docstring. The training loop')
    _edit(trainer, "    t0 = time.perf_counter()\n", "    # a new comment\n    t0 = time.perf_counter()   \n\n")
    assert prov.code_fingerprint(entry, package_copy) == before
    _edit(package_copy / "core" / "losses" / "mse.py", "r * (2.0 / out.shape[1])", "r * (3.0 / out.shape[1])")
    after = prov.code_fingerprint(entry, package_copy)
    assert after != before
    # the plotting code is not part of the training stage's fingerprint
    fig_entry = get_study("mori_ueda").stage("figure").fingerprint_modules
    fig_before = prov.code_fingerprint(fig_entry, package_copy)
    _edit(package_copy / "plotstyle.py", 'NTK = "--"', 'NTK = ":"')
    assert prov.code_fingerprint(entry, package_copy) == after
    assert prov.code_fingerprint(fig_entry, package_copy) != fig_before


def _stages():
    return [(s, st) for s in names() for st in get_study(s).stages]


def rerun(package_copy, path, old, new) -> set[tuple[str, str]]:
    """The (study, stage) pairs whose fingerprint an edit of ``path`` (relative to the package) changes."""
    before = {(s, st.name): prov.code_fingerprint(st.fingerprint_modules, package_copy) for s, st in _stages()}
    _edit(package_copy / path, old, new)
    return {
        k
        for k, fp in before.items()
        if prov.code_fingerprint(get_study(k[0]).stage(k[1]).fingerprint_modules, package_copy) != fp
    }


def test_editing_the_hinge_loss_reruns_no_mori_ueda_job(package_copy):
    changed = rerun(
        package_copy,
        "core/losses/hinge.py",
        "torch.relu(1.0 - y * out).mean(1)",
        "torch.relu(1.0 - y * out).mean(1) * 1.0",
    )
    assert changed == {("fractals", "train")}


def test_editing_the_cuda_kernel_path_reruns_no_data_stage(package_copy):
    changed = rerun(
        package_copy,
        "core/kernel_regression.py",
        "    pred = np.empty((K, D, T.shape[0]))",
        "    pred = np.zeros((K, D, T.shape[0]))",
    )
    assert changed == {("mori_ueda", "ntk")}
    assert not any(stage.endswith("data") for _, stage in changed)


def test_editing_the_trainer_reruns_exactly_the_training_stages(package_copy):
    changed = rerun(
        package_copy, "core/trainer.py", "    t0 = time.perf_counter()\n", "    t0 = time.perf_counter() + 0.0\n"
    )
    assert changed == {
        ("mori_ueda", "lrsearch"),
        ("mori_ueda", "train"),
        ("separation", "sawtooth"),
        ("separation", "radial"),
        ("fractals", "train"),
        ("fractals", "cnn"),
    }


def test_the_random_streams_hold_no_table_of_every_studys_names(package_copy):
    """A new study's new stream is a new name in its own code: core/seeds.py (which every data stage imports) is untouched."""
    from depthlab.core import seeds

    assert seeds.seed(0, "a_stream_no_study_uses_yet") != seeds.seed(0, "another_new_stream")
    assert not any(isinstance(v, dict) and "x_train" in v for v in vars(seeds).values())


def test_the_csv_format_is_part_of_every_figure_and_claims_fingerprint(package_copy):
    changed = rerun(package_copy, "render.py", 'CSV_FLOAT_FORMAT = "%.6g"', 'CSV_FLOAT_FORMAT = "%.2g"')
    assert changed == {(s, st.name) for s, st in _stages() if st.kind in ("figure", "claims")}


def test_a_copy_inside_an_unrelated_repository_records_no_commit_and_a_declared_version_is_marked(
    tmp_path, monkeypatch
):
    """A copy of the code without .git, unpacked inside an unrelated git repository, recorded that
    repository's HEAD as a clean code version; DEPTHLAB_CODE_VERSION replaced the recorded version ('deadbeef-clean' from
    a dirty tree).  Now: 'unknown' with a hash of the code files, and a declared version beside the real one."""
    import subprocess

    from depthlab import provenance as prov

    home = tmp_path / "home"
    code = home / "src" / "depthlab-copy"
    code.mkdir(parents=True)
    (code / "mod.py").write_text("x = 1\n")
    git = ["git", "-C", str(home), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "dotfiles"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    assert prov.git_version(code) == head  # what was recorded before: the home repository's HEAD
    got = prov.git_version(code, roots=(code,))
    assert got.startswith("unknown (inside the repository") and head not in got
    assert prov.code_files_hash(code)[:16] in got
    (code / "mod.py").write_text("x = 2\n")
    prov.git_version.cache_clear()
    assert prov.git_version(code, roots=(code,)) != got  # the hash follows the code
    assert prov.git_version(home, roots=(home,)).startswith(head)  # a repository of its own: its commit
    monkeypatch.setenv("DEPTHLAB_CODE_VERSION", "deadbeef-clean")
    prov.code_version.cache_clear()  # cached per process: cleared before and after, so no other test sees this value
    try:
        v = prov.code_version()
    finally:
        prov.code_version.cache_clear()
    assert (
        v.startswith("deadbeef-clean (declared by $DEPTHLAB_CODE_VERSION; the checkout is ") and v != "deadbeef-clean"
    )


def _import_cycles(root):
    """Strongly connected sets of modules (more than one) of the package under ``root``, by the imports the code
    fingerprints follow (lazy ones inside functions included, TYPE_CHECKING ones not)."""
    import sys as _sys

    from depthlab import provenance as P

    mods = []
    for f in root.rglob("*.py"):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        mods.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    graph = {m: P._imports(m, P._module_path(m, root), root) - {m} for m in mods}
    index, low, stack, on, out = {}, {}, [], set(), []
    _sys.setrecursionlimit(max(_sys.getrecursionlimit(), 5000))

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_the_package_has_no_import_cycle(tmp_path):
    """DESIGN.md's two knots: provenance -> studies (BUILTIN) -> study -> provenance, and fractals/accuracy <->
    fractals/specs (CHANCE and Training).  Provenance now names the built-in studies' folder itself, and CHANCE lives in
    fractals/chance.py below both.  The finder finds a cycle where there is one (a package written here)."""
    from depthlab import provenance as P

    assert _import_cycles(P.PACKAGE_DIR) == []
    pkg = tmp_path / "depthlab"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from depthlab import b\n")
    (pkg / "b.py").write_text("def f():\n    from depthlab.sub import c\n")
    (pkg / "sub" / "c.py").write_text("import depthlab.a\n")
    assert _import_cycles(pkg) == [["depthlab.a", "depthlab.b", "depthlab.sub.c"]]
