"""Helpers shared by the tests (importable as `helpers`: conftest puts tests/ on sys.path)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SHIMS = ROOT / "tests" / "shims"  # a `scontrol` that fails at once (see the file): no SLURM probe delay


def tool_env(env: dict | None = None) -> dict:
    """The environment for a Snakemake or make launch: the venv's tools on PATH, the SLURM probe shim first."""
    return {**os.environ, "PATH": f"{SHIMS}{os.pathsep}{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **(env or {})}


def _newest_write(folder: Path) -> float:
    """The latest modification time of any file or folder below ``folder`` (0 where there is none)."""
    newest = 0.0
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in (*dirnames, *filenames):
            try:
                newest = max(newest, os.lstat(os.path.join(dirpath, name)).st_mtime)
            except OSError:
                pass
    return newest


def run_watched(
    cmd: list[str], *, env: dict, stall: float, watch: Path | None = None, cwd: Path | None = None, poll: float = 5.0
) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True)`` that is killed only when it stops progressing: no new
    byte of output and no file written below ``watch`` for ``stall`` seconds (a hang), however long it runs in all (a
    slow or busy machine).  The kill raises subprocess.TimeoutExpired naming the stall, as a plain timeout did."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env, cwd=cwd)
        seen, last = None, time.monotonic()
        while True:
            try:
                proc.wait(timeout=poll)  # returns the moment it ends
                break
            except subprocess.TimeoutExpired:
                pass
            mark = (os.fstat(out.fileno()).st_size, os.fstat(err.fileno()).st_size, watch and _newest_write(watch))
            if mark != seen:
                seen, last = mark, time.monotonic()
            elif time.monotonic() - last > stall:
                proc.kill()
                proc.wait()
                raise subprocess.TimeoutExpired(cmd, stall, output=f"no progress for {stall:.0f} s (a hang)")
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(cmd, proc.returncode, out.read(), err.read())


def smk(
    workdir: Path,
    *args: str,
    snakefile: Path = ROOT / "Snakefile",
    check: bool = True,
    env: dict | None = None,
    timeout: int = 1800,
) -> subprocess.CompletedProcess:
    """Run Snakemake on ``snakefile`` in ``workdir`` with the default workflow profile and 2 cores.  ``timeout``: the
    seconds it may go without progress (:func:`run_watched`), never its total: a slow machine is not a failure."""
    env = tool_env(env)
    cmd = [
        str(BIN / "snakemake"),
        "-s",
        str(snakefile),
        "--directory",
        str(workdir),
        "--workflow-profile",
        str(snakefile.parent / "workflow" / "profiles" / "default"),
        "--cores",
        "2",
        *args,
    ]
    p = run_watched(cmd, env=env, stall=timeout, watch=workdir)
    if check and p.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed ({p.returncode}):\n{p.stdout[-4000:]}\n{p.stderr[-6000:]}"
        )
    return p


def smoke_mori_ueda_fig2() -> dict:
    """The smoke config cut to one study and one figure: Mori & Ueda's Fig. 2 (a few store chains, a figure, claims)."""
    import yaml

    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    mu = cfg["studies"]["mori_ueda"]
    mu["figures"] = {"fig2": mu["figures"]["fig2"]}
    cfg["studies"] = {"mori_ueda": mu}
    return cfg


def fast_suite_smoke(cfg: dict) -> dict:
    """The smoke config as the fast suite's shared run builds it.
    Every study, stage, figure kind and claim checker still runs; what goes is repetition: Mori & Ueda keeps Figs. 2-4
    (a depth sweep with local and global targets, the lr sweep, label noise), the acceleration study one synthetic
    task, the spectra one sphere dimension and two learning curves, the radial targets one input distribution.  About 130 jobs
    instead of 201.  The slow set (`--run-slow`) and the README's first run keep config/smoke.yaml whole."""
    import copy

    cfg = copy.deepcopy(cfg)
    st = cfg["studies"]
    mu = st["mori_ueda"]["figures"]
    st["mori_ueda"]["figures"] = {k: mu[k] for k in ("fig2", "fig3", "fig4")}
    acc = st["acceleration"]
    acc["datasets"] = ["synthetic"]
    acc["synthetic"]["decays"] = acc["synthetic"]["decays"][:1]
    sp = st["spectra"]
    sp["eigen"]["dims"] = sp["eigen"]["dims"][:1]
    sp["krr"]["kernels"] = sp["krr"]["kernels"][:2]
    st["separation"]["radial"]["distributions"] = st["separation"]["radial"]["distributions"][:1]
    return cfg


def snapshot(results: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file below ``results``: what a read-only user must leave as it found it."""
    return {
        str(p.relative_to(results)): (p.stat().st_size, p.stat().st_mtime_ns) for p in results.rglob("*") if p.is_file()
    }


def store_versions(results: Path) -> dict[str, tuple[int, int]]:
    """Each whole store's version: the inode and modification time of its zarr.json (a rewrite renames a new store
    into place: a new file).  Read while jobs write, with the walk ``depthlab results`` uses (``records.stores_below``:
    ``os.walk``, which skips a folder gone before it is listed; it never enters a store or a temporary one)."""
    from depthlab.records import stores_below

    out = {}
    for store in stores_below(results):
        try:
            st_ = os.stat(store / "zarr.json")
        except FileNotFoundError:  # renamed away or removed since the walk listed it
            continue
        out[str(store.relative_to(results))] = (st_.st_ino, st_.st_mtime_ns)
    return out


@dataclass
class SmokeRun:
    work: Path  # the working directory Snakemake ran in (results/ and .snakemake/ live here)
    config: dict  # the smoke config
    config_path: Path
    terminal: str | None = None  # what the run printed (stdout + stderr); None when the run was reused, not built

    @property
    def results(self) -> Path:
        """Where the run wrote: the config's own ``results``, else results/<the config file's name> (smoke.yaml: results/smoke)."""
        import depthlab.config as dlc

        return self.work / self.config.get("results", dlc.default_results(self.config_path))

    def copy(self, dst: Path) -> "SmokeRun":
        """A copy of the finished run (results and Snakemake's metadata), to tamper with or rerun."""
        shutil.copytree(self.work, dst, symlinks=True, ignore=shutil.ignore_patterns("locks", "incomplete"))
        return SmokeRun(dst, self.config, self.config_path, self.terminal)
