"""Hostile configs and tampered results: no shell injection, every bad value stopped before any job, and an audit
that catches every edit a reader would be misled by (on a copy of the smoke run)."""

from __future__ import annotations

import copy
import io
import json
import os
import time
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
    for path, needle in (
        (bad, r"config error at studies\.mori_ueda\.figures\.fig2\.targets\.2-local\.k: k = 9 exceeds"),
        (dup, r"duplicate key 'seed' \(line \d+; first at line \d+\)"),
    ):
        p = smk(tmp_path, "--configfile", str(path), check=False)
        out = p.stdout + p.stderr
        assert p.returncode != 0 and re.search(needle, out) and "Traceback" not in out, out[-2000:]
        assert not (tmp_path / "results").exists(), "no job may run on a bad config"


def test_validate_names_a_missing_or_broken_file_in_one_line(tmp_path):
    for arg, needle in ((tmp_path / "nope.yaml", "does not exist"), (ROOT / "Makefile", "is not valid YAML")):
        p = subprocess.run(
            [str(Path(sys.executable).parent / "depthlab"), "validate", str(arg)], capture_output=True, text=True
        )
        assert p.returncode == 2 and needle in p.stderr and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1


def test_shell_metacharacters_in_results_are_inert(tmp_path):
    """results: 'r; touch PWNED & (touch PWNED) | s' (spaces, separators, a subshell, a pipe) builds every kind of job (a
    store, a figure, the claims, the claims index, the config snapshot) in exactly that folder, and the audit traces it.
    (Quotes, $ and backticks are refused outright: tests/test_config.py, tests/test_slurm_submit.py.)"""
    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    pwned = tmp_path / "PWNED"
    cfg["results"] = f"r; touch {pwned} & (touch {pwned}) | s"
    cfg["studies"] = {"tiny": {"sizes": [5]}}  # the example study: one job of each kind, in seconds
    path = tmp_path / "inj.yaml"
    path.write_text(yaml.safe_dump(cfg))
    smk(tmp_path, "--configfile", str(path), env={"DEPTHLAB_STUDY_PATH": str(ROOT / "docs" / "example_study")})
    assert not pwned.exists(), "a config value reached a shell unquoted"
    index = tmp_path / cfg["results"] / "claims.md"
    assert (tmp_path / cfg["results"] / "tiny" / "figures" / "means.png").stat().st_size > 0 and index.exists()
    assert (tmp_path / cfg["results"] / "config.used.yaml").exists()
    p = subprocess.run(
        [str(Path(sys.executable).parent / "depthlab"), "audit", str(index)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "DEPTHLAB_STUDY_PATH": str(ROOT / "docs" / "example_study")},
    )
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


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
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
    text = md.read_text()
    flipped = re.sub(r"\| (inconclusive|\*\*does not hold\*\*) \|", "| holds |", text, count=1)
    assert flipped != text, "a verdict to flip"
    md.write_text(flipped)
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


TAMPERS = [
    _tamper_csv,
    _tamper_png_pixels,
    _tamper_pdf,
    _tamper_claims,
    _tamper_store_attr,
    _tamper_record_inputs,
    _tamper_record_spec,
    _tamper_data_chain,
]


@pytest.mark.parametrize("tamper", TAMPERS, ids=[t.__name__.removeprefix("_tamper_") for t in TAMPERS])
def test_the_audit_catches_the_tampering_and_names_the_culprit(copy_run, tamper):
    target, culprit = tamper(copy_run)
    problems = audit(target).problems
    assert any(culprit in p for p in problems), problems


# ---- an audit that checks meaning, and survives hostile folders ----------------------------

FIG = "mori_ueda/figures/fig2"
STORE = "mori_ueda/fig2/train/2-local/L1.zarr"


def _png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    out, i = [], 8
    while i < len(data):
        n = int.from_bytes(data[i : i + 4], "big")
        out.append((data[i + 4 : i + 8], data[i : i + 12 + n]))
        i += 12 + n
    return out


def _pdf_escape(text: str) -> bytes:
    return re.sub(rb"([\\()])", rb"\\\1", text.encode("latin-1"))


def _reembed(r: Path, rec: dict) -> dict:
    """Rewrite a figure's PNG text and PDF Subject to carry ``rec`` and its provenance file to match: a careful forger."""
    from depthlab import render
    from depthlab.provenance import embedded

    stem = r / FIG
    old = json.loads(stem.with_suffix(".provenance.json").read_text())
    png = stem.with_suffix(".png").read_bytes()
    bare = png[:8] + b"".join(raw for kind, raw in _png_chunks(png) if kind != b"iTXt")
    blob = canonical_json(embedded(rec))
    stem.with_suffix(".png").write_bytes(render.png_with_text(bare, {render.PROVENANCE_KEY: blob}))
    pdf = stem.with_suffix(".pdf").read_bytes()
    was = _pdf_escape(canonical_json(embedded(old)))
    assert was in pdf, "the PDF's Subject is written as assumed"
    stem.with_suffix(".pdf").write_bytes(pdf.replace(was, _pdf_escape(blob)))
    rec = _rehash({**rec, "pdf_sha256": st.file_hash(stem.with_suffix(".pdf"))})
    stem.with_suffix(".provenance.json").write_text(json.dumps(rec))
    return rec


def test_a_forged_chain_fails_naming_the_figure_whose_table_no_longer_follows(copy_run):
    """A store value changed and every hash above it rewritten consistently (store, figure record, PNG, PDF): only the
    re-derivation of the table from the stores can tell, and it does."""
    assert not audit(copy_run / f"{FIG}.png").problems
    store = copy_run / STORE
    err = zarr.open_array(str(store / "test_error"), mode="r+")
    err[...] = err[...] * 0.5  # the net looks twice as good
    rec = _rehash({**st.read_record(store), "content_hash": st.content_hash(st.read_store(store))})
    _set_record(store, rec)
    fig = json.loads((copy_run / f"{FIG}.provenance.json").read_text())
    name = next(k for k, v in fig["inputs"].items() if v["path"] == STORE)
    fig["inputs"][name].update(content_hash=rec["content_hash"], record_hash=rec["record_hash"])
    _reembed(copy_run, fig)
    problems = audit(copy_run / f"{FIG}.png").problems
    assert len(problems) == 1 and f"{FIG}: its table no longer follows from its stores" in problems[0], problems


def test_the_pdf_record_and_every_png_frame_are_checked(copy_run):
    from PIL import Image

    rec = json.loads((copy_run / f"{FIG}.provenance.json").read_text())
    forged = json.loads(json.dumps(rec))
    forged["device"] = "forged"
    pdf = (copy_run / f"{FIG}.pdf").read_bytes()
    (copy_run / f"{FIG}.pdf").write_bytes(
        pdf.replace(
            _pdf_escape(
                canonical_json({k: v for k, v in rec.items() if k not in ("pdf_sha256", "record_hash", "created")})
            ),
            _pdf_escape(
                canonical_json(
                    {
                        **{k: v for k, v in rec.items() if k not in ("pdf_sha256", "record_hash", "created")},
                        "device": "forged",
                    }
                )
            ),
        )
    )
    (copy_run / f"{FIG}.provenance.json").write_text(
        json.dumps(_rehash({**rec, "pdf_sha256": st.file_hash(copy_run / f"{FIG}.pdf")}))
    )
    problems = audit(copy_run / f"{FIG}.png").problems
    assert any("fig2.pdf: its embedded provenance (the PDF's Subject) does not match" in p for p in problems), problems
    shutil.copy(copy_run / f"{FIG}.pdf", copy_run / "x.pdf")
    # a second frame appended to the PNG (an APNG): first-frame pixels and text unchanged
    png = copy_run / f"{FIG}.png"
    with Image.open(png) as im:
        text, first = dict(im.text), im.convert("RGBA")
    second = first.copy()
    second.paste((255, 0, 0, 255), (0, 0, 50, 50))
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    for k, v in text.items():
        info.add_itxt(k, v)
    first.save(png, format="PNG", save_all=True, append_images=[second], pnginfo=info, default_image=False)
    problems = audit(png).problems
    assert any("fig2.png: an animated PNG with 2 frames" in p for p in problems), problems


def _nested(r: Path) -> tuple[Path, str]:
    (r / f"{FIG}.provenance.json").write_text("[" * 200_000 + "]" * 200_000)
    return r / f"{FIG}.png", "fig2.provenance.json: unreadable"


def _a_list(r: Path) -> tuple[Path, str]:
    (r / f"{FIG}.provenance.json").write_text("[1, 2]")
    return r / f"{FIG}.png", "fig2.provenance.json: not a provenance record (a JSON list)"


def _empty(r: Path) -> tuple[Path, str]:
    (r / f"{FIG}.provenance.json").write_text("{}")
    return r / f"{FIG}.png", "fig2.provenance.json: not a provenance record (a JSON dict, empty)"


def _corrupt_zarr_json(r: Path) -> tuple[Path, str]:
    (r / STORE / "zarr.json").write_text('{"zarr_format": 3, "node_type": "gro')
    return r / f"{FIG}.png", f"{STORE}: unreadable (StoreError: "


def _fifo_csv(r: Path) -> tuple[Path, str]:
    (r / f"{FIG}.csv").unlink()
    os.mkfifo(r / f"{FIG}.csv")
    return r / f"{FIG}.png", f"{FIG}.csv: not a regular file"


def _fifo_chunk(r: Path) -> tuple[Path, str]:
    chunk = next(p for p in (r / STORE / "test_error").rglob("*") if p.is_file() and p.name != "zarr.json")
    chunk.unlink()
    os.mkfifo(chunk)
    return r / f"{FIG}.png", "a FIFO, socket or device file, not data"


def _pickle_codec(r: Path) -> tuple[Path, str]:
    meta_path = r / STORE / "test_error" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["codecs"] = [{"name": "numcodecs.pickle", "configuration": {"protocol": 5}}] + meta["codecs"]
    meta_path.write_text(json.dumps(meta))
    return r / f"{FIG}.png", "numcodecs.pickle, which unpickles data; depthlab never unpickles"


def _bad_used_config(r: Path) -> tuple[Path, str]:
    used = r / "config.used.yaml"
    used.write_text(used.read_text().replace("results: ", "resuls: ", 1))
    return r / f"{FIG}.png", "config.used.yaml: not a valid config (config error at <top level>: Additional properties"


HOSTILE = [_nested, _a_list, _empty, _corrupt_zarr_json, _fifo_csv, _fifo_chunk, _pickle_codec, _bad_used_config]


@pytest.mark.parametrize("make", HOSTILE, ids=[f.__name__.strip("_") for f in HOSTILE])
def test_the_audit_names_a_hostile_file_and_never_hangs_or_crashes(copy_run, make, tmp_path):
    """Each case through the CLI, under a time limit: exit 1, the file named, no traceback."""
    target, needle = make(copy_run)
    p = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    assert needle in p.stderr, p.stderr[-3000:]
    assert "Traceback" not in p.stderr + p.stdout


def test_a_store_linked_from_outside_the_results_folder_is_reported_and_fails_strict(copy_run, tmp_path):
    outside = tmp_path / "elsewhere" / "L1.zarr"
    outside.parent.mkdir()
    shutil.move(copy_run / STORE, outside)
    (copy_run / STORE).symlink_to(outside, target_is_directory=True)
    a = audit(copy_run / f"{FIG}.png")
    assert not a.problems and any(f"{STORE}: a symlink leading outside the results folder" in n for n in a.notes), (
        a.notes
    )
    a = au.run(str(copy_run / f"{FIG}.png"), None, strict=True)
    assert any(f"{STORE}: a symlink leading outside the results folder" in p for p in a.problems), a.problems


def test_a_file_made_from_another_config_than_config_used_is_a_note(copy_run):
    used = copy_run / "config.used.yaml"
    cfg = yaml.safe_load(used.read_text())
    cfg["seed"] = cfg["seed"] + 1
    used.write_text(yaml.safe_dump(cfg))
    a = audit(copy_run / f"{FIG}.png")
    assert not a.problems and any(
        "made by a different config (differs in: data" in n and "config.used.yaml" in n for n in a.notes
    )
    assert au.run(str(copy_run / f"{FIG}.png"), None, strict=True).problems


# ---- one run per results folder; stale temporaries only of dead writers --------------------------


def test_a_second_run_on_the_same_results_folder_from_another_directory_fails_naming_the_holder(tmp_path):
    """A run holds <results>/.depthlab.lock whatever its working directory; a second run (another working directory,
    so Snakemake's own lock does not see it) stops before any job, naming the holder; once it is gone, a run goes."""
    import depthlab.lock as lock

    results = tmp_path / "shared_results"
    cfg = {"results": str(results), "device": "cpu", "seed": 0, "studies": {"tiny": {"sizes": [5]}}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    env = {"DEPTHLAB_STUDY_PATH": str(ROOT / "docs" / "example_study")}
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sys, time; sys.path.insert(0, {str(ROOT / 'workflow')!r}); "
            f"import depthlab.lock as l; l.acquire({str(results)!r}); print('held', flush=True); "
            "time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        (tmp_path / "b").mkdir()
        p = smk(tmp_path / "b", "--configfile", str(path), env=env, check=False)
        out = p.stdout + p.stderr
        assert p.returncode != 0 and "is in use by another run" in out and f"pid {holder.pid} " in out, out[-3000:]
        assert not (results / "tiny").exists(), "no job may run while another run holds the folder"
    finally:
        holder.kill()
        holder.wait()
    assert "pid" in lock.holder_of(results / lock.LOCK_NAME)
    smk(tmp_path / "b", "--configfile", str(path), env=env)  # the lock died with its process: no clean-up needed
    assert (results / "tiny" / "figures" / "means.png").exists()


def test_stale_temporaries_are_removed_only_for_dead_writers_and_by_exact_name(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        out = tmp_path / "x.zarr"
        stale = tmp_path / f"x.zarr.tmp-{dead.pid}"
        running = tmp_path / f"x.zarr.tmp-{live.pid}"
        sibling = tmp_path / f"x.zarr.tmp-{dead.pid}.zarr"  # a finished store that happens to share the prefix
        other = tmp_path / "x.zarr.tmp-notapid"
        for d in (stale, running, sibling, other):
            d.mkdir()
            (d / "zarr.json").write_text("{}")
        assert st.remove_stale(out) == [stale]
        assert not stale.exists() and running.exists() and sibling.exists() and other.exists()
    finally:
        live.kill()
        live.wait()
    assert st.remove_stale(out) == [running]  # its writer is gone now


def test_the_clean_up_of_a_failed_write_outlasts_writer_threads_that_recreate_the_folder(tmp_path):
    """After a full disk, zarr's writer threads go on writing chunks for a moment and re-create the temporary folder
    (CI saw ``IsADirectoryError`` from the old clean-up, which checked for a folder, then unlinked a file).  Here a
    thread re-creates the folder every 5 ms for 0.3 s: the clean-up neither raises nor leaves the folder behind."""
    import threading
    import time

    out = tmp_path / "x.zarr"
    tmp = st.own(tmp_path / "x.zarr")
    stop = time.monotonic() + 0.3
    recreated = []

    def writer():
        while time.monotonic() < stop:
            try:
                (tmp / "a" / "c").mkdir(parents=True, exist_ok=True)
                (tmp / "a" / "c" / "0").write_bytes(b"x" * 100)
                recreated.append(1)
            except OSError:
                pass
            time.sleep(0.005)

    t = threading.Thread(target=writer)
    t.start()
    try:
        time.sleep(0.02)
        assert tmp.exists()
        assert st.discard_own_tmp(out, settle=0.2)
    finally:
        t.join()
    assert not tmp.exists() and len(recreated) > 10
    tmp.write_bytes(b"a file this time")
    assert st.discard_own_tmp(out) and not tmp.exists()
    assert st.discard_own_tmp(out)  # nothing there: fine


# ---- a full disk ----------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MiB tmpfs (root only: mount); skipped where mounting is not allowed."""
    where = tmp_path / "small"
    where.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(where)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({p.stderr.strip()[:100]}); needs root")
    yield where
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_a_job_that_runs_out_of_space_says_so_in_its_log_and_in_snakemakes_output(tmp_path, small_disk):
    results = small_disk / "results"
    cfg = {"results": str(results), "device": "cpu", "seed": 0, "studies": {"tiny": {"sizes": [5, 1_000_000]}}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    # One job at a time and --keep-going: the small store is written whether its job runs before or after the one that
    # fills the disk.  Without them the outcome hung on the order (CI once found no small store: after the first failure
    # Snakemake schedules nothing new, and two jobs side by side can both meet the full disk).
    p = smk(
        tmp_path,
        "--configfile",
        str(path),
        "--cores",
        "1",
        "--keep-going",
        env={"DEPTHLAB_STUDY_PATH": str(ROOT / "docs" / "example_study")},
        check=False,
    )
    out = p.stdout + p.stderr
    assert p.returncode != 0
    log = results / "logs" / "tiny" / "draws" / "n1000000.log"
    assert "No space left on device while writing" in log.read_text(), log.read_text()[-2000:]
    assert "No space left on device while writing" in out, out[-4000:]  # Snakemake prints the failed job's log
    assert "Traceback" not in log.read_text()
    assert (results / "tiny" / "draws" / "n5.zarr" / "zarr.json").exists(), "a finished store stays"
    assert not list(results.rglob("*.tmp-*")), "the half-written store is removed (its space freed)"
    assert not (results / "tiny" / "draws" / "n1000000.zarr").exists()
    # free space (the tmpfs grows) and rerun: only the failed job runs, and it finishes
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    p = smk(tmp_path, "--configfile", str(path), env={"DEPTHLAB_STUDY_PATH": str(ROOT / "docs" / "example_study")})
    assert (results / "tiny" / "draws" / "n1000000.zarr" / "zarr.json").exists()
    done = [line for line in (p.stdout + p.stderr).splitlines() if "] " in line and " done " in line]
    assert any("n1000000" in line for line in done) and not any("n5" in line for line in done), p.stdout + p.stderr


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_a_forged_store_survives_a_rebuild_and_the_audit_but_not_a_reproduction(smoke_run, tmp_path):
    """Change test_error in one training store, rewrite only that store's content_hash and record_hash
    with the package's own functions, touch it and rerun: the figure, the claims and the index are rebuilt from the
    forged number and `audit --strict` passes (the folder agrees with itself).  `audit --job STORE` re-runs the store's
    job from its recorded spec and inputs and names it; `--reproduce N` on an unforged copy passes."""
    run = smoke_run.copy(tmp_path / "w")
    rel = "mori_ueda/fig2/train/2-local/L1.zarr"
    store = run.results / rel
    z = zarr.open_group(str(store), mode="r+")
    z["test_error"][...] = z["test_error"][...] * 0.5
    rec = st.read_record(store)
    rec["content_hash"] = st.content_hash(st.read_store(store))
    _set_record(store, _rehash({k: v for k, v in rec.items() if k != "record_hash"}))
    for f in (store, store / ".snakemake_timestamp"):  # Snakemake dates a directory output by its timestamp file
        if f.exists():
            os.utime(f)
    smk(run.work, "--configfile", str(run.config_path))
    index = run.results / "claims.md"
    depthlab = [sys.executable, "-m", "depthlab", "audit", str(index)]
    p = subprocess.run([*depthlab, "--strict"], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    p = subprocess.run([*depthlab, "--job", rel], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert (
        p.returncode == 1
        and f"{rel}: re-running its job from its recorded spec and inputs gives other arrays" in p.stderr
    ), p.stdout[-2000:] + p.stderr[-2000:]
    clean = smoke_run.copy(tmp_path / "clean")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "depthlab",
            "audit",
            str(clean.results / "claims.md"),
            "--reproduce",
            "5",
            "--seed",
            "3",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=900,
    )
    # the 5 drawn and the upstream stores their re-runs read
    assert p.returncode == 0 and p.stdout.count("reproduced ") >= 5 and "upstream store(s)" in p.stdout, (
        p.stdout[-3000:] + p.stderr[-2000:]
    )


def _long_job(smoke_run, out: Path) -> list[str]:
    """`depthlab stage` for a Mori & Ueda training store of the smoke run, made long (a budget of 20 000 epochs, no
    plateau rule): the command line Snakemake would run."""
    rec = st.read_record(smoke_run.results / "mori_ueda/fig2/train/2-local/L2.zarr")
    spec = copy.deepcopy(rec["spec"])
    spec["training"].update(max_epochs=3000, patience=None, loss_threshold=1e-12)
    inputs = {k: str(smoke_run.results / v["path"]) for k, v in rec["inputs"].items()}
    return [
        sys.executable,
        "-m",
        "depthlab",
        "stage",
        "--spec",
        canonical_json(spec),
        "--inputs",
        canonical_json(inputs),
        "--output",
        str(out),
        "--results",
        str(out.parent),
        "--device",
        "cpu",
    ]


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    import time

    end = time.time() + timeout
    while not path.exists():
        assert proc.poll() is None and time.time() < end, "the job ended first"
        time.sleep(0.02)


class _Output:
    """The merged output of a process, read line by line on a thread, so that a test can wait for a line."""

    def __init__(self, proc: subprocess.Popen):
        import threading

        self.proc, self.lines = proc, []
        self.thread = threading.Thread(target=lambda: self.lines.extend(proc.stdout), daemon=True)
        self.thread.start()

    def wait_for(self, text: str, timeout: float = 120) -> None:
        import time

        end = time.time() + timeout
        while not any(text in line for line in list(self.lines)):
            assert self.proc.poll() is None and time.time() < end, f"no {text!r} in: " + "".join(self.lines)[-2000:]
            time.sleep(0.05)

    def text(self, timeout: float = 600) -> str:
        self.proc.wait(timeout=timeout)
        self.thread.join(timeout=30)
        return "".join(self.lines)


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_a_second_job_on_the_same_store_waits_and_takes_over_only_once_the_first_is_gone(smoke_run, tmp_path):
    """A job orphaned by `kill -9` of Snakemake keeps writing its
    store; the next run started the same store job beside it, sharing its checkpoint and log.  Now the second job waits
    on the store's lock, and takes it over when the first is gone; the store is written once, to the bits of an
    undisturbed run.  The first job is held (SIGSTOP) once it has the lock, so no timing decides what the test sees."""
    import signal

    out = tmp_path / "r" / "L2.zarr"
    cmd = _long_job(smoke_run, out)
    first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait_for(Path(f"{out}.lock"), first)
    os.kill(first.pid, signal.SIGSTOP)
    second = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = _Output(second)
    seen.wait_for("waiting: L2.zarr is being written by another job (pid %d" % first.pid)
    assert second.poll() is None and first.poll() is None and not out.exists(), "the second job must wait"
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    log = seen.text()
    assert second.returncode == 0, log[-3000:]
    assert f"taking over the lock of L2.zarr.lock from pid {first.pid}" in log and "has ended" in log
    assert out.is_dir() and not list(out.parent.glob("*.tmp-*")) and not Path(f"{out}.lock").exists()
    # the second job finished the work alone: the store is the undisturbed run's
    alone = tmp_path / "alone" / "L2.zarr"
    subprocess.run(_long_job(smoke_run, alone), check=True, capture_output=True)
    assert st.read_record(out)["content_hash"] == st.read_record(alone)["content_hash"]
    # and a job that waited for one that finished keeps the store it wrote instead of writing it again
    out.rename(tmp_path / "r" / "done.zarr")
    first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(Path(f"{out}.lock"), first)
    os.kill(first.pid, signal.SIGSTOP)
    second = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = _Output(second)
    seen.wait_for("waiting: L2.zarr is being written by another job")
    os.kill(first.pid, signal.SIGCONT)
    assert first.wait(timeout=600) == 0
    log = seen.text()
    assert second.returncode == 0 and "was written by the job that held its lock while this one waited" in log, log[
        -2000:
    ]


def test_a_job_of_a_replaced_run_does_nothing_and_a_store_a_killed_run_finished_is_kept(
    smoke_run, tmp_path, monkeypatch
):
    """The parts of a cluster run that need no cluster.  A job that SLURM starts for a run whose Snakemake was
    killed and restarted since (requeued, or pending when the submit host died) must not run: the lock file names the
    newer run.  And a store that such a job finished after its Snakemake died (Snakemake still marks it incomplete) is
    set aside by the restart and moved back into place by the job that reruns it, the same file, not computed again;
    with another spec it is discarded and the job computes its own."""
    import base64

    import depthlab.lock as lock

    results = tmp_path / "r"
    monkeypatch.setenv(lock.RUN_ENV, "old-run")
    lock.acquire(results)
    lock.release(results)
    assert lock.superseded(results) == ""  # the run that holds the folder's latest lock: its jobs run
    monkeypatch.setenv(lock.RUN_ENV, lock.start_run())  # the restart
    lock.acquire(results)
    lock.release(results)
    monkeypatch.setenv(lock.RUN_ENV, "old-run")  # a job the killed run submitted, started now
    why = lock.superseded(results)
    assert "submitted by run old-run" in why and os.environ.get(lock.RUN_ENV) == "old-run"
    monkeypatch.delenv(lock.RUN_ENV)
    assert lock.superseded(results) == ""  # not started by a depthlab run: nothing to judge

    # a whole store and a half-made one, both marked incomplete by the killed run's Snakemake
    out, half = results / "L2.zarr", results / "L1.zarr"
    shutil.copytree(smoke_run.results / "mori_ueda/fig2/train/2-local/L2.zarr", out)
    half.mkdir()
    inc = tmp_path / ".snakemake" / "incomplete"
    inc.mkdir(parents=True)
    for p in (out, half):
        (inc / base64.urlsafe_b64encode(str(p).encode()).decode()).write_text('{"external_jobid": null}')
    meta = (out / "zarr.json").stat()
    assert lock.adopt_finished(results, tmp_path / ".snakemake") == [str(out)]
    asides = list(results.glob("L2.zarr.adopt-*"))
    assert not out.exists() and half.is_dir() and len(asides) == 1
    # the rerun job finds it: the same spec and code, so it is moved back, not computed again
    rec = st.read_record(asides[0])
    inputs = {k: str(smoke_run.results / v["path"]) for k, v in rec["inputs"].items()}
    cmd = [
        sys.executable,
        "-m",
        "depthlab",
        "stage",
        "--spec",
        canonical_json(rec["spec"]),
        "--inputs",
        canonical_json(inputs),
        "--output",
        str(out),
        "--results",
        str(results),
        "--device",
        "cpu",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0 and "kept, not computed again" in p.stderr, p.stderr[-2000:]
    again = (out / "zarr.json").stat()
    assert (again.st_ino, again.st_mtime_ns) == (meta.st_ino, meta.st_mtime_ns) and not list(results.glob("*.adopt-*"))
    # set aside again, but the rerun job now has another spec (its config changed): discarded, and computed
    out.rename(results / "L2.zarr.adopt-0123abcd")
    spec = copy.deepcopy(rec["spec"])
    spec["training"]["max_epochs"] += 1
    cmd[cmd.index("--spec") + 1] = canonical_json(spec)
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0 and "kept, not computed again" not in p.stderr, p.stderr[-2000:]
    assert st.read_record(out)["spec"] == spec and not list(results.glob("*.adopt-*"))


def test_a_restart_cancels_the_killed_runs_queued_jobs_and_waits_for_its_running_ones(tmp_path, monkeypatch):
    """A stand-in SLURM (squeue and scancel scripts): Snakemake's incomplete marks name the jobs of
    the killed run; the restart cancels the queued one, waits until the running one has left the queue, and ignores
    marks without a job id (a local run's) and jobs SLURM no longer knows."""
    import base64

    import depthlab.lock as lock

    bin_ = tmp_path / "bin"
    bin_.mkdir()
    calls = tmp_path / "squeue.calls"
    # job 20 runs for the first three queries, then leaves the queue; 19 is queued; 18 is long gone
    (bin_ / "squeue").write_text(
        f'#!/bin/sh\necho x >> "{calls}"\nn=$(wc -l < "{calls}")\n'
        'echo "19|PENDING"\n[ "$n" -le 3 ] && echo "20|RUNNING"\necho "99|RUNNING"\nexit 0\n'
    )
    (bin_ / "scancel").write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path}/scancel.calls"\n')
    for f in ("squeue", "scancel"):
        (bin_ / f).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    inc = tmp_path / ".snakemake" / "incomplete"
    inc.mkdir(parents=True)
    for path, job in (
        ("results/a.zarr", "19"),
        ("results/b.zarr", "20"),
        ("results/c.zarr", "18"),
        ("results/d.zarr", None),
    ):
        (inc / base64.urlsafe_b64encode(path.encode()).decode()).write_text(json.dumps({"external_jobid": job}))
    # a started job's jobstep marks its outputs again without the id: the running job 20 is found in the ledger its
    # jobstep keeps (register_cluster_job), beside a finished job's leftover entry and one of this very run
    monkeypatch.setenv(lock.RUN_ENV, "restart")
    jobs = tmp_path / "results" / lock.JOBS_DIR
    monkeypatch.setenv("SLURM_JOB_ID", "20")
    monkeypatch.setenv(lock.RUN_ENV, "killed")
    assert lock.register_cluster_job(tmp_path / "results") == jobs / "20.json"
    monkeypatch.setenv(lock.RUN_ENV, "restart")
    (jobs / "77.json").write_text(json.dumps({"job": "77", "run": "killed"}))
    (jobs / "99.json").write_text(json.dumps({"job": "99", "run": "restart"}))
    (inc / base64.urlsafe_b64encode(b"results/b.zarr").decode()).write_text(json.dumps({"external_jobid": None}))
    said = []
    assert lock.killed_before(tmp_path / ".snakemake")
    done = lock.settle_orphans(tmp_path / ".snakemake", say=said.append, poll=0.05, results=tmp_path / "results")
    assert done == {"cancelled": ["19"], "waited": ["20"]}
    assert (tmp_path / "scancel.calls").read_text().split() == ["19"]  # 99 is not the killed run's: never touched
    assert len(calls.read_text().split()) == 5  # waited until 20 had left the queue, then tidied the ledger
    assert sorted(f.name for f in jobs.iterdir()) == ["99.json"]  # entries of jobs SLURM no longer runs are removed
    assert "cancelled 1 job(s)" in said[0] and "waiting for 1 job(s)" in said[1] and "20" in said[1]
    # no marks: nothing to settle, and SLURM is not asked
    shutil.rmtree(inc)
    assert not lock.killed_before(tmp_path / ".snakemake")
    assert lock.settle_orphans(tmp_path / ".snakemake", say=said.append) == {"cancelled": [], "waited": []}
    assert len(calls.read_text().split()) == 5


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_a_forged_store_whose_record_names_a_gpu_is_not_waved_through(copy_run, tmp_path):
    """Forge test_error, set the record's device to a GPU, rewrite the hashes: `audit --strict --job` said
    'not reproducible bit for bit on this CPU; not re-run' and exited 0.  The device is a field the forger writes: an
    unchecked store is a failure under --strict and whenever it is named with --job, and a note that says so otherwise."""
    results = copy_run
    rel = "mori_ueda/fig2/train/2-local/L1.zarr"
    store = results / rel
    z = zarr.open_group(str(store), mode="r+")
    z["test_error"][...] = z["test_error"][...] * 0.5
    rec = st.read_record(store)
    rec["content_hash"] = st.content_hash(st.read_store(store))
    rec["device"] = "cuda:0 (NVIDIA H100 80GB HBM3)"
    _set_record(store, _rehash({k: v for k, v in rec.items() if k != "record_hash"}))
    base = [sys.executable, "-m", "depthlab", "audit", str(store)]
    p = subprocess.run([*base, "--strict", "--job", rel], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode == 1 and "its arrays are NOT checked" in p.stdout + p.stderr, (
        p.stdout[-2000:] + p.stderr[-2000:]
    )
    p = subprocess.run([*base, "--job", rel], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode == 1, "named with --job: a failure even without --strict"
    p = subprocess.run([*base, "--reproduce", "-1"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode == 2 and "negative" in p.stderr and "Traceback" not in p.stderr  # item 11


def test_a_results_folder_inside_a_store_or_another_results_folder_or_the_code_is_refused(copy_run, tmp_path):
    """`results: <A>/mori_ueda/fig2/train/2-local/L1.zarr/inner` validated and ran; A's next rebuild of
    that store replaced it by rename, and B's whole folder was gone.  Refused: a `.zarr` component, a folder inside another
    results folder or holding one, a folder inside the package."""
    import depthlab.config as dlc

    a = copy_run
    assert (a / "config.used.yaml").is_file()
    for bad, why in (
        (a / "mori_ueda/fig2/train/2-local/L1.zarr/inner", "a store's name"),
        (a / "inner", "lies inside the results folder"),
        (a.parent, "holds the results folder"),
        (ROOT / "workflow" / "depthlab" / "out", "inside the depthlab package"),
    ):
        with pytest.raises(dlc.ConfigError, match=why):
            dlc._check_results(str(bad))
    dlc._check_results(str(tmp_path / "elsewhere"))  # a fresh folder beside them is fine


def test_a_second_config_with_the_same_name_and_other_values_does_not_take_over_the_folder(tmp_path):
    """A/same.yaml and b/same.yaml both wrote results/same, the second silently replacing the first's
    figures and claims.  The folder records its config; another file with other values stops, naming both files and the
    keys that differ; the same values, the same file edited, or DEPTHLAB_CONTINUE go on."""
    from depthlab import folder

    res = tmp_path / "results" / "same"
    a_cfg, b_cfg = tmp_path / "a" / "same.yaml", tmp_path / "b" / "same.yaml"
    one = {"seed": 0, "device": "cpu", "studies": {"spectra": {"d": [3, 5]}}}
    assert "now belongs to" in folder.claim(res, one, a_cfg)
    assert "has the same values" in folder.claim(res, {**one, "device": "cuda"}, b_cfg)  # device is no rerun trigger
    two = {**one, "studies": {"spectra": {"d": [3, 7]}}}
    with pytest.raises(
        folder.FolderTaken,
        match=r"belongs to the config .*a/same.yaml, and .*b/same.yaml differs from it at: "
        r"studies.spectra.d",
    ):
        folder.claim(res, two, b_cfg)
    assert "now belongs to" in folder.claim(res, two, a_cfg)  # the first file, edited: the folder follows it
    assert "now belongs to" in folder.claim(res, one, b_cfg, force=True)


@pytest.mark.parametrize(
    "where, value, why",
    [
        ("results", "out/<logs>", "Snakemake reads as one of its path"),  # item 9
        ("results", "out/<script>", "Snakemake reads as one of its path"),
        ("results", "out/x\u2028y", "non-printable one: '\\\\u2028'"),  # item 15: U+2028
        ("results", "out/\u202eevil", "non-printable one"),  # the right-to-left override
        ("results", "out/\x85", "non-printable one"),  # a C1 control
        ("results", "~/x", "starts with '~'"),  # item 16
        ("results", "/proc/self/x", "lies in /proc, the kernel's own view"),  # validated, then Snakemake's traceback
        ("results", "/sys/x", "lies in /sys"),
        ("results", "/dev/shm/../x", "lies in /dev"),  # the path as the file system resolves it
    ],
)
def test_paths_snakemake_or_a_cluster_would_read_differently_are_refused(where, value, why):
    """Each validated and then failed later (a WorkflowError, a value escaped on the compute
    node, a literal ./~ folder)."""
    import depthlab.config as dlc

    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    cfg[where] = value
    with pytest.raises(dlc.ConfigError, match=why):
        dlc.validate(cfg, memory=False)


def test_config_names_that_resolve_outside_results_are_refused_and_a_results_key_still_works(tmp_path):
    """'...yaml' sent results to results/.. (the checkout root), '..yaml' to results/."""
    import depthlab.config as dlc

    for name in ("...yaml", "..yaml"):
        cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
        cfg.pop("results", None)
        with pytest.raises(dlc.ConfigError, match="no usable name"):
            dlc.validate(cfg, memory=False, source=tmp_path / name)
        cfg["results"] = str(tmp_path / "mine")
        assert dlc.validate(cfg, memory=False, source=tmp_path / name)["results"] == str(tmp_path / "mine")


def test_odd_store_lock_files_give_one_line_and_a_clean_take_over_or_refusal(tmp_path):
    """A lock from another host dated in the future waited until that date (2030); a huge pid gave
    an OverflowError and left the lock; a JSON list an AttributeError; a directory an IsADirectoryError and a .stale-*
    folder; pid -1 counted as alive for root (a 600 s wait); a read-only stage folder a traceback."""
    import socket

    from depthlab.lock import OutputInUse, OutputLock

    out = tmp_path / "s" / "x.zarr"
    out.parent.mkdir()
    lock = out.with_name("x.zarr.lock")
    said = []

    def take(wait=2.0):
        said.clear()
        lk = OutputLock(out, stale_after=30, poll=0.05, say=said.append).acquire(wait=wait)
        lk.release()
        assert not lock.exists() and not list(out.parent.glob("*.stale-*")), list(out.parent.iterdir())

    host = socket.gethostname()
    for content, why in (
        ({"host": host, "pid": 10**30, "token": "t"}, "ended"),
        ({"host": host, "pid": -1, "token": "t"}, "names no process"),
        ({"host": host, "pid": 0, "token": "t"}, "names no process"),
    ):
        lock.write_text(json.dumps(content))
        take()
        assert any(why in s for s in said), said
    lock.write_text(json.dumps({"host": "elsewhere", "pid": 5, "token": "t"}))
    future = time.time() + 4 * 365 * 86400  # 2030-ish: another host's clock
    os.utime(lock, (future, future))
    take()
    assert any("in the future" in s for s in said), said
    lock.write_text("[1, 2, 3]")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    take()  # a list names no holder; its heartbeat is an hour old: taken over, no AttributeError
    lock.mkdir()
    with pytest.raises(OutputInUse, match="a directory stands where the lock file goes"):
        take()
    lock.rmdir()
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.geteuid() != 0:  # root writes anywhere: the refusal is then the file system's to make
            with pytest.raises(OutputInUse, match="cannot"):
                OutputLock(ro / "sub" / "y.zarr", say=said.append).acquire(wait=0.1)
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize(
    "forged, why",
    [
        ('{"path": "x", "value": NaN}', "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than"),
        ('{"job": "not-a-dict", "path": "x"}', "'job' is a str, not a dict"),
    ],
)
def test_a_forged_provenance_attribute_gives_one_line_in_ls_audit_and_open_results(copy_run, tmp_path, forged, why):
    """NaN inside a store's record made `audit` and `open_results(verify=True)` end in a ValueError
    traceback, 100 000 brackets `ls` and `open_results` in a RecursionError, '"job": "not-a-dict"' `ls` in an
    AttributeError.  Records are read through the files' safe reader: NaN refused, depth capped, types checked."""
    import depthlab

    results = copy_run
    store = sorted(results.rglob("*.zarr"))[0]
    zarr.open_group(str(store), mode="r+").attrs[st.RECORD_ATTR] = forged
    for cmd in (["ls", str(results)], ["audit", str(store)]):
        p = subprocess.run(
            [sys.executable, "-m", "depthlab", *cmd], capture_output=True, text=True, cwd=tmp_path, timeout=300
        )
        assert "Traceback" not in p.stderr and "RecursionError" not in p.stderr, (cmd, p.stderr[-2000:])
    p = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(store)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert p.returncode == 1 and why in p.stdout + p.stderr, p.stdout[-1500:] + p.stderr[-1500:]
    study = store.relative_to(results).parts[0]
    from depthlab.results import ResultsError

    with pytest.raises(ResultsError, match=why):
        depthlab.open_results(results, study, verify=True)


def test_make_run_refuses_a_config_nested_too_deep_for_snakemake_in_one_line(tmp_path):
    """A deeply nested YAML config stopped `make run` with Snakemake's RecursionError traceback, before
    depthlab saw it (Snakemake loads --configfile itself).  `make run` validates the file first."""
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    p = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "check-config", f"CONFIG={deep}"], capture_output=True, text=True, timeout=120
    )
    assert p.returncode != 0 and "nested too deeply" in p.stderr + p.stdout and "Traceback" not in p.stderr, p.stderr[
        -2000:
    ]


def test_a_config_with_too_many_plain_keys_is_refused_fast_for_what_it_is(tmp_path):
    """200 000 plain keys were refused after 35 s with a message about aliases where there were none."""
    import depthlab.config as dlc

    many = tmp_path / "many.yaml"
    many.write_text("".join(f"k{i}: 1\n" for i in range(200_000)))
    t = time.perf_counter()
    with pytest.raises(dlc.ConfigError, match="200000 ':' \\(keys\\)") as e:
        dlc.read_yaml(many)
    assert "alias" not in str(e.value) and time.perf_counter() - t < 10
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(
        "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
        + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
            f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
            for i in range(6)
        )
    )
    with pytest.raises(dlc.ConfigError, match="through its aliases"):
        dlc.read_yaml(bomb)


def test_job_reruns_the_upstream_chain_so_a_forged_input_is_caught(copy_run, tmp_path):
    """`audit --job STORE` on a store whose *input* was forged said 'reproduced': a re-run reads its
    inputs from the folder.  The upstream chain of a chosen store is re-run too, so the forged data set is named."""
    results = copy_run
    rel = "mori_ueda/fig2/ntk/2-local/L1.zarr"
    rec = st.read_record(results / rel)
    data_rel = next(v["path"] for v in rec["inputs"].values() if v["path"].endswith(".zarr"))
    data = results / data_rel
    z = zarr.open_group(str(data), mode="r+")
    name = next(k for k in ("y_test", "y_train") if k in z)
    z[name][...] = z[name][...] * 0.5
    drec = st.read_record(data)
    drec["content_hash"] = st.content_hash(st.read_store(data))
    drec = _rehash({k: v for k, v in drec.items() if k != "record_hash"})
    _set_record(data, drec)
    for key, v in rec[
        "inputs"
    ].items():  # the consumer's record rewritten to the forged input: the folder agrees with itself
        if v["path"] == data_rel:
            rec["inputs"][key] = {**v, "content_hash": drec["content_hash"], "record_hash": drec["record_hash"]}
    _set_record(results / rel, _rehash({k: v for k, v in rec.items() if k != "record_hash"}))
    p = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(results / rel)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]  # without a re-run the forgery is not seen
    p = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(results / rel), "--job", rel],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert (
        p.returncode == 1
        and f"{data_rel}: re-running its job from its recorded spec and inputs gives other arrays" in p.stderr
    ), p.stdout[-2000:] + p.stderr[-2000:]
