"""``depthlab paper-check [CONFIG]`` (``make paper-check``): the largest job of every stage of the paper-scale config, at
its full shapes with its steps capped, run for real (the NTK crashed at N = 20 000, and nobody had run
the paper profile, so nothing caught it).

What it does:

1. Reads CONFIG (default ``config/paper.yaml``) and caps its *budgets*, never its shapes: every key named in
   :data:`CAPS`, wherever it sits in the config, is lowered to its cap (epochs, iterations, steps, search rounds,
   test points, trials).  Data sizes, widths, depths, dimensions, batch sizes and folds stay as written.
2. Per study and store stage, picks the job with the largest planned peak memory (``Spec.memory()``, what
   ``depthlab plan`` reports; ties: the largest planned time).  A job planned above this machine's memory is listed as
   *skipped* with what it needs.
3. Runs those stores with Snakemake (their upstream chains with them, capped alike) into ``--out``
   (default ``results/paper-check``), ``--keep-going``, so one crash does not hide another.
4. Writes ``<out>/paper-check.md`` and ``.json`` and prints the table: stage, job, its shape (the config key that drives
   its memory), seconds, peak memory (Snakemake's benchmark ``max_rss``) against the plan, and a status: *ok*,
   *over plan* (peak above the plan's estimate plus :data:`BASELINE_GIB` for the interpreter and libraries, times
   :data:`PLAN_SLACK`), *failed* (with the last lines of its log: a segmentation fault shows there), *skipped*.

Exit status 1 when a job failed, was not run or went over plan.  Nothing here changes a result: the capped stores live in their own
folder and are never the paper run's.
"""

from __future__ import annotations

import copy
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from . import outputs

CAPS: dict[str, Any] = {
    "max_epochs": 1,
    "epochs": 2,
    "check_every": 1,
    "patience": 1,
    "onset_checks": 1,  # trainers (all studies, CNNs)
    "rounds": 0,
    "grow_rounds": 0,
    "init_points": 2,  # rate searches: round 0 only
    "max_iterations": 20,
    "min_iterations": 1,  # the acceleration study's full-batch runs
    "steps": 20,
    "min_steps": 0,  # the RZG23 learner
    "n_test": 512,
    "trials": 1,  # test points, KRR data sets
}
BASELINE_GIB = 0.75  # a job's interpreter, torch, numpy and scipy before any array (measured: 0.4-0.6 GiB)
PLAN_SLACK = 1.25  # a peak this much above plan + baseline is "over plan"


def cap(config: Any, caps: dict[str, Any] = CAPS, path: tuple = ()) -> list[tuple[str, Any, Any]]:
    """Lower every capped key in place; returns (dotted key, value, capped value) of each change."""
    changed = []
    if isinstance(config, dict):
        for k, v in config.items():
            if k in caps and isinstance(v, (int, float)) and not isinstance(v, bool) and v > caps[k]:
                config[k] = type(v)(caps[k])
                changed.append((".".join(map(str, path + (k,))), v, config[k]))
            else:
                changed += cap(v, caps, path + (k,))
    elif isinstance(config, list):
        for i, v in enumerate(config):
            changed += cap(v, caps, path + (i,))
    return changed


@dataclass
class Check:
    study: str
    stage: str
    job: str  # the store's path below the study
    shape: str  # the config key driving its memory
    plan_gib: float
    seconds: float | None = None
    peak_gib: float | None = None
    status: str = "not run"
    detail: str = ""


def choose(config: dict, machine_gib: float, max_minutes: float) -> list[Check]:
    """Per store stage, the job with the largest planned memory (then time) that fits this machine and
    ``max_minutes`` of planned time on one core; when the stage's largest does not, the row says what it needs."""
    from . import memory, placement
    from .costs import model as cost_model
    from .jobs import JobGraph
    from .studies import get_study
    from .study import Ref

    costs = cost_model.load_costs()
    graph = JobGraph(config)
    out = []
    for name in config["studies"]:
        study = get_study(name)
        for st in study.store_stages():
            ranked = []
            for node in graph.stage(name, st.name):
                parts = node.spec.memory() or {}
                ranked.append(
                    (
                        sum(parts.values()) / memory.GIB,
                        placement.job_seconds(node.spec, name, st.name, costs),
                        node.job,
                        parts,
                    )
                )
            if not ranked:
                continue
            ranked.sort(key=lambda r: (r[0], r[1]), reverse=True)
            top = ranked[0]
            fits = [r for r in ranked if r[0] <= machine_gib and r[1] <= 60 * max_minutes]
            gib, secs, job, parts = fits[0] if fits else top
            c = Check(name, st.name, study.path(Ref(st.name, job)), max(parts, key=parts.get) if parts else "-", gib)
            if not fits:
                c.status = "skipped"
                c.detail = (
                    f"every job plans more than {machine_gib:.1f} GiB (this machine) or {max_minutes:g} min; the "
                    f"largest: {top[0]:.1f} GiB, {top[1] / 60:.0f} min"
                )
            elif top is not fits[0]:
                c.detail = (
                    f"the largest that fits; the stage's largest, {study.path(Ref(st.name, top[2]))}, plans "
                    f"{top[0]:.1f} GiB and {top[1] / 60:.0f} min"
                )
            out.append(c)
    return out


def _tsv(path: Path) -> tuple[float | None, float | None]:
    """(seconds, max_rss in GiB) from a Snakemake benchmark file; (None, None) for one that is missing, special (a FIFO
    is never opened: it would hang), huge or malformed."""
    from . import safeio

    try:
        head, row = safeio.read_text(path, 1 << 20).splitlines()[:2]
    except (OSError, ValueError):
        return None, None
    cols = dict(zip(head.split("\t"), row.split("\t")))

    def num(k: str) -> float | None:
        try:
            v = float(cols[k])
        except (KeyError, ValueError):
            return None
        return v if math.isfinite(v) and v >= 0 else None

    rss = num("max_rss")
    return num("s"), None if rss is None else rss / 1024  # MB -> GiB (Snakemake's MB are MiB)


def _log_tail(path: Path, n: int = 3) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return " | ".join(lines[-n:])[:400]


def run(
    config_path: str | Path, out: str | Path, cores: int | None = None, max_minutes: float = 20.0, say=print
) -> list[Check]:
    from . import config as dlc
    from . import memory, storage

    out = outputs.user_folder(out, what="paper-check --out")  # before any work: not /, not a run's folder
    raw = dlc.read_yaml(config_path)
    if not isinstance(raw, dict):
        raise dlc.ConfigError(f"{config_path}: not a mapping")
    capped = copy.deepcopy(raw)
    changes = cap(capped)
    capped["results"] = str(out / "results")
    # max_memory_gib stays the paper's: the run's validator would refuse a config whose largest job does not fit this
    # machine, and only jobs that fit are targeted
    full = dlc.validate(copy.deepcopy(capped), memory=False, source=config_path)
    machine = memory.machine_bytes() / memory.GIB
    checks = choose(full, machine * 0.9, max_minutes)
    cfg_file = out / "paper-check.yaml"
    storage.write_text(
        f"# {config_path} with its budgets capped by depthlab paper-check ({len(changes)} keys)\n"
        + yaml.safe_dump(capped, sort_keys=False),
        cfg_file,
    )  # YAML 1.1 floats: 1.0e-05, not 1e-05
    say(
        f"paper-check: {config_path}, {len(changes)} budget keys capped (e.g. "
        + ", ".join(f"{k}: {a} -> {b}" for k, a, b in changes[:4])
        + f"); {len(checks)} stages, "
        f"{sum(c.status == 'skipped' for c in checks)} skipped (memory or time); into {out}"
    )
    targets = [f"{full['results']}/{c.study}/{c.job}" for c in checks if c.status != "skipped"]
    from .sweep import child_env, run_child, snakemake_command

    if not targets:  # no target would make Snakemake build `all`: the whole config
        say("paper-check: nothing to run: every stage skipped (memory or time); the table says why")
    else:
        cmd = snakemake_command(cfg_file, ["--keep-going", *(["--cores", str(cores)] if cores else []), *targets])
        t0 = time.monotonic()
        rc = run_child(cmd, child_env())  # a TERM reaches Snakemake too
        say(f"paper-check: Snakemake ended with {rc} after {time.monotonic() - t0:.0f} s")
    collect(checks, Path(full["results"]))
    storage.write_text(render(checks, str(config_path), machine), out / "paper-check.md")
    storage.write_text(json.dumps([asdict(c) for c in checks], indent=1) + "\n", out / "paper-check.json")
    return checks


def _killed(root: Path) -> set[str]:
    """Outputs whose job the shell reports ``Killed`` (SIGKILL: the kernel's out-of-memory killer, or a time limit) in
    the newest Snakemake log of the run: a killed job writes nothing more to its own log."""
    logs = sorted((root / "logs" / "snakemake").glob("*.log"))
    if not logs:
        return set()
    out, killed = set(), False
    for line in logs[-1].read_text(errors="replace").splitlines():
        if " Killed " in line and "depthlab stage" in line:
            killed = True
        elif killed and line.strip().startswith("output:"):
            out.add(line.split("output:", 1)[1].strip())
            killed = False
    return out


def collect(checks: list[Check], root: Path) -> None:
    """Each run check's seconds, peak memory and status from its benchmark file, store and log below ``root``."""
    killed = _killed(root)
    for c in checks:
        if c.status == "skipped":
            continue
        stem = c.job.removesuffix(".zarr")
        c.seconds, c.peak_gib = _tsv(root / "benchmarks" / c.study / f"{stem}.tsv")
        log = root / "logs" / c.study / f"{stem}.log"
        if not (root / c.study / c.job).is_dir():
            c.status = "failed" if log.is_file() else "not run"  # no log: Snakemake never started it
            c.detail = (_log_tail(log) if log.is_file() else "its upstream failed, or Snakemake stopped first") + (
                f"; {c.detail}" if c.detail else ""
            )
            if str(root / c.study / c.job) in killed or f"{root}/{c.study}/{c.job}" in killed:
                c.detail = "killed (SIGKILL: out of memory, or a time limit; the kernel log says which); " + c.detail
        elif c.peak_gib is not None and c.peak_gib > PLAN_SLACK * (c.plan_gib + BASELINE_GIB):
            c.status = "over plan"
        else:
            c.status = "ok"


def render(checks: list[Check], config: str, machine_gib: float) -> str:
    def f(x: float | None, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    lines = [
        f"# paper-check of {config}",
        "",
        f"The largest job of each stage, full shapes, budgets capped (depthlab.papercheck.CAPS); this machine: "
        f"{machine_gib:.1f} GiB. Over plan: a peak above {PLAN_SLACK} x (plan + {BASELINE_GIB} GiB).",
        "",
        "| study | stage | job | shape (memory key) | seconds | peak GiB | plan GiB | status |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in checks:
        lines.append(
            f"| {c.study} | {c.stage} | {c.job} | {c.shape} | {f(c.seconds, '.1f')} | {f(c.peak_gib, '.2f')} | "
            f"{c.plan_gib:.2f} | {c.status}{': ' + c.detail.replace('|', '/') if c.detail else ''} |"
        )
    return "\n".join(lines) + "\n"
