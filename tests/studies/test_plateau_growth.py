"""Outside the RZG23 learner too: every study's nets stop on a plateau only over a window that grows with the
run (``plateau_growth``, default 0.25), so a long run's slow fall is not read as convergence after a short pause."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

import depthlab.config as dlc
from depthlab.core.stopping import PLATEAU, StopRule
from depthlab.studies.fractals import accuracy
from depthlab.studies.fractals import specs as fspecs
from depthlab.studies.mori_ueda import sgd
from depthlab.studies.mori_ueda import specs as mspecs
from depthlab.studies.separation import specs as sspecs
from depthlab.studies.separation import training as straining

ROOT = Path(__file__).resolve().parents[2]


def _default() -> dict:
    return dlc.validate(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()), source="config/config.yaml")


def _stop_at(rule: StopRule, values) -> tuple[int, int]:
    st = rule.start(1)
    for i, v in enumerate(values, 1):
        if rule.update(st, np.array([0]), np.array([v]), np.array([False]), i)[0]:
            return int(st.reason[0]), i
    return 0, len(values)


def _rules(cfg: dict) -> dict[str, StopRule]:
    s = cfg["studies"]
    f = s["fractals"]
    return {
        "mori_ueda fig2": sgd.stop_rule(mspecs._training(cfg, "fig2", 3000)),
        "separation radial": straining.settings(sspecs._training(s["separation"]["radial"]["training"]), "cpu").stop,
        "separation sawtooth": straining.settings(
            sspecs._training(s["separation"]["sawtooth"]["training"]), "cpu"
        ).stop,
        "fractal nets": accuracy.stop_rule(fspecs._training(f["training"])),
        "fig7 CNNs": accuracy.stop_rule(fspecs._training({**f["fig7"], "max_epochs": f["fig7"]["epochs"]})),
    }


def test_every_studys_nets_have_a_growing_plateau_window_in_the_default_and_the_lr_sweep_has_no_plateau():
    cfg = _default()
    for name, rule in _rules(cfg).items():
        assert rule.patience is not None and rule.grow == 0.25, name
        assert "0.25 x the checks so far" in rule.describe(), name
    assert sgd.stop_rule(mspecs._training(cfg, "fig3", 2500)).patience is None  # Fig. 3: the paper's target only


def test_a_pause_late_in_a_long_run_is_not_a_plateau_under_the_default_rule_but_was_under_the_fixed_window():
    """A Mori & Ueda net's full training loss (checked every 50 epochs) falls 3 % a check for 40 checks (2 000 epochs),
    pauses 5 checks, then falls again.  The fixed window of 4 checks read the pause as convergence at check 44; the
    default's window is 10 checks there (0.25 x 44), so it trains through the pause and stops only on the final stall,
    once that lasts a quarter of the run."""
    values = [0.97**i for i in range(40)] + [0.97**39] * 5 + [0.97 ** (39 + i) for i in range(1, 21)] + [0.97**59] * 60
    rule = sgd.stop_rule(mspecs._training(_default(), "fig2", 3000))
    fixed = StopRule(threshold=rule.threshold, patience=rule.patience, rel_tol=rule.rel_tol)
    assert _stop_at(fixed, values) == (PLATEAU, 44)
    reason, at = _stop_at(rule, values)
    assert reason == PLATEAU and at > 65  # past the second fall
    assert at - 65 >= np.ceil(0.25 * at) - 1  # the final stall lasted a quarter of the checks so far
