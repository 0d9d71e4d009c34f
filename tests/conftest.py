import contextlib
import os
import sys
from pathlib import Path

import pytest
import torch
import yaml
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))  # also importable when the package is not installed
sys.path.insert(0, str(ROOT / "tests"))  # the shared helpers

from helpers import SmokeRun, fast_suite_smoke, smk, snapshot  # noqa: E402

torch.set_num_threads(1)

SLOW_REASON = (
    "slow set (make test-slow)"  # short: pytest prints it once per skipped location; the whole story once, below
)
SLOW_STORY = (
    "the slow set (a real one-node SLURM and its faults, the report in headless Chromium, the local chaos test, "
    "the heaviest workflow re-runs; root, apt-get, daemons, tens of minutes) was skipped: it runs with "
    "`make test-slow`, `make test SLOW=1` or `pytest --run-slow`"
)


def pytest_addoption(parser):
    parser.addoption(
        "--run-slow",
        action="store_true",
        default=os.environ.get("DEPTHLAB_SLOW_TESTS") == "1",
        help="also run the tests marked slow (the real SLURM test); default: $DEPTHLAB_SLOW_TESTS == 1",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: needs root, network packages or minutes; skipped (with its reason) unless --run-slow"
    )
    config.addinivalue_line(
        "markers",
        "chaos: fault injection into the one-node SLURM (part of the slow set; `make test-chaos` runs it alone)",
    )


def pytest_collection_modifyitems(config, items):
    """Skip the slow set unless asked for, saying why; run it last (once slurm-wlm is installed, a stopped cluster
    makes the SLURM executor plugin's import-time probe wait ~9 s in every later Snakemake call).  Order the rest so
    that the shared smoke run is built while the other worker has work (below)."""
    for item in items:
        if "slow" in item.keywords and not config.getoption("--run-slow"):
            item.add_marker(pytest.mark.skip(reason=SLOW_REASON))
    items.sort(key=lambda item: "slow" in item.keywords)
    # Under pytest-xdist the workers share one smoke run, built by the first worker that needs it while any other that
    # needs it waits on its lock.  So one test that reads it goes first (its worker starts the build at once) and the
    # others after every test that does not: the other worker runs those meanwhile instead of waiting.
    fast = [item for item in items if "slow" not in item.keywords]
    smoke = [item for item in fast if "smoke_run" in getattr(item, "fixturenames", ())]
    if smoke:
        items[: len(fast)] = smoke[:1] + [item for item in fast if item not in smoke] + smoke[1:]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Why the slow set was skipped, said once (not beside each of its tests)."""
    if not config.getoption("--run-slow") and any(
        getattr(r, "longrepr", None) and SLOW_REASON in str(r.longrepr)
        for r in terminalreporter.stats.get("skipped", [])
    ):
        terminalreporter.write_line(SLOW_STORY)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory, worker_id, request) -> SmokeRun:
    """config/smoke.yaml (in the fast suite cut by ``helpers.fast_suite_smoke``), every study, run once for the whole
    session and only read: a test that changes results
    works on ``smoke_run.copy(...)``.  At the end of the session every file of it must be as it was built.

    Under pytest-xdist (``make test`` runs two workers) the workers share one run: the first to need it builds it
    under a file lock in the session's common temporary folder, the others wait for it and reuse it (its terminal
    output is saved beside it)."""
    reuse = os.environ.get("DEPTHLAB_TEST_SMOKE_WORK")  # a contributor's shortcut: a smoke run built before, reused
    if reuse:
        work, lock = Path(reuse), None
    elif worker_id == "master":
        work, lock = tmp_path_factory.mktemp("smoke"), None
    else:  # every xdist worker's basetemp lies in one folder of this session
        work = tmp_path_factory.getbasetemp().parent / "smoke"
        lock = FileLock(str(work) + ".lock")
    cfg = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    if not request.config.getoption("--run-slow"):  # the fast suite: the same stages with less repetition
        cfg = fast_suite_smoke(cfg)
    cfg_path = work / "smoke.yaml"
    terminal_file = work / "terminal.txt"  # beside results/, not in it: written once the shared run is complete
    terminal = None
    with lock if lock is not None else contextlib.nullcontext():
        if not (work / "results").is_dir() or (lock is not None and not terminal_file.is_file()):
            work.mkdir(parents=True, exist_ok=True)
            cfg_path.write_text(yaml.safe_dump(cfg))
            p = smk(work, "--configfile", str(cfg_path))
            terminal = p.stdout + p.stderr
            if lock is not None:
                terminal_file.write_text(terminal)  # for the other workers
        elif lock is not None:
            terminal = terminal_file.read_text()
    import depthlab.config as dlc

    run = SmokeRun(
        work, dlc.validate(cfg, source=cfg_path), cfg_path, terminal
    )  # validated: defaults filled in, as the workflow sees it
    built = snapshot(run.results)
    yield run
    assert snapshot(run.results) == built, "a test modified the shared smoke run (tests that change results use a copy)"


@pytest.fixture(scope="session")
def worker_id(request) -> str:
    """pytest-xdist's worker name ("gw0", ...), "master" without it (its own fixture of the same name wins when loaded)."""
    return getattr(request.config, "workerinput", {}).get("workerid", "master")
