"""Publish a finished default run's claims in the repository, as the run wrote them:
``python docs/publish_run.py results/default [CONFIG] [OUT] [--history TEXT]`` writes ``docs/default-claims.md`` (CONFIG:
the run's config, default ``config/config.yaml``; OUT: where to write; TEXT: how the folder came to be, when it is not
one clean run, for example a clean run brought to a later commit by the workflow's own rerun).

The file is the run's ``claims.md`` byte for byte below a header that says what ran: the code version the claims index
records, when it was made, the run's speed probe(s) (``logs/probe.json``), the jobs and core-minutes its benchmark files
measured per study, and whether ``depthlab audit --strict`` passed on it (run here, before anything is written).  Nothing
is edited by hand: rerun the script after a new clean run.  Everything read is untrusted input (the safe JSON reader, no
code from the folder).
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "workflow"))

from depthlab import outputs, safeio  # noqa: E402

from depthlab.costs import model as cost_model  # noqa: E402


def _seconds(tsv: Path) -> float | None:
    """A benchmark file's seconds; None for one that is special (a FIFO is never opened), huge, malformed or not a
    finite, non-negative number (a TSV of 1e308 published "inf core-min")."""
    try:
        head, row = safeio.read_text(tsv, 1 << 20).splitlines()[:2]
        s = float(dict(zip(head.split("\t"), row.split("\t")))["s"])
    except (OSError, ValueError, KeyError):
        return None
    return (
        s if math.isfinite(s) and 0 <= s <= cost_model.MAX_SECONDS else None
    )  # the cost model's bound on a job's time


def header(results: Path, audit_line: str, config: Path, history: str = "") -> str:
    rec = safeio.read_json(results / "claims.provenance.json")
    try:  # a probe file with a NaN (or damaged) is left out, as a NaN probe_s is below: never a traceback
        probes = (
            safeio.read_json(results / "logs" / "probe.json") if (results / "logs" / "probe.json").is_file() else []
        )
    except (OSError, ValueError):
        probes = []
    per: dict[str, list[float]] = defaultdict(list)
    for tsv in (results / "benchmarks").rglob("*.tsv"):
        s = _seconds(tsv)
        parts = tsv.relative_to(results / "benchmarks").parts
        if s is not None:
            per[parts[0] if len(parts) > 1 else "index and config snapshot"].append(s)
    cost = ", ".join(f"{k} {len(v)} jobs, {sum(v) / 60:.1f} core-min" for k, v in sorted(per.items()))
    total = sum(sum(v) for v in per.values()) / 60
    probe = ", ".join(
        f"{p['probe_s']:.3f} s ({p.get('time', '?')})"
        for p in (probes if isinstance(probes, list) else [])
        if isinstance(p, dict) and isinstance(p.get("probe_s"), (int, float)) and math.isfinite(p["probe_s"])
    )  # a string or NaN probe_s is left out, not a traceback
    calib = safeio.read_json(cost_model.COSTS).get("probe_s")  # the package's CPU calibration
    calib = f"{calib:.3f} s" if isinstance(calib, (int, float)) else "not recorded"
    return (
        "\n".join(
            [
                "# The default run's claims, as the run wrote them",
                "",
                *([f"How this run came to be: {history}", ""] if history else []),
                f"Copied from `{results.name}/claims.md` by `python docs/publish_run.py` (not by hand). Code version "
                f"`{rec.get('code_version', '?')}`; the claims index made {rec.get('created', '?')}; speed probe "
                f"{probe or 'not recorded'} (the cost model's calibration machine: {calib}, lower is faster).",
                f"Job time per study (benchmark files, one core per job): {cost}; {total:.1f} core-minutes in all.",
                f"`depthlab audit {results.name}/claims.md --configfile {config.name} --strict`: {audit_line}",
                "",
                "---",
                "",
            ]
        )
        + "\n"
    )


def unlinked(text: str) -> str:
    """The index's links to each study's claims (``[title](<study>/claims.md)``, relative to the results folder) as
    plain titles: from docs/ they would point at nothing; the study's rows follow below, under its title."""
    return re.sub(r"\[([^\]]+)\]\([a-z][a-z0-9_]*/claims\.md\)", r"\1", text)


def main(argv: list[str]) -> None:
    history = ""
    if "--history" in argv:
        i = argv.index("--history")
        if i + 1 >= len(argv) or not argv[i + 1].strip():
            sys.exit("--history needs a text: how the results folder came to be")
        history, argv = argv[i + 1].strip(), argv[:i] + argv[i + 2 :]
    if not 2 <= len(argv) <= 4:
        sys.exit(
            "usage: python docs/publish_run.py RESULTS [CONFIG] [OUT] [--history TEXT]  (a finished default run's folder)"
        )
    results = Path(argv[1])
    config = Path(argv[2]) if len(argv) > 2 else HERE.parent / "config" / "config.yaml"
    out = Path(argv[3]) if len(argv) > 3 else HERE / "default-claims.md"
    claims = results / "claims.md"
    try:  # before the audit: OUT must not replace a file of the run (or of any run)
        outputs.user_file(out, protect=(results,), what="OUT")
    except outputs.OutputRefused as e:
        sys.exit(str(e))
    if not claims.is_file():
        sys.exit(f"{claims}: no claims index (has the run finished?)")
    audit = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(claims), "--configfile", str(config), "--strict"],
        capture_output=True,
        text=True,
    )
    last = (audit.stdout.strip().splitlines() or ["(no output)"])[-1]
    if audit.returncode != 0:
        sys.exit(
            f"audit --strict failed on {results}; nothing published:\n{audit.stdout[-2000:]}{audit.stderr[-2000:]}"
        )
    outputs.write_user_file(
        (header(results, last, config, history) + unlinked(claims.read_text())).encode(),
        out,
        protect=(results,),
        what="OUT",
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv)
