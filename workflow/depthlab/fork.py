"""``depthlab fork BASE NEW``: start a new config's results folder from a finished one's, without copying its bytes.
Then ``make run CONFIG=NEW`` recomputes only the jobs whose spec or code differ.

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

What is shared, and what is not.  Only the chunks and metadata files inside stores are hard links, and
they are made read-only: a store is never modified in place (the storage promise, ``depthlab.storage``: it is written
into a new folder beside it and renamed into place, and Snakemake removes a job's output folder before the job runs), so
BASE and NEW may share its inodes.  Everything small is copied: figures (PNG, PDF, CSV, provenance), claims files, a
job's log (the shell's ``> log``) and its Snakemake benchmark file, so appending to NEW's claims.md or
``snakemake --touch`` in NEW moves nothing of BASE's.  The benchmark files copied are listed in the fork record with
their hashes: ``depthlab plan --calibrate`` and ``--check`` leave them out while they are unchanged (they are BASE's
measurements, not NEW's).

Nothing half-made is ever visible.  Each store is linked into a temporary folder beside its path
(``<store>.tmp-<pid>-...``) and renamed into place when complete; each copied file is written to a temporary name
and renamed.  The fork record ``<NEW>/.depthlab.fork.json`` says ``"complete": false`` until the last file is taken.
A fork killed at any point leaves a folder in which every store, figure and claims file present is whole: the same
command again resumes it (removing the killed fork's temporaries, taking what is not there yet), and a run of NEW
without the resume computes what the fork did not take.  A store holding a symlink or anything but plain files (a
results tree restored from git-annex, say) is not taken: its run rebuilds it.

Across file systems, where a hard link cannot be made, a file is copied (and the command says how many were).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from . import outputs

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
    refused: int = 0  # stores not taken because a file of theirs is a symlink or not a plain file
    resumed: bool = False
    benchmarks: dict | None = None  # the benchmark files copied: path relative to NEW -> sha256

    def summary(self) -> str:
        extra = (
            f"; {self.cross_device} copied because a hard link across file systems is impossible"
            if self.cross_device
            else ""
        )
        extra += (
            f"; {self.refused} stores holding a symlink or a special file not taken (NEW's run rebuilds them)"
            if self.refused
            else ""
        )
        return (
            f"{'resumed the fork' if self.resumed else 'forked'} {self.base} -> {self.new}: {self.stores} stores, "
            f"{self.figures} figures and {self.claims} studies' claims taken ({self.linked} store files hard-linked and "
            f"made read-only; {self.copied} figure, claims, log and benchmark files copied); {self.differ} stores at "
            f"NEW's paths differ in spec or code and are left to NEW's run{extra}"
        )


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


def write_new(base_arg: str | Path, new_arg: str | Path, sets: list[str]) -> Path:
    """``fork BASE NEW --set KEY=VALUE ...``: write NEW, BASE's config (its file, or a results folder's
    ``config.used.yaml``) with each dotted KEY set to its YAML VALUE and ``results:`` beside BASE's folder under NEW's
    file name; then the fork proper takes from BASE what NEW computes identically.  NEW must not exist (an edited copy
    is forked without ``--set``); every key and value is checked by the config's schema before anything is written.
    Raises :class:`ForkError` with one line."""
    import copy

    import yaml

    from . import config as dlc

    new = Path(new_arg)
    if new.exists() or new.is_symlink():
        raise ForkError(
            f"{new}: exists; with --set, fork writes NEW itself (give a new file name, or edit NEW and leave out --set)"
        )
    if new.suffix not in (".yaml", ".yml"):
        raise ForkError(f"{new}: NEW must be a .yaml file name")
    p = Path(base_arg)
    source = p / "config.used.yaml" if p.is_dir() else p
    if not source.is_file():
        raise ForkError(
            f"{base_arg}: "
            + (
                "no config.used.yaml: not a finished run's results folder"
                if p.is_dir()
                else "neither a config file nor a results folder"
            )
        )
    try:
        raw = dlc.read_yaml(source)
        if not isinstance(raw, dict):
            raise ForkError(f"{source}: not a mapping of keys to values")
        base_results = Path(
            p if p.is_dir() else dlc.validate(copy.deepcopy(raw), memory=False, source=source)["results"]
        )
        cfg = copy.deepcopy(raw)
        said = []
        for arg in sets:  # one value each (sweep --set's parser splits a list of them): KEY=VALUE, VALUE as YAML
            key, eq, written = (x.strip() for x in arg.partition("="))
            if not eq or not key or not written:
                raise ForkError(f"--set {arg!r}: write KEY=VALUE (e.g. studies.mori_ueda.figures.fig1.seeds=[0,1])")
            if key == "results":
                raise ForkError("--set results: NEW's folder is named after NEW's file (results/<NEW's name>)")
            try:
                value = yaml.safe_load(written)
            except yaml.YAMLError as e:
                raise ForkError(
                    f"--set {key}: the value {written!r} is not YAML ({getattr(e, 'problem', None) or e})"
                ) from None
            dlc.set_dotted(cfg, key.split("."), value)
            said.append(f"{key} = {written}")
        cfg["results"] = str(base_results.parent / new.stem)
        dlc.validate(copy.deepcopy(cfg), memory=False, source=new)
        outputs.user_folder(Path(cfg["results"]), what="NEW's results folder")
    except dlc.ConfigError as e:
        raise ForkError(f"{new}: {e}") from None
    except outputs.OutputRefused as e:
        raise ForkError(str(e)) from None
    head = f"# written by depthlab fork from {source}, with:\n" + "".join(f"#   {line}\n" for line in said)
    try:
        outputs.write_user_file((head + yaml.safe_dump(cfg, sort_keys=False)).encode(), new, what="NEW")
    except outputs.OutputRefused as e:
        raise ForkError(str(e)) from None
    return new


KILL_AFTER = "DEPTHLAB_TEST_FORK_KILL_AFTER"  # tests: SIGKILL this process after that many files taken


def _tick(out: "Forked") -> None:
    """A test hook: with ``DEPTHLAB_TEST_FORK_KILL_AFTER=N`` the fork kills itself (SIGKILL) once N files are taken."""
    n = os.environ.get(KILL_AFTER)
    if n and out.linked + out.copied + out.cross_device >= int(n):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def _plain_tree(src: Path) -> bool:
    """Every entry below ``src`` is a plain folder or a plain file (no symlink, FIFO, socket or device)."""
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        for name in dirnames + filenames:
            st = os.lstat(Path(dirpath) / name)
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                return False
    return True


def _link_store(src: Path, dst: Path, out: "Forked") -> bool:
    """Take the store ``src`` as ``dst``: hard-link every file (read-only) into a temporary folder beside ``dst`` and
    rename it into place when complete.  False (nothing taken) when ``src`` holds anything but plain files and folders."""
    from . import storage

    if dst.is_dir():  # a resumed fork: taken whole before the kill (a store appears only by its rename)
        return True
    if not _plain_tree(src):
        out.refused += 1
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    storage.remove_stale(dst)  # a killed fork's temporary of this store (its process is gone)
    tmp = storage.own(dst)
    if tmp.exists():
        shutil.rmtree(tmp)
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        d = Path(dirpath)
        dirnames.sort()
        (tmp / d.relative_to(src)).mkdir(parents=True, exist_ok=True)
        for f in sorted(filenames):
            _link(d / f, tmp / d.relative_to(src) / f, out)
            _tick(out)
    os.rename(tmp, dst)
    return True


def _link(src: Path, dst: Path, out: "Forked") -> None:
    """One store file: a hard link made read-only (the storage promise: no store file is written in place), or a copy
    across file systems."""
    try:
        os.link(src, dst)
        out.linked += 1
    except OSError:  # another file system, or links not allowed: a copy with its mtime
        shutil.copy2(src, dst)
        out.cross_device += 1
    mode = os.stat(dst).st_mode
    if mode & 0o222:
        os.chmod(dst, mode & ~0o222)


def _copy(src: Path, dst: Path, out: "Forked") -> bool:
    """A small file (figure, claims, log, benchmark) copied with its mtime into a temporary name and renamed into place;
    False when ``src`` is not a plain file (a symlink is never followed)."""
    from . import storage

    try:
        if not stat.S_ISREG(os.lstat(src).st_mode):
            out.skipped += 1
            return False
    except OSError:
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    storage.remove_stale(dst)  # a killed fork's temporary of this file (its process is gone)
    tmp = storage.own(dst)
    shutil.copy2(src, tmp)
    os.replace(tmp, dst)
    out.copied += 1
    _tick(out)
    return True


def _copy_beside(base: Path, new: Path, rel: Path, out: "Forked") -> None:
    """A job's log and benchmark files (written in place, so copied): ``logs/<rel>.log``, ``benchmarks/<rel>.tsv``; the
    benchmark's hash goes into the fork record (:data:`Forked.benchmarks`)."""
    for kind, suffix in (("logs", ".log"), ("benchmarks", ".tsv")):
        src = base / kind / rel.with_suffix(suffix)
        dst = new / kind / rel.with_suffix(suffix)
        if _copy(src, dst, out) and kind == "benchmarks":
            out.benchmarks[str(dst.relative_to(new))] = hashlib.sha256(dst.read_bytes()).hexdigest()


def forked_benchmarks(results: Path) -> dict[str, str]:
    """The benchmark files a fork copied into ``results`` from its base and that are still unchanged (their sha256 as
    recorded): path relative to ``results`` -> sha256.  Empty for a folder that is no fork (or an unreadable record)."""
    from . import safeio

    try:
        rec = safeio.read_json(Path(results) / RECORD)
    except (OSError, ValueError):
        return {}
    bench = rec.get("benchmarks") if isinstance(rec, dict) else None
    if not isinstance(bench, dict):
        return {}
    out = {}
    for rel, digest in bench.items():
        p = Path(results) / str(rel)
        try:
            if isinstance(digest, str) and p.is_file() and hashlib.sha256(p.read_bytes()).hexdigest() == digest:
                out[str(rel)] = digest
        except OSError:
            continue
    return out


def incomplete(results: Path) -> str:
    """'' unless ``results`` holds a fork record that says the fork did not finish: then its base."""
    from . import safeio

    try:
        rec = safeio.read_json(Path(results) / RECORD)
    except (OSError, ValueError):
        return ""
    if isinstance(rec, dict) and rec.get("complete") is False:
        return str(rec.get("base", "?"))
    return ""


def _write_record(new: Path, record: dict) -> None:
    from . import storage

    storage.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", new / RECORD)


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
    from .jobs import JobGraph
    from .records import store_record
    from .study import ClaimsJob, FigureJob
    from .studies import get_study

    base, _ = results_of(base_arg)
    if not Path(new_arg).is_file():
        raise ForkError(
            f"{new_arg}: NEW must be a config file (the fork takes from BASE what NEW's config would compute "
            "identically, so it needs NEW's values): copy BASE's and edit it, or give the changes with "
            "--set KEY=VALUE and fork writes NEW"
        )
    new, cfg = results_of(new_arg)
    if not base.is_dir():
        raise ForkError(f"{base_arg}: its results folder {base} does not exist (has it run?)")
    rb, rn = base.resolve(), new.resolve()
    if rn == rb or rb in rn.parents or rn in rb.parents:
        raise ForkError(
            f"{new}: NEW's results folder must lie outside BASE's {base}, and BASE outside NEW's (give NEW's "
            "config a `results:` of its own)"
        )
    resuming = new.is_dir() and incomplete(new)
    if resuming and Path(resuming) != rb:
        raise ForkError(
            f"{new}: an interrupted fork from {resuming} is in NEW's folder, not one from {rb}; remove the folder "
            "to start afresh"
        )
    if not resuming and new.exists() and (not new.is_dir() or any(new.iterdir())):
        raise ForkError(
            f"{new}: NEW's results folder exists and is not empty; a fork starts a new folder (remove it, or "
            "give NEW's config another `results:`)"
        )
    out = Forked(base, new, resumed=bool(resuming), benchmarks={})
    new.mkdir(parents=True, exist_ok=True)
    record = {
        "base": str(rb),
        "base_argument": str(base_arg),
        "new_config": str(Path(new_arg).resolve()),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "complete": False,
    }
    if resuming:
        try:
            old = safeio.read_json(new / RECORD)
            out.benchmarks.update({str(k): str(v) for k, v in (old.get("benchmarks") or {}).items()})
        except (OSError, ValueError, AttributeError):
            pass
    _write_record(new, {**record, "benchmarks": out.benchmarks})
    graph = JobGraph(cfg)
    for name in graph.studies:
        study = get_study(name)
        taken: set[str] = set()
        for st in study.store_stages():
            code = prov.code_fingerprint(st.fingerprint_modules)
            for node in graph.stage(name, st.name):
                rel = Path(node.path)
                src = base / rel
                if not src.is_dir() or src.is_symlink():
                    continue
                try:
                    rec = store_record(src)
                except Exception:  # an unreadable record: left to NEW's run
                    out.skipped += 1
                    continue
                if not _same(rec, node.spec, code):
                    out.differ += 1
                    continue
                if not _link_store(src, new / rel, out):
                    continue
                _copy_beside(base, new, rel.with_suffix(""), out)
                taken.add(study.path(node.ref))
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
            # the provenance record last: a figure whose record is there is whole (its run would remake a partial one)
            for suffix in (".png", ".pdf", ".csv", ".provenance.json"):
                _copy(stem.with_suffix(suffix), new / name / "figures" / (fig + suffix), out)
            _copy_beside(base, new, Path(name) / "figures" / fig, out)
            figures_taken += 1
            out.figures += 1
        cstage = study.kind_stage("claims")
        cspec = study.spec(cfg, cstage.name, ClaimsJob())
        try:
            crec = safeio.read_json(base / name / "claims.provenance.json")
        except (OSError, ValueError):
            crec = None
        if figures_taken == len(study.figures(cfg)) and _same(
            crec, cspec, prov.code_fingerprint(cstage.fingerprint_modules)
        ):
            # the report, verdicts and record always; the forest plot and the page where the base has them (a run
            # older than either has neither)
            for f in ("claims.md", "claims.json", "claims.forest.png", "claims.html", "claims.provenance.json"):
                if f.endswith((".md", ".json")) or (base / name / f).is_file():
                    _copy(base / name / f, new / name / f, out)
            _copy_beside(base, new, Path(name) / "claims", out)
            out.claims += 1
    _write_record(
        new,
        {
            **record,
            "complete": True,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "stores_taken": out.stores,
            "stores_differing": out.differ,
            "stores_refused": out.refused,
            "figures_taken": out.figures,
            "claims_taken": out.claims,
            "files_linked": out.linked,
            "files_copied": out.copied,
            "benchmarks": out.benchmarks,
        },
    )
    return out
