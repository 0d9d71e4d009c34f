"""Every result one line away: a whole stage of a results folder as one labelled, lazy xarray Dataset.

    >>> import depthlab
    >>> train = depthlab.open_results("results/default", "mori_ueda", "train", figure="fig2")
    >>> train.test_error.sel(target="k2_local").mean("seed")          # [depth, lr], read on demand

The job coordinates of each store (``figure``, ``target``, ``depth`` for Mori & Ueda training) come from its
provenance record, never from its path; they become the Dataset's leading dimensions, each store's own dimensions
(``lr``, ``seed``, ...) follow, and where jobs differ in shape (another learning-rate grid, a shorter history) the
union is taken and the rest padded with NaN.  Scalar attributes of the stores (``n_params``, ``width``, ...) become
coordinates along the job dimensions, and so do each job's ``record_hash`` (its provenance) and ``store`` path.

Arrays are read lazily (xarray's lazy indexing, no dask): opening a stage reads only the stores' metadata and their
small index coordinates; indexing then reads, store by store, only the labels it asks for.
Nothing here imports torch, and nothing is ever unpickled.  :func:`list_results` is what ``depthlab ls`` prints.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import safeio
from .records import RECORD_ATTR, RecordError, store_record, stores_below


class ResultsError(RecordError):
    """A results folder does not hold what was asked for; the message names the path."""


@dataclass
class Found:
    """One store of a stage: where it is, its record and its job coordinates."""

    path: Path
    rel: str
    record: dict[str, Any]
    job: dict[str, Any] = field(default_factory=dict)


def _pattern(template: str, job_type) -> re.Pattern:
    """The regular expression of a stage's store paths (to recognise a store of another stage put in its place)."""
    from .study import Job  # noqa: F401  (job_type is a Job subclass)

    cons = job_type.constraints()
    out, pos = "", 0
    for m in re.finditer(r"\{([a-z_]+)\}", template):
        out += re.escape(template[pos : m.start()]) + f"(?:{cons.get(m.group(1), '[^/]+')})"
        pos = m.end()
    return re.compile(out + re.escape(template[pos:]) + r"\Z")


def _config_for(root: Path, config: dict | str | Path | None) -> dict | None:
    """The config whose jobs the stores must be: ``config`` (a dict or a file), else the run's own
    ``<results>/config.used.yaml`` (None when there is none).  The memory check is skipped: the results may come from
    a bigger machine."""
    from . import config as C

    if isinstance(config, dict):
        data, path = config, "the config given"
    else:
        path = Path(config) if config is not None else root / "config.used.yaml"
        if config is None and not path.exists():
            return None
        try:
            data = C.read_yaml(path)
        except C.ConfigError as e:
            raise ResultsError(f"{path}: {e}") from None
    if isinstance(data, dict):
        data.setdefault("device", "auto")  # snapshots before depthlab 0.3 left it out
    try:
        return C.validate(data, memory=False, source=None if isinstance(config, dict) else path)
    except C.ConfigError as e:
        raise ResultsError(f"{path}: {e}") from None


def find(
    results: str | Path, study: str, stage: str, config: dict | str | Path | None = None, complete: bool = True
) -> tuple[list[Found], list[str]]:
    """The stores of one stage: [Found] sorted by path, and the job keys.

    With ``complete`` (the default), the stores must be exactly the stage's jobs under the run's config
    (``<results>/config.used.yaml``, or ``config``): a missing store, a store the config does not ask for, or a store of
    another stage in this stage's place is an error naming its path.
    """
    from .studies import get_study

    root = Path(results)
    if not root.is_dir():
        raise ResultsError(f"{root}: no such results folder")
    try:
        st_study = get_study(study)
    except KeyError as e:
        raise ResultsError(f"{root}: {e.args[0] if e.args else e}") from None
    try:
        st = st_study.stage(stage)
    except KeyError as e:
        raise ResultsError(str(e.args[0])) from None
    if st.kind != "store":
        raise ResultsError(
            f"{study}/{stage} is the {st.kind} stage: its output is <results>/{study}/"
            f"{'figures/<figure>.csv' if st.kind == 'figure' else 'claims.json'}, not stores; stages with "
            f"stores: {', '.join(s.name for s in st_study.store_stages())}"
        )
    keys = [f for f in st.job_type.__dataclass_fields__]
    folder = root / study
    if not folder.is_dir():
        raise ResultsError(f"{folder}: no results of study {study} here")
    pat = _pattern(st.path, st.job_type)
    found: list[Found] = []
    for p in stores_below(folder):
        rel = p.relative_to(root).as_posix()
        try:
            rec = store_record(p)
        except RecordError as e:  # open_results raises ResultsError alone
            raise ResultsError(str(e)) from None
        mine = (rec.get("study"), rec.get("stage")) == (study, stage)
        if not mine:
            if pat.match(p.relative_to(folder).as_posix()):
                raise ResultsError(
                    f"{p}: a store of {rec.get('study')}/{rec.get('stage')} where a {study}/{stage} store belongs"
                )
            continue
        if rec.get("path") != rel:
            raise ResultsError(
                f"{p}: its record says it was written as <results>/{rec.get('path')} (moved or copied into place?)"
            )
        job = rec.get("job")
        if not isinstance(job, dict) or set(job) != set(keys):
            raise ResultsError(f"{p}: its record's job {job!r} does not have the coordinates {keys} of {study}/{stage}")
        found.append(Found(p, rel, rec, job))
    if complete:
        cfg = _config_for(root, config)
        if cfg is not None:
            if study not in cfg.get("studies", {}):
                want = {}
            else:
                from .jobs import JobGraph

                want = {n.path: n.job for n in JobGraph(cfg).stage(study, stage)}
            have = {f.rel for f in found}
            missing, extra = sorted(set(want) - have), sorted(have - set(want))
            where = "the config given" if config is not None else f"{root / 'config.used.yaml'}"
            if missing:
                raise ResultsError(
                    f"{len(missing)} store(s) of {study}/{stage} that {where} asks for are missing, e.g. "
                    f"{root / missing[0]} (run the workflow, or pass complete=False to open what is there)"
                )
            if extra:
                raise ResultsError(
                    f"{len(extra)} store(s) of {study}/{stage} that {where} does not ask for, e.g. "
                    f"{root / extra[0]} (left from another config? pass complete=False to open them too)"
                )
    return found, keys


def _match(value: Any, want: Any) -> bool:
    if isinstance(want, (list, tuple, set, frozenset)):
        return any(_match(value, w) for w in want)
    return value == want or str(value) == str(want)


def open_results(
    results: str | Path,
    study: str,
    stage: str | None = None,
    *,
    verify: bool = False,
    complete: bool = True,
    config: dict | str | Path | None = None,
    **select: Any,
):
    """One ``xarray.Dataset`` for every job of ``study``/``stage`` under the results folder ``results``; without a
    ``stage``, an ``xarray.DataTree`` of every store stage of the study that has stores there, one node per stage.

    ``select`` narrows it: a job coordinate (``figure="fig2"``, ``depth=[1, 2]``) picks stores before anything is
    opened; a store dimension (``seed=0``) is applied with ``.sel`` after.  ``verify=True`` first runs the provenance
    audit of every store it opens (an error lists what failed).  ``complete`` and ``config``: see :func:`find`.
    Works on a copied or archived results folder from any working directory.  (It replaces ``xr.open_mfdataset``,
    which needs dask and cannot lay the jobs out on their coordinates.)
    """
    import xarray as xr

    if stage is None:
        from .studies import get_study

        try:  # an unknown study: one ResultsError naming the studies, as with a stage (not a KeyError)
            stages = get_study(study).store_stages()
        except KeyError as e:
            raise ResultsError(f"{Path(results)}: {e.args[0] if e.args else e}") from None
        nodes = {}
        for st in stages:
            try:
                nodes[st.name] = open_results(results, study, st.name, verify=verify, complete=complete, config=config)
            except ResultsError as e:
                if "no stores of" in str(e):
                    continue
                if "has dimensions" not in str(e):
                    raise
                # jobs of different kinds in one stage (Mori & Ueda's train: a depth sweep's one chosen rate is a
                # variable, an lr sweep's rates a dimension): one child per value of the stage's first job coordinate
                found, keys = find(results, study, st.name, config, complete)
                for v in sorted({f.job[keys[0]] for f in found}, key=str):
                    nodes[f"{st.name}/{v}"] = open_results(
                        results, study, st.name, verify=verify, complete=complete, config=config, **{keys[0]: v}
                    )
        if not nodes:
            raise ResultsError(f"{Path(results) / study}: no stores of {study}")
        tree = xr.DataTree.from_dict(nodes)
        tree.attrs = {"study": study, "results": str(Path(results).resolve()), "stages": list(nodes)}
        return tree

    found, keys = find(results, study, stage, config, complete)
    if not found:
        raise ResultsError(f"{Path(results) / study}: no stores of {study}/{stage}")
    job_sel = {k: v for k, v in select.items() if k in keys}
    dim_sel = {k: v for k, v in select.items() if k not in keys}
    picked = [f for f in found if all(_match(f.job[k], v) for k, v in job_sel.items())]
    if not picked:
        avail = {k: sorted({f.job[k] for f in found}, key=str) for k in job_sel}
        raise ResultsError(f"{Path(results) / study}: no {study}/{stage} store has {job_sel}; values there: {avail}")
    if verify:
        from . import audit

        bad = []
        for f in picked:
            bad += audit.run(str(f.path), None).problems
        if bad:
            raise ResultsError(f"the audit of {len(picked)} store(s) failed: " + "; ".join(bad[:10]))
    stores = []
    for f in picked:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*snakemake_timestamp.*")  # stores written before consolidation
            warnings.filterwarnings("ignore", message=".*onsolidated metadata.*")
            stores.append(xr.open_zarr(f.path, chunks=None))  # lazily indexed: nothing read until asked
    try:
        out = _combine(picked, stores, keys)
    except ResultsError as e:
        kinds = sorted({f.job[keys[0]] for f in picked}, key=str) if keys else []
        if "has dimensions" not in str(e) or len(kinds) < 2:
            raise
        raise ResultsError(
            f"{e}: {study}/{stage} holds jobs of different kinds (e.g. a depth sweep at one chosen rate "
            f"and an lr sweep); open one {keys[0]} at a time, e.g. open_results(results, {study!r}, "
            f"{stage!r}, {keys[0]}={kinds[0]!r}), or the whole study as a tree, open_results(results, "
            f"{study!r})"
        ) from None
    out.attrs = {
        "study": study,
        "stage": stage,
        "results": str(Path(results).resolve()),
        "stores": len(picked),
        "job_coordinates": list(keys),
    }
    if dim_sel:
        unknown = sorted(set(dim_sel) - set(out.dims) - set(out.coords))
        if unknown:
            raise ResultsError(
                f"{study}/{stage}: cannot select on {unknown}; job coordinates {keys}, store dimensions "
                f"{sorted(set(out.dims) - set(keys))}"
            )
        out = out.sel(dim_sel)
    return out


def _sorted_unique(values: list) -> list:
    uniq = list(dict.fromkeys(values))
    try:
        return sorted(uniq)
    except TypeError:
        return uniq


def _combine(picked: list[Found], stores: list, keys: list[str]):
    """The stores of one stage on one grid: the job coordinates first, then each store dimension's union of labels;
    every variable a lazy :class:`_Grid` that reads, per job, only what an indexing asks for."""
    import numpy as np
    import xarray as xr
    from xarray.core import indexing

    job_values = {k: _sorted_unique([f.job[k] for f in picked]) for k in keys}
    job_shape = tuple(len(job_values[k]) for k in keys)
    cell = [tuple(job_values[k].index(f.job[k]) for k in keys) for f in picked]
    # store dimensions: the union of their labels (one shared index kept as it is); positional where a store has none
    labels: dict[str, list] = {}
    for d in dict.fromkeys(d for ds in stores for d in ds.dims):
        if all(d in ds.indexes for ds in stores if d in ds.dims):
            have = [ds.indexes[d] for ds in stores if d in ds.dims]
            same = all(ix.equals(have[0]) for ix in have)
            labels[d] = list(have[0]) if same else _sorted_unique([v for ix in have for v in ix])
        else:
            labels[d] = list(range(max(ds.sizes[d] for ds in stores if d in ds.dims)))
    for d in labels:
        if d in keys:
            raise ResultsError(f"{picked[0].path}: its dimension {d!r} is also a job coordinate of the stage")

    def positions(ds, d) -> np.ndarray:
        """For each label of d's union, its position in this store (-1: absent)."""
        pos = {v: i for i, v in enumerate(ds.indexes[d])} if d in ds.indexes else {i: i for i in range(ds.sizes[d])}
        return np.array([pos.get(v, -1) for v in labels[d]], dtype=np.int64)

    names = list(dict.fromkeys(n for ds in stores for n in ds.variables if n not in ds.indexes and n not in keys))
    variables, coord_names = {}, set()
    for name in names:
        holders = [(i, ds) for i, ds in enumerate(stores) if name in ds.variables]
        dims = holders[0][1][name].dims
        for i, ds in holders:
            if set(ds[name].dims) != set(dims):
                raise ResultsError(
                    f"{picked[i].path}: its {name} has dimensions {ds[name].dims}, another store's {dims}"
                )
        cells = {}
        padded = len(holders) < len(picked) or len(picked) < int(np.prod(job_shape))
        for i, ds in holders:
            var = ds[name].variable.transpose(*dims)
            inv = [positions(ds, d) for d in dims]
            padded |= any(bool((p < 0).any()) for p in inv)
            cells[cell[i]] = (var, inv)
        dtype = np.result_type(*[ds[name].dtype for _, ds in holders])
        dtype, fill = _padded_dtype(dtype) if padded else (dtype, None)
        grid = _Grid(cells, job_shape, tuple(len(labels[d]) for d in dims), dtype, fill)
        variables[name] = xr.Variable(
            tuple(keys) + tuple(dims), indexing.LazilyIndexedArray(grid), attrs=dict(holders[0][1][name].attrs)
        )
        if any(name in ds.coords for _, ds in holders):
            coord_names.add(name)
    # per job: its provenance, where its store is, and the stores' scalar attributes
    per_job: dict[str, dict] = {"record_hash": {}, "store": {}}
    for i, (f, ds) in enumerate(zip(picked, stores)):
        per_job["record_hash"][cell[i]] = f.record.get("record_hash")
        per_job["store"][cell[i]] = f.rel
        for k, v in ds.attrs.items():
            if (
                k != RECORD_ATTR
                and isinstance(v, (int, float, str))
                and not isinstance(v, bool)
                and k not in names
                and k not in keys
            ):
                per_job.setdefault(k, {})[cell[i]] = v
    coords = {k: (k, np.asarray(job_values[k])) for k in keys}
    coords.update({d: (d, np.asarray(v)) for d, v in labels.items()})
    for k, vals in per_job.items():
        arr = np.asarray(list(vals.values()))
        dtype, fill = _padded_dtype(arr.dtype) if len(vals) < int(np.prod(job_shape)) else (arr.dtype, None)
        full = np.full(job_shape, fill, dtype=dtype) if fill is not None else np.empty(job_shape, dtype=dtype)
        for c, v in vals.items():
            full[c] = v
        coords[k] = (tuple(keys), full)
    out = xr.Dataset(variables, coords=coords)
    return out.set_coords(sorted(coord_names))


def _padded_dtype(dtype):
    """The dtype and fill value of an array padded where a job or label is missing: NaN for numbers (bool and int
    become float64), None for text."""
    import numpy as np

    if dtype.kind in "biu":
        return np.dtype(np.float64), np.nan
    if dtype.kind in "fc":
        return dtype, np.nan
    if dtype.kind in "mM":
        return dtype, np.datetime64("NaT") if dtype.kind == "M" else np.timedelta64("NaT")
    return np.dtype(object), None


def _grid_class():
    from xarray.backends import BackendArray
    from xarray.core import indexing

    class Grid(BackendArray):
        """A variable of many stores as one lazy array [job dims..., store dims...]: indexing reads, per job cell it
        touches, only the requested labels of that store (xarray's outer indexing), and pads the rest."""

        def __init__(self, cells, job_shape, dim_shape, dtype, fill):
            self.cells, self.job_shape, self.fill = cells, job_shape, fill
            self.shape = tuple(job_shape) + tuple(dim_shape)
            self.dtype = dtype

        def __getitem__(self, key):
            return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.OUTER, self._read)

        def _read(self, key):
            import itertools

            import numpy as np

            idx = [np.atleast_1d(np.arange(n)[k]) for n, k in zip(self.shape, key)]
            out = (
                np.full([len(i) for i in idx], self.fill, dtype=self.dtype)
                if self.fill is not None
                else np.empty([len(i) for i in idx], dtype=self.dtype)
            )
            nj = len(self.job_shape)
            for at in itertools.product(*[range(len(i)) for i in idx[:nj]]):
                found = self.cells.get(tuple(int(idx[a][p]) for a, p in enumerate(at)))
                if found is None:
                    continue
                var, inv = found
                sel_out, sel_store = [], []
                for a, m in enumerate(inv):
                    s = m[idx[nj + a]]
                    ok = np.flatnonzero(s >= 0)
                    sel_out.append(ok)
                    sel_store.append(s[ok])
                if any(len(o) == 0 for o in sel_out):
                    continue
                block = np.asarray(var[tuple(sel_store)].values) if inv else np.asarray(var.values)
                out[(*at, *np.ix_(*sel_out))] = block
            drop = tuple(a for a, k in enumerate(key) if isinstance(k, (int, np.integer)))
            return out.squeeze(axis=drop) if drop else out

    return Grid


def _Grid(*args):
    global _GRID
    if _GRID is None:
        _GRID = _grid_class()
    return _GRID(*args)


_GRID = None


# ---- depthlab ls -------------------------------------------------------------------------------------------------------


def _size(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(dirpath) / name).lstat().st_size
            except OSError:
                pass
    return total


def _human(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _figure_state(root: Path, prov_path: Path, records: dict[str, str]) -> str:
    """'up to date', or why not: its files differ from what was recorded, or an input store was rewritten since."""
    try:
        rec = safeio.read_json(prov_path)
    except (OSError, ValueError) as e:
        return f"unreadable provenance ({e})"
    if not isinstance(rec, dict):
        return f"unreadable provenance ({prov_path.name} is a JSON {type(rec).__name__}, not a record)"
    stem = prov_path.with_name(prov_path.name.removesuffix(".provenance.json"))
    for suffix, key in ((".csv", "csv_sha256"), (".pdf", "pdf_sha256")):
        f = stem.with_suffix(suffix)
        if not f.exists():
            return f"{suffix[1:]} missing"
        try:
            if safeio.file_hash(f) != rec.get(key):
                return f"{suffix[1:]} edited"
        except (OSError, ValueError) as e:
            return f"{suffix[1:]} unreadable ({e})"
    inputs = rec.get("inputs", {}) if isinstance(rec.get("inputs"), dict) else {}
    changed = sum(1 for inp in inputs.values() if records.get(inp.get("path")) != inp.get("record_hash"))
    return "up to date" if not changed else f"stale: {changed} of {len(inputs)} input stores changed since"


def list_results(results: str | Path) -> str:
    """Per study and stage: jobs, their coordinates' values and the size on disk; per figure, whether it is up to date.
    Reads the stores' root metadata only."""
    from .machine import summary as machine_summary
    from .studies import get_study, names

    root = Path(results)
    if not root.is_dir():
        raise ResultsError(f"{root}: no such results folder")
    lines = [f"results folder {root.resolve()}"]
    known = set(names())
    for other in sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and p.name not in known and not p.name.startswith(".") and p.name not in ("logs", "benchmarks")
    ):
        first = next(stores_below(other), None)
        if first is None:
            continue
        try:
            rec = store_record(first)
        except RecordError:
            continue
        src = rec.get("study_source") or {}
        where = f" (its code was in {src['folder']}, {src.get('version')})" if src.get("folder") else ""
        lines.append(
            f"{other.name}: stores of study {rec.get('study', other.name)!r}, whose code this checkout does not have{where}; "
            "set DEPTHLAB_STUDY_PATH to the folder holding it to list them"
        )
    for study_dir in sorted(p for p in root.iterdir() if p.is_dir() and p.name in known):
        study = get_study(study_dir.name)
        by_stage: dict[str, list[Found]] = {}
        records: dict[str, str] = {}
        machines: dict[str, int] = {}
        for p in stores_below(study_dir):
            rel = p.relative_to(root).as_posix()
            try:
                rec = store_record(p)
            except RecordError as e:
                lines.append(f"  ! {e}")
                continue
            records[rel] = rec.get("record_hash")
            where = machine_summary(rec.get("machine"))
            machines[where] = machines.get(where, 0) + 1
            by_stage.setdefault(str(rec.get("stage")), []).append(Found(p, rel, rec, rec.get("job") or {}))
        lines.append(f"{study.name}: {study.title}")
        for st in study.store_stages():
            got = by_stage.get(st.name, [])
            if not got:
                lines.append(f"  {st.name:<14} no stores")
                continue
            size = sum(_size(f.path) for f in got)
            coords = []
            for k in st.job_type.__dataclass_fields__:
                vals = sorted({f.job.get(k) for f in got}, key=lambda v: (isinstance(v, str), v))
                shown = ", ".join(map(str, vals[:8])) + (f", ... ({len(vals)})" if len(vals) > 8 else "")
                coords.append(f"{k} [{shown}]")
            lines.append(
                f"  {st.name:<14} {len(got):>4} store(s) {_human(size):>9}  " + ("  ".join(coords) or "(one job)")
            )
        for where, n in sorted(machines.items()):
            lines.append(f"  made on       {n:>4} store(s): {where}")
        figs = sorted((study_dir / "figures").glob("*.provenance.json")) if (study_dir / "figures").is_dir() else []
        for prov in figs:
            name = prov.name.removesuffix(".provenance.json")
            lines.append(f"  figure {name:<22} {_figure_state(root, prov, records)}")
    return "\n".join(lines)
