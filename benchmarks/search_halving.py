"""Side-by-side benchmark of the Mori & Ueda rate search: the full search against the pruned one.

    python benchmarks/search_halving.py [--config config/config.yaml] [--jobs N] [--workers 2] [--out FILE]
                                        [--halving ETA,RUNGS] [--stores DIR]

For each of the config's rate searches (figure, target, depth; ``--jobs N``: N of them, spread over the list) one
worker process builds the job's data and runs the search twice, back to back, in the same process: as the config
says (successive halving, its first rung on ``first_rung_folds`` folds), and as the full search (the halving off,
the search checking at training's ``check_every``, as a282204's did), in alternating order from job to job.  It
prints per job and in total the seconds of each (``time.perf_counter`` around the search, data building excluded),
the candidate x fold epochs each trained (the store's ``epochs``; the trainer counts every epoch it trains there), the
rate each chose, and the ratios full / pruned.  Each worker runs on one torch thread, BLAS pinned to one thread
(threadpoolctl); numba is not used by the search.  The threads each side ran on are printed and written to the JSON.

``--halving ETA,RUNGS`` runs the pruned side with another eta and number of rungs than the config's (its first-rung
folds and SE rule kept): a setting tried without editing the config.  ``--stores DIR`` writes each side's store to
``DIR/full`` and ``DIR/pruned`` in the results folder's layout, so ``python docs/compare_searches.py DIR/full
DIR/pruned`` gives the chosen-rate table of this very run.

Speeds are reported, never asserted: a shared machine moves them.  The workflow's own timings (Snakemake's benchmark
files) include each job's start-up and storage; ``docs/compare_searches.py`` compares two runs' stores that way.
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing as mp
import os
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))


def _full(config: dict) -> dict:
    """The config with the rate search's halving off and its checks at training's (a282204's search)."""
    c = copy.deepcopy(config)
    mu = c["studies"]["mori_ueda"]
    mu["lrsearch"]["halving"] = {**mu["lrsearch"]["halving"], "eta": 0, "first_rung_folds": 0, "first_rung_se": 0.0}
    mu["lrsearch"]["check_every"] = mu["training"]["check_every"]
    return c


def _with_halving(config: dict, halving: str | None) -> dict:
    """The config with the rate search's ``eta`` and ``rungs`` set from ``ETA,RUNGS`` (None: as it is)."""
    if not halving:
        return config
    try:
        eta, rungs = (int(v) for v in halving.split(","))
    except ValueError:
        raise SystemExit(f"error: --halving {halving!r}: expected ETA,RUNGS, two integers (e.g. 4,2)") from None
    if not 2 <= eta <= 100 or not 1 <= rungs <= 10:  # the config schema's bounds
        raise SystemExit(
            f"error: --halving {halving!r}: eta must be at least 2 and rungs at least 1 (eta 0 is the "
            "full search, which the benchmark runs anyway), within the config schema's 2 <= eta <= 100 "
            "and 1 <= rungs <= 10"
        )
    c = copy.deepcopy(config)
    c["studies"]["mori_ueda"]["lrsearch"]["halving"] = {
        **c["studies"]["mori_ueda"]["lrsearch"]["halving"],
        "eta": eta,
        "rungs": rungs,
    }
    return c


def _write_store(ds, path: Path) -> None:
    """``ds`` at ``path``, written aside and renamed in (``storage.own`` / ``replace_dir``): a killed benchmark leaves
    the previous store or none, never a half-written one that ``docs/compare_searches.py`` would read."""
    from depthlab.storage import own, replace_dir

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = own(path)
    with warnings.catch_warnings():  # zarr 3's notes on fixed-width strings: scratch stores, read back by xarray
        warnings.simplefilter("ignore")
        ds.to_zarr(tmp, mode="w")
    replace_dir(tmp, path)


def _run(args: tuple) -> dict:
    """One job, both searches, in this process (one thread)."""
    config, job, pruned_first, stores = args
    import numpy as np
    import torch
    from threadpoolctl import threadpool_info, threadpool_limits

    from depthlab.core.device import set_threads
    from depthlab.studies import get_study
    from depthlab.studies.mori_ueda.data import make_data
    from depthlab.studies.mori_ueda.lrsearch import run_lrsearch
    from depthlab.studies.mori_ueda.specs import DataJob, DataSpec, LrSearchSpec
    from depthlab.study import Ref

    import bayes_opt  # noqa: F401  (imported before the clocks start: the first search would pay for it)
    import sklearn.gaussian_process  # noqa: F401

    set_threads(1)
    with threadpool_limits(limits=1):
        threads = {
            "torch": torch.get_num_threads(),
            "blas": sorted({f"{i['internal_api']}:{i['num_threads']}" for i in threadpool_info()}),
        }
        data = make_data(DataSpec.from_config(config, DataJob(job.figure, job.target)), {})
        ctx = SimpleNamespace(device="cpu", progress=lambda *_: None, checkpoint=None)
        out = {"job": f"{job.figure}/{job.target}/L{job.depth}", "threads": threads}
        order = (("pruned", config), ("full", _full(config)))
        for name, cfg in order if pruned_first else order[::-1]:
            spec = LrSearchSpec.from_config(cfg, job)
            t0 = time.perf_counter()
            ds = run_lrsearch(spec, {"data": data}, ctx)
            secs = time.perf_counter() - t0
            if stores:
                _write_store(ds, Path(stores) / name / "mori_ueda" / get_study("mori_ueda").path(Ref("lrsearch", job)))
            out[name] = {
                "seconds": secs,
                "epochs": int(np.asarray(ds.epochs.values).sum()),
                "best_lr": float(ds.best_lr),
                "rates": int(ds.sizes["eval"]),
                "search": ds.attrs["search"],
            }
    return out


def main(argv: list[str] | None = None) -> None:
    from depthlab.config import load
    from depthlab.studies.mori_ueda.specs import LrSearchSpec

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "config" / "config.yaml"))
    ap.add_argument("--jobs", type=int, default=0, help="this many of the rate searches, spread over the list (0: all)")
    ap.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    ap.add_argument("--out", default=None, help="write the table as JSON here")
    ap.add_argument(
        "--halving",
        default=None,
        metavar="ETA,RUNGS",
        help="the pruned side's eta and rungs instead of the config's (e.g. 4,2)",
    )
    ap.add_argument(
        "--stores",
        default=None,
        metavar="DIR",
        help="write each side's stores to DIR/full and DIR/pruned (for docs/compare_searches.py)",
    )
    a = ap.parse_args(argv)
    if a.workers < 1 or a.jobs < 0:
        raise SystemExit(f"error: --workers must be at least 1 and --jobs 0 (all) or more; got {a.workers}, {a.jobs}")
    from depthlab import outputs
    from depthlab.config import ConfigError

    try:  # before any search: neither output may land in a run's results folder (or at the root)
        if a.stores:  # DIR itself (a link to / makes DIR/full '/full', which is not the root), then each side
            outputs.user_folder(a.stores, what="--stores")
            for side in ("full", "pruned"):
                outputs.user_folder(Path(a.stores) / side, what="--stores")
        if a.out:
            outputs.user_file(a.out, what="--out")
    except outputs.OutputRefused as e:
        raise SystemExit(f"error: {e}") from None
    try:
        config = _with_halving(load(a.config), a.halving)
    except (ConfigError, OSError) as e:
        raise SystemExit(f"error: --config {a.config}: {e}") from None
    if "mori_ueda" not in config.get("studies", {}):
        raise SystemExit(f"error: {a.config} builds no mori_ueda study: there is no rate search to time")
    jobs = LrSearchSpec.jobs(config)
    if a.jobs and a.jobs < len(jobs):
        jobs = [jobs[round(i * (len(jobs) - 1) / max(a.jobs - 1, 1))] for i in range(a.jobs)]
    print(
        f"{len(jobs)} rate searches of {a.config}, {a.workers} worker process(es), each on one torch thread, BLAS "
        "pinned to one thread (threadpoolctl); numba unused",
        flush=True,
    )
    rows = []
    with mp.get_context("spawn").Pool(a.workers) as pool:
        for i, r in enumerate(pool.imap(_run, [(config, j, i % 2 == 0, a.stores) for i, j in enumerate(jobs)])):
            rows.append(r)
            f, p = r["full"], r["pruned"]
            print(
                f"[{i + 1}/{len(jobs)}] {r['job']}: full {f['seconds']:.1f} s, {f['epochs']} epochs, lr {f['best_lr']:.3g}"
                f" | pruned {p['seconds']:.1f} s, {p['epochs']} epochs, lr {p['best_lr']:.3g}"
                f" | x{f['seconds'] / p['seconds']:.2f} s, x{f['epochs'] / max(p['epochs'], 1):.2f} epochs",
                flush=True,
            )
    tot = {k: {m: sum(r[k][m] for r in rows) for m in ("seconds", "epochs")} for k in ("full", "pruned")}
    ratio = {m: tot["full"][m] / max(tot["pruned"][m], 1e-9) for m in ("seconds", "epochs")}
    print(
        f"\ntotal: full {tot['full']['seconds']:.0f} s, {tot['full']['epochs']} candidate-epochs; pruned "
        f"{tot['pruned']['seconds']:.0f} s, {tot['pruned']['epochs']} candidate-epochs"
    )
    print(f"full / pruned: x{ratio['seconds']:.2f} in seconds, x{ratio['epochs']:.2f} in candidate-epochs")
    print(f"threads: {rows[0]['threads'] if rows else '-'}")
    print(f"pruned: {rows[0]['pruned']['search'] if rows else '-'}; full: {rows[0]['full']['search'] if rows else '-'}")
    if a.out:
        try:
            outputs.write_user_file(
                json.dumps(
                    {
                        "config": a.config,
                        "halving": a.halving,
                        "workers": a.workers,
                        "rows": rows,
                        "total": tot,
                        "ratio": ratio,
                    },
                    indent=1,
                ).encode(),
                a.out,
                what="--out",
            )
        except outputs.OutputRefused as e:
            raise SystemExit(f"error: {e}") from None
        except OSError as e:  # a full disk (or /dev/full): the table above is printed; say why the file is not
            raise SystemExit(
                f"error: --out {a.out}: cannot write it ({e.strerror or e}); the table is printed above"
            ) from None


if __name__ == "__main__":
    main()
