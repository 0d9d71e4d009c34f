"""Open a Snakemake HTML report in headless Chromium and walk it as a reader would.

The report is a single page (React): a front page, a menu of categories (one per study) with subcategories (Figures,
Claims), and each result shown on request.  Chromium runs headless on a copy of the report with two scripts added: the
first, before any of the report's own, records every uncaught error and every ``console.error``; the last waits for the
app, then, through the app's own ``setView`` (what its menu links call), opens every category and subcategory, shows
every image result and every result's info panel (its caption), and writes what it saw as JSON into a ``<pre>`` that
``--dump-dom`` prints.  Chromium's own log (``--enable-logging=stderr``) is kept too, for console messages the page
scripts could not catch.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

CAPTURE = """<script>
window.__depthlab_errors = [];
window.addEventListener("error", function (e) { window.__depthlab_errors.push("uncaught: " + e.message); });
window.addEventListener("unhandledrejection", function (e) { window.__depthlab_errors.push("unhandled rejection: " + e.reason); });
(function () {
  var original = console.error;
  console.error = function () {
    window.__depthlab_errors.push("console.error: " + Array.prototype.map.call(arguments, String).join(" "));
    return original.apply(console, arguments);
  };
})();
</script>"""

DRIVER = """<script>
(async function () {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const out = { front: "", categories: [], results: [], errors: window.__depthlab_errors, injected: 0 };
  // elements that only markup smuggled in through a config value would make (tests/test_report_browser.py)
  const injected = () => document.querySelectorAll("depthlabpwn, img[src='x']").length;
  try {
    for (let i = 0; i < 400 && (typeof app === "undefined" || !app); i++) await sleep(50);
    await sleep(300);
    out.front = document.getElementById("app").innerText;
    const nav = () => document.querySelector("nav").innerText;
    for (const cat of Object.keys(categories).sort()) {
      for (const sub of Object.keys(categories[cat]).sort()) {
        app.setView({ navbarMode: "subcategory", category: cat, subcategory: sub });
        await sleep(150);
        const paths = categories[cat][sub];
        out.categories.push({ category: cat, subcategory: sub, results: paths.length, menu: nav() });
        for (const path of paths) {
          const r = results[path];
          const seen = { path: path, mime: r.mime_type, caption: "", image: null };
          app.setView({ navbarMode: "resultinfo", resultPath: path });
          await sleep(150);
          seen.caption = nav();
          out.injected += injected();
          if (String(r.mime_type).startsWith("image/")) {
            app.setView({ content: "img", contentPath: r.data_uri });
            let img = null;
            for (let i = 0; i < 100; i++) {
              await sleep(50);
              img = Array.from(document.querySelectorAll("img")).find((x) => x.getAttribute("src") === r.data_uri);
              if (img && img.complete) break;
            }
            seen.image = img ? { complete: img.complete, width: img.naturalWidth, height: img.naturalHeight } : null;
            out.injected += injected();
          } else if (String(r.mime_type) === "text/html") {
            // a claims page or the config, shown in place: the app's frame holds it (a data: frame's own document is
            // another origin, so what it holds is read by parsing the same address)
            app.setView({ content: "html", contentPath: r.data_uri, resultPath: path });
            let frame = null;
            for (let i = 0; i < 40 && !frame; i++) {
              await sleep(50);
              frame = Array.from(document.querySelectorAll("iframe")).find((x) => x.getAttribute("src") === r.data_uri);
            }
            const doc = new DOMParser().parseFromString(await (await fetch(r.data_uri)).text(), "text/html");
            seen.page = { shown: !!frame, height: frame ? frame.getBoundingClientRect().height : 0,
                          tables: doc.querySelectorAll("table").length, pre: doc.querySelectorAll("pre").length,
                          verdicts: doc.querySelectorAll("td[class^='v-']").length,
                          states: Array.from(new Set(Array.from(doc.querySelectorAll("td[class^='v-']")).map((x) => x.className))) };
            out.injected += injected();
          }
          out.results.push(seen);
        }
      }
    }
  } catch (e) {
    out.errors.push("driver: " + e);
  }
  const pre = document.createElement("pre");
  pre.id = "depthlab-browser-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def walk(report: Path, work: Path, timeout: float = 300) -> tuple[dict, str]:
    """(what the driver saw, Chromium's log) for the report at ``report``."""
    html = report.read_text(encoding="utf-8")
    head = html.index("<head>") + len("<head>")
    body = html.rindex("</body>")
    page = work / "walk.html"
    page.write_text(html[:head] + CAPTURE + html[head:body] + DRIVER + html[body:], encoding="utf-8")
    cmd = [
        chromium(),
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        f"--user-data-dir={work / 'profile'}",
        "--virtual-time-budget=600000",
        "--run-all-compositor-stages-before-draw",
        "--dump-dom",
        page.as_uri(),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    m = re.search(r'<pre id="depthlab-browser-check">(.*?)</pre>', p.stdout, re.S)
    if not m:
        raise AssertionError(f"the driver wrote nothing (rc {p.returncode}): {p.stderr[-3000:]}")
    import html as _html

    return json.loads(_html.unescape(m.group(1))), p.stderr


STUDY_TITLES = (
    "Mori &amp; Ueda",
    "Bietti &amp; Bach",
    "Depth separation",
    "Malach &amp; Shalev-Shwartz",
    "Arora, Cohen",
)


def problems(seen: dict, log: str, categories: dict) -> list[str]:
    """What a reader would trip on: an error on the page or in Chromium's console log, a category or result the walk did
    not reach, an image that did not decode, an empty caption, a front page that leaves a study out."""
    import html as _html

    out = [f"page error: {e}" for e in seen["errors"]]
    if seen.get("injected"):
        out.append(f"{seen['injected']} element(s) made from markup in a config value (a <depthlabpwn> or <img src=x>)")
    out += [
        f"console: {line.strip()[:300]}"
        for line in log.splitlines()
        if (":ERROR:CONSOLE" in line or "Uncaught" in line)
    ]
    walked = {(c["category"], c["subcategory"]) for c in seen["categories"]}
    for cat, subs in categories.items():
        for sub in subs:
            if (cat, sub) not in walked:
                out.append(f"category {cat} / {sub} not reached")
    by_path = {r["path"]: r for r in seen["results"]}
    for subs in categories.values():
        for paths in subs.values():
            for path in paths:
                r = by_path.get(path)
                if r is None:
                    out.append(f"{path}: not shown")
                    continue
                caption = r["caption"].split("DESCRIPTION", 1)[1].strip() if "DESCRIPTION" in r["caption"] else ""
                if len(caption) < 40:
                    out.append(f"{path}: empty caption ({caption!r})")
                if r["mime"].startswith("image/") and not (
                    r["image"] and r["image"]["complete"] and r["image"]["width"] > 0
                ):
                    out.append(f"{path}: the image did not load ({r['image']})")
                if r["mime"] == "text/html" and not (
                    r.get("page")
                    and r["page"]["shown"]
                    and r["page"]["height"] > 0
                    and (r["page"]["tables"] or r["page"]["pre"])
                ):
                    out.append(f"{path}: the page is not shown in place ({r.get('page')})")
    for title in STUDY_TITLES:
        if _html.unescape(title) not in seen["front"]:
            out.append(f"the front page does not mention {_html.unescape(title)}")
    return out


def categories_of(report: Path) -> dict:
    text = report.read_text(encoding="utf-8")
    return json.loads(re.search(r"var categories = (\{.*?\});\n", text, re.S).group(1))
