"""The `depthlab plan` command: what it prints for a config, a finished run (--check), or its timings (--measure,
--calibrate).  The CLI parses the arguments; this runs them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable


def run(args: argparse.Namespace, load: Callable[..., dict]) -> None:
    """depthlab plan: --measure, --calibrate, --check, or the plan of a config (``load``: the CLI's config reader,
    which ends in one line on a bad config)."""
    from .. import outputs
    from . import calibrate as cost_calibrate
    from . import model as cost_model
    from . import report as cost_report

    for opt, folder in (("--measure", args.measure), ("--check", args.check)):  # a results folder, or one line
        if folder and not Path(folder).is_dir():
            print(
                f"depthlab plan {opt}: {folder} is not a results folder (a finished run's folder, with its "
                "benchmarks/)",
                file=sys.stderr,
            )
            raise SystemExit(2)
    if args.measure:
        print(json.dumps(cost_calibrate.measure(args.measure), indent=1))
        return
    if args.calibrate:
        try:
            if args.costs:  # before any fitting: --costs must not land in a run's folder nor in a missing one
                outputs.user_file(
                    args.costs,
                    protect=tuple(r for r in args.calibrate if Path(r).is_dir()),
                    what="plan --calibrate --costs",
                )
            doc = cost_calibrate.calibrate(args.calibrate, args.costs)
        except outputs.OutputRefused as e:
            print(f"depthlab plan: {e}", file=sys.stderr)
            raise SystemExit(2) from None
        print(
            f"wrote {doc.pop('written_to')}: {len(doc['stages'])} stages from {', '.join(args.calibrate)}, jobs on "
            f"{doc['device']}"
        )
        if "throughput_written_to" in doc:
            print(
                f"wrote {doc['throughput_written_to']}: the GPU throughput model refitted to {doc['throughput_points']} "
                "timed training stacks (depthlab.gpumodel)"
            )
        return
    from .. import probe

    calib = cost_model.calibration_probe(args.costs or cost_model.COSTS)
    if args.check:
        run = probe.of_runs([args.check])
        speed = probe.ratio(run, calib)
        costs = cost_model.load_costs(args.costs) if args.costs else None
        rows = cost_report.check(args.check, costs, speed)
        print(
            cost_report.render_check(
                rows,
                args.check,
                Path(args.costs or cost_model.COSTS).name,
                args.factor,
                cost_report.check_studies(args.check, rows, costs, speed),
            )
        )
        print(_probe_line("that run's", run, calib, speed))
        if not all(r.within(args.factor) for r in rows):
            raise SystemExit(1)
        return
    if not args.config:
        print(
            "error: give a config (depthlab plan CONFIG), --calibrate RESULTS ... or --check RESULTS", file=sys.stderr
        )
        raise SystemExit(2)
    config = load(args.config, memory=False)
    costs = cost_model.load_costs(args.costs) if args.costs else None
    gpu_costs, gpu_device, gpu_note = cost_model.gpu_calibration(args.gpu_costs or cost_model.COSTS_GPU)
    if args.gpu_costs and not gpu_costs:  # a file named on purpose is never dropped without a word
        print(
            f"depthlab plan: note: --gpu-costs {args.gpu_costs} is not a GPU calibration (missing, unreadable, or its "
            "device is not cuda): the GPU column is priced by the throughput model alone",
            file=sys.stderr,
        )
    reading = None if args.no_probe else probe.measure_machine()
    here = reading.seconds if reading else None
    speed, note = probe.judge(reading, calib, getattr(args, "use_probe", False))
    if note:  # the plan's first line: a table scaled by the load would read as the machine's speed
        print(note)
    from ..gpumodel import ThroughputError

    try:
        # a refit that plan --calibrate wrote beside a --gpu-costs file elsewhere goes with it
        beside = Path(args.gpu_costs).with_name("gpu_throughput.json") if args.gpu_costs else None
        rows = cost_report.plan(
            config,
            costs,
            args.results,
            gpu_costs,
            speed,
            throughput=beside if beside is not None and beside.is_file() else None,
        )
    except ThroughputError as e:  # a damaged GPU throughput model (depthlab.gpumodel.load): one line naming the file
        print(f"depthlab plan: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    print(cost_report.render(rows, args.config, gpu_device, gpu_note))
    print(_probe_line("this machine's", here, calib, speed))


def _probe_line(whose: str, here: float | None, calib: float | None, speed: float) -> str:
    if here is None:
        return f"speed probe: {whose} not measured (--no-probe, or the run recorded none): CPU times as calibrated"
    if calib is None:
        return f"speed probe: {whose} {here:.3f} s; the calibration recorded none: CPU times as calibrated"
    if speed == 1.0 and here != calib:
        return f"speed probe: {whose} {here:.3f} s, the calibration's {calib:.3f} s: not used (see the first line)"
    return (
        f"speed probe: {whose} {here:.3f} s, the calibration's {calib:.3f} s: CPU times scaled by {speed:.2f} "
        "(depthlab.probe)"
    )
