"""``depthlab audit ... --reproduce N | --job STORE``: re-run store jobs of an audited lineage and compare.

The rest of the audit checks that a folder agrees with itself: a store whose arrays were changed and whose recorded
hashes were then rewritten with the package's own functions passes it.  A store job is deterministic *in one kernel
environment* (the same spec, inputs and code give the same bits on one machine, one thread), so re-running it from
its recorded spec, on the stores its record names as inputs, must give its content hash there.

On another machine it need not: another CPU's MKL, ATen or OpenBLAS kernels round differently, and training amplifies
the last bits along its trajectory.  So the comparison depends on the environments (:mod:`depthlab.machine`):

* the re-run's kernel environment is the one the store recorded: bitwise, as always; a difference is a failure (the
  store is not what its spec and inputs make);
* another environment, or a store that recorded none (made before depthlab recorded it): both environments are
  named, every array is compared within a tolerance stated per kind (:data:`TOLERANCE`), and for a claims target the
  verdicts and effects are re-derived with the re-run stores in place of the folder's: same, or moved (which, by how
  much).  A difference beyond the tolerance, or a moved verdict, is a note (a failure with ``--strict``): a CPU
  difference is never called a forgery.
"""

from __future__ import annotations

import io
import math
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import machine
from . import provenance as prov
from . import storage
from .studies import get_study

if TYPE_CHECKING:
    from .audit import Audit

# Largest difference between a store and its re-run in another kernel environment, relative to the array's largest
# magnitude, that still counts as "the same numbers", per kind of arithmetic.  The stages that train or evaluate nets
# in float32 (their arrays may be float64: a loss history summed in float64 still carries float32 rounding) part at
# 1e-7 to 1e-3 on the smoke config under MKL_CBWR=COMPATIBLE; float64 kernels, solves and float64 training at 1e-14.
# A longer trajectory may part by more: that is reported, not hidden.  Integers (a stop epoch, a count) and strings
# must be equal.
# Which kind a store is, its stage declares (``Stage.precision``): a study on DEPTHLAB_STUDY_PATH included.
TOLERANCE = {"float32 training": 1e-2, "float64": 1e-9}


def kind_of(rec: dict) -> str:
    """The kind of arithmetic a store's stage does (its ``Stage.precision``), which sets its tolerance; a record of no
    study or stage known here is held to float64's."""
    try:
        precision = get_study(str(rec.get("study"))).stage(str(rec.get("stage"))).precision
    except KeyError:
        precision = "float64"
    return "float32 training" if precision == "float32" else "float64"


def upstream(a: "Audit", rels: list[str]) -> list[str]:
    """Every store the stores ``rels`` read, transitively (paths relative to the results folder), upstream first; those
    already in ``rels`` left out."""
    out: list[str] = []
    todo = list(rels)
    seen = set(rels)
    while todo:
        rel = todo.pop()
        try:
            rec = storage.read_record(a.root / rel)
        except Exception:
            continue
        for v in (rec.get("inputs") or {}).values():
            path = v.get("path") if isinstance(v, dict) else None
            if isinstance(path, str) and path.endswith(".zarr") and path not in seen:
                seen.add(path)
                out.append(path)
                todo.append(path)
    return out[::-1]


def array_differences(here, there, tol: float) -> list[tuple[str, str, float, float]]:
    """Per variable of two datasets: (name, dtype, relative difference, ``tol``), the relative difference being the
    largest absolute difference over the largest magnitude of ``there`` (inf where names, shapes, dtypes, NaN positions
    or strings differ).  Only variables that differ at all are listed."""
    out = []
    for name in sorted(set(map(str, here.variables)) | set(map(str, there.variables))):
        if name not in here.variables or name not in there.variables:
            out.append((name, "missing", math.inf, 0.0))
            continue
        a, b = np.asarray(here.variables[name].values), np.asarray(there.variables[name].values)
        kind = b.dtype.str.lstrip("<>=|")
        if a.shape != b.shape or a.dtype != b.dtype:
            out.append((name, kind, math.inf, 0.0))
            continue
        if b.dtype.kind in "OUTSbiuMm":  # strings, booleans, integers, times: equal or not
            if not np.array_equal(a, b):
                out.append((name, kind, math.inf, 0.0))
            continue
        if b.dtype.kind not in "fc" or a.size == 0:
            continue
        fa, fb = a.astype(np.float64), b.astype(np.float64)
        na, nb = ~np.isfinite(fa), ~np.isfinite(fb)
        if not np.array_equal(na, nb) or not np.array_equal(fa[na], fb[nb], equal_nan=True):
            out.append((name, kind, math.inf, tol))
            continue
        d = float(np.max(np.abs(fa[~na] - fb[~nb]))) if (~na).any() else 0.0
        if d == 0.0:
            continue
        scale = float(np.max(np.abs(fb[~nb])))
        out.append((name, kind, d / scale if scale > 0 else math.inf, tol))
    return out


def _environments(rec: dict, rerun: dict) -> tuple[bool, list[str]]:
    """(same kernel environment?, the differences named)."""
    k0 = machine.kernel_key(rec.get("machine"), rec.get("packages"))
    k1 = machine.kernel_key(rerun.get("machine"), rerun.get("packages"))
    if k0 is None:
        return False, ["the store records no environment (made before depthlab recorded one): environment unknown"]
    diffs = machine.differences(k0, k1)
    return not diffs, diffs


def _tables(a: "Audit", figure_rel: str, substitutes: dict[str, Path]):
    """The figure's table re-derived by its study's make_table with the re-run stores in place of the folder's, as
    the claims stage reads it (through the CSV text); None when it reads none of them."""
    import pandas as pd

    from . import render
    from .studies import get_study

    rec = a.figures.get(figure_rel)
    if rec is None:
        return None
    paths = {k: inp.get("path") for k, inp in (rec.get("inputs") or {}).items()}
    if not any(p in substitutes for p in paths.values()):
        return None
    study = get_study(rec["study"])
    make_table = study.stage(rec["stage"]).table_function()
    if make_table is None:
        return None
    inputs = storage.figure_inputs(
        study, {k: str(substitutes.get(p, a.root / p)) for k, p in paths.items()}
    )  # the figure stage's reader
    return pd.read_csv(io.StringIO(render.table_csv(make_table(study.spec_from_dict(rec["spec"]), inputs))))


def _key(row: dict) -> tuple:
    return tuple(str(row.get(k)) for k in ("claim", "statement", "figure", "subject"))


def verdict_effects(a: "Audit", substitutes: dict[str, Path]) -> None:
    """For each study claims report in the audit: its verdicts re-derived with the re-run stores (of another
    environment) in place of the folder's, against those it holds: same, or moved (which, by how much)."""
    import pandas as pd

    from . import safeio
    from .studies import get_study

    for rel, rec in sorted(a.claims.items()):
        inputs = {n: inp.get("path") for n, inp in sorted((rec.get("inputs") or {}).items())}
        tables, touched = {}, []
        try:
            for name, csv in inputs.items():
                t = _tables(a, str(csv).removesuffix(".csv"), substitutes)
                if t is not None:
                    touched.append(str(csv))
                tables[name] = t if t is not None else pd.read_csv(a.root / csv)
            if not touched:
                continue
            study = get_study(rec["study"])
            spec = study.spec_from_dict(rec["spec"])
            verdicts, _ = study.stage(rec["stage"]).function()(spec, tables)
            old = {_key(r): r for r in safeio.read_json(a.root / rel.replace(".md", ".json"), 64 * 2**20)}
        except Exception as e:
            a.note(
                1,
                f"{rel}: its verdicts could not be re-derived with the re-run stores ({type(e).__name__}: "
                f"{str(e)[:200]})",
                strict_fails=True,
            )
            continue
        new = {_key(v.as_dict()): v.as_dict() for v in verdicts}
        moved, shifts = [], []
        for k in sorted(set(old) | set(new)):
            o, n = old.get(k), new.get(k)
            if o is None or n is None or o.get("verdict") != n.get("verdict"):
                moved.append(
                    f"claim {k[0]} {k[3]} ({k[2]}): {o and o.get('verdict')} -> {n and n.get('verdict')}"
                    + _effect_move(o, n)
                )
                continue
            e0, e1, se = o.get("effect"), n.get("effect"), o.get("stderr")
            if isinstance(e0, (int, float)) and isinstance(e1, (int, float)) and e0 != e1:
                shifts.append((abs(e1 - e0) / se if isinstance(se, (int, float)) and se > 0 else math.inf, k, e0, e1))
        a.say(
            1,
            f"{rel}: verdicts re-derived with the re-run stores of another environment ({len(touched)} figure "
            f"table(s) touched): {len(new) - len(moved)} of {len(new)} the same",
        )
        if shifts:
            worst = max(shifts, key=lambda s: s[0])
            a.say(
                2,
                f"{len(shifts)} effect(s) moved without moving a verdict; the largest: claim {worst[1][0]} "
                f"{worst[1][3]} {worst[2]:.4g} -> {worst[3]:.4g} ({worst[0]:.2f} of its SE)",
            )
        for m in moved:
            a.note(2, f"{rel}: a verdict moves in another environment: {m}", strict_fails=True)


def _effect_move(o: dict | None, n: dict | None) -> str:
    if not o or not n:
        return ""
    return f" (effect {o.get('effect')} +- {o.get('stderr')} -> {n.get('effect')} +- {n.get('stderr')})"


def reproduce(a: "Audit", n: int, named: list[str], seed: int = 0, timeout: float = 3600.0) -> None:
    """Re-run the ``named`` stores (paths relative to the results folder, or store paths) and ``n`` more drawn at
    random (seeded) from the lineage's other stores, with the upstream chain of each, in a temporary folder."""
    stores = sorted(s for s in a.seen if s.endswith(".zarr"))
    chosen = []
    for name in named:
        rel = storage.relpath(name, a.root) if Path(name).is_absolute() or Path(name).exists() else name
        if rel not in stores:
            a.fail(
                0,
                f"reproduce: {name} is not a store of this lineage ({len(stores)} stores: e.g. {', '.join(stores[:3])})",
            )
            continue
        chosen.append(rel)
    named_rels = set(chosen)
    rest = [s for s in stores if s not in chosen]
    chosen += random.Random(seed).sample(rest, min(n, len(rest)))
    if not chosen:
        return
    # a re-run reads its inputs from the folder: a forged input would be reproduced faithfully.  So the upstream chain
    # of every chosen store (data set, rate search, ...) is re-run too
    ups = upstream(a, chosen)
    if ups:
        a.say(0, f"reproduce: and their {len(ups)} upstream store(s), whose arrays the re-runs read: {', '.join(ups)}")
        named_rels |= set(upstream(a, sorted(named_rels)))  # what a named store rests on is named too
        chosen = ups + chosen
    here = machine.describe("cpu")
    a.say(
        0, f"reproduce: re-running {len(chosen)} store job(s) in a temporary folder (seed {seed}): {', '.join(chosen)}"
    )
    a.say(0, f"reproduce: this environment: {machine.summary(here)}")
    substitutes: dict[str, Path] = {}
    envs_said: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="depthlab-reproduce-") as tmp:
        for rel in chosen:
            got_run = _rerun(a, rel, named_rels, Path(tmp), timeout)
            if got_run is None:
                continue
            out, rec = got_run
            rerun = storage.read_record(out)
            mine, theirs = storage.read_store(out), storage.read_store(a.root / rel)
            got, have = storage.content_hash(mine), storage.content_hash(theirs)
            same_env, diffs = _environments(rec, rerun)
            if same_env:
                if got != have:
                    a.fail(
                        1,
                        f"{rel}: re-running its job from its recorded spec and inputs gives other arrays (content "
                        f"hash {str(got)[:12]} against the store's {str(have)[:12]}), in the kernel environment it "
                        "recorded: the store is not what its spec and inputs make",
                    )
                else:
                    a.say(
                        1, f"reproduced {rel}: the same content hash ({str(got)[:12]}), bitwise in its own environment"
                    )
                continue
            made = machine.summary(rec.get("machine"))
            if made not in envs_said:
                envs_said.add(made)
                a.say(1, f"another kernel environment: the store's is {made}; this one differs in {'; '.join(diffs)}")
            if got == have:
                a.say(1, f"reproduced {rel} in another environment: the same content hash ({str(got)[:12]})")
                continue
            over = []
            kind = kind_of(rec)
            for name, dt, rel_d, tol in array_differences(mine, theirs, TOLERANCE[kind]):
                if rel_d > tol:
                    over.append(f"{name} ({dt}) {rel_d:.2g} > {tol:g}")
                else:
                    a.say(2, f"{name} ({dt}): relative difference {rel_d:.2g}, within {tol:g}")
            if over:
                a.note(
                    1,
                    f"{rel}: re-run in another environment, its arrays part beyond the {kind} tolerance: "
                    f"{', '.join(over)}",
                    strict_fails=True,
                )
            else:
                a.say(1, f"reproduced {rel} in another environment: every array within the {kind} tolerance")
            substitutes[rel] = out
        if substitutes and a.claims:
            verdict_effects(a, substitutes)


def _rerun(a: "Audit", rel: str, named_rels: set[str], tmp: Path, timeout: float) -> tuple[Path, dict] | None:
    """Re-run one store's job into ``tmp`` (in the kernel mode it recorded); (the re-run's path, the store's record), or
    None (said why)."""
    from .studies import get_study

    path = a.root / rel
    rec = storage.read_record(path)
    if not str(rec.get("device", "cpu")).startswith("cpu"):
        # the device is a field of the record, which a forger writes too: a store this CPU cannot re-run is unchecked,
        # and unchecked is a failure where the reviewer asked for it
        text = (
            f"{rel}: its record says it was made on {rec.get('device')!r}, so this CPU cannot reproduce it: its "
            "arrays are NOT checked (re-run it here, or audit it on that device)"
        )
        if rel in named_rels:
            a.fail(1, text + "; named with --job")
        else:
            a.note(1, text, strict_fails=True)
        return None
    try:
        code = prov.code_fingerprint(get_study(rec["study"]).stage(rec["stage"]).fingerprint_modules)
    except Exception as e:  # a study or stage this checkout does not have
        a.fail(1, f"{rel}: its job cannot be re-run by this checkout ({type(e).__name__}: {e})")
        return None
    if rec.get("code_fingerprint") != code:
        a.note(
            1,
            f"{rel}: made by other code than the checkout's (fingerprint {str(rec.get('code_fingerprint'))[:12]}, "
            f"the checkout's {code[:12]}): a re-run would not reproduce it; not re-run",
            strict_fails=True,
        )
        return None
    inputs = {k: str(a.root / v["path"]) for k, v in sorted(rec.get("inputs", {}).items())}
    out = tmp / rel
    mode = (rec.get("machine") or {}).get("cpu_kernels") if isinstance(rec.get("machine"), dict) else None
    env = {
        **os.environ,
        "DEPTHLAB_DEVICE_BY_STUDY": "{}",
        machine.MODE_VAR: mode if mode in machine.MODES else "native",
    }
    cmd = [
        sys.executable,
        "-m",
        "depthlab",
        "stage",
        "--spec",
        prov.canonical_json(rec["spec"]),
        "--inputs",
        prov.canonical_json(inputs),
        "--output",
        str(out),
        "--results",
        str(tmp),
        "--device",
        "cpu",
        "--threads",
        "1",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        a.fail(1, f"{rel}: re-running its job failed (exit {p.returncode}): {p.stderr.strip().splitlines()[-1:]}")
        return None
    return out, rec
