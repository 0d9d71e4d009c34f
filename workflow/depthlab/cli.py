"""Command line: the thin layer Snakemake rules call, plus `depthlab validate`.

    depthlab stage data     --spec JSON --output results/fig2/data/2-local.zarr
    depthlab stage lrsearch --spec JSON --input data=... --output ...
    depthlab stage train    --spec JSON --input data=... --input lrsearch=... --output ...
    depthlab stage ntk      --spec JSON --input data=... --output ...
    depthlab stage figure   --spec JSON --input train:2-local:1=... --input ntk:2-local:1=... --output results/figures/fig2
    depthlab validate config/config.yaml
    depthlab audit results/figures/fig2.png [--configfile config/config.yaml]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from . import config as cfg
from . import storage

log = logging.getLogger("depthlab")


def _inputs(pairs: list[str]) -> dict[str, str]:
    out = {}
    for p in pairs:
        name, _, path = p.partition("=")
        if not path:
            raise SystemExit(f"--input needs NAME=PATH, got {p!r}")
        out[name] = path
    return out


def stage(args: argparse.Namespace) -> None:
    spec = json.loads(args.spec)
    if spec.get("stage") != args.name:
        raise SystemExit(f"spec is for stage {spec.get('stage')!r}, not {args.name!r}")
    inputs = _inputs(args.input)
    if args.name == "figure":
        return figure(spec, inputs, Path(args.output))
    if args.name == "claims":
        return claims_report(spec, inputs, Path(args.output))
    if args.name == "config":
        import yaml

        storage.write_text(yaml.safe_dump(spec["config"], sort_keys=True), args.output)
        return
    from . import experiments  # imports torch: only the stages that compute pay for it
    from .device import describe, resolve_device, set_threads

    threads = set_threads(args.threads)
    dev = resolve_device(args.device)
    device = describe(dev)
    t0 = time.perf_counter()
    # training state survives a killed job here (SIGTERM, SIGKILL, a SLURM time limit); removed once the store is written
    ckpt = f"{args.output}.ckpt"
    log.info("depthlab %s: %s on %s (%d thread(s))", args.name, args.output, device, threads)
    if args.name == "data":
        ds = experiments.make_data(spec)
    elif args.name == "lrsearch":
        ds = experiments.run_lrsearch(spec, storage.read_store(inputs["data"]), str(dev), checkpoint=ckpt)
    elif args.name == "train":
        ds = experiments.run_train(spec, storage.read_store(inputs["data"]), storage.read_store(inputs["lrsearch"]), str(dev),
                                   checkpoint=ckpt)
    elif args.name == "sweep":
        ds = experiments.run_sweep(spec, storage.read_store(inputs["data"]), str(dev), checkpoint=ckpt)
    elif args.name == "ntk":
        ds = experiments.run_ntk(spec, storage.read_store(inputs["data"]), str(dev))
    else:  # argparse choices make this unreachable
        raise SystemExit(f"unknown stage {args.name}")
    storage.write_store(ds, args.output, spec, inputs, device)
    for leftover in Path(args.output).parent.glob(Path(args.output).name + ".ckpt*"):
        leftover.unlink()
    log.info("wrote %s in %.1fs", args.output, time.perf_counter() - t0)


def figure(spec: dict, inputs: dict[str, str], stem: Path) -> None:
    """Assemble a figure from <kind>:<target>:<depth> stores (kind: train or sweep, and ntk)."""
    from . import experiments, plotting

    runs, ntk = {}, {}
    for key, path in inputs.items():
        kind, name, depth = key.split(":")
        (ntk if kind == "ntk" else runs)[(name, int(depth))] = storage.read_store(path)
    provenance = {
        "figure": spec["figure"],
        "config_hash": cfg.spec_hash(spec),
        "code_version": storage.code_version(),
        "inputs": {k: storage.input_record(p) for k, p in sorted(inputs.items())},
    }
    if spec["kind"] == "lr_sweep":
        table = experiments.sweep_table(spec, runs, ntk)
        fig = plotting.lr_figure(table, f"{spec['figure']}: test error vs learning rate (NN solid, NTK dashed)", spec["task"])
    else:
        table = experiments.depth_table(spec, runs, ntk)
        fig = plotting.depth_figure(table, f"{spec['figure']}: test error vs depth (NN solid, NTK dashed)", spec["task"])
    storage.save_figure(fig, stem, provenance)
    storage.write_text(table.to_csv(index=False, float_format="%.6g"), stem.with_suffix(".csv"))
    storage.write_json({**provenance, "depthlab_spec": spec}, stem.with_suffix(".provenance.json"))
    log.info("wrote %s.{png,pdf,csv,provenance.json}", stem)


def claims_report(spec: dict, inputs: dict[str, str], out: Path) -> None:
    """Check the SPEC claims on every figure table; write markdown (inputs: <figure>=<csv>)."""
    import pandas as pd

    from . import claims

    verdicts = []
    for name in sorted(inputs):
        table = pd.read_csv(inputs[name])
        kind = spec["figures"][name]
        verdicts += (claims.lr_claims if kind == "lr_sweep" else claims.depth_claims)(name, table)
    text = claims.render(verdicts, spec["scale_note"])
    text += "\nInputs: " + ", ".join(f"`{p}`" for p in sorted(inputs.values())) + "\n"
    storage.write_text(text, out)
    log.info("wrote %s", out)


def audit(args: argparse.Namespace) -> None:
    from . import audit as au

    config = None
    if args.configfile:
        try:
            config = cfg.load(args.configfile)
        except cfg.ConfigError as e:
            print(e, file=sys.stderr)
            raise SystemExit(2) from None
    result = au.run(args.target, config)
    print("\n".join(result.lines))
    if result.problems:
        print(f"\nAUDIT FAILED: {len(result.problems)} problem(s):", file=sys.stderr)
        for prob in result.problems:
            print(f"  - {prob}", file=sys.stderr)
        raise SystemExit(1)
    print(f"\naudit OK: {len(result.seen)} store(s) checked, every recorded hash matches the arrays on disk")


def validate(args: argparse.Namespace) -> None:
    try:
        cfg.load(args.config)
    except cfg.ConfigError as e:
        print(e, file=sys.stderr)
        raise SystemExit(2) from None
    print(f"{args.config}: OK")


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    p = argparse.ArgumentParser(prog="depthlab")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stage", help="run one pipeline stage (called by the Snakemake rules)")
    s.add_argument("name", choices=cfg.STAGES)
    s.add_argument("--spec", required=True, help="canonical JSON spec of the job")
    s.add_argument("--input", action="append", default=[], help="NAME=PATH of an input store (repeatable)")
    s.add_argument("--output", required=True)
    s.add_argument("--threads", type=int, default=None, help="torch threads (default 1 or $DEPTHLAB_THREADS)")
    s.add_argument("--device", default="auto", help="auto | cpu | cuda")
    s.set_defaults(func=stage)
    a = sub.add_parser("audit", help="print a figure's or store's lineage and check every recorded hash")
    a.add_argument("target", help="results/figures/fig2.png (or .pdf/.csv/.provenance.json, or the stem) or a .zarr store")
    a.add_argument("--configfile", help="also check that each store was made from exactly this config's values")
    a.set_defaults(func=audit)
    v = sub.add_parser("validate", help="validate a config file")
    v.add_argument("config")
    v.set_defaults(func=validate)
    args = p.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
