"""depthlab.neutral: two finished runs compared store by store, array by array and bit for bit, and row by row on the
claims' verdict, effect, SE and z.  (The two builds it makes come from Snakemake runs like the shared smoke run's;
here the comparison is checked on copies of that run, one of them edited.)"""

from __future__ import annotations

import json
import math

import numpy as np
import zarr

from depthlab import neutral


def test_a_run_against_its_copy_is_neutral_and_an_edited_array_or_row_is_not(smoke_run, tmp_path):
    a = smoke_run.copy(tmp_path / "a").results
    b = smoke_run.copy(tmp_path / "b").results
    rep = neutral.compare_runs(a, b)
    assert rep.neutral and rep.rows_equal > 0 and sum(c.equal for c in rep.stages.values()) > 0
    assert "neutral: every store and every row equal" in neutral.render(rep, "a", "b")
    # one float of one store, nudged by one part in 1e6; one row's effect, one ulp
    store = next(p for p in sorted((b / "spectra").rglob("*.zarr")))
    group = zarr.open_group(str(store), mode="r+")
    name, arr = next((n, x) for n, x in group.arrays() if x.dtype.kind == "f" and x.size > 1)
    values = np.asarray(arr[...])
    flat = values.reshape(-1).copy()
    i = int(np.flatnonzero(np.isfinite(flat) & (flat != 0))[0])
    flat[i] *= 1 + 1e-6
    arr[...] = flat.reshape(values.shape)
    claims = b / "mori_ueda" / "claims.json"
    rows = json.loads(claims.read_text())
    row = next(r for r in rows if isinstance(r.get("effect"), float) and math.isfinite(r["effect"]))
    row["effect"] = float(np.nextafter(row["effect"], np.inf))
    claims.write_text(json.dumps(rows))
    rep = neutral.compare_runs(a, b)
    assert not rep.neutral and len(rep.rows_differ) == 1
    moved = [s for s, c in rep.stages.items() if c.different]
    assert len(moved) == 1 and moved[0].startswith("spectra/")
    c = rep.stages[moved[0]]
    assert c.worst_store == str(store.relative_to(b)) and 0 < c.worst < 1e-5, (c.worst, name)
    text = neutral.render(rep, "a", "b")
    assert "NOT neutral: " + moved[0] in text and "effect" in text


def test_relative_difference_sees_nan_shape_and_dtype_changes():
    x = np.array([1.0, np.nan, 3.0])
    assert neutral.relative_difference(x, x.copy()) == 0.0
    assert neutral.relative_difference(x, np.array([1.0, 2.0, 3.0])) == math.inf  # a NaN became a number
    assert neutral.relative_difference(x, x.astype(np.float32)) == math.inf
    assert neutral.relative_difference(x, x[:2]) == math.inf
    assert abs(neutral.relative_difference(np.array([2.0, 4.0]), np.array([2.0, 4.4])) - 0.1) < 1e-12
