"""``depthlab fork BASE NEW``: start a new config's results folder from a finished one's, without copying its bytes
(issue 54).  Then ``make run CONFIG=NEW`` recomputes only the jobs whose spec or code differ.

Why hard links, not Snakemake's between-workflow cache (``--cache``, ``SNAKEMAKE_OUTPUT_CACHE``): the cache needs every
cached rule marked ``cache: True``, a shared cache folder set in the environment of every run, and it keys entries by
the rule's inputs, params and code, which here include the results folder's own paths (a store's params name its
output); a store's identity in depthlab is its spec and code fingerprint, already recorded in the store.  A folder
whose files are BASE's own inodes is what a second config running into a copy of BASE sees (that run did nothing, the
folder's path being part of no job's identity), at no cost in disk or time.

What NEW takes: exactly the outputs that NEW's config would compute identically (:func:`fork`), a store whose
recorded spec and code fingerprint are those of NEW's job at that path, a figure whose spec and code are NEW's and
whose input stores were all taken, a study's claims when all its figures were.  Snakemake keeps its rerun records
(params, code) per output path in the working directory's ``.snakemake``, and has none for NEW's paths: a store whose
spec changed would not be rerun if it were there, so the fork, not Snakemake, decides.  The config snapshot and the
claims index are always rebuilt (seconds).

Hard links are safe only if no file of a linked store, figure or claims file is ever written in place.  Every writer
of them replaces, never rewrites:

- a store is written into a new folder beside it and renamed into place (``storage.write_store``); Snakemake removes a
  job's output folder before the job runs;
- figures, claims, the index and ``config.used.yaml`` go through ``storage.write_bytes``: a temporary file, then
  ``os.replace``.

Two kinds of file are written in place, and are copied, never linked: a job's log (the shell's ``> log``) and its
Snakemake benchmark file.  ``tests/test_fork.py`` runs a fork with one depth added and checks every file of BASE for
its bytes and mtime afterwards.

NEW records its base in ``<NEW>/.depthlab.fork.json``.  Across file systems, where a hard link cannot be made, a file
is copied (and the command says how many were).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORD = ".depthlab.fork.json"


class ForkError(Exception):
    pass


@dataclass
class Forked:
    base: Path
    new: Path
    stores: int = 0  # stores taken: NEW's job at that path has the same spec and code
    differ: int = 0  # stores at a path of NEW's with another spec or code: NEW's run computes them
    figures: int = 0
    claims: int = 0
    linked: int = 0
    copied: int = 0
    skipped: int = 0
    cross_device: int = 0

    def summary(self) -> str:
        extra = f"; {self.cross_device} copied because a hard link across file systems is impossible" if self.cross_device else ""
        return (f"forked {self.base} -> {self.new}: {self.stores} stores, {self.figures} figures and {self.claims} studies' "
                f"claims taken ({self.linked} files hard-linked, no bytes copied; {self.copied} log and benchmark files "
                f"copied); {self.differ} stores at NEW's paths differ in spec or code and are left to NEW's run{extra}")


def results_of(arg: str | Path) -> tuple[Path, dict | None]:
    """A results folder and, for a config file, its validated config."""
    p = Path(arg)
    if p.is_file():
        from . import config as dlc

        try:
            cfg = dlc.validate(dlc.read_yaml(p), memory=False, source=p)
        except dlc.ConfigError as e:
            raise ForkError(f"{arg}: {e}") from None
        return Path(cfg["results"]), cfg
    if p.is_dir():
        return p, None
    raise ForkError(f"{arg}: neither a config file nor a results folder")


def _link_tree(src: Path, dst: Path, out: "Forked") -> None:
    """Hard-link every file below ``src`` into ``dst`` (a copy across file systems)."""
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        d = Path(dirpath)
        dirnames[:] = [x for x in sorted(dirnames) if not (d / x).is_symlink()]
        (dst / d.relative_to(src)).mkdir(parents=True, exist_ok=True)
        for f in sorted(filenames):
            _link(d / f, dst / d.relative_to(src) / f, out)


def _link(src: Path, dst: Path, out: "Forked") -> None:
    if src.is_symlink() or not src.is_file():
        out.skipped += 1
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
        out.linked += 1
    except OSError:  # another file system, or links not allowed: a copy with its mtime
        shutil.copy2(src, dst)
        out.cross_device += 1


def _copy_beside(base: Path, new: Path, rel: Path, out: "Forked") -> None:
    """A job's log and benchmark files (written in place, so copied): ``logs/<rel>.log``, ``benchmarks/<rel>.tsv``."""
    for kind, suffix in (("logs", ".log"), ("benchmarks", ".tsv")):
        src = base / kind / rel.with_suffix(suffix)
        if src.is_file() and not src.is_symlink():
            (new / kind / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, new / kind / rel.with_suffix(suffix))
            out.copied += 1


def _same(record: dict | None, spec: Any, code: str) -> bool:
    return isinstance(record, dict) and record.get("spec") == spec.to_dict() and record.get("code_fingerprint") == code


def fork(base_arg: str | Path, new_arg: str | Path) -> "Forked":
    """NEW's folder gets, by hard links, exactly the outputs of BASE that NEW's config would compute identically: a
    store whose recorded spec and code fingerprint are those of NEW's job at the same path; a figure whose spec and
    code are NEW's and all of whose input stores were taken; a study's claims when all its figures were.  Everything
    else is left to NEW's run.  (Snakemake keeps its rerun records per output path in the working directory's
    ``.snakemake``, and has none for NEW's paths: so the fork, not Snakemake, must decide what NEW may reuse.)"""
    from . import provenance as prov
    from . import safeio
    from .results import _record
    from .study import ClaimsJob, FigureJob, Ref
    from .studies import get_study

    base, _ = results_of(base_arg)
    if not Path(new_arg).is_file():
        raise ForkError(f"{new_arg}: NEW must be a config file (the fork takes from BASE what NEW's config would compute "
                        "identically, so it needs NEW's values)")
    new, cfg = results_of(new_arg)
    if not base.is_dir():
        raise ForkError(f"{base_arg}: its results folder {base} does not exist (has it run?)")
    rb, rn = base.resolve(), new.resolve()
    if rn == rb or rb in rn.parents or rn in rb.parents:
        raise ForkError(f"{new}: NEW's results folder must lie outside BASE's {base}, and BASE outside NEW's (give NEW's "
                        "config a `results:` of its own)")
    if new.exists() and (not new.is_dir() or any(new.iterdir())):
        raise ForkError(f"{new}: NEW's results folder exists and is not empty; a fork starts a new folder (remove it, or "
                        "give NEW's config another `results:`)")
    out = Forked(base, new)
    new.mkdir(parents=True, exist_ok=True)
    for name in sorted(cfg["studies"]):
        study = get_study(name)
        taken: set[str] = set()
        for st in study.store_stages():
            code = prov.code_fingerprint(st.fingerprint_modules)
            for job in study.jobs(cfg, st.name):
                rel = Path(name) / study.path(Ref(st.name, job))
                src = base / rel
                if not src.is_dir() or src.is_symlink():
                    continue
                try:
                    rec = _record(src)
                except Exception:  # an unreadable record: left to NEW's run
                    out.skipped += 1
                    continue
                if not _same(rec, study.spec(cfg, st.name, job), code):
                    out.differ += 1
                    continue
                _link_tree(src, new / rel, out)
                _copy_beside(base, new, rel.with_suffix(""), out)
                taken.add(study.path(Ref(st.name, job)))
                out.stores += 1
        fstage = study.kind_stage("figure")
        fcode = prov.code_fingerprint(fstage.fingerprint_modules)
        figures_taken = 0
        for fig in study.figures(cfg):
            spec = study.spec(cfg, fstage.name, FigureJob(fig))
            stem = base / name / "figures" / fig
            try:
                rec = safeio.read_json(stem.with_suffix(".provenance.json"))
            except (OSError, ValueError):
                continue
            if not _same(rec, spec, fcode) or not all(study.path(r) in taken for r in spec.inputs().values()):
                continue
            for suffix in (".png", ".pdf", ".csv", ".provenance.json"):
                _link(stem.with_suffix(suffix), new / name / "figures" / (fig + suffix), out)
            _copy_beside(base, new, Path(name) / "figures" / fig, out)
            figures_taken += 1
            out.figures += 1
        cstage = study.kind_stage("claims")
        cspec = study.spec(cfg, cstage.name, ClaimsJob())
        try:
            crec = safeio.read_json(base / name / "claims.provenance.json")
        except (OSError, ValueError):
            crec = None
        if figures_taken == len(study.figures(cfg)) and _same(crec, cspec, prov.code_fingerprint(cstage.fingerprint_modules)):
            for f in ("claims.md", "claims.json", "claims.forest.png", "claims.provenance.json"):
                if f != "claims.forest.png" or (base / name / f).is_file():  # a run older than the forest plots has none
                    _link(base / name / f, new / name / f, out)
            _copy_beside(base, new, Path(name) / "claims", out)
            out.claims += 1
    record = {"base": str(rb), "base_argument": str(base_arg), "new_config": str(Path(new_arg).resolve()),
              "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "stores_taken": out.stores, "stores_differing": out.differ,
              "figures_taken": out.figures, "claims_taken": out.claims, "files_linked": out.linked}
    (new / RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return out
