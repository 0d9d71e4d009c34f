"""The scripts under docs/ that publish and count a run's claims."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # a full audit --strict of the smoke run (about a minute): `make test` stays under 10 minutes
def test_publish_copies_the_runs_claims_below_a_header_that_says_what_ran(smoke_run, tmp_path):
    out = tmp_path / "claims.md"
    p = subprocess.run(
        [
            sys.executable,
            str(ROOT / "docs" / "publish_run.py"),
            str(smoke_run.results),
            str(smoke_run.config_path),
            str(out),
            "--history",
            "the smoke run, rerun once",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    text = out.read_text()
    head, body = text.split("---\n\n", 1)
    index = (smoke_run.results / "claims.md").read_text()
    assert "/claims.md)" in index and "/claims.md)" not in body  # the index's links to its studies: dead from docs/
    assert body == re.sub(r"\[([^\]]+)\]\([a-z_]+/claims\.md\)", r"\1", index)  # else byte for byte
    assert "Code version `" in head and "speed probe" in head and "core-minutes in all" in head and "audit OK" in head
    assert "How this run came to be: the smoke run, rerun once" in head
    # a folder whose audit fails is not published
    bad = tmp_path / "bad"
    import shutil

    shutil.copytree(smoke_run.results, bad)
    claims = bad / "mori_ueda" / "claims.md"
    claims.write_text(claims.read_text() + "tampered\n")
    p = subprocess.run(
        [
            sys.executable,
            str(ROOT / "docs" / "publish_run.py"),
            str(bad),
            str(smoke_run.config_path),
            str(tmp_path / "no.md"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode != 0 and "nothing published" in p.stderr and not (tmp_path / "no.md").exists()


def test_the_verdict_table_counts_extensions_apart(smoke_run):
    sys.path.insert(0, str(ROOT / "docs"))
    import verdict_table

    text = (smoke_run.results / "claims.md").read_text()
    main = verdict_table.rows(text)
    ext = verdict_table.rows(text, extensions=True)
    head, tail = text.split("## Extensions")
    assert len(ext) == sum(1 for ln in tail.splitlines() if ln.startswith("| ") and not ln.startswith("| study |"))
    assert len(main) == sum(
        1 for ln in head.split("| study | claim |", 1)[1].splitlines() if ln.startswith("| ") and "| answer |" not in ln
    )  # questions are answered, not counted
    assert all(study for study, *_ in main)  # no header row counted
    assert "all extensions" in verdict_table.table(text, extensions=True)


def test_rejudge_finds_no_move_on_a_run_against_itself_and_finds_a_tampered_verdict(smoke_run, tmp_path):
    """docs/rejudge.py: a run's tables re-judged by the same checkers give its own verdicts; a claims.json
    whose verdict was changed is named."""
    import json
    import shutil

    def run(old, new):
        p = subprocess.run(
            [sys.executable, str(ROOT / "docs" / "rejudge.py"), str(old), str(new), str(smoke_run.config_path)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert p.returncode == 0, p.stdout + p.stderr
        return p.stdout

    out = run(smoke_run.results, smoke_run.results)
    n = int(out.strip().splitlines()[-1].split()[0])
    assert n > 0 and out.strip().endswith(", 0 with another verdict"), out
    other = tmp_path / "other"
    (other / "mori_ueda").mkdir(parents=True)
    rows = json.loads((smoke_run.results / "mori_ueda" / "claims.json").read_text())
    flip = next(r for r in rows if r.get("applicable", True))
    flip["holds"] = flip.get("holds") is not True  # another verdict, whatever it was
    (other / "mori_ueda" / "claims.json").write_text(json.dumps(rows))
    shutil.copytree(smoke_run.results / "mori_ueda" / "figures", other / "mori_ueda" / "figures")
    out = run(smoke_run.results, other)
    assert out.strip().endswith(", 1 with another verdict") and "moved: " in out, out


def test_compare_searches_tells_the_same_choice_from_one_within_and_one_beyond_the_cv_se(tmp_path):
    """docs/compare_searches.py: three pairs of rate-search stores, one per class; the epochs are summed."""
    import numpy as np
    import xarray as xr

    def store(folder, target, lrs, errs, best):
        val = np.asarray(errs, dtype=float)  # [eval, fold]
        ds = xr.Dataset(
            {
                "lr": (("eval",), np.asarray(lrs)),
                "val_error": (("eval", "fold"), val),
                "epochs": (("eval", "fold"), np.full(val.shape, 50)),
                "best_lr": ((), best),
                "pruned": (("eval", "fold"), np.zeros(val.shape, dtype=bool)),
            }
        )
        ds.to_zarr(folder / "mori_ueda" / "fig2" / "lrsearch" / target / "L2.zarr", mode="w")

    full, pruned = tmp_path / "full", tmp_path / "pruned"
    # same: 0.1 against 0.1002 (0.001 decades); within: 0.1 against 0.2 with errors 0.50 +- 0.02 and 0.52 +- 0.02;
    # beyond: 0.1 against 0.2 with errors 0.50 +- 0.001 and 0.60 +- 0.001
    store(full, "same", [0.01, 0.1], [[1.0, 1.0], [0.5, 0.5]], 0.1)
    store(pruned, "same", [0.01, 0.1002], [[1.0, 1.0], [0.5, 0.5]], 0.1002)
    store(full, "within", [0.1, 0.2], [[0.48, 0.52], [0.9, 0.9]], 0.1)
    store(pruned, "within", [0.1, 0.2], [[0.9, 0.9], [0.50, 0.54]], 0.2)
    store(full, "beyond", [0.1, 0.2], [[0.499, 0.501], [0.9, 0.9]], 0.1)
    store(pruned, "beyond", [0.1, 0.2], [[0.9, 0.9], [0.599, 0.601]], 0.2)
    p = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "compare_searches.py"), str(full), str(pruned)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    kinds = {
        line.split("|")[1].split()[1]: line.split("|")[7].strip()
        for line in p.stdout.splitlines()
        if line.startswith("| fig2")
    }
    assert kinds == {"same": "same", "within": "within SE", "beyond": "beyond SE"}, p.stdout
    assert "3 searches: 1 same, 1 within SE, 1 beyond SE" in p.stdout
    assert "epochs (candidates x folds): 600 full, 600 pruned, x1.00" in p.stdout


def test_compare_searches_tabulates_no_damaged_store_and_rejudge_names_a_bad_argument(smoke_run, tmp_path):
    """A forged best_lr (its audit fails), a store linked out of its folder: not tabulated, named, exit 1; rejudge
    with a missing NEW or an invalid CONFIG: one line, no traceback."""
    import shutil
    import subprocess
    import sys

    import zarr

    rel = "mori_ueda/fig2/lrsearch/2-local/L2.zarr"
    for side in ("full", "pruned"):
        shutil.copytree(smoke_run.results / rel, tmp_path / side / rel)
    script = [
        sys.executable,
        str(ROOT / "docs" / "compare_searches.py"),
        str(tmp_path / "full"),
        str(tmp_path / "pruned"),
    ]
    p = subprocess.run(script, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "1 searches: 1 same" in p.stdout, p.stdout + p.stderr
    z = zarr.open_group(str(tmp_path / "pruned" / rel), mode="r+")
    z["best_lr"][...] = 0.5
    p = subprocess.run(script, capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and "not tabulated" in p.stderr and "content hash" in p.stderr, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    shutil.rmtree(tmp_path / "pruned" / rel)
    (tmp_path / "pruned" / rel).symlink_to(tmp_path / "full" / rel)  # a store that leads out of its folder
    p = subprocess.run(script, capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and "leads outside" in p.stderr, p.stderr
    rejudge = [sys.executable, str(ROOT / "docs" / "rejudge.py")]
    p = subprocess.run(
        [*rejudge, str(smoke_run.results), str(tmp_path / "nowhere")], capture_output=True, text=True, timeout=300
    )
    assert p.returncode != 0 and "NEW" in p.stderr and "Traceback" not in p.stderr, p.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: -1\n")
    p = subprocess.run(
        [*rejudge, str(smoke_run.results), str(smoke_run.results), str(bad)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode != 0 and "CONFIG" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_publish_headers_a_run_whose_probe_file_holds_a_nan(smoke_run, tmp_path):
    """A NaN in logs/probe.json is no JSON value: the header says 'not recorded' for the probe (its comment promised to
    leave such a probe out; it was an UnsafeFile traceback)."""
    import importlib.util
    import shutil

    run = tmp_path / "run"
    shutil.copytree(smoke_run.results, run, symlinks=True)
    (run / "logs").mkdir(exist_ok=True)
    (run / "logs" / "probe.json").write_text('[{"probe_s": NaN, "time": "then"}]')
    spec = importlib.util.spec_from_file_location("publish_run", ROOT / "docs" / "publish_run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    head = mod.header(run, "audit OK", smoke_run.config_path)
    assert "speed probe not recorded" in head, head


def test_no_relative_link_in_the_readme_or_docs_is_dead():
    """Every relative link of README.md, config/README.md and docs/*.md names a file or folder of the checkout (the
    published claims linked the index's study pages, which live in a results folder, not in docs/)."""
    dead = []
    for f in [ROOT / "README.md", ROOT / "config" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for m in re.finditer(r"\]\(([^)\s]+)\)", f.read_text()):
            target = m.group(1).split("#")[0]
            if target and not re.match(r"^[a-z]+:", target) and not (f.parent / target).exists():
                dead.append(f"{f.relative_to(ROOT)}: {target}")
    assert not dead, dead
