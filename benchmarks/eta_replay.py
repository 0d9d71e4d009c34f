"""What the terminal's ETA would have said under another calibration.  ``python benchmarks/eta_replay.py RESULTS CONFIG
[--costs COSTS.json ...] [--jobs JOBS.tsv]``.

A finished run's ``RESULTS/logs/snakemake/*.jobs.tsv`` (the newest, or ``--jobs``: another run of the same config,
e.g. ``tests/data/smoke_jobs.tsv``) records when each job started and ended.  For each calibration named, every job
is planned anew as the run plans it (``depthlab.costs.model.spec_seconds`` of the spec its store in RESULTS records; a
figure and the claims by ``depthlab.costs.report.output_seconds``, as the run does; other jobs keep the plan the log recorded), scaled by
RESULTS' speed probe over the calibration's, and the log is replayed through the ETA (``terminal.replay``): the time
left it shows against the real time left when 10, 25, 50 and 75 % of the jobs are done.  With no ``--costs``, the
shipped ``workflow/depthlab/costs.json``; the log's own plan is printed first, as the run showed it.  Nothing is
asserted: docs/performance.md (git show dd4e062:docs/performance.md) quotes it (the per-step term, in and out of sample).  Reads only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

import yaml  # noqa: E402

import depthlab.config as dlc  # noqa: E402
from depthlab.costs import calibrate as cost_calibrate  # noqa: E402
from depthlab.costs import model as cost_model  # noqa: E402
from depthlab.costs import report as cost_report  # noqa: E402
from depthlab import probe  # noqa: E402
from depthlab.studies import get_study  # noqa: E402
from snakemake_logger_plugin_depthlab.terminal import read_jobs_log, replay  # noqa: E402


def planned_anew(rows: list[dict], results: Path, config: dict, costs_path: Path) -> tuple[list[dict], int]:
    """``rows`` with every job's planned seconds from ``costs_path``; and how many jobs kept the log's plan."""
    costs = cost_model.load_costs(costs_path)
    fallback = cost_model.fallback_rate(costs)
    speed = probe.ratio(probe.of_runs([results]), cost_model.calibration_probe(costs_path))
    specs = {
        str(rel).removesuffix(".zarr"): (
            f"{rec['study']}/{rec['stage']}",
            get_study(rec["study"]).spec_from_dict(rec["spec"]),
        )
        for rel, rec in cost_calibrate.stores_with_records(results)
    }
    out, kept = [], 0
    for r in rows:
        name, study = r["name"], r["name"].split("/")[0]
        if name in specs:
            key, spec = specs[name]
            secs = cost_model.spec_seconds(cost_model.stage_cost(costs, key), spec, fallback)
        elif r["stage"] in ("figure", "claims"):  # the rule's name, as the run's plan (common.smk) reads it
            figure = name.split("/")[-1].removesuffix(".png") if r["stage"] == "figure" else None
            secs = cost_report.output_seconds(costs, study, r["stage"], config, figure)
        else:
            out.append(r)
            kept += 1
            continue
        out.append({**r, "planned_s": speed * secs})
    return out, kept


def show(label: str, rows: list[dict], cores: int) -> None:
    took = sum(r["end_s"] - r["start_s"] for r in rows if r["start_s"] is not None)
    print(f"{label}: planned {sum(r['planned_s'] for r in rows) / 60:.1f} core-min, measured {took / 60:.1f}")
    for f, (eta, real) in replay(rows, cores).items():
        print(
            f"  {f:>4.0%} of the jobs: ETA {eta / 60:6.1f} min, real {real / 60:6.1f} min, error {100 * (eta / real - 1):+4.0f} %"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("config", type=Path)
    ap.add_argument("--costs", type=Path, action="append", default=None)
    ap.add_argument("--jobs", type=Path, default=None, help="a jobs.tsv of another run of the same config")
    ap.add_argument("--cores", type=int, default=2)
    a = ap.parse_args()
    config = dlc.validate(yaml.safe_load(a.config.read_text()))
    jobs = a.jobs or sorted((a.results / "logs" / "snakemake").glob("*.jobs.tsv"))[-1]
    rows = read_jobs_log(jobs)
    print(f"{jobs}: {len(rows)} jobs; specs from {a.results}")
    show("as the log planned them", rows, a.cores)
    for costs in a.costs or [cost_model.COSTS]:
        anew, kept = planned_anew(rows, a.results, config, costs)
        show(f"{costs} ({kept} jobs kept the log's plan)", anew, a.cores)


if __name__ == "__main__":
    main()
