"""The pages the HTML report shows in place of markdown downloads (depthlab.htmlpage): the same text rendered by
markdown-it-py, raw HTML in it escaped, and the verdict cells coloured as the forest plots colour them; and the audit
checks a study's page against its record."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from depthlab import htmlpage
from depthlab.forest import COLOURS, STATES


def _table(states):
    return "\n".join(["| claim | verdict |", "|---|---|"] + [f"| C{i} | {s} |" for i, s in enumerate(states)]) + "\n"


def test_every_verdict_cell_gets_its_forest_colour_and_nothing_else_does():
    text = "# t\n\n" + _table(["holds", "**does not hold**", "inconclusive", "not applicable", "holds 3", "answer"])
    page = htmlpage.markdown_page("t", text)
    cells = re.findall(r'<td class="v-([a-z-]+)">', page)
    assert cells == ["holds", "does-not-hold", "inconclusive", "not-applicable"], cells  # "holds 3", "answer": plain
    for state, colour in COLOURS.items():
        assert f"td.v-{state.replace(' ', '-')}{{background:{colour}22;color:{colour}" in page
    assert len(STATES) == 4 and page.startswith("<!DOCTYPE html>") and "<table>" in page


def test_raw_html_in_a_subject_is_text_not_markup():
    page = htmlpage.markdown_page(
        "a <b>title</b>", _table(["holds"]).replace("C0", "<script>alert(1)</script><img src=x>")
    )
    assert "<script>" not in page and "<img" not in page and "&lt;script&gt;" in page
    assert "<title>a &lt;b&gt;title&lt;/b&gt;</title>" in page
    cfg = htmlpage.text_page("config", "results: '<script>x</script>'\n")
    assert "<script>x" not in cfg and "&lt;script&gt;x&lt;/script&gt;" in cfg


def test_a_smoke_studys_page_is_its_claims_md_and_the_audit_checks_it(smoke_run, tmp_path):
    run = smoke_run.copy(tmp_path / "w")
    study = run.results / "mori_ueda"
    md, page = (study / "claims.md").read_text(), (study / "claims.html").read_text()
    from depthlab.studies import get_study

    assert page == htmlpage.markdown_page(f"{get_study('mori_ueda').title}: claims", md)  # the very text, rendered
    rows = sum(
        1
        for line in md.splitlines()
        if re.match(
            r"\| [^|]+ \| .* \| (holds|\*\*does not hold\*\*|inconclusive|"
            r"not applicable) \|",
            line,
        )
    )
    assert rows and len(re.findall(r'<td class="v-', page)) == rows
    ok = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(study / "claims.md")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ok.returncode == 0, ok.stdout[-2000:] + ok.stderr[-2000:]
    shutil.copy(study / "claims.html", tmp_path / "keep.html")
    (study / "claims.html").write_text(page.replace("inconclusive</td>", "holds</td>", 1))
    bad = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(study / "claims.md")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode != 0 and "the report's page" in bad.stdout + bad.stderr, bad.stdout[-2000:]
