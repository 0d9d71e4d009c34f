"""The machine in every record, and an audit that knows another machine (depthlab.machine, depthlab.reproduce)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr
import zarr

from depthlab import machine
from depthlab import storage as st
from depthlab.provenance import canonical_json, record_hash
from depthlab.reproduce import TOLERANCE, array_differences, kind_of


def test_every_store_of_the_smoke_run_records_the_cpu_and_torchs_capability(smoke_run):
    stores = sorted(smoke_run.results.rglob("*.zarr"))
    assert len(stores) > 50
    for p in stores:
        m = st.read_record(p)["machine"]
        assert m["cpu"] and m["cpu"] == machine.cpu_model()
        assert m["torch_cpu_capability"].split(" ")[0] in ("DEFAULT", "AVX2", "AVX512", "NO AVX", "VSX", "ZVECTOR")
        assert m["cpu_kernels"] == "native" and "MKL_CBWR" in m["env"] and "OMP_NUM_THREADS" in m["env"]
        assert any(b["library"] == "openblas" for b in m["blas"]), m["blas"]
    train = st.read_record(smoke_run.results / "mori_ueda/fig2/train/2-local/L2.zarr")["machine"]
    import torch

    assert train["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert any(b["library"] == "torch" and b["version"].startswith("MKL") for b in train["blas"])


def test_the_kernel_key_names_what_changes_bits_and_portable_mode_drops_the_cpu():
    m = {
        "cpu": "A",
        "arch": "x86_64",
        "torch_cpu_capability": "AVX2",
        "cpu_kernels": "native",
        "blas": [{"library": "openblas", "version": "0.3", "architecture": "Haswell", "threads": 1}],
        "env": {"MKL_CBWR": None, "OMP_NUM_THREADS": "1"},
    }
    pk = {"torch": "2.13.0", "numpy": "2.4.6", "snakemake": "9"}
    k = machine.kernel_key(m, pk)
    assert machine.differences(k, machine.kernel_key(m, {**pk, "snakemake": "10"})) == []  # not a kernel package
    other = machine.kernel_key({**m, "env": {"MKL_CBWR": "COMPATIBLE"}}, pk)
    assert machine.differences(k, other) == ["env.MKL_CBWR None -> COMPATIBLE"]
    assert machine.differences(k, machine.kernel_key({**m, "cpu": "B", "torch_cpu_capability": "AVX512"}, pk)) == [
        "capability AVX2 -> AVX512",
        "cpu A -> B",
    ]
    p1 = machine.kernel_key({**m, "cpu_kernels": "portable"}, pk)
    p2 = machine.kernel_key({**m, "cpu": "B", "torch_cpu_capability": "AVX512", "cpu_kernels": "portable"}, pk)
    assert p1 == p2
    assert machine.kernel_key(None) is None and machine.differences(None, k) == ["environment unknown"]


def test_portable_mode_pins_the_kernel_variables_and_refuses_a_typo(monkeypatch):
    for var in machine.PORTABLE:  # registered with monkeypatch, so what apply_portable sets is undone after the test
        monkeypatch.setenv(var, "unset-by-the-test")
        monkeypatch.delenv(var)
    monkeypatch.setenv("DEPTHLAB_CPU_KERNELS", "portable")
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    monkeypatch.setenv("MKL_ENABLE_INSTRUCTIONS", "AVX2")
    machine.apply_portable()
    assert os.environ["MKL_CBWR"] == "COMPATIBLE" and os.environ["ATEN_CPU_CAPABILITY"] == "default"
    assert "MKL_ENABLE_INSTRUCTIONS" not in os.environ
    monkeypatch.setenv("DEPTHLAB_CPU_KERNELS", "portabel")
    with pytest.raises(SystemExit, match="native, portable"):
        machine.apply_portable()


def test_the_portable_test_leaves_the_environment_as_it_found_it():
    """Run after the one above in the same worker: a leaked ATEN_CPU_CAPABILITY would put every later subprocess of the
    suite on other kernels (and make the audit see another environment)."""
    assert os.environ.get("ATEN_CPU_CAPABILITY") != "default" and os.environ.get("OPENBLAS_CORETYPE") != "Prescott"


def test_array_differences_against_numpy():
    a = xr.Dataset({"x": ("i", np.array([1.0, 2.0, 4.0])), "n": ("i", np.array([1, 2, 3])), "s": ((), "a")})
    b = a.copy(deep=True)
    b["x"] = ("i", np.array([1.0, 2.0, 4.0 + 4e-6]))
    got = {name: rel for name, _, rel, _ in array_differences(b, a, 1e-3)}
    assert got == {"x": pytest.approx(np.max(np.abs(b.x.values - a.x.values)) / np.max(np.abs(a.x.values)))}
    c = a.copy(deep=True)
    c["n"] = ("i", np.array([1, 2, 4]))  # a stop epoch that moved: not within any tolerance
    c["x"] = ("i", np.array([1.0, np.nan, 4.0]))  # a NaN where there was a number
    assert {name: rel for name, _, rel, _ in array_differences(c, a, 1.0)} == {"n": np.inf, "x": np.inf}
    assert kind_of({"study": "fractals", "stage": "train"}) == "float32 training"
    assert kind_of({"study": "spectra", "stage": "eigen"}) == "float64" and TOLERANCE["float64"] < 1e-8


def _copy_store(smoke_run, tmp_path, rel: str):
    dst = tmp_path / "results" / rel
    shutil.copytree(smoke_run.results / rel, dst)
    return dst


def test_a_store_that_records_no_environment_is_compared_as_unknown_never_as_a_forgery(smoke_run, tmp_path):
    rel = "mori_ueda/fig2/lrsearch/2-local/L2.zarr"
    data_rel = "mori_ueda/fig2/data/2-local.zarr"
    store, _ = _copy_store(smoke_run, tmp_path, rel), _copy_store(smoke_run, tmp_path, data_rel)
    rec = st.read_record(store)
    old = {k: v for k, v in rec.items() if k not in ("machine", "record_hash")}  # as a store made before this change
    zarr.open_group(str(store), mode="r+").attrs[st.RECORD_ATTR] = canonical_json(
        {**old, "record_hash": record_hash(old)}
    )
    env = {**os.environ, "MKL_CBWR": "COMPATIBLE"}  # and re-run in another environment: the bits differ
    p = subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(store), "--job", rel],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert "environment unknown" in out and "not what its spec and inputs make" not in out
    assert "within the float32 training tolerance" in out or "the same content hash" in out
