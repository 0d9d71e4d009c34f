"""The Snakemake workflow end to end on config/smoke.yaml (every study): run, no-op rerun, partial reruns
after a config change and after code changes, the documented commands, recovery from a kill, and the audit."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from helpers import BIN, ROOT, smk, snapshot, tool_env

import depthlab.storage as st
from depthlab import provenance as prov
from depthlab.studies import get_study
from depthlab.study import Ref

# stages that train nets, per study: editing the trainer must rerun exactly these (and what depends on them)
TRAINING_STAGES = {
    "mori_ueda": ["lrsearch", "train"],
    "separation": ["sawtooth", "radial"],
    "fractals": ["train", "cnn"],
}


def planned(p: subprocess.CompletedProcess) -> Counter:
    """Job counts per rule from a dry run's 'Job stats' table (empty when there is nothing to do)."""
    out = p.stdout + p.stderr
    if "Nothing to be done" in out:
        return Counter()
    table = out[out.index("Job stats:") :]
    rows = re.findall(r"^(\S+)\s+(\d+)$", table[: table.index("total")], flags=re.M)
    return Counter({rule: int(n) for rule, n in rows})


def files(results: Path) -> dict[str, int]:
    """mtime of every store, figure file and report under results/ (by relative path)."""
    out = {}
    for p in list(results.glob("*/**/*.zarr")) + list(results.glob("*/figures/*")) + list(results.glob("**/claims*")):
        rel = p.relative_to(results)
        if rel.parts[0] not in ("logs", "benchmarks"):
            out[str(rel)] = p.stat().st_mtime_ns
    return out


def checkout_copy(dst: Path) -> Path:
    """A copy of the checkout's workflow (Snakefile, workflow/, config/, envs/) to edit code in."""
    for name in ("workflow", "config", "envs"):
        shutil.copytree(ROOT / name, dst / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(ROOT / "Snakefile", dst / "Snakefile")
    return dst / "Snakefile"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def audit(cwd: Path, *args: str, env: dict | None = None, package: Path | None = None) -> subprocess.CompletedProcess:
    """`depthlab audit ...` (optionally with the package of a checkout copy, to audit against edited code)."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); from depthlab.cli import main; main(sys.argv[2:])"
    cmd = [sys.executable, "-c", code, str(package or ROOT / "workflow"), "audit", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})


# ---- the run -----------------------------------------------------------------------------


def test_run_builds_every_study_and_the_index(smoke_run):
    res = smoke_run.results
    for study in smoke_run.config["studies"]:
        s = get_study(study)
        for fig in s.figures(smoke_run.config):
            for ext in ("png", "pdf", "csv", "provenance.json"):
                assert (res / study / "figures" / f"{fig}.{ext}").stat().st_size > 0, (study, fig, ext)
        verdicts = json.loads((res / study / "claims.json").read_text())
        assert verdicts and all(v["claim"] for v in verdicts)
        assert f"[{s.title}]({study}/claims.md)" in (res / "claims.md").read_text()
        for stage in s.store_stages():
            for job in s.jobs(smoke_run.config, stage.name):
                rec = st.read_record(res / study / s.path(Ref(stage.name, job)))
                assert rec["study"] == study and rec["stage"] == stage.name and rec["code_fingerprint"]
                assert stage.job(rec["job"]) == job
                assert st.content_hash(st.read_store(res / study / s.path(Ref(stage.name, job)))) == rec["content_hash"]
    assert (res / "config.used.yaml").exists()
    # a numpy-only stage never imports torch: the record says so (the CLI saves about a second per such job)
    fr = get_study("fractals")
    data = fr.jobs(smoke_run.config, "data")[0]
    assert st.read_record(res / "fractals" / fr.path(Ref("data", data)))["device"] == "cpu (numpy only)"
    assert not list(res.rglob("*.tmp-*")) and not list(res.rglob("*.ckpt*")), (
        "no temporary file may survive a finished run"
    )


def test_rerun_has_nothing_to_do_even_on_another_device(smoke_run):
    """The rerun that does nothing; and `device` is no rerun trigger (it reaches jobs through the environment)."""
    p = smk(smoke_run.work, "--configfile", str(smoke_run.config_path), "--config", "device=cpu", "--dry-run")
    assert planned(p) == Counter(), p.stdout[-3000:]


def test_changing_one_depth_reruns_only_that_depth_and_the_figure(smoke_run, tmp_path):
    run = smoke_run.copy(tmp_path / "w")
    before = files(run.results)
    changed = yaml.safe_load(run.config_path.read_text())
    fig2 = changed["studies"]["mori_ueda"]["figures"]["fig2"]
    old = sorted(fig2["depths"])
    fig2["depths"] = [old[0], 3]
    new_cfg = tmp_path / "changed" / run.config_path.name  # same file name: the same results folder (results/smoke)
    new_cfg.parent.mkdir()
    new_cfg.write_text(yaml.safe_dump(changed))
    # another file with other values: the folder belongs to the first config unless the run says to continue it
    p = smk(run.work, "--configfile", str(new_cfg), check=False)
    assert p.returncode != 0 and "differs from it at: studies.mori_ueda.figures.fig2.depths" in p.stdout + p.stderr
    assert files(run.results) == before, "the refused run touched the folder"
    smk(run.work, "--configfile", str(new_cfg), env={"DEPTHLAB_CONTINUE": "1"})
    after = files(run.results)
    rerun = {k for k in after if after[k] != before.get(k)}
    targets = sorted(fig2["targets"])
    expected = {f"mori_ueda/fig2/{kind}/{t}/L3.zarr" for t in targets for kind in ("lrsearch", "train", "ntk")}
    expected |= {f"mori_ueda/figures/fig2.{ext}" for ext in ("png", "pdf", "csv", "provenance.json")}
    expected |= {
        "mori_ueda/claims.md",
        "mori_ueda/claims.json",
        "mori_ueda/claims.forest.png",
        "mori_ueda/claims.html",
        "mori_ueda/claims.provenance.json",
        "claims.md",
        "claims.html",
        "claims.provenance.json",
    }
    assert rerun == expected
    for t in targets:  # the first depth's stores are the very ones from before
        assert after[f"mori_ueda/fig2/train/{t}/L{old[0]}.zarr"] == before[f"mori_ueda/fig2/train/{t}/L{old[0]}.zarr"]


# ---- reruns follow code ---------------------------------------------------------------------


def test_trainer_stages_are_exactly_those_whose_code_imports_the_trainer(smoke_run):
    for study in smoke_run.config["studies"]:
        using = sorted(
            s.name for s in get_study(study).stages if "depthlab.core.trainer" in prov.closure(s.fingerprint_modules)
        )
        assert using == sorted(TRAINING_STAGES.get(study, [])), study


@pytest.fixture
def code_copy(smoke_run, tmp_path):
    """A finished smoke run and a checkout copy to edit; dry runs use the copy's Snakefile (and so its package)."""
    run = smoke_run.copy(tmp_path / "w")
    snakefile = checkout_copy(tmp_path / "checkout")
    return run, snakefile


def dry(run, snakefile) -> Counter:
    return planned(smk(run.work, "--configfile", str(run.config_path), "--dry-run", snakefile=snakefile))


def test_editing_the_trainer_reruns_exactly_the_training_jobs_and_their_dependents(code_copy):
    run, snakefile = code_copy
    edit(
        snakefile.parent / "workflow/depthlab/core/trainer.py",
        "    t0 = time.perf_counter()\n",
        "    t0 = time.perf_counter()\n    t0 = t0 + 0.0  # a code change (no-op numerically)\n",
    )
    jobs = dry(run, snakefile)
    cfg = run.config
    want = Counter()
    for study, stages in TRAINING_STAGES.items():
        s = get_study(study)
        trained = {Ref(stage, job) for stage in stages for job in s.jobs(cfg, stage)}
        for stage in stages:
            want[f"{study}_{stage}"] = len(s.jobs(cfg, stage))
        figs = [f for f in s.figures(cfg) if trained & set(s.figure_inputs(cfg, f).values())]
        want["figure"] += len(figs)
        want["claims"] += bool(set(figs) & set(s.claims_figures(cfg)))
    want.update({"claims_index": 1, "all": 1})
    assert jobs == want


def test_reruns_follow_what_a_stage_runs(code_copy):
    """On a finished smoke run, in one dry run: the hinge loss (fractals only: no Mori & Ueda job), the CUDA-only
    kernel-regression path (Mori & Ueda ntk only: no data stage), the spectra plots (its figures and claims only), and
    docstrings and comments anywhere (nothing)."""
    run, snakefile = code_copy
    pkg = snakefile.parent / "workflow/depthlab"
    edit(pkg / "core/losses/hinge.py", "torch.relu(1.0 - y * out).mean(1)", "torch.relu(1.0 - y * out).mean(1) * 1.0")
    edit(
        pkg / "core/kernel_regression.py",
        "    pred = np.empty((K, D, T.shape[0]))",
        "    pred = np.zeros((K, D, T.shape[0]))",
    )
    edit(pkg / "studies/spectra/plots.py", 'ax.set_xlabel("k")', 'ax.set_xlabel("degree k")')
    edit(pkg / "core/trainer.py", '"""The training loop', '"""A reworded docstring. The training loop')
    edit(
        pkg / "studies/mori_ueda/train.py",
        "    lrs = np.atleast_1d",
        "    # a comment is not code\n    lrs = np.atleast_1d",
    )
    cfg = run.config
    fr, mu, sp = get_study("fractals"), get_study("mori_ueda"), get_study("spectra")
    fr_figs = [f for f in fr.figures(cfg) if any(r.stage == "train" for r in fr.figure_inputs(cfg, f).values())]
    assert dry(run, snakefile) == Counter(
        {
            "fractals_train": len(fr.jobs(cfg, "train")),
            "mori_ueda_ntk": len(mu.jobs(cfg, "ntk")),
            "figure": len(fr_figs) + len(mu.figures(cfg)) + len(sp.figures(cfg)),
            "claims": 3,
            "claims_index": 1,
            "all": 1,
        }
    )


# ---- the documented commands (README), with the smoke config in place of the default ----------


def make(*args: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=1800, env=tool_env(env)
    )


def test_documented_make_commands(smoke_run, tmp_path):
    """README: `make run SMK_ARGS=...` with a figure, a study and a store as targets (one call), and `make report`."""
    run = smoke_run.copy(tmp_path / "w")
    cfg = f"CONFIG={run.config_path}"
    p = make(
        "run",
        cfg,
        f"SMK_ARGS=--directory {run.work} mori_ueda_fig2 spectra results/smoke/mori_ueda/fig2/train/2-local/L2.zarr",
    )
    assert p.returncode == 0 and "Nothing to be done" in p.stdout + p.stderr, p.stdout[-3000:] + p.stderr[-3000:]
    p = make("report", cfg, f"SMK_ARGS=--directory {run.work}", f"REPORT={tmp_path / 'report.html'}")
    assert p.returncode == 0, p.stderr[-3000:]
    html = (tmp_path / "report.html").read_text()
    for study in run.config["studies"]:
        for fig in get_study(study).figures(run.config):
            assert f"{study} / {fig}" in html, (study, fig)  # its caption
    assert "claims.html" in html and "config.used.html" in html  # shown in place: pages, not markdown downloads


def test_documented_snakemake_command(smoke_run, tmp_path):
    """README: `. .venv/bin/activate; snakemake --workflow-profile workflow/profiles/default --configfile FILE TARGET`."""
    run = smoke_run.copy(tmp_path / "w")
    env = tool_env()
    p = subprocess.run(
        [
            "snakemake",
            "--workflow-profile",
            "workflow/profiles/default",
            "--configfile",
            str(run.config_path),
            "--directory",
            str(run.work),
            "mori_ueda_fig2",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0 and "Nothing to be done" in p.stdout + p.stderr, p.stderr[-3000:]


def test_lint_passes(root, tmp_path):
    p = smk(tmp_path, "--configfile", str(root / "config" / "smoke.yaml"), "--lint", check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "good condition" in p.stdout + p.stderr
    # and snakefmt, with the project's line length (pyproject.toml [tool.snakefmt])
    files = [str(root / "Snakefile"), *map(str, sorted((root / "workflow" / "rules").glob("*.smk")))]
    f = subprocess.run(
        [str(BIN / "snakefmt"), "--check", "--config", str(ROOT / "pyproject.toml"), *files],
        capture_output=True,
        text=True,
    )
    assert f.returncode == 0, f.stdout + f.stderr


# ---- interrupted runs -------------------------------------------------------------------------


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_killed_run_recovers_with_the_documented_commands(smoke_run, tmp_path):
    """SIGKILL the whole Snakemake process group mid-run; --unlock + rerun finishes with the same arrays.

    On a copy of the smoke run whose Fig. 2 lr searches, nets and figure were removed, so only those are rebuilt."""
    run = smoke_run.copy(tmp_path / "w")
    res = run.results
    for kind in ("lrsearch", "train"):
        shutil.rmtree(res / "mori_ueda" / "fig2" / kind)
    for f in (res / "mori_ueda" / "figures").glob("fig2.*"):
        f.unlink()
    base = [
        str(BIN / "snakemake"),
        "-s",
        str(ROOT / "Snakefile"),
        "--directory",
        str(run.work),
        "--workflow-profile",
        str(ROOT / "workflow" / "profiles" / "default"),
        "--cores",
        "2",
        "--configfile",
        str(run.config_path),
        "--",
    ]  # --configfile takes several values: targets after --
    env = tool_env()
    p = subprocess.Popen(
        [*base, "mori_ueda_fig2"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.time() + 300
    while not list((res / "mori_ueda" / "fig2" / "lrsearch").glob("*/*.zarr")):
        assert p.poll() is None and time.time() < deadline, "the run ended before it could be killed"
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert not (res / "mori_ueda" / "figures" / "fig2.png").exists(), "killed before the end"
    subprocess.run([*base[:-1], "--unlock"], env=env, check=True, capture_output=True)
    done = subprocess.run([*base, "mori_ueda_fig2"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    assert not list(res.rglob("*.tmp-*")) and not list(res.rglob("*.ckpt*"))
    fig2 = smoke_run.config["studies"]["mori_ueda"]["figures"]["fig2"]
    for t in fig2["targets"]:
        for L in fig2["depths"]:
            a = st.read_record(res / f"mori_ueda/fig2/train/{t}/L{L}.zarr")["content_hash"]
            assert a == st.read_record(smoke_run.results / f"mori_ueda/fig2/train/{t}/L{L}.zarr")["content_hash"]


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_a_store_deleted_by_hand_is_rebuilt_with_everything_downstream(smoke_run, tmp_path):
    """With the figure downstream still present, `make run` said "Nothing to be done" for a store
    deleted by hand (or lost when a kill interrupted its replacement).  Every store of a target is itself a target now:
    the store and what reads it are rebuilt, to the same arrays."""
    run = smoke_run.copy(tmp_path / "w")
    rel = "mori_ueda/fig2/lrsearch/2-local/L1.zarr"
    shutil.rmtree(run.results / rel)
    dry = smk(run.work, "--configfile", str(run.config_path), "-n", "--quiet", "rules")
    assert "mori_ueda_lrsearch" in dry.stdout and "mori_ueda_train" in dry.stdout and "figure" in dry.stdout, (
        dry.stdout[-3000:]
    )
    smk(run.work, "--configfile", str(run.config_path))
    for r in (rel, "mori_ueda/fig2/train/2-local/L1.zarr"):
        assert st.read_record(run.results / r)["content_hash"] == st.read_record(smoke_run.results / r)["content_hash"]
    assert "Nothing to be done" in smk(run.work, "--configfile", str(run.config_path), "-n").stdout


# ---- the audit: integrity always fails, history fails only with --strict ----------------------


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_audit_traces_a_figure_to_its_data_and_passes_from_anywhere(smoke_run, tmp_path):
    p = audit(
        tmp_path, str(smoke_run.results / "mori_ueda/figures/fig2.png"), "--configfile", str(smoke_run.config_path)
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    for needle in (
        "figure mori_ueda/figures/fig2",
        "mori_ueda/fig2/train/2-local/L1.zarr",
        "mori_ueda/fig2/lrsearch/2-local/L1.zarr",
        "mori_ueda/fig2/ntk/2-global/L2.zarr",
        "mori_ueda/fig2/data/2-local.zarr",
        "audit OK",
    ):
        assert needle in p.stdout
    # the claims index reaches every study's report, figure and store
    p = audit(tmp_path, str(smoke_run.results / "claims.md"))
    assert p.returncode == 0, p.stderr
    for study in smoke_run.config["studies"]:
        assert f"claims {study}/claims.md" in p.stdout


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_audit_of_results_made_by_another_commit(smoke_run, tmp_path):
    """After a `git pull`: unchanged stage code passes with a note; changed stage code fails with --strict only."""
    target = str(smoke_run.results / "mori_ueda/figures/fig2.png")
    p = audit(tmp_path, target, env={"DEPTHLAB_CODE_VERSION": "f" * 40})
    assert p.returncode == 0, p.stderr
    assert "the code its stage runs is unchanged" in p.stdout
    p = audit(tmp_path, target, "--strict", env={"DEPTHLAB_CODE_VERSION": "f" * 40})
    assert p.returncode == 0, p.stderr
    snakefile = checkout_copy(tmp_path / "checkout")
    edit(
        snakefile.parent / "workflow/depthlab/core/trainer.py",
        "    t0 = time.perf_counter()\n",
        "    t0 = time.perf_counter()\n    t0 = t0 + 0.0\n",
    )
    pkg = snakefile.parent / "workflow"
    p = audit(tmp_path, target, env={"DEPTHLAB_CODE_VERSION": "f" * 40}, package=pkg)
    assert p.returncode == 0 and "the code its stage runs has changed" in p.stdout, p.stderr
    p = audit(tmp_path, target, "--strict", env={"DEPTHLAB_CODE_VERSION": "f" * 40}, package=pkg)
    assert p.returncode == 1 and "mori_ueda/fig2/train/2-local/L1.zarr: made by code" in p.stderr
    assert "data/2-local.zarr: made by code" not in p.stderr, "the data stage's code did not change"


def test_audit_fails_on_a_flipped_chunk_byte_a_changed_config_and_a_missing_store(smoke_run, tmp_path):
    run = smoke_run.copy(tmp_path / "w")
    chunk = next(
        p
        for p in (run.results / "mori_ueda/fig2/data/2-local.zarr/y_test").rglob("*")
        if p.is_file() and p.name != "zarr.json"
    )
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0x01
    chunk.write_bytes(bytes(data))
    p = audit(tmp_path, str(run.results / "mori_ueda/figures/fig2.pdf"))
    assert p.returncode == 1 and "mori_ueda/fig2/data/2-local.zarr" in p.stderr, p.stdout[-2000:] + p.stderr
    p = audit(tmp_path, str(run.results / "mori_ueda/figures/fig2.pdf"), "--strict")
    assert p.returncode == 1
    other = yaml.safe_load(run.config_path.read_text())
    other["seed"] = 99
    other_path = tmp_path / "other.yaml"
    other_path.write_text(yaml.safe_dump(other))
    p = audit(
        tmp_path, str(smoke_run.results / "mori_ueda/fig2/train/2-global/L1.zarr"), "--configfile", str(other_path)
    )
    assert p.returncode == 1 and "made by a different config (differs in: data" in p.stderr
    shutil.rmtree(run.results / "mori_ueda/fig2/ntk/2-global/L2.zarr")
    p = audit(tmp_path, str(run.results / "mori_ueda/figures/fig2.csv"))
    assert "mori_ueda/fig2/ntk/2-global/L2.zarr: missing" in p.stderr


def test_each_job_ran_on_one_thread(smoke_run):
    """One job per core and one torch thread per job: every store of a torch-using stage records `cpu:1threads`."""
    devices = set()
    for study in smoke_run.config["studies"]:
        s = get_study(study)
        for stage in s.store_stages():
            for job in s.jobs(smoke_run.config, stage.name):
                devices.add(st.read_record(smoke_run.results / study / s.path(Ref(stage.name, job)))["device"])
    assert devices == {"cpu:1threads", "cpu (numpy only)"}, devices


# ---- a study is one folder -----------------------------------------------------------------


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_a_study_is_one_folder(smoke_run, tmp_path):
    """README "Adding a study": the example study of docs/example_study/tiny, copied into a temporary folder, is found
    through $DEPTHLAB_STUDY_PATH, validated, built beside the smoke run by Snakemake (its rule generated from the
    registry), reported and audited.  No other file is edited: its folder and a config section are all it takes, and
    adding it (with its own random stream) reruns nothing of the other studies."""
    run = smoke_run.copy(tmp_path / "w")
    studies = tmp_path / "my_studies"
    shutil.copytree(
        ROOT / "docs" / "example_study" / "tiny", studies / "tiny", ignore=shutil.ignore_patterns("__pycache__")
    )
    cfg = yaml.safe_load(run.config_path.read_text())
    cfg["studies"]["tiny"] = {"sizes": [10, 1000]}
    cfg_path = tmp_path / "with_tiny" / run.config_path.name  # the smoke config's name: its results folder
    cfg_path.parent.mkdir()
    cfg_path.write_text(yaml.safe_dump(cfg))
    env = {"DEPTHLAB_STUDY_PATH": str(studies), "DEPTHLAB_CONTINUE": "1"}  # another config file for the smoke folder
    before = files(run.results)
    jobs = planned(smk(run.work, "--configfile", str(cfg_path), "--dry-run", env=env))
    assert jobs == Counter(
        {"tiny_draws": 2, "figure": 1, "claims": 1, "claims_index": 1, "config_snapshot": 1, "all": 1}
    )
    smk(run.work, "--configfile", str(cfg_path), env=env)
    after = files(run.results)
    assert {k for k in before if after[k] != before[k]} == {"claims.md", "claims.html", "claims.provenance.json"}, (
        "no other study reran"
    )
    verdict = json.loads((run.results / "tiny" / "claims.json").read_text())[0]
    assert verdict["claim"] == "T1" and verdict["holds"] is not None
    p = audit(tmp_path, str(run.results / "claims.md"), "--configfile", str(cfg_path), env=env)
    assert p.returncode == 0 and "claims tiny/claims.md" in p.stdout and "tiny/draws/n1000.zarr" in p.stdout, p.stderr[
        -2000:
    ]
    # without the study on the search path the config names an unknown study: refused before any job, naming the known ones
    p = smk(run.work, "--configfile", str(cfg_path), "--dry-run", check=False)
    assert p.returncode != 0 and "'tiny' was unexpected" in p.stdout + p.stderr


def test_config_used_is_a_config_that_reruns_nothing_and_audits(smoke_run, tmp_path):
    """results/config.used.yaml is a valid config giving every job the spec it ran with: a dry run with it has nothing
    to do, and the audit against it passes."""
    used = smoke_run.results / "config.used.yaml"
    p = smk(smoke_run.work, "--configfile", str(used), "--dry-run")
    assert planned(p) == Counter(), p.stdout[-3000:]
    p = audit(tmp_path, str(smoke_run.results / "mori_ueda/figures/fig2.png"), "--configfile", str(used), "--strict")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


def test_a_study_from_the_study_path_records_its_folder_and_ls_names_it_when_the_path_is_unset(tmp_path):
    """A study from DEPTHLAB_STUDY_PATH left no trace of its own code in provenance (only the checkout's
    commit), and without the variable `ls` skipped its results silently."""
    import subprocess as sp

    studies = tmp_path / "mystudies"
    shutil.copytree(ROOT / "docs" / "example_study" / "tiny", studies / "tiny")
    sp.run(["git", "init", "-q", str(studies)], check=True)
    sp.run(["git", "-C", str(studies), "-c", "user.email=a@b", "-c", "user.name=a", "add", "."], check=True)
    sp.run(["git", "-C", str(studies), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"], check=True)
    head = sp.run(
        ["git", "-C", str(studies), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    cfg = tmp_path / "c.yaml"
    cfg.write_text("results: results\ndevice: cpu\nseed: 0\nstudies:\n  tiny:\n    sizes: [5]\n")
    smk(tmp_path, "--configfile", str(cfg), env={"DEPTHLAB_STUDY_PATH": str(studies)})
    rec = st.read_record(tmp_path / "results" / "tiny" / "draws" / "n5.zarr")
    assert rec["study_source"] == {"folder": str((studies / "tiny").resolve()), "version": head}
    env = {k: v for k, v in os.environ.items() if k != "DEPTHLAB_STUDY_PATH"}
    p = sp.run([str(BIN / "depthlab"), "ls", str(tmp_path / "results")], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and "tiny: stores of study 'tiny', whose code this checkout does not have" in p.stdout, (
        p.stdout
    )
    assert str((studies / "tiny").resolve()) in p.stdout


def test_first_day_edges_answer_in_one_line(tmp_path):
    """An unknown target names the close matches and where the list is; a mistyped config path is one
    line; `depthlab --version` names the package version and the commit; `depthlab targets` lists every target."""
    p = smk(tmp_path, "--configfile", str(ROOT / "config" / "smoke.yaml"), "-n", "mori_ueda_fg2", check=False)
    out = (p.stdout + p.stderr).strip().splitlines()
    assert p.returncode != 0 and out[-1].startswith(
        "depthlab: no target 'mori_ueda_fg2'; did you mean mori_ueda_fig2"
    ), out
    assert "make help" in out[-1] and "Traceback" not in p.stdout + p.stderr
    p = subprocess.run(
        ["make", "-s", "run", "CONFIG=config/nope.yaml"], cwd=ROOT, capture_output=True, text=True, env=tool_env()
    )
    assert (
        p.returncode != 0
        and p.stderr.splitlines()[0] == "make: config file 'config/nope.yaml' does not exist (CONFIG=...)"
    )
    assert "Traceback" not in p.stderr
    v = subprocess.run([str(BIN / "depthlab"), "--version"], capture_output=True, text=True)
    assert v.returncode == 0 and re.fullmatch(r"depthlab \d+\.\d+\.\d+ \(code [0-9a-f]{40}(\+dirty)?\)\n", v.stdout), (
        v.stdout
    )
    t = subprocess.run(
        [str(BIN / "depthlab"), "targets", str(ROOT / "config" / "smoke.yaml")], capture_output=True, text=True
    )
    assert t.returncode == 0 and "  mori_ueda_fig2" in t.stdout and "  separation " in t.stdout and "  all " in t.stdout


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_two_configs_write_two_folders_and_neither_touches_the_other(smoke_run, tmp_path):
    """Every config wrote into the same results/.  Now a config without `results:` writes into
    results/<its name>: the smoke config under two names runs into two folders, the second run leaves the first's files
    as they were, and `depthlab where` / `depthlab ls --config` find each folder from its config."""
    run = smoke_run.copy(tmp_path / "w")
    first = snapshot(run.results)
    other = run.work / "other.yaml"
    cfg = dict(run.config)
    cfg.pop("results", None)  # the validated config carries the folder it was given; this one names its own
    cfg["studies"] = {"spectra": cfg["studies"]["spectra"]}
    other.write_text(yaml.safe_dump(cfg))
    smk(run.work, "--configfile", str(other))
    assert (run.work / "results" / "other" / "spectra" / "claims.md").is_file()
    assert snapshot(run.results) == first, "the second config's run touched the first's folder"
    assert not (run.work / "results" / "other" / "mori_ueda").exists()
    p = subprocess.run([str(BIN / "depthlab"), "where", str(other)], capture_output=True, text=True, cwd=run.work)
    assert p.stdout.strip() == "results/other"
    p = subprocess.run(
        [str(BIN / "depthlab"), "ls", "--config", str(other)], capture_output=True, text=True, cwd=run.work
    )
    assert p.returncode == 0 and "results/other" in p.stdout and "spectra" in p.stdout


def test_a_smoke_run_logs_no_warning_and_every_store_variable_is_labelled(smoke_run):
    """The smoke run's job logs held 28 warnings (zarr's fixed-width strings, legends on panels
    with nothing labelled, means of empty slices); and no variable carried units or a long name."""
    found = [
        f"{p.relative_to(smoke_run.results)}: {line.strip()[:200]}"
        for p in (smoke_run.results / "logs").rglob("*.log")
        for line in p.read_text(errors="replace").splitlines()
        if "warning" in line.lower()
    ]
    assert not found, "\n".join(found[:20])
    import xarray as xr

    unlabelled = []
    for store in smoke_run.results.rglob("*.zarr"):
        ds = xr.open_zarr(store, consolidated=True)
        unlabelled += [
            f"{store.relative_to(smoke_run.results)}:{n}"
            for n, v in ds.variables.items()
            if not v.attrs.get("units") or not v.attrs.get("long_name")
        ]
        for n, v in ds.data_vars.items():
            if n in ("converged", "diverged", "lr_flagged"):
                assert v.dtype == bool, f"{store}: {n} is {v.dtype}"
    assert not unlabelled, unlabelled[:20]


def test_a_smoke_run_prints_one_line_per_job_with_an_eta(smoke_run):
    """188 smoke jobs printed 3 039 lines, some 5 200 characters wide, and nothing said when the run
    would end.  Now: at most jobs + 20 lines, none wider than 200, each finished job's line with the progress and an
    ETA; Snakemake's full output in the results folder's log."""
    if smoke_run.terminal is None:
        pytest.skip("the smoke run was reused (DEPTHLAB_TEST_SMOKE_WORK), not built in this session")
    lines = smoke_run.terminal.splitlines()
    logs = sorted((smoke_run.results / "logs" / "snakemake").glob("*.log"))
    assert logs, "no full log under <results>/logs/snakemake"
    full = logs[-1].read_text()
    jobs = full.count("Finished jobid:")
    assert jobs >= 100 and f"{jobs} of {jobs} steps (100%) done" in full, full[-2000:]
    assert len(lines) <= jobs + 20, f"{len(lines)} lines for {jobs} jobs:\n" + "\n".join(lines[:40])
    assert max(map(len, lines)) <= 200, max(lines, key=len)
    done = [ln for ln in lines if re.match(r"\[ *\d+/\d+\] \d\d:\d\d:\d\d done ", ln)]
    assert len(done) == jobs, "\n".join(lines[:40])
    assert all(re.search(r"\| [\d.]+/[\d.]+ core-min \| ETA \d\d:\d\d \(", ln) for ln in done), done[:5]
    assert done[-1].startswith(f"[{jobs}/{jobs}]")
    start = [
        i
        for i, ln in enumerate(lines)
        if re.fullmatch(
            rf"depthlab: {jobs} jobs to run, planned [\d.]+ core-min, "
            r"about \d+ (s|min|h) on 2 cores",
            ln,
        )
    ]
    assert len(start) == 1 and lines[start[0] + 1] == f"depthlab: full log {logs[-1].relative_to(smoke_run.work)}", (
        lines[:5]
    )
    assert re.fullmatch(rf"depthlab: {jobs} jobs done in \d+ (s|min|h) \(planned [\d.]+ core-min\)", lines[-2]), lines[
        -3:
    ]


def test_the_report_has_a_caption_and_labels_for_every_item(smoke_run, tmp_path):
    """27 of the 28 report captions were empty and the front page described one study.  Every item of
    the smoke report now has labels (study, figure, stage) and a caption; every figure's caption is its own text and
    names each claim whose verdicts cite that figure; rendering prints no docutils error."""
    run = smoke_run.copy(tmp_path / "run")
    html = tmp_path / "report.html"
    p = smk(run.work, "--configfile", str(run.config_path), "--report", str(html))
    assert "ERROR/" not in p.stdout + p.stderr and "WARNING/" not in p.stdout + p.stderr, p.stderr[-3000:]
    text = html.read_text()
    items = json.loads(re.search(r"var results = (\{.*?\});\n", text, re.S).group(1))
    figures = {k: v for k, v in items.items() if k.endswith(".png") and "/figures/" in k}
    forests = [k for k in items if k.endswith("/claims.forest.png")]  # a forest plot of each study's verdicts
    expected = sum(len(get_study(s).figures(run.config)) for s in run.config["studies"])
    assert len(figures) == expected and len(forests) == len(run.config["studies"]), sorted(items)
    assert len(items) == expected + 2 * len(run.config["studies"]) + 2, sorted(items)
    for path, item in items.items():
        assert set(item["labels"]) == {"study", "figure", "stage"} and all(item["labels"].values()), (
            path,
            item["labels"],
        )
        assert len(re.sub("<[^>]+>", "", item["caption"]).strip()) > 40, (path, item["caption"])
    captions = {k: re.sub("<[^>]+>", "", v["caption"]) for k, v in figures.items()}
    assert len(set(captions.values())) == len(captions), "two figures share a caption"
    for study in run.config["studies"]:
        for v in json.loads((run.results / study / "claims.json").read_text()):
            if v["claim"] != "-":
                cap = captions[str(Path(run.config["results"]) / study / "figures" / f"{v['figure']}.png")]
                assert re.search(rf"\b{re.escape(v['claim'].split('-')[0])}\b", cap), (
                    study,
                    v["figure"],
                    v["claim"],
                    cap,
                )
    assert "no caption is written" not in text
    front = re.sub("<[^>]+>", "", text)
    for title in (
        "Mori &amp; Ueda",
        "Bietti &amp; Bach",
        "Depth separation",
        "Malach &amp; Shalev-Shwartz",
        "Arora, Cohen",
    ):
        assert title in front or title.replace("&amp;", "&") in front, title
