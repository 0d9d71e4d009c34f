"""Hostile configs and tampered results: no shell injection, every bad value stopped before any job, and an audit
that catches every edit a reader would be misled by (on a copy of the smoke run)."""

from __future__ import annotations

import copy
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
import zarr
from helpers import ROOT, smk
from test_config import CASES

import depthlab.storage as st
from depthlab.provenance import canonical_json, record_hash


@pytest.mark.parametrize("what,fn,pattern", CASES, ids=[c[0] for c in CASES])
def test_every_bad_value_stops_snakemake_before_any_job(tmp_path, what, fn, pattern):
    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    cfg = copy.deepcopy(cfg)
    fn(cfg)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    p = smk(tmp_path, "--configfile", str(path), check=False)
    out = p.stdout + p.stderr
    assert p.returncode != 0
    assert "config error" in out and "Traceback" not in out, out[-2000:]
    key = pattern.split(":")[0].removeprefix("config error at ").removeprefix("r").strip("'")
    assert key.replace("\\", "")[:20] in out.replace("'", "") or "config error at" in out
    assert not list(tmp_path.glob("**/*.zarr")) and not (tmp_path / "results").exists(), "no job may run on a bad config"


def test_duplicate_keys_stop_snakemake(tmp_path):
    text = (ROOT / "config" / "smoke.yaml").read_text().replace("seed: 0 ", "seed: 0\nseed: 1 ", 1)
    path = tmp_path / "dup.yaml"
    path.write_text(text)
    p = smk(tmp_path, "--configfile", str(path), check=False)
    assert p.returncode != 0 and "duplicate key 'seed'" in p.stdout + p.stderr
    assert not (tmp_path / "results").exists()


def test_validate_names_a_missing_or_broken_file_in_one_line(tmp_path):
    for arg, needle in ((tmp_path / "nope.yaml", "does not exist"), (ROOT / "Makefile", "is not valid YAML")):
        p = subprocess.run([str(Path(sys.executable).parent / "depthlab"), "validate", str(arg)], capture_output=True, text=True)
        assert p.returncode == 2 and needle in p.stderr and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1


def test_shell_metacharacters_in_results_are_inert(tmp_path):
    """results: 'r $(touch PWNED) s' (a space and a command substitution) builds a figure in exactly that folder."""
    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    cfg["studies"] = {"mori_ueda": cfg["studies"]["mori_ueda"]}
    pwned = tmp_path / "PWNED"
    cfg["results"] = f"r $(touch {pwned}) `touch {pwned}` s"
    path = tmp_path / "inj.yaml"
    path.write_text(yaml.safe_dump(cfg))
    smk(tmp_path, "--configfile", str(path), "--", "mori_ueda_fig1", f"{cfg['results']}/config.used.yaml")
    assert not pwned.exists(), "a config value reached a shell unquoted"
    fig = tmp_path / cfg["results"] / "mori_ueda" / "figures" / "fig1.png"
    assert fig.stat().st_size > 0
    p = subprocess.run([str(Path(sys.executable).parent / "depthlab"), "audit", str(fig)], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert not pwned.exists()


# ---- the tamper suite ----------------------------------------------------------------------------


def audit(target: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "depthlab"), "audit", str(target)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


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


def test_a_clean_copy_audits_ok_from_another_directory(copy_run, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for target in ("mori_ueda/figures/fig2.png", "claims.md", "mori_ueda/fig2/train/2-local/L1.zarr"):
        p = audit(copy_run / target, elsewhere)
        assert p.returncode == 0, (target, p.stdout[-2000:], p.stderr)
        assert f"results folder {copy_run.resolve()}" in p.stdout


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
def test_the_audit_catches_the_tampering_and_names_the_culprit(copy_run, tmp_path, tamper):
    target, culprit = tamper(copy_run)
    p = audit(target, tmp_path)
    assert p.returncode == 1, p.stdout[-3000:]
    assert culprit in p.stderr, p.stderr[-3000:]
