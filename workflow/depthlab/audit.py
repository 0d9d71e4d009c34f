"""Provenance audit: ``depthlab audit <figure | claims.md | store> [--configfile CONFIG] [--strict]``.

Walks the lineage of what a reader sees, back to the data sets, and checks:

*Integrity* (always a failure, naming the file):
  - every file exists and can be read;
  - a figure's CSV, PDF and PNG pixels hash to what its provenance recorded, and
    the PNG's and PDF's embedded provenance equals the record;
  - a claims report's markdown and JSON hash to what was recorded, and each figure
    table it read is the one on disk;
  - a store's arrays hash to its recorded ``content_hash``, its attributes equal the
    recorded ones, its consolidated metadata (the copy a plain ``xr.open_zarr`` reads)
    equals each array's own metadata, and each record's ``record_hash`` matches its own fields;
  - every consumer recorded the input's current content and record hashes (the hash
    chain: rewriting one record without every record downstream of it, up to the
    figure, is detected);
  - each figure's table **follows from its stores**: the study's own ``make_table`` (no
    plotting) re-derives it from the input stores and it must equal the CSV (a store
    changed with every hash above it rewritten is caught here); the PNG has one frame;
  - with ``--configfile``: each file was made from exactly the spec that config gives
    its job (looked up from the ``{study, stage, job}`` it records, not its path);
  - ``config.used.yaml`` (the config the last run recorded) is a valid config; a file
    made from another config than it is a note (a failure with ``--strict``).

*Hostile folders*: nothing in the results folder is trusted.  A bad file (corrupt JSON
or zarr metadata, a record that is a list, empty or absurdly nested) is a failure naming
it, never a traceback; FIFOs, sockets and device files are never opened; a store naming
a pickling codec is refused before zarr reads it; a symlink leading outside the results
folder is a note (a failure with ``--strict``).

*History* (a note; a failure only with ``--strict``): a file made by another code
version is reported with both versions and whether the fingerprint of the code its
stage runs differs from the checkout's.  A store made by an older commit whose
stage code is unchanged is fine: the numbers would be the same.

Every path is resolved against the results folder of the audited file (each
record names its own path relative to that root), so a copied or archived results
folder audits the same from any working directory.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from . import machine
from . import provenance as prov
from . import safeio
from . import storage


@dataclass
class Audit:
    config: dict | None
    strict: bool
    root: Path = Path(".")
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    used: dict | None = None  # <results>/config.used.yaml, validated
    figures: dict[str, dict] = field(default_factory=dict)  # figure stem -> its record (for --reproduce's verdicts)
    claims: dict[str, dict] = field(default_factory=dict)  # a study's claims.md -> its record

    def say(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def fail(self, depth: int, text: str) -> None:
        self.problems.append(text)
        self.say(depth, f"FAIL {text}")

    def note(self, depth: int, text: str, strict_fails: bool = False) -> None:
        if strict_fails and self.strict:
            return self.fail(depth, text + " (--strict)")
        self.notes.append(text)
        self.say(depth, f"note: {text}")


MAX_JSON_BYTES = 64 * 2**20


def _show(a: Audit, path: Path) -> str:
    try:
        return str(path.relative_to(a.root)) if path.is_relative_to(a.root) else str(path)
    except ValueError:
        return str(path)


def _outside(a: Audit, depth: int, path: Path) -> None:
    """A note (a failure with --strict) when ``path`` is or passes through a symlink leading outside the results folder."""
    try:
        real = path.resolve()
    except (OSError, RuntimeError):
        return
    root = a.root.resolve()
    if not real.is_relative_to(root):
        a.note(depth, f"{_show(a, path)}: a symlink leading outside the results folder (to {real})", strict_fails=True)


def _regular(a: Audit, depth: int, path: Path) -> bool:
    """True if ``path`` is a regular file (after symlinks); a failure naming it otherwise.  Never opens the file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        a.fail(depth, f"{_show(a, path)}: missing")
        return False
    except OSError as e:
        a.fail(depth, f"{_show(a, path)}: cannot be read ({e.strerror})")
        return False
    if not stat.S_ISREG(mode):
        a.fail(depth, f"{_show(a, path)}: not a regular file (a directory, FIFO, socket or device): not opened")
        return False
    if os.path.islink(path):
        _outside(a, depth, path)
    return True


def _root_of(path: Path, rel: str) -> Path | None:
    """The results root: ``path`` with the recorded relative path ``rel`` removed from its end."""
    parts, tail = path.resolve().parts, Path(rel).parts
    if len(parts) <= len(tail) or tuple(parts[-len(tail) :]) != tail:
        return None
    return Path(*parts[: -len(tail)])


def _check_record(a: Audit, depth: int, rel: str, rec: dict) -> None:
    if prov.record_hash(rec) != rec.get("record_hash"):
        a.fail(
            depth,
            f"{rel}: its provenance record was edited (record hash {str(rec.get('record_hash'))[:16]} no longer matches its fields)",
        )
    if "spec" in rec and prov.spec_hash(rec["spec"]) != rec.get("config_hash"):
        a.fail(depth, f"{rel}: recorded spec does not match its recorded config hash")


def _check_code(a: Audit, depth: int, rel: str, rec: dict) -> None:
    """History: other commit -> note with both versions and whether the stage's code fingerprint differs."""
    from .studies import get_study

    made, cur = str(rec.get("code_version")), prov.code_version()
    try:
        now = prov.code_fingerprint(get_study(rec["study"]).stage(rec["stage"]).fingerprint_modules)
    except (KeyError, ModuleNotFoundError):
        now = None
    same_fp = now is not None and now == rec.get("code_fingerprint")
    if made.removesuffix("+dirty") != cur.removesuffix("+dirty") or made.endswith("+dirty"):
        if same_fp:
            a.note(
                depth,
                f"{rel}: made by code {made}, the checkout is {cur}; the code its stage runs is unchanged "
                f"(fingerprint {now[:16]})",
            )
        else:
            a.note(
                depth,
                f"{rel}: made by code {made}, the checkout is {cur}, and the code its stage runs has changed "
                f"(fingerprint {str(rec.get('code_fingerprint'))[:16]} then, {str(now)[:16]} now)",
                strict_fails=True,
            )
    elif not same_fp:
        a.note(
            depth,
            f"{rel}: its stage's code fingerprint differs from the checkout's although the commit is the same",
            strict_fails=True,
        )


def _check_config(a: Audit, depth: int, rel: str, rec: dict) -> None:
    """With --configfile: a failure unless made from that config.  Without: a note (strict: failure) unless made from
    the results folder's config.used.yaml."""
    config = a.config if a.config is not None else a.used
    if config is None:
        return
    from .studies import get_study

    def problem(text: str) -> None:
        if a.config is not None:
            a.fail(depth, f"{rel}: {text}")
        else:
            a.note(
                depth,
                f"{rel}: {text} (compared with config.used.yaml: a later run used another config?)",
                strict_fails=True,
            )

    try:
        if rec["study"] not in config["studies"]:
            raise KeyError(rec["study"])
        want = get_study(rec["study"]).spec(config, rec["stage"], rec["job"]).to_dict()
    except (KeyError, TypeError, ValueError, AttributeError):
        problem(f"not part of the config (study {rec.get('study')}, stage {rec.get('stage')}, job {rec.get('job')})")
        return
    if prov.spec_hash(want) != rec.get("config_hash"):
        have = rec.get("spec", {}) if isinstance(rec.get("spec"), dict) else {}
        diff = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
        problem(f"made by a different config (differs in: {', '.join(diff)})")


def audit_store(a: Audit, rel: str, depth: int, expect: dict | None) -> None:
    """Audit the store at root/rel; ``expect`` is what its consumer recorded of it (content and record hash)."""
    if not isinstance(rel, str) or not rel:
        a.fail(depth, f"a record names an input store with no valid path ({rel!r})")
        return
    p = a.root / rel
    if rel in a.seen:  # a shared input (a data set feeds many jobs): only the consumer's record needs checking again
        if expect is not None and p.exists():
            try:
                rec = storage.read_record(p)
            except Exception as e:
                a.fail(depth, f"{rel}: unreadable ({type(e).__name__}: {e})")
                return
            for k in ("content_hash", "record_hash"):
                if rec.get(k) != expect.get(k):
                    a.fail(
                        depth,
                        f"{rel}: a consumer recorded {k} {str(expect.get(k))[:16]}, the store now has {str(rec.get(k))[:16]}",
                    )
        a.say(depth, f"{rel}  (audited above)")
        return
    a.seen.add(rel)
    if not p.exists():
        a.fail(depth, f"{rel}: missing")
        return
    try:
        links = storage.check_store(p)  # no FIFO or device is opened, no pickling codec reaches zarr
        ds = storage.read_store(p)
        rec = storage.read_record(p)
        if not isinstance(rec, dict):
            raise ValueError(f"its provenance record is a {type(rec).__name__}, not a JSON object")
    except Exception as e:  # an unreadable store is reported, never crashes the audit
        a.fail(depth, f"{rel}: unreadable ({type(e).__name__}: {e})")
        return
    for link in [p] + links:
        if link.is_symlink():
            _outside(a, depth, link)
    on_disk = storage.content_hash(ds)
    spec = rec.get("spec", {})
    a.say(depth, f"{rel}  [{rec.get('study')}/{rec.get('stage')} {prov.canonical_json(rec.get('job'))}]")
    a.say(
        depth + 1,
        f"content {on_disk[:16]}  config {str(rec.get('config_hash'))[:16]}  code {rec.get('code_version')}  "
        f"device {rec.get('device')}  created {rec.get('created')}",
    )
    a.say(depth + 1, f"machine {machine.summary(rec.get('machine'))}")
    a.say(
        depth + 1,
        f"config values {prov.canonical_json({k: v for k, v in spec.items() if k not in ('data', 'study', 'stage', 'job')})}",
    )
    a.say(depth + 1, f"packages {prov.canonical_json(rec.get('packages'))}")
    _check_record(a, depth + 1, rel, rec)
    if on_disk != rec.get("content_hash"):
        a.fail(
            depth + 1,
            f"{rel}: arrays on disk (hash {on_disk[:16]}) differ from those written "
            f"(hash {str(rec.get('content_hash'))[:16]}): modified after it was made",
        )
    if storage.plain_attrs(ds.attrs) != rec.get("attrs"):
        a.fail(depth + 1, f"{rel}: its attributes differ from those recorded when it was written")
    try:
        bad = storage.consolidated_mismatches(p)
    except (OSError, ValueError, AttributeError) as e:
        bad = [f"unreadable ({type(e).__name__})"]
    if bad is None:
        a.note(
            depth + 1,
            f"{rel}: written without consolidated metadata (an older depthlab): plain xr.open_zarr warns on it",
        )
    elif bad:
        a.fail(
            depth + 1,
            f"{rel}: its consolidated metadata (what xr.open_zarr reads) differs from the arrays' own for: "
            f"{', '.join(bad)}",
        )
    if rec.get("path") != rel:
        a.fail(depth + 1, f"{rel}: its record says it was written as {rec.get('path')}")
    if expect is not None:
        for k in ("content_hash", "record_hash"):
            if rec.get(k) != expect.get(k):
                a.fail(
                    depth + 1,
                    f"{rel}: its consumer recorded {k} {str(expect.get(k))[:16]}, the store has "
                    f"{str(rec.get(k))[:16]}: it was replaced or rewritten",
                )
    _check_code(a, depth + 1, rel, rec)
    _check_config(a, depth + 1, rel, rec)
    _check_files(a, depth + 1, rel, rec)
    for _name, inp in sorted(rec.get("inputs", {}).items()):
        audit_store(a, inp["path"], depth + 1, inp)


def _check_files(a: Audit, depth: int, rel: str, rec: dict) -> None:
    """The files from outside the results folder a store was made from (a user's CIFAR-10 copy): each must still hash
    to what its record says; one that is gone is a note (the data may live elsewhere now; --strict: a failure)."""
    files = rec.get("files") or {}
    if not isinstance(files, dict):
        a.fail(depth, f"{rel}: its record's files is a {type(files).__name__}, not a mapping")
        return
    for name, f in sorted(files.items()):
        if not isinstance(f, dict) or not isinstance(f.get("path"), str) or not isinstance(f.get("sha256"), str):
            a.fail(depth, f"{rel}: its record's entry for the source file {name!r} is malformed")
            continue
        path = f["path"]
        if not safeio.is_regular(path):
            a.note(
                depth,
                f"{rel}: its source file {path} is not there (or not a regular file): not checked",
                strict_fails=True,
            )
            continue
        try:
            now = safeio.file_hash(path)
        except (OSError, ValueError) as e:
            a.fail(depth, f"{rel}: its source file {path} cannot be read ({e})")
            continue
        if now != f["sha256"]:
            a.fail(
                depth,
                f"{rel}: its source file {path} has changed since the store was made from it "
                f"(sha256 {f['sha256'][:16]} then, {now[:16]} now)",
            )
        else:
            a.say(depth, f"source file {path}  sha256 {now[:16]}")


def _load_json(a: Audit, depth: int, path: Path) -> dict | None:
    """A provenance JSON object, or None with a failure naming the file (missing, special, huge, corrupt, not an object)."""
    if not _regular(a, depth, path):
        return None
    try:
        rec = safeio.read_json(path, MAX_JSON_BYTES)  # NaN and infinities are refused: no record of ours holds one
    except (OSError, ValueError) as e:
        a.fail(depth, f"{_show(a, path)}: unreadable ({type(e).__name__}: {str(e)[:200]})")
        return None
    if not isinstance(rec, dict) or not rec:
        a.fail(
            depth,
            f"{_show(a, path)}: not a provenance record (a JSON {type(rec).__name__}{', empty' if not rec else ''})",
        )
        return None
    return rec


def _same_file(a: Audit, depth: int, path: Path, recorded: str | None, what: str) -> None:
    if not _regular(a, depth, path):
        return
    if storage.file_hash(path) != recorded:
        a.fail(depth, f"{_show(a, path)}: {what} differs from the one recorded when it was made (edited or replaced)")


def _first_difference(csv: str, derived: str) -> str | None:
    """None if the two CSV texts hold the same table (numbers equal to the CSV's printed precision); else where not."""
    if csv == derived:
        return None
    import io

    import numpy as np
    import pandas as pd

    try:
        have, want = pd.read_csv(io.StringIO(csv)), pd.read_csv(io.StringIO(derived))
    except Exception as e:
        return f"the CSV cannot be parsed ({type(e).__name__})"
    if list(have.columns) != list(want.columns) or have.shape != want.shape:
        return (
            f"columns/shape {list(have.columns)} {have.shape} in the CSV, {list(want.columns)} {want.shape} re-derived"
        )
    for col in have.columns:
        x, y = have[col].to_numpy(), want[col].to_numpy()
        if x.dtype.kind in "fiu" and y.dtype.kind in "fiu":
            bad = ~np.isclose(x.astype(float), y.astype(float), rtol=2e-6, atol=0, equal_nan=True)
        else:
            bad = x.astype(str) != y.astype(str)
        if bad.any():
            i = int(np.argmax(bad))
            return f"row {i}, column {col}: {x[i]} in the CSV, {y[i]} from the stores"
    return None


def _rederive_table(a: Audit, depth: int, stem_rel: str, stem: Path, rec: dict) -> None:
    """Re-derive the figure's table from its input stores with the study's own make_table and compare with the CSV."""
    from . import render
    from .studies import get_study

    csv = stem.with_suffix(".csv")
    try:
        study = get_study(rec["study"])
        stage = study.stage(rec["stage"])
        make_table = stage.table_function()
        if make_table is None:
            a.note(
                depth,
                f"{stem_rel}: study {rec['study']} has no make_table, so its table was not re-derived",
                strict_fails=True,
            )
            return
        spec = study.spec_from_dict(rec["spec"])
        inputs = storage.figure_inputs(
            study, {k: str(a.root / inp["path"]) for k, inp in rec.get("inputs", {}).items()}
        )
        derived = render.table_csv(make_table(spec, inputs))
    except Exception as e:
        a.fail(
            depth, f"{stem_rel}: its table could not be re-derived from its stores ({type(e).__name__}: {str(e)[:200]})"
        )
        return
    if not _regular(a, depth, csv):
        return
    diff = _first_difference(csv.read_text(errors="replace"), derived)
    if diff is None:
        a.say(depth, f"table re-derived from its {len(inputs)} store(s): equals {csv.name}")
        return
    now = prov.code_fingerprint(stage.fingerprint_modules)
    if now == rec.get("code_fingerprint"):
        a.fail(
            depth,
            f"{stem_rel}: its table no longer follows from its stores (re-derived with the figure's own code, {diff})",
        )
    else:
        a.note(
            depth,
            f"{stem_rel}: the table re-derived with the checkout's figure code differs ({diff}); the figure was "
            "made by other figure code",
            strict_fails=True,
        )


def audit_figure(a: Audit, stem_rel: str, depth: int, expect_record: str | None = None) -> None:
    stem = a.root / stem_rel
    rec = _load_json(a, depth, stem.with_suffix(".provenance.json"))
    if rec is None:
        return
    a.seen.add(stem_rel)
    a.figures[stem_rel] = rec
    a.say(
        depth,
        f"figure {stem_rel}  [{rec.get('study')}] config {str(rec.get('config_hash'))[:16]}  code {rec.get('code_version')}",
    )
    _check_record(a, depth + 1, stem_rel, rec)
    if expect_record is not None and rec.get("record_hash") != expect_record:
        a.fail(
            depth + 1,
            f"{stem_rel}: the claims report recorded another provenance for this figure (record hash "
            f"{expect_record[:16]}, now {str(rec.get('record_hash'))[:16]})",
        )
    _same_file(a, depth + 1, stem.with_suffix(".csv"), rec.get("csv_sha256"), "the table")
    embedded = prov.canonical_json(prov.embedded(rec))
    pdf = stem.with_suffix(".pdf")
    _same_file(a, depth + 1, pdf, rec.get("pdf_sha256"), "the PDF")
    if pdf.exists() and _regular(a, depth + 1, pdf):
        try:
            subject = storage.pdf_subject(pdf)
        except Exception as e:
            a.fail(depth + 1, f"{stem_rel}.pdf: its embedded provenance is unreadable ({type(e).__name__}: {e})")
        else:
            if subject != embedded:
                a.fail(
                    depth + 1,
                    f"{stem_rel}.pdf: its embedded provenance (the PDF's Subject) does not match "
                    f"{stem.name}.provenance.json",
                )
    png = stem.with_suffix(".png")
    if _regular(a, depth + 1, png):
        try:
            frames = storage.png_frames(png)
            pixels, text = storage.png_pixels_hash(png), storage.png_text(png, "depthlab-provenance")
        except Exception as e:
            a.fail(depth + 1, f"{stem_rel}.png: unreadable ({type(e).__name__}: {e})")
        else:
            if frames != 1:
                a.fail(depth + 1, f"{stem_rel}.png: an animated PNG with {frames} frames (depthlab writes one)")
            if pixels != rec.get("png_pixels_sha256"):
                a.fail(depth + 1, f"{stem_rel}.png: its pixels differ from the image that was made")
            if text != embedded:
                a.fail(depth + 1, f"{stem_rel}.png: its embedded provenance does not match {stem.name}.provenance.json")
    _check_code(a, depth + 1, stem_rel, rec)
    _check_config(a, depth + 1, stem_rel, rec)
    inputs = rec.get("inputs", {})
    if not isinstance(inputs, dict) or not all(isinstance(v, dict) for v in inputs.values()):
        a.fail(depth + 1, f"{stem_rel}: its record's inputs are malformed")
        return
    before = len(a.problems)
    for _name, inp in sorted(inputs.items()):
        audit_store(a, inp.get("path"), depth + 1, inp)
    if len(a.problems) == before:  # the stores are sound: does the table follow from them?
        _rederive_table(a, depth + 1, stem_rel, stem, rec)


def audit_claims(a: Audit, rel: str, depth: int, expect_record: str | None = None) -> None:
    """A study's claims.md (inputs: figure tables) or the index <results>/claims.md (inputs: studies' claims.json)."""
    md = a.root / rel
    rec = _load_json(a, depth, md.with_suffix(".provenance.json"))
    if rec is None:
        return
    a.say(depth, f"claims {rel}  [{rec.get('study')}] code {rec.get('code_version')}")
    _check_record(a, depth + 1, rel, rec)
    if expect_record is not None and rec.get("record_hash") != expect_record:
        a.fail(depth + 1, f"{rel}: the index recorded another provenance for this report")
    _same_file(a, depth + 1, md, rec.get("md_sha256"), "the report")
    if "json_sha256" in rec:
        _same_file(a, depth + 1, md.with_suffix(".json"), rec.get("json_sha256"), "the verdicts")
    if "forest_sha256" in rec:
        _same_file(a, depth + 1, md.with_suffix(".forest.png"), rec.get("forest_sha256"), "the forest plot")
    if "html_sha256" in rec:
        _same_file(a, depth + 1, md.with_suffix(".html"), rec.get("html_sha256"), "the report's page")
    if rec.get("study") != "*":
        a.claims[rel] = rec
        _check_code(a, depth + 1, rel, rec)
        _check_config(a, depth + 1, rel, rec)
    inputs = rec.get("inputs", {})
    if not isinstance(inputs, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("path"), str) for v in inputs.values()
    ):
        a.fail(depth + 1, f"{rel}: its record's inputs are malformed")
        return
    for _name, inp in sorted(inputs.items()):
        _same_file(a, depth + 1, a.root / inp["path"], inp.get("sha256"), "the input file")
        if rec.get("study") == "*":
            audit_claims(a, inp["path"].removesuffix(".json") + ".md", depth + 1, inp.get("record_hash"))
        else:
            audit_figure(a, inp["path"].removesuffix(".csv"), depth + 1, inp.get("record_hash"))


def _audit_used_config(a: Audit) -> None:
    """<results>/config.used.yaml: a valid config (what reruns the same jobs); files are compared with it."""
    from . import config as cfg

    path = a.root / "config.used.yaml"
    if not path.exists() and not path.is_symlink():
        a.note(0, "config.used.yaml: missing (the run that made these files did not record its config)")
        return
    if not _regular(a, 0, path):
        return
    try:
        a.used = cfg.validate(cfg.read_yaml(path), memory=False)
    except cfg.ConfigError as e:
        a.fail(0, f"config.used.yaml: not a valid config ({e})")
    except Exception as e:
        a.fail(0, f"config.used.yaml: unreadable ({type(e).__name__}: {str(e)[:200]})")
    else:
        a.say(0, "config.used.yaml: a valid config; each file is compared with the spec it gives its job")


def run(target: str, config: dict | None, strict: bool = False) -> Audit:
    a = Audit(config=config, strict=strict)
    p = Path(target.rstrip("/"))
    name = p.name
    if name.endswith(".zarr"):
        try:
            rel = storage.read_record(p)["path"]
        except Exception as e:
            a.fail(0, f"{p}: not a depthlab store ({type(e).__name__}: {e})")
            return a
        kind = "store"
    else:
        for suffix in (".provenance.json", ".png", ".pdf", ".csv", ".md", ".json"):
            if name.endswith(suffix):
                p = p.with_name(name[: -len(suffix)])
                break
        rec_path = p.with_name(p.name + ".provenance.json")
        if not rec_path.exists():
            a.fail(0, f"{rec_path}: missing (is {target} a depthlab figure, claims report or store?)")
            return a
        rec = _load_json(a, 0, rec_path)
        if rec is None:
            return a
        rel = rec.get("path", "")
        if not isinstance(rel, str) or not rel:
            a.fail(0, f"{rec_path}: its record names no path")
            return a
        kind = "figure" if rec.get("stage") == "figure" else "claims"
        p = p.with_suffix(".md") if kind == "claims" else p
    root = _root_of(p, rel)
    if root is None:
        a.fail(0, f"{p}: its record says it lives at <results>/{rel}, which does not match where it is")
        return a
    a.root = root
    a.say(0, f"results folder {root}")
    _audit_used_config(a)
    {
        "store": lambda: audit_store(a, rel, 0, None),
        "figure": lambda: audit_figure(a, rel, 0),
        "claims": lambda: audit_claims(a, rel, 0),
    }[kind]()
    return a


def reproduce(a: Audit, n: int, named: list[str], seed: int = 0, timeout: float = 3600.0) -> None:
    """Re-run store jobs of the audited lineage and compare them (:func:`depthlab.reproduce.reproduce`)."""
    from . import reproduce as rp

    rp.reproduce(a, n, named, seed, timeout)
