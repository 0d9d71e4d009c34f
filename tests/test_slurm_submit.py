"""SLURM submission without shell expansion: a fake `sbatch` on PATH records what the executor plugin hands it.

With the profile's `slurm-pass-command-as-script`, each job's command goes to sbatch as a script on stdin.  Snakemake
quotes its arguments with Python's repr, which is shell quoting only for values holding no quote, backslash, `$` or
backtick: depthlab refuses those in config values and (under a cluster executor) in the working directory and config
paths, so the rest of the shell's syntax (`;`, `&`, `|`, parentheses, spaces) arrives literally.  (The real one-node cluster test is tests/test_slurm.py.)
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import ROOT, smoke_mori_ueda_fig2

BIN = Path(sys.executable).parent

SBATCH = """#!/bin/sh
# fake sbatch: record the arguments and the script on stdin, answer with a job id
printf '%s\\n' "$@" > "$FAKE_SLURM_LOG/argv.$$"
cat > "$FAKE_SLURM_LOG/stdin.$$"
echo 4242
"""
OTHER = """#!/bin/sh
echo "$0 $*" >> "$FAKE_SLURM_LOG/calls"
case "$0 $*" in *sacct*JobIdRaw*) echo "4242|FAILED";; esac
exit 0
"""


def _fake_slurm(tmp_path: Path) -> tuple[Path, Path, dict]:
    fake, log = tmp_path / "bin", tmp_path / "log"
    for d in (fake, log):
        d.mkdir()
    (fake / "sbatch").write_text(SBATCH)
    for tool in ("sacct", "sacctmgr", "sshare", "squeue", "scontrol", "sinfo", "scancel"):
        (fake / tool).write_text(OTHER)
    for f in fake.iterdir():
        f.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{fake}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}",
        "FAKE_SLURM_LOG": str(log),
        "DEPTHLAB_STUDY_PATH": str(ROOT / "docs" / "example_study"),
    }
    return fake, log, env


def _submit(
    work: Path, env: dict, log: Path, config_path: Path, *config: str, wait: bool = True, extra: tuple[str, ...] = ()
) -> str:
    """Snakemake on the SLURM profile with the fake sbatch; stops once a job script was submitted (or Snakemake exits)."""
    site = work / "site"  # the user's own profile, as README's SLURM section says: the site's partition, after ours
    site.mkdir(exist_ok=True)
    (site / "config.yaml").write_text("default-resources:\n  slurm_partition: debug\n  runtime: 30\n  mem_mb: 2000\n")
    cmd = [
        str(BIN / "snakemake"),
        "-s",
        str(ROOT / "Snakefile"),
        "--profile",
        str(ROOT / "workflow/profiles/slurm"),
        "--profile",
        str(site),
        "--workflow-profile",
        str(ROOT / "workflow/profiles/default"),
        *extra,
        "--configfile",
        str(config_path),
        *(("--config", *config) if config else ()),
    ]
    p = subprocess.Popen(
        cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.time() + 120
    while wait and not list(log.glob("stdin.*")) and time.time() < deadline and p.poll() is None:
        time.sleep(0.2)
    if wait:
        time.sleep(1)
    if p.poll() is None and wait:
        os.killpg(p.pid, signal.SIGKILL)
    try:
        return p.communicate(timeout=120)[0].decode(errors="replace")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)


CONFIG = "results: r\ndevice: cpu\nseed: 0\nstudies:\n  tiny:\n    sizes: [5, 100000000]\n"


def test_a_quote_in_a_config_value_or_the_working_directory_never_reaches_a_job_script(tmp_path):
    """The executor puts --config values on the job's command line quoted with Python's repr:
    results=r'$(touch x)' arrives as "results=r'$(touch x)'", whose $(...) the compute node's shell runs.  Such a value
    is refused by the validator before anything is submitted, and so is a working directory holding a quote (it reaches
    the script through --wait-for-files)."""
    fake, log, env = _fake_slurm(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "c.yaml").write_text(CONFIG)
    out = _submit(work, env, log, work / "c.yaml", f"results=r'$(touch {tmp_path}/pwned_value)'", wait=False)
    assert re.search(r"config error at results: .* holds \"'\", which a cluster job's shell could run as code", out), (
        out[-3000:]
    )
    assert not list(log.glob("stdin.*")) and not list(tmp_path.rglob("pwned*"))
    quoted = tmp_path / "it's here"
    quoted.mkdir()
    (quoted / "c.yaml").write_text(CONFIG)
    out = _submit(quoted, env, log, quoted / "c.yaml", wait=False)
    assert (
        "depthlab: the working directory" in out and 'holds "\'"' in out and "reaches the job script's shell" in out
    ), out[-3000:]
    assert not list(log.glob("stdin.*")), "a job was submitted from a working directory holding a quote"
    assert "Traceback" not in out


def test_shell_syntax_in_a_config_value_and_the_config_path_reaches_no_shell(tmp_path):
    fake, log, env = _fake_slurm(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    cfg_dir = work / "c; touch pwned_path & (x)"
    cfg_dir.mkdir()
    (cfg_dir / "c.yaml").write_text(CONFIG)
    value = "r; touch pwned_value | (y) & z"
    out = _submit(work, env, log, cfg_dir / "c.yaml", f"results={value}")
    scripts = sorted(log.glob("stdin.*"))
    assert scripts, out[-3000:]
    assert not list(tmp_path.rglob("pwned*")), "the submit host's shell ran the value"
    for script in scripts:
        argv = (log / script.name.replace("stdin", "argv")).read_text().splitlines()
        assert argv[-1] == "/dev/stdin" and not any(a.startswith("--wrap") for a in argv), argv
        text = script.read_text()
        assert value in text and str(cfg_dir) in text
        # run the script as the compute node's shell would, with the job's program replaced by one that prints its
        # arguments: they arrive literally, and nothing is executed
        lines = text.splitlines()
        program = lines[1].split()[0]
        shown = subprocess.run(
            ["sh", "-c", "\n".join(lines[1:]).replace(program, "printf '%s\\n'", 1)],
            cwd=work,
            capture_output=True,
            text=True,
        )
        args = shown.stdout.splitlines()
        assert f"results={value}" in args, shown.stdout[-2000:] + shown.stderr
        assert str(cfg_dir / "c.yaml") in args
    assert not list(tmp_path.rglob("pwned*")), "the job script's shell ran the value"
    # every store job went in the profile's group (one sbatch for a chain of store jobs), none as a job of its own
    for argv_file in log.glob("argv.*"):
        argv = argv_file.read_text().splitlines()
        assert "group_depthlab_stores" in argv[argv.index("--output") + 1], argv


def _requests(log: Path) -> list[list[str]]:
    return [f.read_text().splitlines() for f in sorted(log.glob("argv.*"))]


def _arg(argv: list[str], flag: str) -> str | None:
    """The value of `flag` in an sbatch argv (`--mem 1000` or `--gpus=1`), None when absent."""
    for i, a in enumerate(argv):
        if a == flag:
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def test_store_jobs_go_to_slurm_in_few_submissions_that_ask_for_what_their_jobs_need(tmp_path):
    """With one chain per submission (group-components 1) each draws job of the tiny study asks for
    its own memory, from its spec's estimate (the 10^8-draw job for more); with the profile's packing (2 chains per
    sbatch) both go in one submission asking for the sum of the two, on two CPUs (both run at once, under the profile's
    4-core cap)."""
    fake, log, env = _fake_slurm(tmp_path)
    seen = {}
    for k in ("1", None):
        work = tmp_path / f"k{k}"
        work.mkdir()
        (work / "c.yaml").write_text(CONFIG)
        for f in log.iterdir():
            f.unlink()
        out = _submit(
            work, env, log, work / "c.yaml", extra=("--group-components", f"depthlab_stores={k}") if k else ()
        )
        seen[k] = _requests(log)
        assert seen[k], out[-3000:]
    mems = sorted(int(_arg(a, "--mem")) for a in seen["1"])
    assert len(mems) == 2 and mems[0] < mems[1], f"two draws jobs with different --mem requests: {mems}"
    [packed] = seen[None]
    assert int(_arg(packed, "--mem")) == sum(mems), packed
    assert _arg(packed, "--cpus-per-task") == "2", packed
    # the partition of the user's own profile (whose default-resources replaces the tracked profile's whole list) adds
    # to what each job asks for: every submission still carries its jobs' own time and memory, and the partition
    for argv in seen["1"] + seen[None]:
        assert _arg(argv, "-p") == "debug" and int(_arg(argv, "-t")) > 0 and int(_arg(argv, "--mem")) > 0, argv


def _mori_ueda_fig2(path: Path) -> None:
    import yaml

    cfg = smoke_mori_ueda_fig2()
    cfg.update(device="auto", results="r")
    path.write_text(yaml.safe_dump(cfg))


def test_device_auto_asks_a_cluster_for_a_gpu_only_when_the_run_declares_gpus(tmp_path):
    """`device: auto` on a cluster asks for no GPU unless the run declares how many may be in use
    (`--resources gpu=N`, the SLURM profile's `resources:`); then the submission holding the nets asks for them."""
    fake, log, env = _fake_slurm(tmp_path)
    env = {**env, "DEPTHLAB_COSTS_GPU": str(tmp_path / "none.json")}  # no GPU calibration: no tiny job moved to the CPU
    gpus = {}
    for declared in (None, "1"):
        work = tmp_path / f"gpu{declared}"
        work.mkdir()
        _mori_ueda_fig2(work / "c.yaml")
        for f in log.iterdir():
            f.unlink()
        out = _submit(work, env, log, work / "c.yaml", extra=("--resources", f"gpu={declared}") if declared else ())
        gpus[declared] = [_arg(a, "--gpus") for a in _requests(log)]
        assert gpus[declared], out[-3000:]
    assert gpus[None] == [None] * len(gpus[None]), gpus
    assert "1" in gpus["1"], gpus


def test_the_site_example_profile_keeps_the_tracked_profiles_defaults_and_the_tracked_one_names_no_site():
    """A second --profile replaces the first one's default-resources whole: the example a user copies for their
    partition and account keeps the tracked profile's runtime and memory, and the tracked profile holds no site's
    partition or account (they belong in the user's own profile)."""
    import yaml

    tracked = yaml.safe_load((ROOT / "workflow/profiles/slurm/config.yaml").read_text())["default-resources"]
    example = yaml.safe_load((ROOT / "workflow/profiles/site-example/config.yaml").read_text())["default-resources"]
    assert not {"slurm_partition", "slurm_account"} & set(tracked), tracked
    assert {k: example[k] for k in tracked} == tracked, (tracked, example)
    assert {"slurm_partition", "slurm_account"} <= set(example), example


def test_a_dry_run_of_the_default_config_on_the_slurm_profile_shows_at_most_100_submissions(tmp_path):
    """Figures, claims and the index are local rules, every store job is in a group job, and the
    profile's packing leaves at most 100 sbatch calls for the default config (each "Group job" of the dry run is one;
    a store job outside every group would be one more)."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    cmd = [
        str(BIN / "snakemake"),
        "-s",
        str(ROOT / "Snakefile"),
        "--directory",
        str(tmp_path),
        "--profile",
        str(ROOT / "workflow/profiles/slurm"),
        "--workflow-profile",
        str(ROOT / "workflow/profiles/default"),
        "--configfile",
        str(ROOT / "config" / "config.yaml"),
        "--dry-run",
    ]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout + p.stderr
    groups = len(re.findall(r"Group job depthlab_stores", out))
    alone = re.findall(r"^(?:\[[^\]]*\] )?(?:local)?rule (\w+):", out, re.M)  # top-level jobs
    stores_alone = [r for r in alone if r not in ("figure", "claims", "claims_index", "config_snapshot", "all")]
    in_groups = len(re.findall(r"^ {4}rule \w+:", out, re.M))
    total = int(re.search(r"^total\s+(\d+)", out, re.M).group(1))
    print(
        f"\nSLURM dry run of config/config.yaml: {groups} group submissions holding {in_groups} store jobs, "
        f"{len(alone)} local jobs, {total} jobs in all"
    )
    assert not stores_alone and in_groups + len(alone) == total, (stores_alone, in_groups, len(alone), total)
    assert 0 < groups + len(stores_alone) <= 100
