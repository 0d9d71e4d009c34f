"""The smoke report, in a real browser.  Headless Chromium opens `make report`'s page, visits every
study's category and every result, and the test fails on a missing image, an empty caption, a console error or a
front page that leaves a study out.  The same walk on a copy of the report with one figure's bytes broken must fail:
the check can fail.  Slow set (Debian's chromium is installed with apt-get when missing)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from helpers import smk

import report_browser as rb
from depthlab.forest import STATES  # the four verdict states (a question's row says 'answer')

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def browser():
    if rb.chromium() is None:
        if os.name != "posix" or os.geteuid() != 0 or shutil.which("apt-get") is None:
            pytest.skip("needs chromium, or root and apt-get to install it")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        p = subprocess.run(
            ["apt-get", "install", "-y", "-q", "chromium"], capture_output=True, text=True, env=env, timeout=1200
        )
        if p.returncode != 0:  # a stale package index: refresh it once
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env, timeout=600)
            p = subprocess.run(
                ["apt-get", "install", "-y", "-q", "chromium"], capture_output=True, text=True, env=env, timeout=1200
            )
        assert p.returncode == 0 and rb.chromium(), p.stdout[-2000:] + p.stderr[-2000:]
    return rb.chromium()


def test_the_smoke_report_reads_in_headless_chromium(smoke_run, tmp_path, browser):
    run = smoke_run.copy(tmp_path / "run")
    report = tmp_path / "report.html"
    smk(run.work, "--configfile", str(run.config_path), "--report", str(report))
    cats = rb.categories_of(report)
    assert set(run.config["studies"]) <= set(cats)
    seen, log = rb.walk(report, tmp_path)
    bad = rb.problems(seen, log, cats)
    assert not bad, "\n".join(bad[:30])
    shown = [r for r in seen["results"] if r["mime"].startswith("image/")]
    figures = sum(len(p) for subs in cats.values() for s, p in subs.items() if s == "Figures")
    assert len(shown) == figures + len(run.config["studies"])  # every figure and every study's forest plot
    forests = [r for r in shown if r["path"].endswith("/claims.forest.png")]  # one per study, drawn
    assert len(forests) == len(run.config["studies"]) and all(r["image"]["width"] > 0 for r in forests), forests
    # each study's verdict table is in the page, not a download: its claims page is shown in place, with one coloured
    # verdict cell per row of its claims.json; the index and the config are pages too
    pages = {r["path"]: r["page"] for r in seen["results"] if r["mime"] == "text/html"}
    for study in run.config["studies"]:
        (page,) = [v for k, v in pages.items() if k.endswith(f"/{study}/claims.html")]
        rows = [r for r in json.loads((run.results / study / "claims.json").read_text()) if r["verdict"] in STATES]
        assert page["shown"] and page["height"] > 100 and page["verdicts"] == len(rows), (study, page, len(rows))
    (index,) = [
        v for k, v in pages.items() if k.endswith("/claims.html") and k.split("/")[-2] not in run.config["studies"]
    ]
    (config,) = [v for k, v in pages.items() if k.endswith("/config.used.html")]
    assert index["shown"] and index["tables"] >= 3 and config["shown"] and config["pre"] == 1, (index, config)
    # the same walk on a report whose first figure's bytes are broken fails, naming it
    text = report.read_text(encoding="utf-8")
    first = sorted(p for subs in cats.values() for s, ps in subs.items() if s == "Figures" for p in ps)[0]
    start = text.index("base64,", text.index(f'"{first}"')) + len("base64,")
    broken = tmp_path / "broken.html"
    broken.write_text(text[:start] + "AAAA" + text[start + 4 :], encoding="utf-8")
    (tmp_path / "b").mkdir()
    seen, log = rb.walk(broken, tmp_path / "b")
    bad = rb.problems(seen, log, cats)
    assert any(first in b and "did not load" in b for b in bad), bad


# entity-encoded markup (a page that decoded entities before inserting text would make these elements), a javascript:
# address and template braces: what a `results:` path may still hold ('<', '>', quotes and '$' are refused earlier)
HOSTILE = "r &lt;depthlabpwn&gt;x &#60;img src=x onerror=console.error(1)&#62; javascript:console.error(2) [[7*7]]"  # one folder


def test_a_report_of_a_folder_with_markup_in_its_name_runs_no_script(smoke_run, tmp_path, browser):
    """The report built from a config whose `results:` path holds hostile text shows it as text."""
    import yaml

    run = smoke_run.copy(tmp_path / "run")
    hostile = run.work / "results" / HOSTILE
    run.results.rename(hostile)
    cfg = dict(yaml.safe_load(run.config_path.read_text()), results=str(hostile))  # the config the run was built from
    cfg_path = tmp_path / "hostile.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    report = tmp_path / "report.html"
    smk(run.work, "--configfile", str(cfg_path), "--report", str(report), env={"DEPTHLAB_CONTINUE": "1"})
    assert "depthlabpwn" in report.read_text(encoding="utf-8")  # the name is in the page
    cats = rb.categories_of(report)
    seen, log = rb.walk(report, tmp_path)
    bad = rb.problems(seen, log, cats)
    assert not bad, "\n".join(bad[:30])
    assert any("depthlabpwn" in r["path"] for r in seen["results"])  # shown, as text
    # the check can fail: the same page with the markup decoded into the body names both elements and the error
    text = report.read_text(encoding="utf-8")
    body = text.index("<body>") + len("<body>")
    planted = tmp_path / "planted.html"
    planted.write_text(
        text[:body] + "<depthlabpwn>x</depthlabpwn><img src=x onerror=console.error(1)>" + text[body:], encoding="utf-8"
    )
    (tmp_path / "p").mkdir()
    seen, log = rb.walk(planted, tmp_path / "p")
    bad = rb.problems(seen, log, cats)
    assert any("made from markup in a config value" in b for b in bad) and any("console" in b for b in bad), bad
