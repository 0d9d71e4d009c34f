"""The stage runner: what `depthlab stage`, `depthlab index` and `depthlab snapshot` do around a study's function.

A stage's spec names its study and stage (``{"study": ..., "stage": ..., "job": ...}``); the study registry
(depthlab.studies) maps them to the function that runs it.  The runner does the I/O around that function: it reads
the input stores, writes the output with its provenance record (the machine included), takes the output's lock, and
hands the function a checkpoint to survive kills.  The command line (depthlab.cli) only parses the arguments.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from . import machine, outputs, placement
from . import provenance as prov
from . import storage
from .study import load_json, to_plain

if TYPE_CHECKING:
    from .study import Spec, Study

log = logging.getLogger("depthlab")


@dataclass
class StageContext:
    """What a store stage gets besides its spec and inputs."""

    device: str  # torch device string ("cpu", "cuda"), already resolved
    progress: Callable[[str], None]
    checkpoint: Any  # depthlab.checkpoint.FileCheckpoint, or None


def _record(
    study: "Study",
    spec: "Spec",
    output: str | Path,
    results: str,
    inputs: dict[str, str],
    device: str,
    code: str | None = None,
    files: dict | None = None,
) -> dict:
    stage = study.stage(spec.STAGE)
    return {
        "study": spec.STUDY,
        "stage": spec.STAGE,
        "job": to_plain(spec.job),
        "path": storage.relpath(output, results),
        "spec": spec.to_dict(),
        "config_hash": prov.spec_hash(spec.to_dict()),
        "code_version": prov.code_version(),
        "code_fingerprint": code or prov.code_fingerprint(stage.fingerprint_modules),
        "packages": prov.package_versions(),
        "device": device,
        "machine": machine.describe(device),
        "inputs": {k: storage.input_record(p, results) for k, p in sorted(inputs.items())},
        **({"study_source": src} if (src := prov.study_source(study.folder)) else {}),
        **({"files": files} if files else {}),
    }


def source_files(spec: "Spec") -> dict[str, dict[str, str]]:
    """The files from outside the results folder the job reads (``Spec.files``), each with its SHA-256, hashed before
    the job reads them: what its record says it was made from."""
    from . import safeio

    out = {}
    for name, path in sorted(spec.files().items()):
        if not safeio.is_regular(path):
            raise SystemExit(f"error: {path} (read by this job) is not a regular file")
        out[name] = {"path": str(path), "sha256": safeio.file_hash(path)}
    return out


def run_store(
    study: "Study",
    spec: "Spec",
    fn: Callable,
    inputs: dict[str, str],
    output: Path,
    results: str,
    device: str,
    threads: int | None,
) -> None:
    from .checkpoint import FileCheckpoint

    if "torch" in sys.modules:  # the stage's modules import torch: set its threads and device
        from .core.device import describe, resolve_device, set_threads

        n = set_threads(threads)
        dev = str(resolve_device(device))
        where = describe(resolve_device(device))
    else:  # a numpy-only stage: no torch import (about a second of start-up saved)
        n, dev, where = 1, "cpu", "cpu (numpy only)"
    log.info("depthlab %s/%s: %s on %s (%d thread(s))", spec.STUDY, spec.STAGE, output, where, n)
    t0 = time.perf_counter()
    # training state survives a killed job here (SIGTERM, SIGKILL, a SLURM time limit); removed once the store is written
    # tagged with the code fingerprint: a checkpoint left by other code is ignored, never continued
    code = prov.code_fingerprint(study.stage(spec.STAGE).fingerprint_modules)
    Path(output).parent.mkdir(
        parents=True, exist_ok=True
    )  # (Snakemake makes it; a job run by hand, or re-run by the audit, not)
    ckpt = FileCheckpoint(f"{output}.ckpt", code=code)
    files = source_files(spec)
    ds = fn(spec, {k: storage.read_store(p) for k, p in inputs.items()}, StageContext(dev, log.info, ckpt))
    if source_files(spec) != files:
        raise SystemExit(
            f"error: a file this job read changed while it ran: {', '.join(f['path'] for f in files.values())}"
        )
    storage.write_store(ds, output, _record(study, spec, output, results, inputs, where, code, files))
    ckpt.clear()
    log.info("wrote %s in %.1fs", output, time.perf_counter() - t0)


figure_inputs = storage.figure_inputs  # the name the figure stage and older scripts use


def run_figure(study: "Study", spec: "Spec", fn: Callable, inputs: dict[str, str], stem: Path, results: str) -> None:
    """Figure stage: <stem>.{csv,png,pdf,provenance.json}; the provenance carries the hashes of all three files."""
    from . import render

    fig, table = fn(spec, figure_inputs(study, inputs))
    for problem in render.layout_problems(
        fig
    ):  # the job's log says it; tests/test_figures.py holds every smoke figure to none
        log.warning("figure layout: %s", problem)
    record = _record(study, spec, stem, results, inputs, "cpu")
    record["csv_sha256"] = storage.write_text(render.table_csv(table), stem.with_suffix(".csv"))
    storage.failpoint("figure")
    png = render.figure_png(fig)
    record["png_pixels_sha256"] = storage.png_pixels_hash(png)
    blob = prov.canonical_json(prov.embedded(record))
    storage.write_bytes(render.png_with_text(png, {render.PROVENANCE_KEY: blob}), stem.with_suffix(".png"))
    record["pdf_sha256"] = storage.write_bytes(render.figure_pdf(fig, blob), stem.with_suffix(".pdf"))
    storage.write_json(storage.finish_record(record), stem.with_suffix(".provenance.json"))
    log.info("wrote %s.{png,pdf,csv,provenance.json}", stem)


def _file_input(path: str, results: str) -> dict[str, str]:
    """Record of a file input (a figure CSV or a claims JSON): its path, its hash, and its provenance's record hash."""
    p = Path(path)
    prov_path = p.with_name(p.name.rsplit(".", 1)[0] + ".provenance.json")
    return {
        "path": storage.relpath(p, results),
        "sha256": storage.file_hash(p),
        "record_hash": json.loads(prov_path.read_text())["record_hash"],
    }


def run_claims(study: "Study", spec: "Spec", fn: Callable, inputs: dict[str, str], out: Path, results: str) -> None:
    """Claims stage: <dir>/claims.{md,json,provenance.json} from the study's figure tables."""
    import pandas as pd

    from . import render

    from . import decide

    verdicts, notes = fn(spec, {name: pd.read_csv(p) for name, p in inputs.items()})
    verdicts = decide.annotate(study, spec, verdicts)  # what would decide each inconclusive row, priced
    record = _record(study, spec, out, results, {}, "cpu")
    # the prices come from the package's cost table, data that no code fingerprint covers: the record names it
    record["priced_by"] = {"costs_sha256": storage.file_hash(decide.COST_TABLE)}
    record["inputs"] = {name: _file_input(p, results) for name, p in sorted(inputs.items())}
    record["json_sha256"] = storage.write_text(render.verdicts_json(verdicts), out.with_suffix(".json"))
    storage.failpoint("claims")
    text = render.claims_markdown(study.title, verdicts, notes)
    record["md_sha256"] = storage.write_text(text, out)
    from . import forest, htmlpage

    # the same report as a page the HTML report shows in place (it downloads a markdown item)
    record["html_sha256"] = storage.write_text(
        htmlpage.markdown_page(f"{study.title}: claims", text), out.with_suffix(".html")
    )

    record["forest_sha256"] = storage.write_bytes(
        forest.png(forest.run_figure(study.title, [v.as_dict() for v in verdicts])), out.with_suffix(".forest.png")
    )
    storage.write_json(storage.finish_record(record), out.with_suffix(".provenance.json"))
    log.info("wrote %s and its forest plot (%d verdicts)", out, len(verdicts))


def start_gc() -> None:
    """Turn the garbage collector back on if the ``depthlab`` command started with it off (``depthlab._launch``),
    first freezing what start-up loaded (modules, functions, classes: never garbage) so that no collection, the one
    at exit included, walks it again.  A no-op when the collector is on (a test or a notebook calling ``main``)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _terminated(signum, _frame) -> None:
    """SIGTERM (``timeout``, ``scancel``, a SLURM time limit, a stopped Snakemake) raises here, so the job unwinds: its
    output lock and temporary store go (their context managers), and its checkpoint stays for the next run."""
    raise SystemExit(128 + signum)


def stage(args: argparse.Namespace) -> None:
    import signal

    from .studies import get_study

    signal.signal(signal.SIGTERM, _terminated)
    data = load_json(args.spec)
    study = get_study(str(data.get("study")))
    spec = study.spec_from_dict(data)  # typed once, here
    st = study.stage(spec.STAGE)
    fn = st.function()
    start_gc()  # the job's modules are loaded
    inputs = json.loads(args.inputs)
    out = Path(args.output)
    if not outputs.inside(out.parent, args.results):  # a link on the way would take the write out of the results
        raise SystemExit(
            f"error: {out} lies outside the results folder {args.results} once its links are followed "
            f"({os.path.realpath(out.parent)}): refused; remove the link"
        )
    from .lock import OutputLock

    # one writer per output, whatever else runs: a job orphaned by a killed Snakemake, or one on another node after the
    # submit host restarted, holds it; this job waits, and takes over only once that holder is gone (depthlab.lock)
    with OutputLock(out, say=log.info), storage.owning(out):
        if st.kind == "store":
            if _written_meanwhile(study, spec, out):
                return
            run_store(
                study,
                spec,
                fn,
                inputs,
                out,
                args.results,
                placement.job_device(
                    args.device, study.name, st.gpu, st.gpu and placement.spec_cpu_faster(study.name, spec)
                ),
                args.threads,
            )
        elif st.kind == "figure":
            run_figure(study, spec, fn, inputs, out, args.results)
        else:
            run_claims(study, spec, fn, inputs, out, args.results)


def _same_job(study: "Study", spec: "Spec", store: Path) -> bool:
    """True when ``store`` is whole and was written from this very spec and code: its record unedited (its own hash) and
    its arrays those the record names (their content hash), so a planted ``<store>.adopt-*`` or a store edited in place
    is never kept."""
    try:
        storage.check_store(store)  # no FIFO or device opened, no pickling codec
        rec = storage.read_record(store)
        if rec.get("spec") != spec.to_dict() or rec.get("code_fingerprint") != prov.code_fingerprint(
            study.stage(spec.STAGE).fingerprint_modules
        ):
            return False
        if prov.record_hash(rec) != rec.get("record_hash"):
            log.warning("%s: its provenance record was edited (its hash does not match): not kept", store)
            return False
        if storage.content_hash(storage.read_store(store)) != rec.get("content_hash"):
            log.warning("%s: its arrays are not those its record names (content hash): not kept", store)
            return False
    except Exception:
        return False
    return True


def _written_meanwhile(study: "Study", spec: "Spec", out: Path) -> bool:
    """True when the store this job is about to write is already there, from this very spec and code: another job (one
    that held the output's lock while this one waited) finished it.  Snakemake removes a job's outputs before it
    starts, so a store found here was written since.  Or a job of a killed run finished it after its Snakemake died,
    and the restart set it aside as ``<store>.adopt-*`` (depthlab.lock.adopt_finished): it is moved back into place.
    Set-aside stores of another spec or code are removed."""
    from .lock import ADOPT

    if out.is_dir() and not out.is_symlink() and _same_job(study, spec, out):
        log.info(
            "%s was written by the job that held its lock while this one waited (the same spec and code): kept", out
        )
        return True
    kept = False
    for aside in sorted(out.parent.glob(f"{storage.glob_escape(out.name)}.{ADOPT}-*")):
        if not aside.is_dir() or aside.is_symlink() or aside.name.count(".") != out.name.count(".") + 1:
            continue
        if not kept and not out.exists() and _same_job(study, spec, aside):
            os.rename(aside, out)
            log.info(
                "%s was finished by a job of the killed run after its Snakemake died (the same spec and code): "
                "kept, not computed again",
                out,
            )
            kept = True
        else:
            shutil.rmtree(aside, ignore_errors=True)
    return kept


def index(args: argparse.Namespace) -> None:
    """The claims index over every study: <results>/claims.{md,provenance.json}."""
    from . import claims
    from .studies import get_study

    inputs = json.loads(args.inputs)  # study -> its claims.json
    rows = [(name, get_study(name).title, json.loads(Path(p).read_text())) for name, p in sorted(inputs.items())]
    out = Path(args.output)
    record = {
        "study": "*",
        "stage": "index",
        "job": {},
        "path": storage.relpath(out, args.results),
        "code_version": prov.code_version(),
        "inputs": {n: _file_input(p, args.results) for n, p in sorted(inputs.items())},
        "scale": args.scale,
    }
    text = claims.render_index(rows, smoke=args.scale == "smoke")
    record["md_sha256"] = storage.write_text(text, out)
    from . import htmlpage

    record["html_sha256"] = storage.write_text(
        htmlpage.markdown_page("depthlab claims: every study", text), out.with_suffix(".html")
    )
    storage.failpoint("index")
    storage.write_json(storage.finish_record(record), out.with_suffix(".provenance.json"))
    log.info("wrote %s", out)


def snapshot(args: argparse.Namespace) -> None:
    """The config a run used (validated, defaults filled in), as YAML."""
    import yaml

    head = (
        "# The config this run used (validated, defaults filled in): a valid config that reruns the same jobs.\n"
        "# `device` is written as auto whatever the run asked for, and `device_by_study` is left out: neither is a\n"
        "# rerun trigger, and each store records the device it ran on.\n"
    )
    from . import htmlpage

    data = {**json.loads(args.config_json), "device": "auto"}
    text = head + yaml.safe_dump(data, sort_keys=True)
    storage.write_text(text, args.output)
    # beside it, the page the HTML report shows in place (config.used.html)
    storage.write_text(htmlpage.text_page("The config this run used", text), Path(args.output).with_suffix(".html"))
