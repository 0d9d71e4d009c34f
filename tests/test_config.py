"""Config validation: each kind of bad config is rejected naming the key; every shipped config is valid."""

import copy
from pathlib import Path

import pytest
import yaml

import depthlab.config as dlc

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def smoke():
    return yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())


@pytest.mark.parametrize("name", ["smoke.yaml", "config.yaml", "paper.yaml"])
def test_shipped_configs_validate(name):
    path = ROOT / "config" / name
    if not path.exists():
        pytest.skip(f"{name} not shipped")
    dlc.load(path)


def _bad(cfg, fn):
    cfg = copy.deepcopy(cfg)
    fn(cfg)
    return cfg


CASES = [
    ("unknown key", lambda c: c["training"].update(momentum=0.9), r"config error at training: .*'momentum' was unexpected.*allowed keys: batch_size, check_every"),
    ("unknown target key", lambda c: c["figures"]["fig2"]["targets"]["2-local"].update(D=3), r"targets.2-local.*'D' was unexpected.*allowed keys: d, g, k, locality, n_train, noise"),
    ("k > d", lambda c: c["figures"]["fig2"]["targets"]["2-local"].update(k=9, d=8), r"figures.fig2.targets.2-local.k: k = 9 exceeds the input dimension d = 8"),
    ("P too small", lambda c: c["figures"]["fig2"].update(budget=3.0), r"figures.fig2.budget: no positive width for budget P = 3 at d = 8, L = 1"),
    ("negative noise", lambda c: c["figures"]["fig2"]["targets"]["2-local"].update(noise=-0.5), r"figures.fig2.targets.2-local.noise: -0.5 is less than the minimum of 0"),
    ("empty depths", lambda c: c["figures"]["fig2"].update(depths=[]), r"figures.fig2.depths: \[\] should be non-empty"),
    ("bad enum", lambda c: c.update(device="gpu"), r"config error at device: 'gpu' is not one of \['auto', 'cpu', 'cuda'\]"),
    ("string float", lambda c: c["training"].update(loss_threshold="1e-4"), r"training.loss_threshold: '1e-4' is not of type 'number'.*write 1.0e-4"),
    ("bad figure name", lambda c: c["figures"].update(figure2=c["figures"]["fig2"]), r"config error at figures: .*figure2.*keys must match \^fig"),
    ("g needs k=2", lambda c: c["figures"]["fig2"]["targets"]["2-local"].update(g="sin", k=3), r"g = 'sin' takes exactly k = 2"),
    ("bounds order", lambda c: c["lrsearch"].update(log10_lr_bounds=[0.0, -1.0]), r"lrsearch.log10_lr_bounds: need low < high"),
]


@pytest.mark.parametrize("what,fn,pattern", CASES, ids=[c[0] for c in CASES])
def test_bad_config_is_rejected_naming_the_key(smoke, what, fn, pattern):
    with pytest.raises(dlc.ConfigError, match=pattern):
        dlc.validate(_bad(smoke, fn))


def test_specs_are_canonical_and_depth_local(smoke):
    cfg = dlc.validate(smoke)
    a = dlc.train_spec(cfg, "fig2", "2-local", 1)
    cfg2 = copy.deepcopy(cfg)
    cfg2["figures"]["fig2"]["depths"] = [1, 5]
    # a depth job does not depend on the list of other depths
    assert dlc.canonical_json(a) == dlc.canonical_json(dlc.train_spec(cfg2, "fig2", "2-local", 1))
    # but the figure does
    assert dlc.figure_spec(cfg, "fig2") != dlc.figure_spec(cfg2, "fig2")
    # a change of the training cap reaches train but not data or ntk
    cfg3 = copy.deepcopy(cfg)
    cfg3["training"]["max_epochs"] += 1
    assert dlc.train_spec(cfg3, "fig2", "2-local", 1) != a
    assert dlc.ntk_spec(cfg3, "fig2", "2-local", 1) == dlc.ntk_spec(cfg, "fig2", "2-local", 1)
    assert dlc.spec_hash({"a": 1.0e-4}) == dlc.spec_hash({"a": 0.0001})


def test_every_schema_field_has_a_description():
    schema = yaml.safe_load(dlc.SCHEMA_PATH.read_text())

    def walk(node, path):
        if isinstance(node, dict):
            if "type" in node:
                assert node.get("description"), f"schema field {path} lacks a description"
            for k, v in node.get("properties", {}).items():
                walk(v, f"{path}.{k}")
            for v in node.get("patternProperties", {}).values():
                walk(v, f"{path}.*")

    walk(schema, "")


def test_config_readme_documents_every_key():
    text = (ROOT / "config" / "README.md").read_text()
    schema = yaml.safe_load(dlc.SCHEMA_PATH.read_text())
    keys = set()

    def walk(node):
        for k, v in node.get("properties", {}).items():
            keys.add(k)
            walk(v)
        for v in node.get("patternProperties", {}).values():
            walk(v)

    walk(schema)
    missing = sorted(k for k in keys if f"`{k}`" not in text)
    assert not missing, f"config/README.md does not document: {missing}"
