"""depthlab diff (depthlab.compare) on two copies of the smoke run: one with a config key, a store and claim rows changed."""

import json
import shutil
import subprocess
import sys

import yaml

from depthlab import compare


def _two(smoke_run, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(smoke_run.results, a, ignore=shutil.ignore_patterns("logs", "benchmarks"))
    shutil.copytree(smoke_run.results, b, ignore=shutil.ignore_patterns("logs", "benchmarks"))
    cfg = yaml.safe_load((b / "config.used.yaml").read_text())
    cfg["seed"] = 7
    (b / "config.used.yaml").write_text(yaml.safe_dump(cfg))
    gone = sorted(b.rglob("*.zarr"))[0]
    shutil.rmtree(gone)
    rows = json.loads((b / "mori_ueda" / "claims.json").read_text())
    flip, moved = 0, 1  # the first row's verdict flips; the second's effect moves by 10 SE (set in both runs)
    rows[flip]["verdict"] = "holds" if rows[flip]["verdict"] != "holds" else "does not hold"
    rows_a = json.loads((a / "mori_ueda" / "claims.json").read_text())
    for r, effect in ((rows_a[moved], 1.0), (rows[moved], 2.0)):
        r.update(effect=effect, stderr=0.05)
    (a / "mori_ueda" / "claims.json").write_text(json.dumps(rows_a))
    (b / "mori_ueda" / "claims.json").write_text(json.dumps(rows))
    return a, b, gone.relative_to(b), rows[flip], rows[moved]


def test_diff_names_the_changed_config_key_the_missing_store_and_the_moved_rows(smoke_run, tmp_path):
    a, b, gone, flipped, moved = _two(smoke_run, tmp_path)
    d = compare.diff(compare.load(str(a)), compare.load(str(b)))
    assert [k for k, _, _ in d.config] == ["seed"] and d.config[0][1:] == (0, 7)
    assert sum(c["only_a"] for c in d.stores.values()) == 1 and sum(c["different"] for c in d.stores.values()) == 0
    assert sum(c["same"] for c in d.stores.values()) == len(list(a.rglob("*.zarr"))) - 1
    assert [(r["claim"], r["subject"]) for r in d.changed] == [(flipped["claim"], flipped["subject"])]
    assert [(r["claim"], r["subject"]) for r in d.moved] == [(moved["claim"], moved["subject"])]
    assert d.moved[0]["moved_by_se"] > 5
    same = compare.diff(compare.load(str(a)), compare.load(str(a)))
    assert not same.config and not same.changed and not same.moved and same.same == len(compare.load(str(a)).rows)
    md = tmp_path / "diff.md"
    base = [sys.executable, "-m", "depthlab", "diff", str(a), str(b)]
    p = subprocess.run([*base, "--markdown", str(md), "--fail-on-change"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "1 verdict(s) changed, 1 effect(s) moved" in p.stdout, p.stdout + p.stderr
    assert "| seed | 0 | 7 |" in md.read_text() and flipped["subject"] in md.read_text()
    png = tmp_path / "diff.png"  # both runs on one forest plot: the flipped and the moved row
    p = subprocess.run([*base, "--plot", str(png)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "wrote" in p.stderr and "(2 claim rows, both runs)" in p.stderr, p.stderr
    assert png.read_bytes().startswith(b"\x89PNG")
    none = tmp_path / "none.png"  # nothing changed: said so, nothing drawn
    p = subprocess.run(
        [sys.executable, "-m", "depthlab", "diff", str(a), str(a), "--plot", str(none)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0 and "not drawn" in p.stderr and not none.exists(), p.stderr
    p = subprocess.run([*base, "--json"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and json.loads(p.stdout)["rows_unchanged"] == d.same
    p = subprocess.run(
        [sys.executable, "-m", "depthlab", "diff", str(a), str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (
        p.returncode == 2 and "neither a results folder nor a config file" in p.stderr and "Traceback" not in p.stderr
    )


def test_a_foreign_claims_file_cannot_drive_the_terminal_or_the_table_and_an_odd_verdict_is_not_holds(
    smoke_run, tmp_path
):
    """Raw ANSI escapes from a foreign claims.json reached the terminal; its markdown escaped | but not
    newlines; "verdict": ["x"] read as holds; a fork that had not run showed every config key as '(absent)'."""
    a, b = tmp_path / "a", tmp_path / "b"
    for f in (a, b):
        shutil.copytree(smoke_run.results, f, ignore=shutil.ignore_patterns("logs", "benchmarks"))
    rows = json.loads((b / "mori_ueda" / "claims.json").read_text())
    rows[0]["subject"] = "evil\x1b[2J\x1b]0;pwned\x07\nline two | cell <script>alert(1)</script>"
    rows[0]["verdict"] = ["x"]
    rows[0]["holds"] = True
    (b / "mori_ueda" / "claims.json").write_text(json.dumps(rows))
    d = compare.diff(compare.load(str(a)), compare.load(str(b)))
    changed = [r for r in d.changed if "evil" in r["subject"]]
    assert changed and changed[0]["verdict_b"] == "(not a verdict)"
    out = compare.terminal(d)
    assert "\x1b" not in out and "\x07" not in out and "\\x1b[2J" in out
    md = compare.markdown(d)
    line = [ln for ln in md.splitlines() if "evil" in ln][0]
    assert "\\x0aline two \\| cell" in line and line.count(" | ") >= 6  # one row, the newline and the bar escaped
    assert (
        "<script>" not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in line
    )  # raw HTML would run where it is shown
    # a fork that has not run: its config is the one its fork record names, not every key '(absent)'
    cfg = dict(smoke_run.config)
    cfg["results"] = str(tmp_path / "fork")
    cfg["device"] = "auto"  # the snapshot records the device it resolved: a device key changes no result, so no diff
    cfg_path = tmp_path / "fork.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    p = subprocess.run(
        [sys.executable, "-m", "depthlab", "fork", str(smoke_run.results), str(cfg_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    d = compare.diff(compare.load(str(smoke_run.results)), compare.load(str(tmp_path / "fork")))
    assert d.config == [] and not d.unrecorded
    bare = tmp_path / "bare"
    bare.mkdir()
    d = compare.diff(compare.load(str(smoke_run.results)), compare.load(str(bare)))
    assert d.unrecorded == [str(bare)] and "records no config" in compare.terminal(d)


def test_compare_tabulates_three_runs_side_by_side_and_marks_the_rows_that_differ(smoke_run, tmp_path):
    """Three runs: the smoke run, a copy of its claims with one row's verdict flipped, and an unchanged copy: one row
    differs, listed first and marked; every run has a column; a single run is a one-line error."""

    def claims_copy(name: str, flip: bool) -> str:
        root = tmp_path / name
        for f in smoke_run.results.glob("*/claims.json"):
            rows = json.loads(f.read_text())
            if flip and f.parent.name == "spectra":
                r = next(r for r in rows if r.get("verdict") in ("holds", "does not hold"))
                r["verdict"] = "does not hold" if r["verdict"] == "holds" else "holds"
                r["holds"] = r["verdict"] == "holds"
                flipped.append((r["claim"], r["subject"]))
            (root / f.parent.name).mkdir(parents=True)
            (root / f.parent.name / "claims.json").write_text(json.dumps(rows))
        return str(root)

    flipped: list = []
    runs = [str(smoke_run.results), claims_copy("b", True), claims_copy("c", False)]
    out = tmp_path / "cmp.md"
    p = subprocess.run(
        [sys.executable, "-m", "depthlab", "compare", *runs, "--markdown", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "3 runs" in p.stdout and "1 with a verdict that differs" in p.stdout, p.stdout[:500]
    rows = [line for line in p.stdout.splitlines() if line.startswith("| differs |")]
    assert len(rows) == 1 and flipped[0][0] in rows[0] and rows[0].count(" | ") >= 6, rows
    table = [line for line in p.stdout.splitlines() if line.startswith("| ")]
    assert table[1].startswith("| differs |")  # first after the header (the rule line is "|---"): differing rows lead
    assert out.read_text().splitlines() == p.stdout.splitlines()
    one = subprocess.run([sys.executable, "-m", "depthlab", "compare", runs[0]], capture_output=True, text=True)
    assert one.returncode == 2 and "two runs or more" in one.stderr and len(one.stderr.splitlines()) == 1
