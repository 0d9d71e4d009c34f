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
  - with ``--configfile``: each file was made from exactly the spec that config gives
    its job (looked up from the ``{study, stage, job}`` it records, not its path).

*History* (a note; a failure only with ``--strict``): a file made by another code
version is reported with both versions and whether the fingerprint of the code its
stage runs differs from the checkout's.  A store made by an older commit whose
stage code is unchanged is fine: the numbers would be the same.

Every path is resolved against the results folder of the audited file (each
record names its own path relative to that root), so a copied or archived results
folder audits the same from any working directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from . import provenance as prov
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


def _root_of(path: Path, rel: str) -> Path | None:
    """The results root: ``path`` with the recorded relative path ``rel`` removed from its end."""
    parts, tail = path.resolve().parts, Path(rel).parts
    if len(parts) <= len(tail) or tuple(parts[-len(tail):]) != tail:
        return None
    return Path(*parts[: -len(tail)])


def _check_record(a: Audit, depth: int, rel: str, rec: dict) -> None:
    if prov.record_hash(rec) != rec.get("record_hash"):
        a.fail(depth, f"{rel}: its provenance record was edited (record hash {str(rec.get('record_hash'))[:16]} no longer matches its fields)")
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
            a.note(depth, f"{rel}: made by code {made}, the checkout is {cur}; the code its stage runs is unchanged "
                          f"(fingerprint {now[:16]})")
        else:
            a.note(depth, f"{rel}: made by code {made}, the checkout is {cur}, and the code its stage runs has changed "
                          f"(fingerprint {str(rec.get('code_fingerprint'))[:16]} then, {str(now)[:16]} now)", strict_fails=True)
    elif not same_fp:
        a.note(depth, f"{rel}: its stage's code fingerprint differs from the checkout's although the commit is the same", strict_fails=True)


def _check_config(a: Audit, depth: int, rel: str, rec: dict) -> None:
    if a.config is None:
        return
    from .studies import get_study

    try:
        if rec["study"] not in a.config["studies"]:
            raise KeyError(rec["study"])
        want = get_study(rec["study"]).spec(a.config, rec["stage"], rec["job"]).to_dict()
    except (KeyError, TypeError, ValueError):
        a.fail(depth, f"{rel}: not part of the given config (study {rec.get('study')}, stage {rec.get('stage')}, job {rec.get('job')})")
        return
    if prov.spec_hash(want) != rec.get("config_hash"):
        have = rec.get("spec", {})
        diff = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
        a.fail(depth, f"{rel}: made by a different config (differs in: {', '.join(diff)})")


def audit_store(a: Audit, rel: str, depth: int, expect: dict | None) -> None:
    """Audit the store at root/rel; ``expect`` is what its consumer recorded of it (content and record hash)."""
    p = a.root / rel
    if rel in a.seen:  # a shared input (a data set feeds many jobs): only the consumer's record needs checking again
        if expect is not None and p.exists():
            rec = storage.read_record(p)
            for k in ("content_hash", "record_hash"):
                if rec.get(k) != expect.get(k):
                    a.fail(depth, f"{rel}: a consumer recorded {k} {str(expect.get(k))[:16]}, the store now has {str(rec.get(k))[:16]}")
        a.say(depth, f"{rel}  (audited above)")
        return
    a.seen.add(rel)
    if not p.exists():
        a.fail(depth, f"{rel}: missing")
        return
    try:
        ds = storage.read_store(p)
        rec = storage.read_record(p)
    except Exception as e:  # an unreadable store is reported, never crashes the audit
        a.fail(depth, f"{rel}: unreadable ({type(e).__name__}: {e})")
        return
    on_disk = storage.content_hash(ds)
    spec = rec.get("spec", {})
    a.say(depth, f"{rel}  [{rec.get('study')}/{rec.get('stage')} {prov.canonical_json(rec.get('job'))}]")
    a.say(depth + 1, f"content {on_disk[:16]}  config {str(rec.get('config_hash'))[:16]}  code {rec.get('code_version')}  "
                     f"device {rec.get('device')}  created {rec.get('created')}")
    a.say(depth + 1, f"config values {prov.canonical_json({k: v for k, v in spec.items() if k not in ('data', 'study', 'stage', 'job')})}")
    a.say(depth + 1, f"packages {prov.canonical_json(rec.get('packages'))}")
    _check_record(a, depth + 1, rel, rec)
    if on_disk != rec.get("content_hash"):
        a.fail(depth + 1, f"{rel}: arrays on disk (hash {on_disk[:16]}) differ from those written "
                          f"(hash {str(rec.get('content_hash'))[:16]}): modified after it was made")
    if storage.plain_attrs(ds.attrs) != rec.get("attrs"):
        a.fail(depth + 1, f"{rel}: its attributes differ from those recorded when it was written")
    try:
        bad = storage.consolidated_mismatches(p)
    except (OSError, ValueError, AttributeError) as e:
        bad = [f"unreadable ({type(e).__name__})"]
    if bad is None:
        a.note(depth + 1, f"{rel}: written without consolidated metadata (an older depthlab): plain xr.open_zarr warns on it")
    elif bad:
        a.fail(depth + 1, f"{rel}: its consolidated metadata (what xr.open_zarr reads) differs from the arrays' own for: "
                          f"{', '.join(bad)}")
    if rec.get("path") != rel:
        a.fail(depth + 1, f"{rel}: its record says it was written as {rec.get('path')}")
    if expect is not None:
        for k in ("content_hash", "record_hash"):
            if rec.get(k) != expect.get(k):
                a.fail(depth + 1, f"{rel}: its consumer recorded {k} {str(expect.get(k))[:16]}, the store has "
                                  f"{str(rec.get(k))[:16]}: it was replaced or rewritten")
    _check_code(a, depth + 1, rel, rec)
    _check_config(a, depth + 1, rel, rec)
    for name, inp in sorted(rec.get("inputs", {}).items()):
        audit_store(a, inp["path"], depth + 1, inp)


def _load_json(a: Audit, depth: int, path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        a.fail(depth, f"{path}: missing")
    except (OSError, ValueError) as e:
        a.fail(depth, f"{path}: unreadable ({e})")
    return None


def _same_file(a: Audit, depth: int, path: Path, recorded: str | None, what: str) -> None:
    if not path.exists():
        a.fail(depth, f"{path.relative_to(a.root) if path.is_relative_to(a.root) else path}: missing")
    elif storage.file_hash(path) != recorded:
        a.fail(depth, f"{path.relative_to(a.root)}: {what} differs from the one recorded when it was made (edited or replaced)")


def audit_figure(a: Audit, stem_rel: str, depth: int, expect_record: str | None = None) -> None:
    stem = a.root / stem_rel
    rec = _load_json(a, depth, stem.with_suffix(".provenance.json"))
    if rec is None:
        return
    a.seen.add(stem_rel)
    a.say(depth, f"figure {stem_rel}  [{rec.get('study')}] config {str(rec.get('config_hash'))[:16]}  code {rec.get('code_version')}")
    _check_record(a, depth + 1, stem_rel, rec)
    if expect_record is not None and rec.get("record_hash") != expect_record:
        a.fail(depth + 1, f"{stem_rel}: the claims report recorded another provenance for this figure (record hash "
                          f"{expect_record[:16]}, now {str(rec.get('record_hash'))[:16]})")
    _same_file(a, depth + 1, stem.with_suffix(".csv"), rec.get("csv_sha256"), "the table")
    _same_file(a, depth + 1, stem.with_suffix(".pdf"), rec.get("pdf_sha256"), "the PDF")
    png = stem.with_suffix(".png")
    if not png.exists():
        a.fail(depth + 1, f"{stem_rel}.png: missing")
    else:
        try:
            pixels, text = storage.png_pixels_hash(png), storage.png_text(png, "depthlab-provenance")
        except Exception as e:
            a.fail(depth + 1, f"{stem_rel}.png: unreadable ({e})")
        else:
            if pixels != rec.get("png_pixels_sha256"):
                a.fail(depth + 1, f"{stem_rel}.png: its pixels differ from the image that was made")
            if text != prov.canonical_json(prov.embedded(rec)):
                a.fail(depth + 1, f"{stem_rel}.png: its embedded provenance does not match {stem.name}.provenance.json")
    _check_code(a, depth + 1, stem_rel, rec)
    _check_config(a, depth + 1, stem_rel, rec)
    for name, inp in sorted(rec.get("inputs", {}).items()):
        audit_store(a, inp["path"], depth + 1, inp)


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
    if rec.get("study") != "*":
        _check_code(a, depth + 1, rel, rec)
        _check_config(a, depth + 1, rel, rec)
    for name, inp in sorted(rec.get("inputs", {}).items()):
        _same_file(a, depth + 1, a.root / inp["path"], inp.get("sha256"), "the input file")
        if rec.get("study") == "*":
            audit_claims(a, inp["path"].removesuffix(".json") + ".md", depth + 1, inp.get("record_hash"))
        else:
            audit_figure(a, inp["path"].removesuffix(".csv"), depth + 1, inp.get("record_hash"))


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
        rec = json.loads(rec_path.read_text())
        rel = rec.get("path", "")
        kind = "figure" if rec.get("stage") == "figure" else "claims"
        p = p.with_suffix(".md") if kind == "claims" else p
    root = _root_of(p, rel)
    if root is None:
        a.fail(0, f"{p}: its record says it lives at <results>/{rel}, which does not match where it is")
        return a
    a.root = root
    a.say(0, f"results folder {root}")
    {"store": lambda: audit_store(a, rel, 0, None), "figure": lambda: audit_figure(a, rel, 0),
     "claims": lambda: audit_claims(a, rel, 0)}[kind]()
    return a
