"""Command line: the thin layer Snakemake rules call, plus validate, audit and fingerprint.

    depthlab stage --spec JSON --inputs JSON --output PATH --results DIR [--device auto] [--threads N]
    depthlab index --inputs JSON --output DIR/claims.md --results DIR
    depthlab snapshot --config-json JSON --output DIR/config.used.yaml
    depthlab validate CONFIG
    depthlab audit TARGET [--configfile CONFIG] [--strict] [--reproduce N] [--job STORE ...] [--seed S]
    depthlab fingerprint STUDY STAGE
    depthlab diff A B [--json] [--markdown FILE] [--fail-on-change]
    depthlab neutral BASE [--config CONFIG] [--cores N] [--keep]

Each command parses its arguments and calls the module that does the work: the stage runner (depthlab.runner) for
`stage`, `index` and `snapshot`, which the Snakemake rules call; depthlab.audit, compare, fork, decide, sweep,
papercheck, plan and results for the others.  Bad input ends in one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import logging
import os
import sys
from pathlib import Path
from typing import Callable

from . import config as cfg
from . import outputs
from . import provenance as prov
from . import storage

log = logging.getLogger("depthlab")


def stage(args: argparse.Namespace) -> None:
    from . import runner

    runner.stage(args)


def neutral(args: argparse.Namespace) -> None:
    from .neutral import run

    raise SystemExit(run(args))


def index(args: argparse.Namespace) -> None:
    from . import runner

    runner.index(args)


def snapshot(args: argparse.Namespace) -> None:
    from . import runner

    runner.snapshot(args)


def _load_or_exit(path: str, memory: bool = True) -> dict:
    from .studies import StudyPathError

    try:
        return cfg.validate(cfg.read_yaml(path), memory=memory, source=path)
    except (cfg.ConfigError, StudyPathError) as e:
        print(e, file=sys.stderr)
        raise SystemExit(2) from None


def _version() -> str:
    from . import __version__

    return f"depthlab {__version__} (code {prov.code_version()})"


def _count(text: str) -> int:
    """argparse type of a count: an integer >= 0 (``--reproduce -1`` was a ValueError traceback)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{n} is negative: give a count of 0 or more")
    return n


def _cores(text: str) -> int:
    """--cores: a whole number of at least 1 (0 made a sweep's Snakemake wait forever)."""
    n = _count(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: give at least 1 core")
    return n


def _factor(text: str) -> float:
    """--factor: a finite ratio above 1 (nan and -1 were taken, and every stage was then marked "!")."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(v) or v <= 1:
        raise argparse.ArgumentTypeError(f"{text}: give a finite factor above 1 (2: within half to twice the plan)")
    return v


def _minutes(text: str) -> float:
    """--max-minutes: a finite number of minutes, 0 or more."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of minutes") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"{text}: give a finite number of minutes, 0 or more")
    return v


def diff_runs(args: argparse.Namespace) -> None:
    """depthlab diff A B: config keys, stores and claim rows that differ between two runs (depthlab.compare)."""
    from . import compare, outputs

    try:
        d = compare.diff(compare.load(args.a), compare.load(args.b))
        folders = (d.a.root, d.b.root)
        for opt, path in (
            ("--markdown", args.markdown),
            ("--plot", args.plot),
        ):  # before any work: one line, no traceback
            if path:
                outputs.user_file(path, protect=folders, what=opt)
        if args.markdown:
            outputs.write_user_file(compare.markdown(d).encode(), args.markdown, protect=folders, what="--markdown")
        if args.plot:
            n = compare.plot(d, args.plot, every_row=args.plot_every_row)
            print(
                f"wrote {args.plot} ({n} claim rows, both runs)"
                if n
                else f"--plot {args.plot}: not drawn: no verdict changed and no effect moved (--plot-every-row draws every "
                "row)",
                file=sys.stderr,
            )
    except (compare.DiffError, outputs.OutputRefused) as e:
        print(f"depthlab diff: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except OSError as e:  # a full disk, a read-only folder: one line naming the file
        print(
            f"depthlab diff: cannot write {e.filename or args.markdown or args.plot}: {e.strerror or e}",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
    print(json.dumps(d.as_dict(), indent=1, sort_keys=True) if args.json else compare.terminal(d), end="")
    if args.fail_on_change and d.any_change:
        raise SystemExit(1)


def fork_runs(args: argparse.Namespace) -> None:
    """depthlab fork BASE NEW (depthlab.fork)."""
    from . import fork

    try:
        if args.set_arg:
            print(f"wrote {fork.write_new(args.base, args.new, args.set_arg)}")
        done = fork.fork(args.base, args.new)
    except fork.ForkError as e:
        print(f"depthlab fork: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    print(done.summary())
    if Path(args.new).is_file():
        print(
            f"next: make run CONFIG={args.new}   (a dry run first: make run CONFIG={args.new} SMK_ARGS=--dry-run), then "
            f"depthlab diff {args.base} {args.new}"
        )


def module_run(name: str) -> Callable[[argparse.Namespace], None]:
    """A subcommand whose module has ``run(args) -> exit status`` (decide, compare)."""

    def call(args: argparse.Namespace) -> None:
        rc = importlib.import_module(f"depthlab.{name}").run(args)
        if rc:
            raise SystemExit(rc)

    return call


def sweep_runs(args: argparse.Namespace) -> None:
    """depthlab sweep CONFIG --set KEY=V1,V2,... [--set ...] [--zip] (depthlab.sweep)."""
    from . import sweep, sweep_table

    try:
        sw = sweep.prepare(args.config, args.set_arg, args.out, zipped=args.zip)
        print(
            f"depthlab sweep: {sw.key} over {len(sw.values)} values, in {sw.folder}"
            + (
                f"; the first forks from {sw.base}"
                if sw.base
                else f" ({args.config} has not run: the first value runs whole)"
            )
        )
        if args.table_only:
            sweep.recount(sw)
        else:
            sweep.run(sw, [] if args.cores is None else ["--cores", str(args.cores)], execute=not args.no_run)
        if args.no_run:
            for v in sw.values:
                print(f"  make run CONFIG={v.config_path}")
            return
        paths = sweep_table.write_outputs(sw)
    except sweep.SweepError as e:
        print(f"depthlab sweep: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    for v in sw.values:
        print(f"  {v.written}: {v.stores} stores, {v.computed} computed, {v.shared} shared with the value before")
    print("wrote " + ", ".join(str(p) for p in paths.values()))


def paper_check(args: argparse.Namespace) -> None:
    """depthlab paper-check [CONFIG] (depthlab.papercheck)."""
    from . import config as dlc
    from . import memory, papercheck, sweep

    try:
        checks = papercheck.run(args.config, args.out, cores=args.cores, max_minutes=args.max_minutes)
    except (dlc.ConfigError, sweep.SweepError, outputs.OutputRefused) as e:  # SweepError: no checkout's Snakefile
        print(f"depthlab paper-check: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except OSError as e:  # --out on a read-only file system, a full disk: one line naming the path
        print(f"depthlab paper-check: cannot write {e.filename or args.out}: {e.strerror or e}", file=sys.stderr)
        raise SystemExit(2) from None
    print(papercheck.render(checks, args.config, memory.machine_bytes() / memory.GIB), end="")
    if checks and all(c.status == "skipped" for c in checks):  # green with nothing checked is no check
        print(
            f"depthlab paper-check: every one of the {len(checks)} stages was skipped (none fits this machine's memory "
            f"or --max-minutes {args.max_minutes:g}): nothing was checked",
            file=sys.stderr,
        )
        raise SystemExit(1)
    if any(c.status in ("failed", "not run", "over plan") for c in checks):
        raise SystemExit(1)


def where(args: argparse.Namespace) -> None:
    print(_load_or_exit(args.config, memory=False)["results"])


def targets(args: argparse.Namespace) -> None:
    from .studies import get_study

    config = _load_or_exit(args.config, memory=False)
    lines = [
        f"targets of {args.config} (make run SMK_ARGS=<target>; a store or figure path works too):",
        "  all                          every study, its figures and claims, the claims index (the default)",
    ]
    for name in sorted(config["studies"]):
        study = get_study(name)
        lines.append(f"  {name:<28} {study.title}: every figure and the claims")
        lines += [f"  {name}_{fig}" for fig in study.figures(config)]
    print("\n".join(lines))


def validate(args: argparse.Namespace) -> None:
    _load_or_exit(args.config)
    print(f"{args.config}: OK")


def audit(args: argparse.Namespace) -> None:
    from . import audit as au

    config = _load_or_exit(args.configfile, memory=False) if args.configfile else None
    result = au.run(args.target, config, strict=args.strict)
    if (args.reproduce or args.job) and not result.problems:
        au.reproduce(result, args.reproduce, args.job or [], args.seed)
    print("\n".join(result.lines))
    if result.problems:
        print(f"\nAUDIT FAILED: {len(result.problems)} problem(s):", file=sys.stderr)
        for p in result.problems:
            print(f"  - {p}", file=sys.stderr)
        raise SystemExit(1)
    notes = f"; {len(result.notes)} note(s) above" if result.notes else ""
    print(f"\naudit OK: {len(result.seen)} file(s) checked, every recorded hash matches what is on disk{notes}")


def plan(args: argparse.Namespace) -> None:
    from .costs import command

    command.run(args, load=_load_or_exit)


def ls(args: argparse.Namespace) -> None:
    from .results import ResultsError, list_results

    results = args.results or _load_or_exit(args.config, memory=False)["results"]
    try:
        print(list_results(results))
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


def fingerprint(args: argparse.Namespace) -> None:
    from .studies import get_study

    try:
        mods = get_study(args.study).stage(args.stage).fingerprint_modules
    except KeyError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        raise SystemExit(2) from None
    for m in prov.closure(mods):
        print(m)
    print(f"fingerprint {prov.code_fingerprint(mods)}")


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    p = argparse.ArgumentParser(prog="depthlab")
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("where", help="print the results folder of a config")
    w.add_argument("config", nargs="?", default="config/config.yaml")
    w.set_defaults(func=where)
    t = sub.add_parser("targets", help="list the Snakemake targets a config has: all, one per study, one per figure")
    t.add_argument("config", nargs="?", default="config/config.yaml")
    t.set_defaults(func=targets)
    s = sub.add_parser("stage", help="run one pipeline stage (called by the Snakemake rules)")
    s.add_argument("--spec", required=True, help="canonical JSON spec of the job (names its study and stage)")
    s.add_argument("--inputs", default="{}", help="JSON {name: path} of the job's inputs")
    s.add_argument("--output", required=True, help="the store, figure stem or claims file to write")
    s.add_argument("--results", required=True, help="the results root (records name files relative to it)")
    s.add_argument("--threads", type=int, default=None, help="torch threads (default 1 or $DEPTHLAB_THREADS)")
    s.add_argument(
        "--device",
        default=os.environ.get("DEPTHLAB_DEVICE", "auto"),
        help="auto | cpu | cuda (default: $DEPTHLAB_DEVICE, else auto)",
    )
    s.set_defaults(func=stage)
    i = sub.add_parser("index", help="build the claims index over every study")
    i.add_argument("--inputs", required=True, help="JSON {study: path of its claims.json}")
    i.add_argument("--output", required=True)
    i.add_argument("--results", required=True)
    i.add_argument(
        "--scale",
        default="as configured",
        choices=["as configured", "smoke"],
        help="smoke: open with a banner saying the numbers only show that everything runs",
    )
    i.set_defaults(func=index)
    c = sub.add_parser("snapshot", help="write the validated config (defaults filled in) as YAML")
    c.add_argument("--config-json", required=True, help="the config as JSON")
    c.add_argument("--output", required=True)
    c.set_defaults(func=snapshot)
    a = sub.add_parser(
        "audit", help="print a figure's, claims report's or store's lineage and check every recorded hash"
    )
    a.add_argument("target", help="a figure (.png/.pdf/.csv/.provenance.json), a claims.md, or a .zarr store")
    a.add_argument("--configfile", help="also check that each store was made from exactly this config's values")
    a.add_argument(
        "--strict",
        action="store_true",
        help="also fail on stores made by code whose fingerprint differs from the checkout's",
    )
    a.add_argument(
        "--reproduce",
        type=_count,
        default=0,
        metavar="N",
        help="re-run N store jobs of the lineage (a seeded random "
        "sample) in a temporary folder and compare content hashes: the check a reviewer runs",
    )
    a.add_argument("--job", action="append", metavar="STORE", help="also re-run this store's job (repeatable)")
    a.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    a.set_defaults(func=audit)
    v = sub.add_parser("validate", help="validate a config file")
    v.add_argument("config")
    v.set_defaults(func=validate)
    df = sub.add_parser("diff", help="what differs between two runs: config keys, stores, claim verdicts and effects")
    df.add_argument("a", help="a results folder, or a config file (its folder)")
    df.add_argument("b", help="the other")
    df.add_argument("--json", action="store_true", help="print JSON instead of the table")
    df.add_argument("--markdown", metavar="FILE", help="also write the comparison as markdown")
    df.add_argument("--fail-on-change", action="store_true", help="exit 1 when a verdict changed (for CI)")
    df.add_argument(
        "--plot",
        metavar="PNG",
        help="also draw both runs' rows on one forest plot: the changed and moved rows (every row when none moved)",
    )
    df.add_argument(
        "--plot-every-row", action="store_true", help="with --plot: draw every row, not only those that moved"
    )
    df.set_defaults(func=diff_runs)
    fk = sub.add_parser(
        "fork",
        help="start NEW's results folder from BASE's by hard links; a run of NEW then recomputes "
        "only the jobs whose spec or code differ (depthlab.fork)",
    )
    fk.add_argument("base", help="a finished run: its config file or its results folder")
    fk.add_argument(
        "new",
        help="the new config file (its `results:` folder must be new or empty); with --set, a new "
        "file that fork writes: BASE's config with the changes, its results beside BASE's under NEW's name",
    )
    fk.add_argument(
        "--set",
        dest="set_arg",
        action="append",
        metavar="KEY=VALUE",
        help="a dotted config key and its value, as YAML (repeatable): e.g. studies.mori_ueda.figures.fig1.seeds=[0,1]",
    )
    fk.set_defaults(func=fork_runs)
    dc = sub.add_parser(
        "decide",
        help="a fork config applying every 'to decide' change of a finished run's "
        "inconclusive rows whose planned cost fits --budget, and the fork itself (depthlab.decide)",
    )
    dc.add_argument("run", help="a finished run: its results folder or its config file")
    dc.add_argument(
        "--budget", default="2h", help="planned CPU time the changes may add, e.g. 2h, 90m, 600s (default 2h)"
    )
    dc.add_argument(
        "--out",
        help="the fork's config file (default: <results>-decide.yaml beside the results folder; "
        "its results folder is the file's name without .yaml)",
    )
    dc.add_argument(
        "--study", action="append", help="only this study's rows (repeat for several; default: every study)"
    )
    dc.add_argument("--no-fork", action="store_true", help="write the config, do not fork the run into it")
    dc.set_defaults(func=module_run("decide"))
    cp = sub.add_parser("compare", help="N runs' verdicts and effects side by side, rows that differ first")
    cp.add_argument("runs", nargs="+", help="two or more results folders or config files")
    cp.add_argument("--markdown", help="also write the table to this markdown file")
    cp.set_defaults(func=module_run("compare"))
    sw = sub.add_parser(
        "sweep",
        help="knobs over several values (several --set: their grid; --zip: paired): a fork and a run per value, "
        "sharing every store the knobs do not touch, then a table of claim x value (depthlab.sweep)",
    )
    sw.add_argument("config", help="the config to vary (its finished run, if any, is the first fork's base)")
    sw.add_argument(
        "--set",
        dest="set_arg",
        required=True,
        action="append",
        metavar="KEY=V1,V2,...",
        help="a dotted config key and its values, as YAML: e.g. studies.mori_ueda.figures.fig2.depths=[1,2],[1,2,3]; "
        "repeat for several keys",
    )
    sw.add_argument("--zip", action="store_true", help="pair the keys' values (the i-th of each) instead of their grid")
    sw.add_argument("--out", help="the sweep's folder (default: results/<config's results name>-sweep-<key>)")
    sw.add_argument("--cores", type=_cores, help="cores for each run (default: the profile's, all)")
    sw.add_argument(
        "--no-run", action="store_true", help="write and fork every value's config, run nothing; print the commands"
    )
    sw.add_argument("--table-only", action="store_true", help="run nothing; rewrite the table from the values' folders")
    sw.set_defaults(func=sweep_runs)
    pc = sub.add_parser(
        "paper-check",
        help="run the largest job of every stage of the paper config, full shapes, budgets "
        "capped: no crash, and peak memory within the plan (depthlab.papercheck)",
    )
    pc.add_argument("config", nargs="?", default="config/paper.yaml")
    pc.add_argument("--out", default="results/paper-check", help="its own folder (default: results/paper-check)")
    pc.add_argument(
        "--cores", type=_cores, default=1, help="jobs at once (default 1: the largest jobs need most of the memory)"
    )
    pc.add_argument(
        "--max-minutes",
        type=_minutes,
        default=20.0,
        help="skip a job planned longer than this on one core (default 20)",
    )
    pc.set_defaults(func=paper_check)
    ls_ = sub.add_parser(
        "ls", help="per study and stage: jobs, their coordinates, size on disk; whether each figure is up to date"
    )
    ls_.add_argument("results", nargs="?", help="a results folder (default: the --config's)")
    ls_.add_argument(
        "--config",
        default="config/config.yaml",
        help="the config whose results folder to list (default: config/config.yaml)",
    )
    ls_.set_defaults(func=ls)
    pl_ = sub.add_parser("plan", help="jobs, peak memory and CPU time per study and stage of a config, before it runs")
    pl_.add_argument("config", nargs="?", help="a config file")
    pl_.add_argument(
        "--results", help="the results folder whose missing stores count as 'to run' (default: the config's)"
    )
    pl_.add_argument(
        "--costs",
        help="the cost calibration to use (default: the package's costs.json), or the file --calibrate writes",
    )
    pl_.add_argument(
        "--calibrate",
        nargs="+",
        metavar="RESULTS",
        help="fit the cost model to finished runs' benchmarks (results folders, or files --measure wrote); "
        "writes costs_gpu.json when their jobs ran on CUDA, else costs.json, into the first RESULTS folder (or --costs); "
        "never into the package unless --costs names it",
    )
    pl_.add_argument(
        "--check",
        metavar="RESULTS",
        help="per stage, the model's predicted vs a finished run's measured "
        "core-minutes; exits 1 when a stage is off by more than --factor",
    )
    pl_.add_argument(
        "--no-probe",
        action="store_true",
        help="do not time the speed probe (about a second); CPU times as calibrated, unscaled",
    )
    pl_.add_argument(
        "--use-probe",
        action="store_true",
        help="scale CPU times by the probe even where it measured load (more than 2x off the calibration, or a busy "
        "machine), which the plan otherwise says in its first line and leaves out",
    )
    pl_.add_argument("--factor", type=_factor, default=2.0, help="the tolerated factor of --check (default 2)")
    pl_.add_argument("--gpu-costs", metavar="FILE", help="the GPU calibration (default: the package's costs_gpu.json)")
    pl_.add_argument(
        "--measure",
        metavar="RESULTS",
        help="print a finished run's timings as JSON (--calibrate reads such a file in place of a results folder)",
    )
    pl_.set_defaults(func=plan)
    f = sub.add_parser("fingerprint", help="list the modules a stage's code fingerprint covers")
    f.add_argument("study")
    f.add_argument("stage")
    f.set_defaults(func=fingerprint)
    nt = sub.add_parser("neutral", help="a config built at a revision and here: every store and verdict compared")
    nt.add_argument("base", help="the git revision to compare with (this checkout's history)")
    nt.add_argument("--config", default="config/smoke.yaml", help="the config both build (default config/smoke.yaml)")
    nt.add_argument("--cores", type=int, default=2, help="cores for each build (default 2)")
    nt.add_argument("--keep", action="store_true", help="keep both results folders and logs (their folder is printed)")
    nt.set_defaults(func=neutral)
    args = p.parse_args(argv)
    if args.func is not stage:  # a stage job turns it on once its modules are loaded
        from .runner import start_gc

        start_gc()
    from .lock import OutputInUse
    from .costs.model import CostsError
    from .studies import StudyPathError

    try:
        args.func(args)
    except CostsError as e:  # a cost file off its schema: one line naming the file and the key
        print(f"depthlab: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except BrokenPipeError:  # `depthlab targets | head`: the reader is gone, nothing to say
        sys.stderr.close()
        raise SystemExit(0) from None
    except StudyPathError as e:  # a study folder on $DEPTHLAB_STUDY_PATH that cannot join: one line, naming it
        print(f"depthlab: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except (
        OutputInUse
    ) as e:  # an output's lock could not be taken (a directory in its place, a read-only folder): one line
        print(f"depthlab: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception as e:
        if _no_space(e) is None:
            raise
        # the disk is full: say so plainly.  The half-written temporary store is gone by now (storage.write_store),
        # which frees the space this job took, so the line usually reaches the job log, which Snakemake prints
        # (show-failed-logs).  Finished stores are untouched; a rerun resumes.
        target = getattr(args, "output", None) or getattr(args, "target", None) or ""
        if target:  # zarr's writer threads may still have been finishing chunks when the first clean-up ran
            storage.discard_own_tmp(target, settle=0.5)
        # a command with no --output (plan --calibrate, say) names the file the error names
        target = target or getattr(e, "filename", None) or getattr(e.__context__, "filename", None) or "its output"
        try:
            log.error(
                "No space left on device while writing %s (%s); free some space and rerun: finished stores are "
                "kept and this job starts again",
                target,
                _no_space(e),
            )
        finally:
            raise SystemExit(NO_SPACE_EXIT) from None


NO_SPACE_EXIT = 28  # = ENOSPC


def _no_space(e: BaseException | None) -> str | None:
    """The ENOSPC error in ``e``'s chain (zarr and numpy wrap I/O errors), as text, or None."""
    import errno

    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return f"{e.strerror}: {e.filename}" if e.filename else str(e.strerror or e)
        if "No space left on device" in str(e):
            return str(e)[:300]
        e = e.__cause__ or e.__context__
    return None


if __name__ == "__main__":
    main()
