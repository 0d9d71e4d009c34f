"""Provenance audit: ``depthlab audit <figure-or-store> [--configfile CONFIG]``.

Walks a figure's (or a store's) lineage back to the data sets and checks, for
every store, that

* it exists and the hash of the arrays on disk equals the hash recorded when it
  was written *and* the hash its consumer recorded when it read it;
* it was made by the current code version (git commit; '+dirty' is flagged);
* with ``--configfile``: it was made from exactly the config values the given
  config produces for it now (its spec hash).

Figures are checked too: the PNG's ``depthlab-provenance`` text chunk and the
PDF's Subject must carry the same provenance as ``<figure>.provenance.json``.
Prints the lineage; returns a list of problems (empty = clean).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import config as cfg
from . import storage

STORE_RE = re.compile(r"(?P<figure>fig[0-9]+)/(?P<stage>lrsearch|train|sweep|ntk)/(?P<target>[^/]+)/L(?P<depth>[0-9]+)\.zarr$")
DATA_RE = re.compile(r"(?P<figure>fig[0-9]+)/data/(?P<target>[^/]+)\.zarr$")


@dataclass
class Audit:
    config: dict | None
    current_code: str
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def say(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def fail(self, depth: int, text: str) -> None:
        self.problems.append(text)
        self.say(depth, f"FAIL {text}")


def expected_spec(config: dict, path: str) -> dict | None:
    """The spec the given config produces for the store at ``path`` (None if it is not in the config)."""
    m = STORE_RE.search(path)
    try:
        if m:
            fn = {"lrsearch": cfg.lrsearch_spec, "train": cfg.train_spec, "sweep": cfg.sweep_spec, "ntk": cfg.ntk_spec}[m["stage"]]
            return fn(config, m["figure"], m["target"], int(m["depth"]))
        m = DATA_RE.search(path)
        if m:
            return cfg.data_spec(config, m["figure"], m["target"])
    except KeyError:
        return None
    return None


def _check_code(a: Audit, depth: int, what: str, version: str) -> None:
    base = version.removesuffix("+dirty")
    cur = a.current_code.removesuffix("+dirty")
    if base != cur:
        a.fail(depth, f"{what}: made by code {version}, the checkout is {a.current_code}")
    elif version.endswith("+dirty"):
        a.say(depth, f"warning: {what} was made from a checkout with uncommitted changes ({version})")


def audit_store(a: Audit, path: str, depth: int, recorded_hash: str | None) -> None:
    p = Path(path)
    if path in a.seen:  # shared input (a data set feeds many jobs): check the hash its consumer saw, once more
        if recorded_hash is not None and p.exists() and storage.content_hash(storage.read_store(p)) != recorded_hash:
            a.fail(depth, f"{path}: a consumer read arrays with hash {recorded_hash[:16]}, the store now holds others")
        else:
            a.say(depth, f"{path}  (audited above)")
        return
    a.seen.add(path)
    if not p.exists():
        a.fail(depth, f"{path}: missing")
        return
    try:
        ds = storage.read_store(p)
        attrs = storage.read_attrs(p)
    except Exception as e:  # unreadable store: report, never crash the audit
        a.fail(depth, f"{path}: unreadable ({type(e).__name__}: {e})")
        return
    on_disk = storage.content_hash(ds)
    spec = attrs.get("depthlab_spec", {})
    a.say(depth, f"{path}  [{spec.get('stage', '?')}]")
    a.say(depth + 1, f"content {on_disk[:16]}  config {attrs.get('config_hash', '?')[:16]}  code {attrs.get('code_version')}  "
                     f"device {attrs.get('device')}  created {attrs.get('created')}")
    seeds = {k: spec[k] for k in ("seeds",) if k in spec}
    if "data" in spec:
        seeds["data seed"] = spec["data"].get("seed")
    elif "seed" in spec:
        seeds["seed"] = spec["seed"]
    a.say(depth + 1, f"config values {cfg.canonical_json({k: v for k, v in spec.items() if k != 'data'})}")
    if seeds:
        a.say(depth + 1, f"seeds {seeds}; packages {attrs.get('packages')}")
    if on_disk != attrs.get("content_hash"):
        a.fail(depth + 1, f"{path}: arrays on disk (hash {on_disk[:16]}) differ from those written (hash {attrs.get('content_hash', '?')[:16]}): modified after it was made")
    if recorded_hash is not None and on_disk != recorded_hash:
        a.fail(depth + 1, f"{path}: its consumer read arrays with hash {recorded_hash[:16]}, the store now holds {on_disk[:16]}: it was replaced or modified")
    if cfg.spec_hash(spec) != attrs.get("config_hash"):
        a.fail(depth + 1, f"{path}: recorded spec does not match its recorded config hash")
    _check_code(a, depth + 1, path, str(attrs.get("code_version")))
    if a.config is not None:
        want = expected_spec(a.config, path)
        if want is None:
            a.fail(depth + 1, f"{path}: not part of the given config")
        elif cfg.spec_hash(want) != attrs.get("config_hash"):
            diff = sorted(k for k in set(want) | set(spec) if want.get(k) != spec.get(k))
            a.fail(depth + 1, f"{path}: made by a different config (differs in: {', '.join(diff)})")
    for name, rec in sorted(attrs.get("inputs", {}).items()):
        audit_store(a, rec["path"], depth + 1, rec["content_hash"])


def _figure_stem(target: Path) -> Path | None:
    name = target.name
    for suffix in (".provenance.json", ".png", ".pdf", ".csv"):
        if name.endswith(suffix):
            return target.with_name(name[: -len(suffix)])
    cand = target.with_name(name + ".provenance.json")
    return target if cand.exists() else None


def audit_figure(a: Audit, stem: Path) -> None:
    prov_path = stem.with_name(stem.name + ".provenance.json")
    if not prov_path.exists():
        a.fail(0, f"{prov_path}: missing")
        return
    prov = json.loads(prov_path.read_text())
    a.say(0, f"figure {stem}  config {prov['config_hash'][:16]}  code {prov['code_version']}")
    embedded = {k: prov[k] for k in ("figure", "config_hash", "code_version", "inputs")}
    blob = cfg.canonical_json(embedded)
    png = stem.with_name(stem.name + ".png")
    if png.exists():
        from PIL import Image

        with Image.open(png) as im:
            text = im.text.get("depthlab-provenance")
        if text != blob:
            a.fail(1, f"{png}: embedded provenance does not match {prov_path.name}")
    else:
        a.fail(1, f"{png}: missing")
    pdf = stem.with_name(stem.name + ".pdf")
    if not pdf.exists() or prov["config_hash"].encode() not in pdf.read_bytes():
        a.fail(1, f"{pdf}: missing, or its info dict does not carry config hash {prov['config_hash'][:16]}")
    if cfg.spec_hash(prov["depthlab_spec"]) != prov["config_hash"]:
        a.fail(1, f"{prov_path}: spec does not match its config hash")
    _check_code(a, 1, str(stem), prov["code_version"])
    if a.config is not None:
        try:
            want = cfg.figure_spec(a.config, prov["figure"])
        except KeyError:
            want = None
        if want is None or cfg.spec_hash(want) != prov["config_hash"]:
            a.fail(1, f"{stem}: made by a different config than the one given")
    for key, rec in sorted(prov["inputs"].items()):
        audit_store(a, rec["path"], 1, rec["content_hash"])


def run(target: str, config: dict | None) -> Audit:
    a = Audit(config=config, current_code=storage.code_version())
    p = Path(target.rstrip("/"))
    stem = _figure_stem(p) if not p.name.endswith(".zarr") else None
    if stem is not None:
        audit_figure(a, stem)
    else:
        audit_store(a, str(p), 0, None)
    return a
