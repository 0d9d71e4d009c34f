"""The fractal nets' stop rule as the configs set it: the onset window (a net still at chance is not stopped by a plateau
before onset_checks checks), and its config check."""

import copy
from pathlib import Path

import pytest
import yaml

import depthlab.config as dlc
from depthlab.config import ConfigError
from depthlab.studies.fractals.accuracy import stop_rule
from depthlab.studies.fractals.specs import TrainSpec

ROOT = Path(__file__).resolve().parents[3]


def _fractals(name: str) -> dict:
    cfg = yaml.safe_load((ROOT / "config" / name).read_text())
    cfg["studies"] = {"fractals": cfg["studies"]["fractals"]}
    return cfg


def _rule(cfg: dict):
    c = dlc.validate(copy.deepcopy(cfg))
    job = TrainSpec.jobs(c)[0]
    return stop_rule(TrainSpec.from_config(c, job).training)


def test_the_configs_set_the_onset_window_and_the_rule_states_it():
    rule = _rule(_fractals("config.yaml"))
    assert (rule.patience, rule.onset_patience) == (20, 50) and rule.onset == pytest.approx(
        0.47
    )  # error: accuracy 0.53
    assert "while it has not yet fallen below 0.47, not before its 50th check" in rule.describe()
    assert _rule(_fractals("paper.yaml")).onset_patience == 25
    smoke = _rule(_fractals("smoke.yaml"))  # left out: no onset rule, as before
    assert smoke.onset is None and smoke.onset_patience is None
    # the CNNs of Fig. 7 have no onset rule, and their specs carry no margin (it would only be a rerun trigger)
    from depthlab.studies.fractals.specs import CnnSpec

    c = dlc.validate(_fractals("config.yaml"))
    cnn = CnnSpec.from_config(c, CnnSpec.jobs(c)[0]).training
    assert cnn.onset_checks is None and cnn.onset_margin is None and stop_rule(cnn).onset is None


def test_an_onset_window_shorter_than_the_patience_is_refused_naming_the_key():
    cfg = _fractals("config.yaml")
    cfg["studies"]["fractals"]["training"]["onset_checks"] = 10
    with pytest.raises(ConfigError, match=r"fractals\.training\.onset_checks: 10 is below training\.patience \(20\)"):
        dlc.validate(cfg)
    cfg["studies"]["fractals"]["training"]["onset_checks"] = None
    assert _rule(cfg).onset is None
