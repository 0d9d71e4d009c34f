"""Compare the Mori & Ueda rate searches of two results folders, (target, depth) by (target, depth) (does the
pruned search choose what the full search chooses, and what does it cost?).

    python docs/compare_searches.py FULL_RESULTS PRUNED_RESULTS

For each ``mori_ueda/fig*/lrsearch/<target>/L<depth>.zarr`` in both folders it prints a markdown row: each search's
chosen rate and that choice's mean CV error ± its SE over folds (in its own search), how many decades apart the two
choices are, and a class:

- ``same``: the same candidate, less than 0.01 decades apart (the optimiser's proposals move in their third digit when
  the scores fed to it move; two candidates of one search are at least 1/64 of the box apart, 0.027 decades here);
- ``within SE``: another rate whose CV error differs from the full search's choice by at most sqrt(SE_a^2 + SE_b^2);
- ``beyond SE``: otherwise.

Then the totals: candidate x fold epochs trained, and the jobs' seconds from Snakemake's benchmark files
(``benchmarks/mori_ueda/.../L<depth>.tsv``, column ``s``) where both folders have them.  Reads zarr and TSV only.
The epochs are the stores' ``epochs``: since 7e7cbb5 every epoch the search trains.  A one-fold first rung's stores
written before it (2163dd5 .. 937b553) leave out the kept candidates' screen, which their first fold trained again
from its start: 4 240 of the default's 29 430 candidate-epochs (14 %).  ``benchmarks/search_halving.py`` times the
two searches side by side in one process instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "workflow"))

from depthlab.costs import calibrate as cost_calibrate  # noqa: E402


SAME = 0.01  # decades: closer than this, two choices are the same candidate


class Damaged(ValueError):
    """A store this script will not tabulate; the message says why."""


def _load(path: Path, root: Path) -> xr.Dataset:
    """A rate-search store, refused unless it is sound: inside its folder (no symlink out), no special file or pickling
    codec, its arrays those its record names (content hash) and its record unedited (a forged ``best_lr`` whose audit
    fails is not tabulated as real), with the arrays the table reads present and valid."""
    from depthlab import provenance as prov
    from depthlab import storage

    if not path.resolve().is_relative_to(root.resolve()):
        raise Damaged(f"leads outside {root} (to {path.resolve()})")
    try:
        storage.check_store(path)
        ds = storage.read_store(path)
    except Exception as e:  # unreadable, truncated metadata, a chunk missing
        raise Damaged(f"unreadable ({type(e).__name__}: {str(e)[:120]})") from None
    try:
        rec = storage.read_record(path)
    except KeyError:  # a benchmark's scratch store (search_halving --stores) carries no record: nothing to check it by
        rec = None
    except Exception as e:
        raise Damaged(f"its provenance record is unreadable ({type(e).__name__})") from None
    if rec is not None:
        if not isinstance(rec, dict) or prov.record_hash(rec) != rec.get("record_hash"):
            raise Damaged("its provenance record was edited")
        if storage.content_hash(ds) != rec.get("content_hash"):
            raise Damaged("its arrays are not those its record names (content hash): audit it")
    for k in ("lr", "best_lr", "val_error", "epochs"):
        if k not in ds.variables:
            raise Damaged(f"it has no {k}")
    lr = np.asarray(ds.lr.values, dtype=float)
    if not (np.isfinite(lr).all() and (lr > 0).all()) or not (np.isfinite(float(ds.best_lr)) and float(ds.best_lr) > 0):
        raise Damaged("a rate that is not a positive number")
    return ds


def _choice(ds: xr.Dataset) -> tuple[float, float, float]:
    """(chosen lr, its mean CV error, the SE of that mean over folds)."""
    lr = ds.lr.values
    i = int(np.argmin(np.abs(np.log10(lr) - np.log10(float(ds.best_lr)))))
    v = ds.val_error.values[i]
    if not np.isfinite(v).all():  # the chosen candidate was trained on every fold: a NaN there is damage, not "same"
        raise Damaged(f"the chosen rate's CV errors are not all numbers ({v.tolist()})")
    return float(lr[i]), float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0


def _seconds(results: Path, rel: Path) -> float | None:
    """The job's seconds from its Snakemake benchmark file (``depthlab.costs.calibrate``'s reader: a damaged timing is refused)."""
    return cost_calibrate.tsv_seconds(results / "benchmarks" / rel.with_suffix(".tsv"))


def compare(full: Path, pruned: Path) -> tuple[list[dict], dict]:
    rows, tot = [], {"epochs_full": 0, "epochs_pruned": 0, "s_full": 0.0, "s_pruned": 0.0, "timed": 0}
    for a_path in sorted(full.glob("mori_ueda/fig*/lrsearch/*/L*.zarr")):
        rel = a_path.relative_to(full)
        b_path = pruned / rel
        if not b_path.is_dir():
            continue
        try:
            a, b = _load(a_path, full), _load(b_path, pruned)
            (la, ea, sa), (lb, eb, sb) = _choice(a), _choice(b)
        except Damaged as e:
            tot.setdefault("skipped", []).append(f"{rel}: {e}")
            continue
        gap = abs(np.log10(la) - np.log10(lb))
        kind = "same" if gap < SAME else ("within SE" if abs(ea - eb) <= np.hypot(sa, sb) else "beyond SE")
        n_pruned = int(b.pruned.values.any(1).sum()) if "pruned" in b else 0
        rows.append(
            {
                "job": f"{rel.parts[1]} {rel.parts[3]} L={rel.stem[1:]}",
                "lr_full": la,
                "lr_pruned": lb,
                "err_full": (ea, sa),
                "err_pruned": (eb, sb),
                "decades": gap,
                "kind": kind,
                "evaluated": (len(a.lr), len(b.lr), n_pruned),
                "epochs": (int(a.epochs.values.sum()), int(b.epochs.values.sum())),
            }
        )
        tot["epochs_full"] += rows[-1]["epochs"][0]
        tot["epochs_pruned"] += rows[-1]["epochs"][1]
        s_a, s_b = _seconds(full, rel.parent / rel.stem), _seconds(pruned, rel.parent / rel.stem)
        if s_a is not None and s_b is not None:
            tot["s_full"] += s_a
            tot["s_pruned"] += s_b
            tot["timed"] += 1
    return rows, tot


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        sys.exit("usage: python docs/compare_searches.py FULL_RESULTS PRUNED_RESULTS")
    rows, tot = compare(Path(argv[1]), Path(argv[2]))
    for line in tot.get("skipped", []):
        print(f"not tabulated: {line}", file=sys.stderr)
    if not rows:
        sys.exit(f"no rate search found in both {argv[1]} and {argv[2]} (mori_ueda/fig*/lrsearch/*/L*.zarr)")
    print(
        "| job | full: lr | CV error | pruned: lr | CV error | decades apart | | rates evaluated (pruned) | epochs full / pruned |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        (ea, sa), (eb, sb), (na, nb, npr) = r["err_full"], r["err_pruned"], r["evaluated"]
        print(
            f"| {r['job']} | {r['lr_full']:.3g} | {ea:.3f} ± {sa:.3f} | {r['lr_pruned']:.3g} | {eb:.3f} ± {sb:.3f} | "
            f"{r['decades']:.2f} | {r['kind']} | {na} / {nb} ({npr}) | {r['epochs'][0]} / {r['epochs'][1]} |"
        )
    kinds = {k: sum(r["kind"] == k for r in rows) for k in ("same", "within SE", "beyond SE")}
    print(f"\n{len(rows)} searches: " + ", ".join(f"{v} {k}" for k, v in kinds.items()))
    print(
        f"epochs (candidates x folds): {tot['epochs_full']} full, {tot['epochs_pruned']} pruned, "
        f"x{tot['epochs_full'] / max(tot['epochs_pruned'], 1):.2f}"
    )
    if tot["timed"]:
        print(
            f"job seconds ({tot['timed']} jobs timed in both): {tot['s_full']:.0f} full, {tot['s_pruned']:.0f} pruned, "
            f"x{tot['s_full'] / max(tot['s_pruned'], 1e-9):.2f}"
        )
    if tot.get("skipped"):
        sys.exit(f"{len(tot['skipped'])} damaged store(s) not tabulated (above)")


if __name__ == "__main__":
    main(sys.argv)
