"""A second CPU, emulated on this one: MKL's portable path (``MKL_CBWR=COMPATIBLE``) changes torch's float32 GEMM bits,
as another processor's kernels would.  The smoke config built under it must give every claim row the plain run's
verdict, and an audit re-running one folder's stores in the other environment must pass, naming both environments
and never calling a CPU difference a forgery.  And ``cpu_kernels: portable`` must give the same bits under two
emulated environments.  Slow set (CI runs it): a whole smoke build at about twice the matmul time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import smk, smoke_mori_ueda_fig2

pytestmark = [pytest.mark.slow]

OTHER = {"MKL_CBWR": "COMPATIBLE"}
EMULATED = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "OPENBLAS_CORETYPE": "Haswell"}


def _verdicts(results: Path) -> dict[tuple, str]:
    out = {}
    for f in sorted(results.glob("*/claims.json")):
        for r in json.loads(f.read_text()):
            out[(f.parent.name, r["claim"], r["statement"], r["figure"], r["subject"])] = r["verdict"]
    return out


def _audit(target: Path, env: dict, n: int = 8) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        [sys.executable, "-m", "depthlab", "audit", str(target), "--reproduce", str(n)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=3600,
    )


def test_the_smoke_run_on_another_cpu_gives_the_same_verdicts_and_audits_across(smoke_run, tmp_path):
    cfg = yaml.safe_load(smoke_run.config_path.read_text())
    work = tmp_path / "other"
    work.mkdir()
    path = work / "smoke.yaml"
    path.write_text(yaml.safe_dump(cfg))
    smk(work, "--configfile", str(path), env=OTHER, timeout=3000)
    other = work / smoke_run.results.relative_to(smoke_run.work)
    plain, there = _verdicts(smoke_run.results), _verdicts(other)
    assert plain and plain.keys() == there.keys()
    moved = {k: (plain[k], there[k]) for k in plain if plain[k] != there[k]}
    assert not moved, moved
    # the stores do differ (else this emulates nothing)
    from depthlab import storage

    rel = "mori_ueda/fig2/train/2-local/L2.zarr"
    assert (
        storage.read_record(smoke_run.results / rel)["content_hash"] != storage.read_record(other / rel)["content_hash"]
    )
    assert storage.read_record(other / rel)["machine"]["env"]["MKL_CBWR"] == "COMPATIBLE"
    # one folder audited from the other environment, both ways
    for folder, env in ((smoke_run.results, OTHER), (other, {})):
        p = _audit(folder / "claims.md", env)
        assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-3000:]
        assert "another kernel environment" in p.stdout and "MKL_CBWR" in p.stdout, p.stdout[-4000:]
        assert "not what its spec and inputs make" not in p.stdout + p.stderr
        assert "this environment:" in p.stdout


def test_portable_kernels_give_the_same_bits_under_two_emulated_environments(tmp_path):
    cfg = smoke_mori_ueda_fig2()
    cfg["cpu_kernels"] = "portable"
    hashes = []
    for name, env in (("plain", {}), ("emulated", EMULATED)):
        work = tmp_path / name
        work.mkdir()
        path = work / "smoke.yaml"
        cfg["results"] = str(work / "results")
        path.write_text(yaml.safe_dump(cfg))
        smk(work, "--configfile", str(path), env=env, timeout=3000)
        from depthlab import storage

        stores = sorted((work / "results").rglob("*.zarr"))
        assert stores
        recs = {str(p.relative_to(work / "results")): storage.read_record(p) for p in stores}
        assert all(r["machine"]["cpu_kernels"] == "portable" for r in recs.values())
        assert all(r["machine"]["env"]["MKL_CBWR"] == "COMPATIBLE" for r in recs.values())
        hashes.append({k: r["content_hash"] for k, r in recs.items()})
    assert hashes[0] == hashes[1]
    # the portable store audits bitwise from the emulated environment: its kernel environment is the one it recorded
    p = _audit(tmp_path / "plain" / "results" / "claims.md", EMULATED, n=4)
    assert p.returncode == 0 and "bitwise in its own environment" in p.stdout, p.stdout[-3000:] + p.stderr[-2000:]
