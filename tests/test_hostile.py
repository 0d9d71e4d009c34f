"""Hostile configs and tampered results: no shell injection, every bad value stopped before any job, and an audit
that catches every edit a reader would be misled by (on a copy of the smoke run)."""

from __future__ import annotations

import copy
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
import zarr
from helpers import ROOT, smk
from test_config import CASES

import depthlab.audit as au
import depthlab.storage as st
from depthlab.provenance import canonical_json, record_hash


def test_a_bad_value_and_a_duplicate_key_stop_snakemake_before_any_job(tmp_path):
    """The validator is wired into the workflow: one launch with a bad value, one with a duplicate key (Snakemake keeps the
    last of two keys silently; the workflow re-reads its config files strictly).  Every other bad value of the table is
    refused by the same validator in-process (tests/test_config.py::test_bad_config_is_rejected_naming_the_key)."""
    what, fn, pattern = next(c for c in CASES if c[0] == "k > d")
    cfg = copy.deepcopy(yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text()))
    fn(cfg)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    dup = tmp_path / "dup.yaml"
    dup.write_text((ROOT / "config" / "smoke.yaml").read_text().replace("seed: 0 ", "seed: 0\nseed: 1 ", 1))
    for path, needle in ((bad, r"config error at studies\.mori_ueda\.figures\.fig2\.targets\.2-local\.k: k = 9 exceeds"),
                         (dup, r"duplicate key 'seed' \(line \d+; first at line \d+\)")):
        p = smk(tmp_path, "--configfile", str(path), check=False)
        out = p.stdout + p.stderr
        assert p.returncode != 0 and re.search(needle, out) and "Traceback" not in out, out[-2000:]
        assert not (tmp_path / "results").exists(), "no job may run on a bad config"


def test_validate_names_a_missing_or_broken_file_in_one_line(tmp_path):
    for arg, needle in ((tmp_path / "nope.yaml", "does not exist"), (ROOT / "Makefile", "is not valid YAML")):
        p = subprocess.run([str(Path(sys.executable).parent / "depthlab"), "validate", str(arg)], capture_output=True, text=True)
        assert p.returncode == 2 and needle in p.stderr and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1


def test_shell_metacharacters_in_results_are_inert(tmp_path):
    """results: 'r $(touch PWNED) s' (a space and command substitutions) builds every kind of job (a store, a figure,
    the claims, the claims index, the config snapshot) in exactly that folder, and the audit traces it."""
    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    pwned = tmp_path / "PWNED"
    cfg["results"] = f"r $(touch {pwned}) `touch {pwned}` s"
    cfg["studies"] = {"tiny": {"sizes": [5]}}  # the example study: one job of each kind, in seconds
    path = tmp_path / "inj.yaml"
    path.write_text(yaml.safe_dump(cfg))
    smk(tmp_path, "--configfile", str(path), env={"DEPTHLAB_STUDY_PATH": str(ROOT / "docs" / "example_study")})
    assert not pwned.exists(), "a config value reached a shell unquoted"
    index = tmp_path / cfg["results"] / "claims.md"
    assert (tmp_path / cfg["results"] / "tiny" / "figures" / "means.png").stat().st_size > 0 and index.exists()
    assert (tmp_path / cfg["results"] / "config.used.yaml").exists()
    p = subprocess.run([str(Path(sys.executable).parent / "depthlab"), "audit", str(index)], cwd=ROOT, capture_output=True,
                       text=True, env={**os.environ, "DEPTHLAB_STUDY_PATH": str(ROOT / "docs" / "example_study")})
    assert p.returncode == 0 and "tiny/draws/n5.zarr" in p.stdout, p.stderr
    assert not pwned.exists()


# ---- the tamper suite ----------------------------------------------------------------------------


def audit(target: Path) -> "au.Audit":
    """The audit in-process (the CLI around it is run by tests/test_workflow.py)."""
    return au.run(str(target), None)


@pytest.fixture
def copy_run(smoke_run, tmp_path):
    """A copy of the finished smoke run's results (the original stays untouched for the other tests)."""
    dst = tmp_path / "archive" / "results"
    shutil.copytree(smoke_run.results, dst)
    return dst


def _set_record(store: Path, rec: dict) -> None:
    zarr.open_group(str(store), mode="r+").attrs[st.RECORD_ATTR] = canonical_json(rec)


def _rehash(rec: dict) -> dict:
    return {**rec, "record_hash": record_hash(rec)}


def test_a_clean_copy_audits_ok_from_another_directory(copy_run, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for target in ("mori_ueda/figures/fig2.png", "claims.md", "mori_ueda/fig2/train/2-local/L1.zarr"):
        a = audit(copy_run / target)
        assert not a.problems, (target, a.problems)
        assert f"results folder {copy_run.resolve()}" in a.lines[0]


def _tamper_csv(r: Path) -> tuple[Path, str]:
    csv = r / "mori_ueda/figures/fig2.csv"
    csv.write_text(csv.read_text().replace("0.", "0.9", 1))
    return r / "mori_ueda/figures/fig2.png", "mori_ueda/figures/fig2.csv: the table differs"


def _tamper_png_pixels(r: Path) -> tuple[Path, str]:
    from PIL import Image, ImageDraw, PngImagePlugin

    png = r / "mori_ueda/figures/fig2.png"
    with Image.open(png) as im:
        text = dict(im.text)
        im = im.convert("RGBA")
    ImageDraw.Draw(im).rectangle([10, 10, 60, 60], fill=(255, 0, 0, 255))
    info = PngImagePlugin.PngInfo()
    for k, v in text.items():
        info.add_text(k, v)
    buf = io.BytesIO()
    im.save(buf, format="PNG", pnginfo=info)
    png.write_bytes(buf.getvalue())
    return png, "fig2.png: its pixels differ"


def _tamper_pdf(r: Path) -> tuple[Path, str]:
    pdf = r / "mori_ueda/figures/fig2.pdf"
    prov = json.loads((r / "mori_ueda/figures/fig2.provenance.json").read_text())
    pdf.write_bytes(b"%PDF-1.4\n% forged " + prov["config_hash"].encode() + b"\n%%EOF\n")
    return pdf, "mori_ueda/figures/fig2.pdf: the PDF differs"


def _tamper_claims(r: Path) -> tuple[Path, str]:
    md = r / "mori_ueda/claims.md"
    md.write_text(md.read_text().replace("**NO**", "yes"))
    return r / "claims.md", "mori_ueda/claims.md: the report differs"


def _tamper_store_attr(r: Path) -> tuple[Path, str]:
    z = zarr.open_group(str(r / "mori_ueda/fig2/train/2-local/L1.zarr"), mode="r+")
    z.attrs["n_params"] = 1
    return r / "mori_ueda/figures/fig2.png", "mori_ueda/fig2/train/2-local/L1.zarr: its attributes differ"


def _tamper_record_inputs(r: Path) -> tuple[Path, str]:
    store = r / "mori_ueda/fig2/train/2-local/L1.zarr"
    rec = st.read_record(store)
    rec["inputs"]["data"]["path"] = "mori_ueda/fig2/data/2-global.zarr"
    _set_record(store, rec)
    return r / "mori_ueda/figures/fig2.png", "mori_ueda/fig2/train/2-local/L1.zarr: its provenance record was edited"


def _tamper_record_spec(r: Path) -> tuple[Path, str]:
    store = r / "mori_ueda/fig2/train/2-local/L1.zarr"
    rec = st.read_record(store)
    rec["spec"]["seeds"] = [7]
    _set_record(store, rec)
    return store, "mori_ueda/fig2/train/2-local/L1.zarr: recorded spec does not match its recorded config hash"


def _tamper_data_chain(r: Path) -> tuple[Path, str]:
    """Change a data store's arrays, rewrite its hashes, and rewrite its consumers' input records and record hashes."""
    data = r / "mori_ueda/fig2/data/2-local.zarr"
    y = zarr.open_array(str(data / "y_test"), mode="r+")
    y[0] = y[0] + 1.0
    rec = st.read_record(data)
    rec = _rehash({**rec, "content_hash": st.content_hash(st.read_store(data))})
    _set_record(data, rec)
    for kind in ("lrsearch", "train", "ntk"):
        for consumer in (r / f"mori_ueda/fig2/{kind}/2-local").glob("*.zarr"):
            c = st.read_record(consumer)
            c["inputs"]["data"].update(content_hash=rec["content_hash"], record_hash=rec["record_hash"])
            _set_record(consumer, _rehash(c))
    return r / "mori_ueda/figures/fig2.png", "mori_ueda/fig2/train/2-local/L1.zarr: its consumer recorded record_hash"


TAMPERS = [_tamper_csv, _tamper_png_pixels, _tamper_pdf, _tamper_claims, _tamper_store_attr, _tamper_record_inputs,
           _tamper_record_spec, _tamper_data_chain]


@pytest.mark.parametrize("tamper", TAMPERS, ids=[t.__name__.removeprefix("_tamper_") for t in TAMPERS])
def test_the_audit_catches_the_tampering_and_names_the_culprit(copy_run, tamper):
    target, culprit = tamper(copy_run)
    problems = audit(target).problems
    assert any(culprit in p for p in problems), problems
