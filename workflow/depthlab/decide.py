"""What would decide an inconclusive row, at what planned cost; and ``depthlab decide RESULTS --budget 2h``.

Every inconclusive paper row ends its evidence with "to decide: <what> (+<cost> planned)", and claims.json carries the
same as the row's ``to_decide``: ``{"text", "changes": [{"key", "value"}], "seconds"}``.  ``changes`` are dotted config
keys (the ones ``depthlab sweep --set`` takes) and their new values; ``seconds`` is the CPU time
``depthlab plan --no-probe`` adds for them to the study (None where the row names no config change: paper scale, a
GPU, a data set the laptop has not got).

What each study suggests comes from its claims module (:mod:`depthlab.suggest`, which prices nothing).  After the
verdicts, :func:`annotate` prices the suggestions against the study's config (the claims spec carries it:
``study.ClaimsBase``), so the row's cost is what the plan says for this config and this package's cost table
(``study.claims_context``); the claims record names that table's hash.  ``depthlab decide`` reads a
finished run's claims, applies every change whose cost fits the budget (cheapest row first, the changes of one key
merged: the larger seed list, the longer budget), prices the whole fork again (changes of several rows share jobs),
writes the fork's config and forks the run into it, so that ``make run CONFIG=<fork>`` recomputes only what changed.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import outputs
from .claims import INCONCLUSIVE, Verdict, cost_text
from .suggest import Suggestion, SuggestionError, merge_value

PRICE_RESULTS = "/nonexistent/depthlab-decide"  # the plan prices every job as missing
COST_TABLE = Path(__file__).resolve().parent / "costs.json"  # what prices a suggestion (the package's CPU calibration)


# ---- pricing ---------------------------------------------------------------------------------------------


def _full(ctx: dict) -> dict:
    cfg = {k: v for k, v in copy.deepcopy(ctx).items() if v is not None}
    cfg.update(device="cpu", results=PRICE_RESULTS)
    return cfg


def planned_jobs(cfg: dict) -> dict[str, float]:
    """Each job's planned CPU seconds, keyed by what it computes (``costs.report.plan``'s ``per_job``)."""
    from .costs import report as cost_report

    jobs: dict[str, float] = {}
    cost_report.plan(cfg, results=PRICE_RESULTS, per_job=jobs)
    return jobs


def added_seconds(new: dict[str, float], base: dict[str, float]) -> float:
    """The planned seconds of the jobs ``new`` runs that ``base`` does not: a changed config's own price, at its own
    scale (a job whose spec changes is a new job; a figure or claims job reruns with its study's config)."""
    return sum(s for k, s in new.items() if k not in base)


def apply(cfg: dict, changes: list[tuple[str, Any]]) -> dict:
    """A copy of ``cfg`` with each dotted key set (a key the config leaves to its default gets its parents), as
    ``depthlab sweep --set`` sets it."""
    from .config import set_dotted

    out = copy.deepcopy(cfg)
    for key, value in changes:
        set_dotted(out, key.split("."), copy.deepcopy(value))
    return out


def price(ctx: dict, changes: list[tuple[str, Any]], base: dict[str, float] | None = None) -> float:
    """Planned CPU seconds of the jobs the changes add to the study (:func:`added_seconds`); raises
    config.ConfigError when the changed config is not valid."""
    from . import config as dlc

    full = _full(ctx)
    new = dlc.validate(apply(full, changes), memory=False)
    base = planned_jobs(dlc.validate(copy.deepcopy(full), memory=False)) if base is None else base
    return added_seconds(planned_jobs(new), base)


def annotate(study: Any, spec: Any, verdicts: list[Verdict]) -> list[Verdict]:
    """Each inconclusive claim row of the papers gets its ``to_decide`` (the study's ``to_decide`` hook, priced)."""
    import importlib

    from . import config as dlc

    ctx = getattr(spec, "config", None) or {}
    if not ctx.get("studies"):
        return verdicts
    hook = getattr(importlib.import_module(study.stage("claims").module), "to_decide", None)
    base = None
    cache: dict[str, float | str] = {}
    for v in verdicts:
        if v.kind != "claim" or v.verdict != INCONCLUSIVE:
            continue
        s = hook(v, ctx) if hook else None
        s = s or Suggestion("not known at this config: no knob of it is known to decide this row (see its reason)")
        if s.changes:
            key = repr(s.changes)
            if key not in cache:
                if base is None:
                    base = planned_jobs(dlc.validate(_full(ctx), memory=False))
                try:
                    cache[key] = price(ctx, s.changes, base)
                except dlc.ConfigError as e:  # a hook's change the schema refuses: said, never silently unpriced
                    cache[key] = f"not priced: the change is not a valid config ({e})"
            if isinstance(cache[key], str) and s.otherwise:  # the hook's word for a change beyond this scale
                s = Suggestion(s.otherwise)
            elif isinstance(cache[key], str):
                s.text += f" ({cache[key]})"
            else:
                s.seconds = cache[key]
        v.to_decide = s.as_dict()
    return verdicts


# ---- depthlab decide -----------------------------------------------------------------------------------


class DecideError(ValueError):
    pass


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(s|m|min|h)?\s*$")


def parse_budget(arg: str) -> float:
    """'2h', '90m', '600s', '1.5' (hours) -> seconds; a one-line error otherwise."""
    m = _DURATION.match(str(arg))
    if not m:
        raise DecideError(f"--budget {arg!r}: write a duration such as 2h, 90m or 600s")
    x = float(m.group(1))
    secs = x * {"s": 1, "m": 60, "min": 60, "h": 3600, None: 3600}[m.group(2)]
    if not math.isfinite(secs) or secs <= 0:
        raise DecideError(f"--budget {arg!r}: the budget must be a positive duration")
    return secs


@dataclass
class Row:
    study: str
    verdict: Verdict
    suggestion: Suggestion


@dataclass
class Decision:
    chosen: list[Row]
    left: list[Row]  # priced rows over the budget
    unpriced: list[Row]  # rows that name no config change (paper scale ...)
    changes: dict[str, Any]  # dotted key -> value, all rows merged
    seconds: float  # the fork's planned CPU seconds over the base's (all changes at once)
    base_seconds: float


def verified(path: Path) -> None:
    """Refuse a claims file its provenance record does not vouch for (the audit's own check): the record's hash over its
    fields, and the file's sha256 as the claims job wrote it.  An edited row could otherwise turn a suggestion into any
    config change (``device: cuda``) that decide would write."""
    from . import provenance, safeio, storage

    prov_path = path.with_suffix(".provenance.json")
    try:
        rec = safeio.read_json(prov_path)
    except (OSError, ValueError) as e:
        raise DecideError(
            f"{prov_path}: the claims file's provenance cannot be read ({type(e).__name__}): rerun its claims job"
        ) from None
    if not isinstance(rec, dict) or provenance.record_hash(rec) != rec.get("record_hash"):
        raise DecideError(
            f"{prov_path}: its provenance record was edited (audit --strict fails on it too); rerun the claims job"
        )
    if storage.file_hash(path) != rec.get("json_sha256"):
        raise DecideError(
            f"{path}: edited since its claims job wrote it (its sha256 is not the one recorded; audit --strict fails on "
            "it too); restore it or rerun the claims job"
        )


def rows_of(results: Path) -> list[Row]:
    """Every inconclusive paper row of a finished run, with its suggestion (claims.json of each study)."""
    from . import safeio

    out = []
    for path in sorted(results.glob("*/claims.json")):
        verified(path)
        try:
            rows = safeio.read_json(path)
        except Exception as e:
            raise DecideError(f"{path}: not a claims file this version can read ({type(e).__name__}: {e})") from None
        if not isinstance(rows, list):
            raise DecideError(f"{path}: not a list of verdict rows")
        for r in rows:
            if not isinstance(r, dict):
                raise DecideError(f"{path}: a row is not a mapping")
            v = Verdict.from_dict(r)
            if v.kind == "claim" and v.scope == "paper" and v.verdict == INCONCLUSIVE:
                d = r.get("to_decide")
                try:
                    s = Suggestion.from_dict(d) if isinstance(d, dict) else Suggestion("(the run predates 'to decide')")
                except SuggestionError as e:
                    raise DecideError(f"{path}: {e}") from None
                out.append(Row(path.parent.name, v, s))
    return out


def decide(results: Path, config: dict, budget_s: float, studies: list[str] | None = None) -> Decision:
    """The rows whose changes fit ``budget_s`` together, cheapest first, priced as one fork (``studies``: only theirs)."""
    from . import config as dlc

    rows = [r for r in rows_of(results) if not studies or r.study in studies]
    priced = sorted(
        [r for r in rows if r.suggestion.changes and r.suggestion.seconds is not None],
        key=lambda r: r.suggestion.seconds,
    )
    unpriced = [r for r in rows if not (r.suggestion.changes and r.suggestion.seconds is not None)]
    base_cfg = copy.deepcopy(config)
    base_cfg.update(device="cpu", results=PRICE_RESULTS)
    base_jobs = planned_jobs(dlc.validate(copy.deepcopy(base_cfg), memory=False))
    base = sum(base_jobs.values())
    chosen, left, changes, spent = [], [], {}, 0.0
    for r in priced:
        trial = dict(changes)
        for k, v in r.suggestion.changes:
            trial[k] = merge_value(trial[k], v) if k in trial else v
        try:
            cost = added_seconds(
                planned_jobs(dlc.validate(apply(base_cfg, list(trial.items())), memory=False)), base_jobs
            )
        except dlc.ConfigError:
            left.append(r)
            continue
        if cost <= budget_s:
            chosen.append(r)
            changes, spent = trial, cost
        else:
            left.append(r)
    return Decision(chosen, left, unpriced, changes, spent, base)


def write_fork(config_path: Path, raw: dict, d: Decision, out: Path, results: str) -> None:
    import yaml

    cfg = apply(raw, list(d.changes.items()))
    cfg["results"] = results
    head = (
        f"# written by depthlab decide from {config_path};\n"
        f"# planned +{d.seconds / 3600:.2f} core-h over the base's {d.base_seconds / 3600:.2f}; the rows it is to decide:\n"
        + "".join(f"#   {r.study} {r.verdict.claim} ({r.verdict.subject}): {r.suggestion.text}\n" for r in d.chosen)
    )
    outputs.write_user_file((head + yaml.safe_dump(cfg, sort_keys=False)).encode(), out, what="--out")


def render(d: Decision, budget_s: float) -> str:
    lines = [f"budget {budget_s / 3600:.2f} core-h; the base plans {d.base_seconds / 3600:.2f} core-h", ""]
    if d.chosen:
        lines.append(f"to decide ({len(d.chosen)} rows, +{d.seconds / 3600:.2f} core-h planned together):")
        lines += [
            f"  {r.study} {r.verdict.claim} | {r.verdict.subject}: {r.suggestion.text} "
            f"({cost_text(r.suggestion.seconds)} alone)"
            for r in d.chosen
        ]
    else:
        lines.append("no row's changes fit the budget")
    if d.left:
        lines += ["", f"over the budget ({len(d.left)} rows):"]
        lines += [
            f"  {r.study} {r.verdict.claim} | {r.verdict.subject}: {r.suggestion.text} ({cost_text(r.suggestion.seconds)})"
            for r in d.left
        ]
    if d.unpriced:
        lines += ["", f"not a change of this config ({len(d.unpriced)} rows):"]
        lines += [f"  {r.study} {r.verdict.claim} | {r.verdict.subject}: {r.suggestion.text}" for r in d.unpriced]
    if d.changes:
        lines += ["", "changes:"] + [f"  {k} = {v}" for k, v in d.changes.items()]
    return "\n".join(lines)


def run(args: Any) -> int:
    """depthlab decide RUN [--budget 2h] [--out NEW.yaml] [--no-fork]: prints what it will decide and at what cost,
    writes the fork's config, forks RUN into it (unless --no-fork); 0, or 2 with one line on bad input."""
    import sys

    from . import config as dlc
    from . import folder, fork

    def fail(msg: str) -> int:
        print(f"depthlab decide: {msg}", file=sys.stderr)
        return 2

    try:
        budget = parse_budget(args.budget)
        p = Path(args.run)
        if p.is_file():
            source = p
        elif p.is_dir():
            source = p / "config.used.yaml"
            if not source.is_file():
                return fail(f"{p}: no config.used.yaml: not a finished run's results folder")
        else:
            return fail(f"{args.run}: neither a config file nor a results folder")
        raw = dlc.read_yaml(source)
        if not isinstance(raw, dict):
            return fail(f"{source}: not a mapping of keys to values")
        full = dlc.validate(copy.deepcopy(raw), memory=False, source=source)
        results = p if p.is_dir() else Path(full["results"])
        if not any(results.glob("*/claims.json")):
            return fail(f"{results}: no study's claims.json: run it first (make run CONFIG=...)")
        name = f"{results.name}-decide"
        if args.out and Path(args.out).suffix not in (".yaml", ".yml"):
            # its results folder is the path without the suffix: without one, the config would name itself
            return fail(f"--out {args.out}: name a .yaml file (the fork's results folder is that path without .yaml)")
        # beside the run's config (the file given, else the one the folder belongs to), never inside a results folder
        home = source if p.is_file() else folder.owner_config(results)
        out = Path(args.out) if args.out else (home.parent if home else Path.cwd()) / f"{name}.yaml"
        new_results = str(out.with_suffix("")) if args.out else str(results.parent / name)
        outputs.user_file(out, what="--out")  # before any work: never inside a run's folder, its folder exists
        outputs.user_folder(Path(new_results), what="the fork's results folder")
        unknown = sorted(set(args.study or []) - set(full["studies"]))
        if unknown:
            return fail(
                f"--study {', '.join(unknown)}: not a study of this run; its studies: {', '.join(sorted(full['studies']))}"
            )
        d = decide(results, full, budget, args.study)
    except (DecideError, dlc.ConfigError, outputs.OutputRefused) as e:
        return fail(str(e))
    print(render(d, budget))
    if not d.changes:
        return 0
    try:
        write_fork(source, raw, d, out, new_results)
    except outputs.OutputRefused as e:
        return fail(str(e))
    except (OSError, ValueError) as e:
        return fail(f"cannot write {out}: {e}")
    print(f"\nwrote {out} (results: {new_results})")
    if not args.no_fork:
        try:
            done = fork.fork(results, out)
        except fork.ForkError as e:
            return fail(str(e))
        print(done.summary())
    print(f"next: make run CONFIG={out}   then: depthlab diff {results} {new_results}")
    return 0
