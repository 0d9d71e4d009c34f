"""``depthlab sweep CONFIG --set KEY=V1,V2,... [--set KEY2=...] [--zip]``: one knob or several, one table of what
each claim says at each value.

Several ``--set`` options sweep their grid (every combination, the first key slowest), as Hydra's multirun does;
``--zip`` pairs their values instead (the i-th of each, so every key needs as many values).  A "value" below is one
combination.  For each value the sweep writes a config (CONFIG with KEY set to it, and a results folder of its own), forks it from
the run before it (:mod:`depthlab.fork`: the first value from CONFIG's own finished run, if there is one), and runs it
with Snakemake.  So a store that does not depend on KEY is computed once and hard-linked into every value's folder;
only what KEY touches is recomputed.  Then it reads every value's ``claims.json`` and writes, in the sweep folder:

* ``sweep.md``: claim row x value, each cell the verdict and effect +- SE; rows whose verdict differs between values
  first;
* ``sweep.csv``: the same, one line per (row, value), with effect, SE, threshold and z;
* ``sweep.png``: a heatmap of the verdicts (rows x values), each cell annotated with its effect;
* ``sweep.json``: the key, the values, their configs and folders, and per value how many stores it computed and how
  many it shares with the value before it (the same files, by inode).

Everything is checked before any compute: KEY must be a key of the validated config (defaults filled in), and every
value's config must validate.  The values are YAML (``0.1``, ``[1, 2, 3]``, ``true``); commas inside brackets or
quotes do not split values.  An interrupted sweep resumes where it stopped: a value whose folder has begun is run
again (Snakemake recomputes only what is missing), not forked again.  Nothing from a folder is executed or unpickled.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from . import outputs

RECORD = "sweep.json"


class SweepError(ValueError):
    """A bad key, value or folder: one line, raised before any compute."""


def split_values(text: str) -> list[str]:
    """``'0.1,[1, 2],"a,b"'`` -> ``['0.1', '[1, 2]', '"a,b"']``: commas split only outside brackets and quotes."""
    out, depth, quote, cur = [], 0, "", ""
    for ch in text:
        if quote:
            cur += ch
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth < 0:
                raise SweepError(f"values {text!r}: a closing {ch!r} without its opening bracket")
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if quote or depth:
        raise SweepError(f"values {text!r}: an unclosed {'quote' if quote else 'bracket'}")
    out.append(cur.strip())
    if any(v == "" for v in out):
        raise SweepError(f"values {text!r}: an empty value (two commas, or one at an end)")
    return out


def parse_set(arg: str) -> tuple[str, list[Any], list[str]]:
    """``KEY=V1,V2`` -> (KEY, parsed values, the values as written)."""
    key, eq, rest = arg.partition("=")
    key = key.strip()
    if not eq or not key or not rest.strip():
        raise SweepError(f"--set {arg!r}: write KEY=V1,V2,... (e.g. studies.mori_ueda.figures.fig2.seeds=[0],[0,1])")
    written = split_values(rest)
    values = []
    for w in written:
        try:
            values.append(yaml.safe_load(w))
        except yaml.YAMLError as e:
            raise SweepError(f"--set {key}: the value {w!r} is not YAML ({getattr(e, 'problem', None) or e})") from None
    seen: list[Any] = []
    for v, w in zip(values, written):
        if v in seen:
            raise SweepError(f"--set {key}: the value {w!r} is given twice")
        seen.append(v)
    return key, values, written


def _lookup(cfg: Any, parts: list[str]) -> tuple[bool, str]:
    """Whether the dotted path exists in ``cfg``, and where it stops (the keys allowed there) when it does not."""
    node = cfg
    for i, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            here = ".".join(parts[:i]) or "(top level)"
            keys = sorted(node) if isinstance(node, dict) else []
            return False, f"{here} has no key {part!r}" + (
                f"; its keys: {', '.join(map(str, keys))}" if keys else f" ({here} is a value, not a mapping)"
            )
        node = node[part]
    return True, ""


def slug(i: int, written: str) -> str:
    """A value's folder name: its index and a file-name-safe form of the value as written (``v2-0.5``, ``v1-_1_2_``)."""
    s = re.sub(r"[^A-Za-z0-9._+-]+", "_", written).strip("._") or "value"
    return f"v{i + 1}-{s[:40]}"


@dataclass
class Value:
    written: str  # the value as written ("0.5"), or the combination ("lr=0.5, seeds=[0, 1]") where several keys vary
    values: dict[str, Any]  # key -> its value in this combination
    config_path: Path
    results: Path
    config: dict  # the raw config written to config_path
    shared: int = 0  # stores whose files are the previous value's (the same inode)
    computed: int = 0  # stores made by this value's run (or taken from CONFIG's own run, for the first)
    stores: int = 0
    seconds: float | None = None  # the wall time of its run (None: not run by this call)


@dataclass
class Sweep:
    config: Path
    keys: list[str]
    folder: Path
    base: Path | None  # CONFIG's own results folder, when it holds a run
    values: list[Value] = field(default_factory=list)
    base_values: dict[str, Any] = field(default_factory=dict)  # CONFIG's own value of each key (defaults filled in)
    zipped: bool = False

    @property
    def key(self) -> str:
        return " x ".join(self.keys) if not self.zipped else " with ".join(self.keys)


def combinations(parsed: list[tuple[str, list[Any], list[str]]], zipped: bool) -> list[list[tuple[Any, str]]]:
    """Each combination's (value, as written) per key: the grid, the first key slowest, or with ``zipped`` the i-th
    value of every key (raises :class:`SweepError` when their counts differ)."""
    import itertools

    lists = [list(zip(values, written)) for _, values, written in parsed]
    if not zipped:
        return [list(c) for c in itertools.product(*lists)]
    counts = {key: len(values) for key, values, _ in parsed}
    if len(set(counts.values())) > 1:
        raise SweepError(
            "--zip pairs the i-th values of every key, so each needs as many: "
            + ", ".join(f"{k} has {n}" for k, n in counts.items())
        )
    return [list(c) for c in zip(*lists)]


def prepare(
    config: str | Path, set_args: str | list[str], out: str | Path | None = None, zipped: bool = False
) -> Sweep:
    """Every value's config, written and validated, before anything runs (raises :class:`SweepError`).  ``set_args``:
    one ``KEY=V1,V2`` or several (their grid, or with ``zipped`` their values paired)."""
    from . import config as dlc

    config = Path(config)
    try:
        raw = dlc.read_yaml(config)
        full = dlc.validate(copy.deepcopy(raw), memory=False, source=config)
    except dlc.ConfigError as e:
        raise SweepError(f"{config}: {e}") from None
    if not isinstance(raw, dict):
        raise SweepError(f"{config}: not a mapping of keys to values")
    parsed = [parse_set(a) for a in ([set_args] if isinstance(set_args, str) else set_args)]
    keys = [key for key, _, _ in parsed]
    if len(set(keys)) < len(keys):
        twice = next(k for k in keys if keys.count(k) > 1)
        raise SweepError(f"--set {twice}: given twice; give each key once, with all its values")
    base_values: dict[str, Any] = {}
    for key in keys:
        parts = key.split(".")
        if parts[0] == "results":
            raise SweepError(
                "--set results=...: the results folder is the sweep's to choose (one per value); sweep a knob"
            )
        ok, where = _lookup(full, parts)
        if not ok:
            raise SweepError(f"--set {key}: no such key in {config} (defaults filled in): {where}")
        node = full
        for part in parts:
            node = node[part]
        base_values[key] = copy.deepcopy(node)
    base_results = Path(full["results"])
    tail = "-".join(re.sub(r"[^A-Za-z0-9]+", "-", k.split(".")[-1]) for k in keys)
    folder = Path(out) if out else Path("results") / f"{Path(full['results']).name}-sweep-{tail}"
    base = base_results if (base_results / "config.used.yaml").is_file() else None
    sw = Sweep(config, keys, folder, base, base_values=base_values, zipped=zipped and len(keys) > 1)
    for i, combo in enumerate(combinations(parsed, zipped)):
        cfg = copy.deepcopy(raw)
        for key, (v, _) in zip(keys, combo):
            dlc.set_dotted(cfg, key.split("."), copy.deepcopy(v))
        w = combo[0][1] if len(keys) == 1 else ", ".join(f"{k.split('.')[-1]}={w}" for k, (_, w) in zip(keys, combo))
        name = slug(i, w if len(keys) == 1 else "_".join(w_ for _, w_ in combo))
        cfg["results"] = str((folder / name).resolve()) if folder.is_absolute() else str(folder / name)
        try:
            dlc.validate(copy.deepcopy(cfg), memory=True, source=config)
        except dlc.ConfigError as e:
            at = " ".join(f"{k}={w_}" for k, (_, w_) in zip(keys, combo))
            raise SweepError(f"--set {at}: {e}") from None
        values = {k: v for k, (v, _) in zip(keys, combo)}
        sw.values.append(Value(w, values, folder / "configs" / f"{name}.yaml", Path(cfg["results"]), cfg))
    check_folder(sw)
    return sw


def check_folder(sw: Sweep) -> None:
    """The sweep's folder must be its own: not the file system's root nor a run's results folder, and,
    if it exists with anything in it, a folder of this same sweep (its configs/ holds only this sweep's value
    configs); a folder of another sweep with other values is refused rather than mixed into one table."""

    try:
        outputs.user_folder(sw.folder, what="--out")
    except outputs.OutputRefused as e:
        raise SweepError(str(e)) from None
    folder = sw.folder.resolve()
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    mine = {v.config_path.name for v in sw.values}
    configs = folder / "configs"
    there = {p.name for p in configs.iterdir()} if configs.is_dir() else set()
    if not there:
        raise SweepError(
            f"--out {sw.folder}: exists and is not a sweep's folder (no configs/); give the sweep an empty "
            "or new folder"
        )
    if not there <= mine:  # a sweep killed while writing its configs has some of them: its own
        other = sorted(there - mine)[:3]
        raise SweepError(
            f"--out {sw.folder}: belongs to another sweep (its configs {', '.join(other) or sorted(there)[:3]} "
            f"are not this one's {sorted(mine)[:3]}); give --out another folder, or remove it"
        )


def write_configs(sw: Sweep) -> None:
    """Each value's config file; one already there must say the same (a resumed sweep), or the sweep stops."""
    from . import storage

    for v in sw.values:
        text = (
            f"# depthlab sweep of {sw.config}: {v.written if len(sw.keys) > 1 else f'{sw.key} = {v.written}'}\n"
            + yaml.safe_dump(v.config, sort_keys=False, default_flow_style=None)
        )
        if v.config_path.is_file() and v.config_path.read_text() != text:
            raise SweepError(
                f"{v.config_path} exists and says something else: the folder {sw.folder} belongs to another "
                "sweep (give --out another folder, or remove it)"
            )
        if not v.config_path.is_file():
            storage.write_text(text, v.config_path)


def snakemake_command(config_path: Path, extra: list[str]) -> list[str]:
    """The argument list (no shell) of one value's run: the checkout's Snakefile and workflow profile, the
    current folder as Snakemake's working directory, as ``make run CONFIG=...`` does from the checkout."""
    from . import provenance as prov

    snakefile = prov.REPO / "Snakefile"
    if not snakefile.is_file():
        raise SweepError(f"no Snakefile at {snakefile}: depthlab sweep runs from a checkout of depthlab")
    exe = Path(sys.executable).parent / "snakemake"
    return [
        str(exe),
        "-s",
        str(snakefile),
        "--directory",
        os.getcwd(),
        "--workflow-profile",
        str(prov.REPO / "workflow" / "profiles" / "default"),
        *extra,
        "--configfile",
        str(config_path),
    ]


def child_env() -> dict[str, str]:
    """The environment of a Snakemake run started from depthlab (a sweep's values, paper-check): its jobs' shells call
    ``depthlab``, so PATH starts with this interpreter's bin folder (the venv's), as ``make run`` sets it; without
    it every job fails with 'depthlab: command not found' unless the venv was activated."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "") if env.get("PATH") else bindir
    return env


def run_child(cmd: list[str], env: dict[str, str]) -> int:
    """Run a child Snakemake and return its exit code; a SIGTERM or SIGINT to this process (``timeout``, a batch
    system, Ctrl-C) is passed on to the child, which is then waited for, so no Snakemake runs on unattended (and
    holds its lock) after its parent is gone.  The parent then exits with 128 + the signal."""
    import signal

    child = subprocess.Popen(cmd, env=env)
    got: list[int] = []

    def forward(signum, _frame):
        got.append(signum)
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        rc = child.wait()  # a signal runs forward() and wait() goes on (PEP 475)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if got:
        raise SystemExit(128 + got[0])
    return rc


def _store_inodes(root: Path) -> dict[str, int]:
    """relative store path -> the inode of its zarr.json (hard-linked stores share it)."""
    from . import storage
    from .records import stores_below

    out = {}
    if not root.is_dir():
        return out
    for p in stores_below(root):
        try:
            out[storage.relpath(p, root)] = (p / "zarr.json").stat().st_ino
        except OSError:
            continue
    return out


def run(sw: Sweep, extra: list[str], say=print, execute: bool = True) -> None:
    """Fork and run each value in turn (see the module docstring)."""
    from . import fork

    write_configs(sw)
    previous: Path | None = sw.base
    before: dict[str, int] = _store_inodes(sw.base) if sw.base else {}
    for i, v in enumerate(sw.values):
        head = f"[sweep {i + 1}/{len(sw.values)}] " + (v.written if len(sw.keys) > 1 else f"{sw.key} = {v.written}")
        if v.results.is_dir() and fork.incomplete(v.results) and previous is not None and previous.is_dir():
            try:  # a fork killed part way: take the rest first (each store it took is whole; see depthlab.fork)
                done = fork.fork(previous, v.config_path)
            except fork.ForkError as e:
                raise SweepError(f"{head}: {e}") from None
            say(f"{head}: {done.summary()}")
        elif v.results.is_dir() and any(v.results.iterdir()):
            say(f"{head}: {v.results} has begun; its run goes on from there")
        elif previous is not None and previous.is_dir() and any(previous.iterdir()):
            try:
                done = fork.fork(previous, v.config_path)
            except fork.ForkError as e:
                raise SweepError(f"{head}: {e}") from None
            say(f"{head}: {done.summary()}")
        else:
            say(
                f"{head}: nothing to fork from ({'the value before has no folder' if i else f'{sw.config} has not run'}): "
                "its run starts from scratch"
            )
        if execute:
            cmd = snakemake_command(v.config_path, extra)
            say(f"{head}: running {' '.join(cmd)}")
            t0 = time.monotonic()
            rc = run_child(cmd, child_env())
            v.seconds = time.monotonic() - t0
            if rc != 0:
                raise SweepError(
                    f"{head}: the run failed (exit {rc}); its log is in {v.results}/logs. Run the "
                    "same command again to go on from where it stopped"
                )
        before = _count(v, before)
        previous = v.results


def _count(v: "Value", before: dict[str, int]) -> dict[str, int]:
    """Sets ``v``'s stores, and how many it shares with the value before (the same inode) or computed; returns its
    stores' inodes, for the value after it."""
    now = _store_inodes(v.results)
    v.stores = len(now)
    v.shared = sum(1 for rel, ino in now.items() if before.get(rel) == ino)
    v.computed = v.stores - v.shared
    return now


def recount(sw: Sweep) -> None:
    """The counts of :func:`run` from the folders as they are (``--table-only``): nothing is forked or run.  A value's
    run time is taken from the sweep's last ``sweep.json`` when it names the same folder."""
    from .safeio import read_json

    seconds: dict[str, float] = {}
    try:
        old = read_json(sw.folder / RECORD)
        for rec in old.get("values", []) if isinstance(old, dict) else []:
            if (
                isinstance(rec, dict)
                and isinstance(rec.get("results"), str)
                and isinstance(rec.get("run_seconds"), (int, float))
            ):
                seconds[rec["results"]] = float(rec["run_seconds"])
    except (OSError, ValueError):  # unreadable, unsafe (safeio.UnsafeFile) or not JSON: no run times to keep
        pass
    before = _store_inodes(sw.base) if sw.base else {}
    for v in sw.values:
        before = _count(v, before)
        v.seconds = seconds.get(str(v.results), v.seconds)
