"""depthlab paper-check: the paper config's budgets capped but never its shapes, the largest job of
each stage that fits chosen, and each run judged from its benchmark, store and log."""

from __future__ import annotations

import copy

from helpers import ROOT

from depthlab import config as dlc
from depthlab import papercheck as pc


def _paper():
    raw = dlc.read_yaml(ROOT / "config" / "paper.yaml")
    capped = copy.deepcopy(raw)
    changes = pc.cap(capped)
    return raw, capped, changes


def _walk(cfg, path=()):
    if isinstance(cfg, dict):
        for k, v in cfg.items():
            yield from _walk(v, path + (k,))
    elif isinstance(cfg, list):
        for i, v in enumerate(cfg):
            yield from _walk(v, path + (i,))
    else:
        yield path, cfg


def test_caps_lower_budgets_only_and_the_capped_paper_config_validates(tmp_path):
    raw, capped, changes = _paper()
    assert changes and all(b <= pc.CAPS[k.split(".")[-1]] < a for k, a, b in changes)
    before, after = dict(_walk(raw)), dict(_walk(capped))
    moved = {p for p in before if before[p] != after[p]}
    assert {p[-1] for p in moved} <= set(pc.CAPS)  # nothing but a capped key changed: shapes stay
    assert after[("studies", "mori_ueda", "figures", "fig2", "targets", "2-local", "n_train")] == 20000
    assert after[("studies", "mori_ueda", "figures", "fig3", "width")] == 5000
    capped["results"] = str(tmp_path / "r")
    capped.pop("max_memory_gib", None)
    dlc.validate(capped, memory=False, source=ROOT / "config" / "paper.yaml")


def test_the_largest_job_that_fits_is_chosen_and_a_stage_with_none_is_skipped(tmp_path):
    from depthlab.studies import get_study

    _, capped, _ = _paper()
    capped["results"] = str(tmp_path / "r")
    capped.pop("max_memory_gib", None)
    full = dlc.validate(capped, memory=False, source=ROOT / "config" / "paper.yaml")
    checks = {(c.study, c.stage): c for c in pc.choose(full, machine_gib=4.0, max_minutes=1e9)}
    ntk = get_study("mori_ueda")
    sizes = [sum(ntk.spec(full, "ntk", j).memory().values()) / 2**30 for j in ntk.jobs(full, "ntk")]
    fits = [s for s in sizes if s <= 4.0]
    c = checks[("mori_ueda", "ntk")]
    assert c.status != "skipped" and abs(c.plan_gib - max(fits)) < 1e-9 and "the stage's largest" in c.detail
    assert all(c.plan_gib <= 4.0 for c in checks.values() if c.status != "skipped")
    tiny = {(c.study, c.stage): c for c in pc.choose(full, machine_gib=1e-6, max_minutes=1e9)}
    big = tiny[("mori_ueda", "train")]
    assert big.status == "skipped" and "every job plans more than" in big.detail


def test_each_run_job_is_judged_from_its_benchmark_store_and_log(tmp_path):
    root = tmp_path / "results"
    checks = [
        pc.Check("s", "a", "x/ok.zarr", "k", 1.0),
        pc.Check("s", "b", "x/big.zarr", "k", 1.0),
        pc.Check("s", "c", "x/dead.zarr", "k", 1.0),
        pc.Check("s", "d", "x/far.zarr", "k", 99.0, status="skipped"),
        pc.Check("s", "e", "x/never.zarr", "k", 1.0),
    ]
    head = "s\th:m:s\tmax_rss\tmax_vms\n"
    for name, rss in (("ok", 1024 * 1.5), ("big", 1024 * 3.0), ("dead", 100.0)):
        (root / "benchmarks" / "s" / "x").mkdir(parents=True, exist_ok=True)
        (root / "benchmarks" / "s" / "x" / f"{name}.tsv").write_text(head + f"12.5\t0:00:12\t{rss}\t1\n")
    for name in ("ok", "big"):
        (root / "s" / "x" / f"{name}.zarr").mkdir(parents=True)
    (root / "logs" / "s" / "x").mkdir(parents=True)
    (root / "logs" / "s" / "x" / "dead.log").write_text("loading\nFatal Python error: Segmentation fault\n")
    (root / "logs" / "snakemake").mkdir(parents=True)
    (root / "logs" / "snakemake" / "run.log").write_text(
        "/usr/bin/bash: line 1: 30760 Killed                  depthlab stage --spec '{}'\nError in rule s_c:\n"
        f"    jobid: 14\n    output: {root}/s/x/dead.zarr\n"
    )
    pc.collect(checks, root)
    assert [c.status for c in checks] == ["ok", "over plan", "failed", "skipped", "not run"]
    assert checks[0].seconds == 12.5 and abs(checks[0].peak_gib - 1.5) < 1e-9
    assert "Segmentation fault" in checks[2].detail and checks[2].detail.startswith("killed (SIGKILL")
    md = pc.render(checks, "paper.yaml", 24.0)
    assert (
        "| s | c | x/dead.zarr | k | 12.5 | 0.10 | 1.00 | failed: killed (SIGKILL" in md
        and "Segmentation fault |" in md
    )
