"""``depthlab neutral BASE``: did a change move any number?  One config built by the code at BASE and by this working
tree, every store compared array by array, bit for bit, and every claims row's verdict, effect, SE and z.

    depthlab neutral BASE [--config config/smoke.yaml] [--cores 2] [--keep]      (make neutral BASE=<rev>)

BASE is a git revision of the checkout this command runs in.  It is checked out into a temporary worktree; the working
tree is this checkout as it is, uncommitted edits included.  The config (by default the working tree's smoke config) is
built twice from empty folders, each by its own tree's Snakefile, rules and package (``PYTHONPATH`` names the tree's
``workflow/``, so every job imports that tree's code).  Then, per study and stage:

* stores: in both, equal (every array the same dtype, shape and bytes), different (with the largest relative
  difference over its arrays, max |a - b| / max |a|), or in one only;
* claims: every row (study, claim, statement, figure, subject) with its verdict, effect, SE and z compared exactly.

It prints a table per stage and the rows that differ, and exits 0 when everything is equal, 1 when anything differs,
2 on bad input (an unknown revision, a config the BASE code refuses).  Nothing from the folders is executed; the stores
are opened read-only.  Both builds run one after the other on ``--cores``; the smoke config takes about 5 minutes each
on 2 idle cores.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import compare
from . import config as cfg


class NeutralError(ValueError):
    """Bad input: the message is one line."""


@dataclass
class StageCount:
    equal: int = 0
    different: int = 0
    only_base: int = 0
    only_tree: int = 0
    worst: float = 0.0  # largest relative difference over the stage's differing stores
    worst_store: str = ""


@dataclass
class Report:
    stages: dict[str, StageCount] = field(default_factory=dict)
    rows_equal: int = 0
    rows_differ: list[tuple[str, dict | None, dict | None]] = field(default_factory=list)

    @property
    def neutral(self) -> bool:
        return not self.rows_differ and all(
            c.different == c.only_base == c.only_tree == 0 for c in self.stages.values()
        )


def arrays_of(store: Path) -> dict[str, np.ndarray]:
    import zarr

    group = zarr.open_group(str(store), mode="r")
    return {name: np.asarray(arr[...]) for name, arr in group.arrays()}


def relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| / max |a| over the finite entries (inf where the shapes, dtypes or non-finite entries differ)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return math.inf
    if a.dtype.kind not in "fciub":
        return 0.0 if a.tobytes() == b.tobytes() else math.inf
    x, y = a.astype(np.float64), b.astype(np.float64)
    fx, fy = np.isfinite(x), np.isfinite(y)
    if not np.array_equal(fx, fy) or not np.array_equal(np.where(fx, 0, x), np.where(fy, 0, y), equal_nan=True):
        return math.inf
    if not fx.any():
        return 0.0
    scale = float(np.max(np.abs(x[fx]))) or 1.0
    return float(np.max(np.abs(x[fx] - y[fx]))) / scale


def compare_store(a: Path, b: Path) -> float | None:
    """None when every array is bit for bit the same, else the largest relative difference."""
    xa, xb = arrays_of(a), arrays_of(b)
    if set(xa) != set(xb):
        return math.inf
    worst = None
    for name in sorted(xa):
        u, v = xa[name], xb[name]
        if u.dtype == v.dtype and u.shape == v.shape and u.tobytes() == v.tobytes():
            continue
        worst = max(worst or 0.0, relative_difference(u, v))
    return worst


ROW_FIELDS = ("verdict", "effect", "stderr", "z")


def _same_value(u, v) -> bool:
    if isinstance(u, float) and isinstance(v, float) and math.isnan(u) and math.isnan(v):
        return True
    return u == v


def compare_runs(base: Path, tree: Path) -> Report:
    """The per-stage store table and the claims rows of two finished results folders."""
    rep = Report()
    a, b = compare.load(str(base)), compare.load(str(tree))
    for rel in sorted(set(a.stores) | set(b.stores)):
        sa, sb = a.stores.get(rel), b.stores.get(rel)
        c = rep.stages.setdefault((sa or sb)[0], StageCount())
        if sa is None:
            c.only_tree += 1
        elif sb is None:
            c.only_base += 1
        else:
            worst = compare_store(base / rel, tree / rel)
            if worst is None:
                c.equal += 1
            else:
                c.different += 1
                if worst >= c.worst:
                    c.worst, c.worst_store = worst, rel
    for key in sorted(set(a.rows) | set(b.rows)):
        ra, rb = a.rows.get(key), b.rows.get(key)
        if ra is not None and rb is not None and all(_same_value(ra.get(f), rb.get(f)) for f in ROW_FIELDS):
            rep.rows_equal += 1
        else:
            rep.rows_differ.append(("/".join(key[:2]) + f" | {key[4]}", ra, rb))
    return rep


def _row_text(r: dict | None) -> str:
    if r is None:
        return "(absent)"
    return ", ".join(f"{f} {r.get(f)}" for f in ROW_FIELDS)


def render(rep: Report, base: str, tree: str) -> str:
    lines = [
        f"stores, {base} against {tree}:",
        "",
        "| stage | equal | different | only base | only tree | largest rel. diff |",
    ]
    lines.append("|---|---|---|---|---|---|")
    for stage, c in sorted(rep.stages.items()):
        worst = f"{c.worst:.3g} ({c.worst_store})" if c.different else ""
        lines.append(f"| {stage} | {c.equal} | {c.different} | {c.only_base} | {c.only_tree} | {worst} |")
    lines += ["", f"claims rows: {rep.rows_equal} equal (verdict, effect, SE, z), {len(rep.rows_differ)} differ"]
    for name, ra, rb in rep.rows_differ:
        lines += [
            f"  {compare.clean(name)}",
            f"    base: {compare.clean(_row_text(ra))}",
            f"    tree: {compare.clean(_row_text(rb))}",
        ]
    moved = sorted(s for s, c in rep.stages.items() if c.different or c.only_base or c.only_tree)
    lines += [
        "",
        "neutral: every store and every row equal"
        if rep.neutral
        else "NOT neutral: " + (", ".join(moved) or "claims rows"),
    ]
    return "\n".join(lines)


def _git(repo: Path, *args: str) -> str:
    p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise NeutralError(f"git {' '.join(args)}: {(p.stderr.strip().splitlines() or ['failed'])[-1]}")
    return p.stdout.strip()


def build(tree: Path, config_file: Path, cores: int, log: Path) -> int:
    """Snakemake of ``tree`` on ``config_file``; every job imports ``tree``'s package.  Returns its exit status."""
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PYTHONPATH": str(tree / "workflow"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "DEPTHLAB_VERBOSE": "1",
    }
    cmd = [
        str(bin_dir / "snakemake"),
        "-s",
        str(tree / "Snakefile"),
        "--directory",
        str(tree),
        "--workflow-profile",
        str(tree / "workflow" / "profiles" / "default"),
        "--cores",
        str(cores),
        "--configfile",
        str(config_file),
    ]
    with open(log, "w") as out:
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tree).returncode


def run(args) -> int:
    def fail(msg: str, code: int = 2) -> int:
        print(f"depthlab neutral: {msg}", file=sys.stderr)
        return code

    repo = Path.cwd()
    try:
        top = Path(_git(repo, "rev-parse", "--show-toplevel"))
        rev = _git(top, "rev-parse", "--verify", "--quiet", f"{args.base}^{{commit}}")
        config_file = Path(args.config).resolve()
        raw = cfg.read_yaml(config_file)
        if not isinstance(raw, dict):
            return fail(f"{config_file}: not a mapping of keys to values")
    except (NeutralError, cfg.ConfigError) as e:
        return fail(str(e))
    if args.cores < 1:
        return fail(f"--cores {args.cores}: at least 1")
    work = Path(tempfile.mkdtemp(prefix="depthlab-neutral-"))
    base_tree = work / "base"
    try:
        _git(top, "worktree", "add", "--detach", str(base_tree), rev)
        import yaml

        folders = {}
        for side, tree in (("base", base_tree), ("tree", top)):
            results = work / f"results-{side}"
            side_cfg = work / f"{side}.yaml"
            side_cfg.write_text(yaml.safe_dump({**raw, "results": str(results)}, sort_keys=False))
            print(
                f"building {config_file.name} at {'BASE ' + rev[:12] if side == 'base' else 'the working tree'} ...",
                flush=True,
            )
            code = build(tree, side_cfg, args.cores, work / f"{side}.log")
            if code != 0:
                tail = (work / f"{side}.log").read_text(errors="replace").strip().splitlines()[-3:]
                return fail(f"the {side} build failed ({code}); its log {work / f'{side}.log'}: " + " / ".join(tail))
            folders[side] = results
        rep = compare_runs(folders["base"], folders["tree"])
    except NeutralError as e:
        return fail(str(e))
    finally:
        subprocess.run(["git", "-C", str(top), "worktree", "remove", "--force", str(base_tree)], capture_output=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(render(rep, f"BASE {rev[:12]}", "the working tree"))
    if args.keep:
        print(f"(kept: {work})")
    return 0 if rep.neutral else 1
