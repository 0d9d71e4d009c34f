"""depthlab.probe: the speed probe scales a plan only where it measured the CPU, not the load beside it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest
from helpers import BIN

from depthlab import probe


@pytest.mark.parametrize(
    "seconds, load, use, factor, noted",
    [
        (0.041, 0.5, False, 1.0, False),  # the calibration machine, quiet
        (0.0533, 0.5, False, 1.3, False),  # a slower CPU, quiet: scaled
        (0.351, 0.5, False, 1.0, True),  # x8.56: the load, whatever the load average says
        (0.0533, 5.0, False, 1.0, True),  # plausible, but taken on an oversubscribed machine
        (0.0164, 0.2, False, 1.0, True),  # x0.4: faster than any CPU the calibration knows
        (0.351, 5.0, True, 0.351 / 0.041, False),  # asked for: scaled by it anyway
    ],
)
def test_the_probe_scales_the_plan_only_where_it_measured_the_cpu(seconds, load, use, factor, noted):
    speed, note = probe.judge(probe.Reading(seconds, load, 0.0), 0.041, use)
    assert speed == pytest.approx(factor, rel=1e-3)
    assert bool(note) == noted
    if noted:
        assert f"{seconds:.3f} s against the calibration's 0.041 s" in note and "--use-probe" in note


def test_no_probe_and_no_calibration_leave_the_plan_as_calibrated():
    assert probe.judge(None, 0.041) == (1.0, "")
    assert probe.judge(probe.Reading(0.3, 9.0, None), None) == (1.0, "")


def _core_hours(text: str) -> float:
    m = re.search(r"^total\s+\d+ jobs\s+([\d.]+) core-hours", text, re.M)
    assert m, text[-2000:]
    return float(m.group(1).replace(" ", ""))


@pytest.mark.slow  # it loads every core for about a minute: the slow set runs one test at a time, nothing beside it
def test_three_plans_beside_eight_busy_processes_agree_with_the_unprobed_plan(tmp_path):
    """Eight busy loops (four per core where there are more cores): three plans back to back each say in their first line that the probe
    measured load, agree within 25 %, and each is within x1.5 of `plan --no-probe` (before, the probe scaled the
    default to 28.9-51 core-hours against 5.99)."""
    base = subprocess.run(
        [str(BIN / "depthlab"), "plan", "--no-probe", "config/config.yaml"], capture_output=True, text=True, timeout=300
    )
    assert base.returncode == 0, base.stderr
    cores = os.cpu_count() or 1
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(max(8, 4 * cores))]
    try:
        # until the 1-minute load average has climbed past one runnable process per core (about 20 s with 8 loops on 2
        # cores): the plans below are taken on a busy machine, however fast it gets there
        while os.getloadavg()[0] / cores <= 1.2:
            time.sleep(1)
        plans = []
        for _ in range(3):
            p = subprocess.run(
                [str(BIN / "depthlab"), "plan", "config/config.yaml"], capture_output=True, text=True, timeout=600
            )
            assert p.returncode == 0, p.stderr
            assert p.stdout.startswith("note: the speed probe took"), p.stdout[:500]
            plans.append(_core_hours(p.stdout))
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    ref = _core_hours(base.stdout)
    assert max(plans) / min(plans) <= 1.25, plans
    assert all(1 / 1.5 <= v / ref <= 1.5 for v in plans), (plans, ref)
