"""Config validation: each kind of bad config is rejected naming the key; every shipped config is valid."""

import copy
from pathlib import Path

import pytest
import yaml

import depthlab.config as dlc
from depthlab.studies import get_study, names
from depthlab.studies.mori_ueda.specs import DepthJob

STUDIES = names()

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def smoke():
    return yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())


@pytest.mark.parametrize("name", ["smoke.yaml", "config.yaml", "paper.yaml", "workstation.yaml"])
def test_shipped_configs_validate_and_build_every_study(name):
    cfg = dlc.load(ROOT / "config" / name)
    assert sorted(cfg["studies"]) == sorted(STUDIES), f"{name} should configure every study"


def _bad(cfg, fn):
    cfg = copy.deepcopy(cfg)
    fn(cfg)
    return cfg


MU = "studies.mori_ueda"


def mu_(c):
    return c["studies"]["mori_ueda"]


def fig2(c):
    return mu_(c)["figures"]["fig2"]


def local2(c):
    return fig2(c)["targets"]["2-local"]


CASES = [
    (
        "unknown key",
        lambda c: mu_(c)["training"].update(momentum=0.9),
        rf"config error at {MU}.training: .*'momentum' was unexpected.*allowed keys: batch_size, check_every",
    ),
    (
        "unknown study",
        lambda c: c["studies"].update(imagenet={}),
        r"config error at studies: .*'imagenet' was unexpected.*allowed keys: ",
    ),
    (
        "unknown target key",
        lambda c: local2(c).update(D=3),
        r"targets.2-local.*'D' was unexpected.*allowed keys: d, g, k, locality, n_train, noise",
    ),
    (
        "k > d",
        lambda c: local2(c).update(k=9, d=8),
        rf"{MU}.figures.fig2.targets.2-local.k: k = 9 exceeds the input dimension d = 8",
    ),
    (
        "P too small",
        lambda c: fig2(c).update(budget=3.0),
        rf"{MU}.figures.fig2.budget: no positive width for budget P = 3 at d = 8, L = 1",
    ),
    (
        "negative noise",
        lambda c: local2(c).update(noise=-0.5),
        r"figures.fig2.targets.2-local.noise: -0.5 is less than the minimum of 0",
    ),
    ("empty depths", lambda c: fig2(c).update(depths=[]), r"figures.fig2.depths: \[\] should be non-empty"),
    (
        "bad enum",
        lambda c: c.update(device="gpu"),
        r"config error at device: 'gpu' is not one of \['auto', 'cpu', 'cuda'\]",
    ),
    (
        "device of an unknown study",
        lambda c: c.update(device_by_study={"imagenet": "cpu"}),
        r"config error at device_by_study: .*'imagenet' was unexpected.*allowed keys: acceleration, fractals, mori_ueda",
    ),
    (
        "bad study device",
        lambda c: c.update(device_by_study={"separation": "gpu"}),
        r"config error at device_by_study.separation: 'gpu' is not one of \['auto', 'cpu', 'cuda'\]",
    ),
    (
        "string float",
        lambda c: mu_(c)["training"].update(loss_threshold="1e-4"),
        r"training.loss_threshold: '1e-4' is not of type 'number'.*write 1.0e-4",
    ),
    (
        "bad figure name",
        lambda c: mu_(c)["figures"].update(figure2=fig2(c)),
        r"config error at studies.mori_ueda.figures: .*figure2.*keys must match \^fig",
    ),
    ("g needs k=2", lambda c: local2(c).update(g="sin", k=3), r"g = 'sin' takes exactly k = 2"),
    (
        "bounds order",
        lambda c: mu_(c)["lrsearch"].update(log10_lr_bounds=[0.0, -1.0]),
        r"lrsearch.log10_lr_bounds: need low < high",
    ),
    (
        "screen on every fold",
        lambda c: mu_(c)["lrsearch"]["halving"].update(first_rung_folds=2),
        r"config error at studies.mori_ueda.lrsearch.halving.first_rung_folds: 2 must be below lrsearch.folds = 2; allowed: 0 \(every fold\) .. 1",
    ),
    (
        "negative screen SE",
        lambda c: mu_(c)["lrsearch"]["halving"].update(first_rung_se=-1.0),
        r"config error at studies.mori_ueda.lrsearch.halving.first_rung_se: -1.0 is less than the minimum of 0",
    ),
    (
        "screen SE without a screen",
        lambda c: mu_(c)["lrsearch"]["halving"].update(first_rung_folds=0, first_rung_se=1.0),
        r"config error at studies.mori_ueda.lrsearch.halving.first_rung_se: 1.0 needs a one-fold screen",
    ),
    (
        "search check not dividing",
        lambda c: mu_(c)["lrsearch"].update(check_every=3),
        r"config error at studies.mori_ueda.lrsearch.check_every: 3 does not divide training.check_every = 10 .*allowed: 1, 2, 5, 10",
    ),
    # whole numbers written as floats (JSON-schema alone accepts 2.0 as an integer)
    (
        "k float",
        lambda c: local2(c).update(k=2.0),
        r"targets.2-local.k: 2.0 is not of type 'integer' \(write whole numbers",
    ),
    ("d float", lambda c: local2(c).update(d=8.0), r"targets.2-local.d: 8.0 is not of type 'integer'"),
    (
        "batch float",
        lambda c: mu_(c)["training"].update(batch_size=50.0),
        r"training.batch_size: 50.0 is not of type 'integer'",
    ),
    ("folds float", lambda c: mu_(c)["lrsearch"].update(folds=2.0), r"lrsearch.folds: 2.0 is not of type 'integer'"),
    ("seed float", lambda c: c.update(seed=0.0), r"config error at seed: 0.0 is not of type 'integer'"),
    ("depth float", lambda c: fig2(c).update(depths=[1.0, 2]), r"figures.fig2.depths.0: 1.0 is not of type 'integer'"),
    ("bool as int", lambda c: c.update(seed=True), r"config error at seed: True is not of type 'integer'"),
    # non-finite numbers
    (
        "beta inf",
        lambda c: mu_(c)["ntk"].update(beta=float("inf")),
        r"ntk.beta: inf is not of type 'number' \(a finite number is required\)",
    ),
    ("beta nan", lambda c: mu_(c)["ntk"].update(beta=float("nan")), r"ntk.beta: nan is not of type 'number'"),
    (
        "bounds inf",
        lambda c: mu_(c)["lrsearch"].update(log10_lr_bounds=[-2.0, float("inf")]),
        r"lrsearch.log10_lr_bounds.1: inf is not of type 'number'",
    ),
    (
        "threshold nan",
        lambda c: mu_(c)["training"].update(loss_threshold=float("nan")),
        r"training.loss_threshold: nan is not of type 'number'",
    ),
    (
        "noise inf",
        lambda c: local2(c).update(noise=float("inf")),
        r"targets.2-local.noise: inf is not of type 'number'",
    ),
    ("budget inf", lambda c: fig2(c).update(budget=float("inf")), r"figures.fig2.budget: inf is not of type 'number'"),
    # names and paths
    (
        "newline in a target name",
        lambda c: fig2(c)["targets"].update({"2-local\n": fig2(c)["targets"].pop("2-local")}),
        r"config error at 'studies.mori_ueda.figures.fig2.targets.2-local\\n': the key contains a control character",
    ),
    (
        "control char in results",
        lambda c: c.update(results="res\x00ults"),
        r"config error at results: 'res\\x00ults' contains a control character",
    ),
    ("empty results", lambda c: c.update(results=""), r"config error at results: '' should be non-empty"),
    (
        "blank results",
        lambda c: c.update(results="  "),
        r"config error at results: '  ' is empty or the filesystem root",
    ),
    ("root results", lambda c: c.update(results="/"), r"config error at results: '/' is empty or the filesystem root"),
    ("no studies", lambda c: c.update(studies={}), r"config error at studies: \{\} should be non-empty"),
    # sizes: the estimated memory of the largest job is named, with the key that drives it
    (
        "huge n_test",
        lambda c: (fig2(c).update(n_test=50000000), local2(c).update(d=1000)),
        r"config error at studies.mori_ueda.figures.fig2.n_test: the largest job, mori_ueda (data|train) fig2/(data|train)/2-.*, needs about [0-9.]+ GiB, more than this machine's memory",
    ),
    (
        "huge budget",
        lambda c: fig2(c).update(budget=1.0e11),
        r"config error at studies.mori_ueda.figures.fig2.budget: the largest job, mori_ueda (train|lrsearch) fig2/",
    ),
    (
        "huge n_train",
        lambda c: local2(c).update(n_train=400000),
        r"config error at studies.mori_ueda.figures.fig2.targets.2-local.n_train: the largest job, mori_ueda ntk",
    ),
    (
        "huge block",
        lambda c: mu_(c)["ntk"].update(block=10**7),
        r"ntk.block: 10000000 is greater than the maximum of 1000000",
    ),
    (
        "huge epochs",
        lambda c: mu_(c)["training"].update(max_epochs=10**9),
        r"training.max_epochs: 1000000000 is greater than the maximum",
    ),
    (
        "bad memory limit",
        lambda c: c.update(max_memory_gib=-1),
        r"config error at max_memory_gib: -1 is not valid under any of the given schemas",
    ),
    # each of these used to pass validate and then fail, crash or hang at run time
    (
        "target named 1",
        lambda c: fig2(c)["targets"].update({1: fig2(c)["targets"].pop("2-local")}),
        r"config error at studies.mori_ueda.figures.fig2.targets.1: the key 1 is a int, but keys are names: quote it \('1'\)",
    ),
    (
        "target named true",
        lambda c: fig2(c)["targets"].update({True: fig2(c)["targets"].pop("2-local")}),
        r"config error at studies.mori_ueda.figures.fig2.targets.True: the key True is a bool",
    ),
    (
        "depth 1e9",
        lambda c: fig2(c).update(depths=[1, 10**9]),
        r"figures.fig2.depths.1: 1000000000 is greater than the maximum of 100",
    ),
    (
        "seed count huge",
        lambda c: fig2(c).update(seeds=[0, 2**40]),
        r"figures.fig2.seeds.1: 1099511627776 is greater than the maximum",
    ),
    ("k huge", lambda c: local2(c).update(k=10**9), r"targets.2-local.k: 1000000000 is greater than the maximum"),
    (
        "300-character target name",
        lambda c: fig2(c)["targets"].update({"t" * 300: fig2(c)["targets"].pop("2-local")}),
        r"config error at studies.mori_ueda.figures.fig2.targets: the key 'tttt.*is 300 bytes long; .* limits to 255 bytes",
    ),
    ("results is an option", lambda c: c.update(results="-r"), r"config error at results: '-r' starts with '-'"),
    (
        "braces in results",
        lambda c: c.update(results="res{figure}"),
        r"config error at results: 'res\{figure\}' holds braces",
    ),
    (
        "results is a file",
        lambda c: c.update(results=str(ROOT / "README.md")),
        r"config error at results: .*README.md' names an existing file",
    ),
    (
        "results too long",
        lambda c: c.update(results="/".join(["r" * 200] * 20)),
        r"config error at results: .* bytes as an absolute path",
    ),
    (
        "results name too long",
        lambda c: c.update(results="r" * 300),
        r"config error at results: .* has a component of 300 bytes",
    ),
    # a value that can break out of a cluster job script's repr quoting (r'$(touch x)' is put on the
    # command line as "results=r'$(touch x)'", and the node's shell runs the $(...)): refused in every key and value
    (
        "quote in results",
        lambda c: c.update(results="r'$(touch x)'"),
        r"config error at results: .* holds \"'\", which a cluster job's shell could run as code",
    ),
    (
        "dollar in results",
        lambda c: c.update(results="r$(touch x)"),
        r"config error at results: 'r\$\(touch x\)' holds '\$'",
    ),
    (
        "backtick in results",
        lambda c: c.update(results="r`touch x`"),
        r"config error at results: 'r`touch x`' holds '`'",
    ),
    ("double quote in results", lambda c: c.update(results='r"x'), r"config error at results: .* holds '\"'"),
    ("backslash in results", lambda c: c.update(results="r\\x"), r"config error at results: .* holds '\\\\'"),
    (
        "quote in a nested value",
        lambda c: local2(c).update(locality="local'"),
        r"config error at studies.mori_ueda.figures.fig2.targets.2-local.locality: .* holds",
    ),
    # names that look like depthlab's own files hid stores from `ls` and broke open_results
    (
        "target named x.zarr",
        lambda c: fig2(c)["targets"].update({"x.zarr": fig2(c)["targets"].pop("2-local")}),
        r"config error at studies.mori_ueda.figures.fig2.targets.x.zarr: the name 'x.zarr' ends in .zarr",
    ),
    (
        "target named y.zarr.tmp-1",
        lambda c: fig2(c)["targets"].update({"y.zarr.tmp-1": fig2(c)["targets"].pop("2-local")}),
        r"the name 'y.zarr.tmp-1' ends in .zarr or holds",
    ),
    (
        "target named z.ckpt",
        lambda c: fig2(c)["targets"].update({"z.ckpt": fig2(c)["targets"].pop("2-local")}),
        r"the name 'z.ckpt'",
    ),
    (
        "results below a file",
        lambda c: c.update(results=str(ROOT / "README.md" / "results")),
        r"config error at results: .* lies below .*README.md, which is a file",
    ),
    (
        "dollar in a key",
        lambda c: fig2(c)["targets"].update({"t$x": fig2(c)["targets"].pop("2-local")}),
        r"config error at studies.mori_ueda.figures.fig2.targets.t\$x: the key holds '\$'",
    ),
]


@pytest.mark.parametrize("what,fn,pattern", CASES, ids=[c[0] for c in CASES])
def test_bad_config_is_rejected_naming_the_key(smoke, what, fn, pattern):
    with pytest.raises(dlc.ConfigError, match=pattern):
        dlc.validate(_bad(smoke, fn))


def test_memory_limit_override_for_a_bigger_machine(smoke):
    big = _bad(smoke, lambda c: (fig2(c).update(n_test=20000000), local2(c).update(d=1000)))
    with pytest.raises(dlc.ConfigError, match="more than this machine's memory"):
        dlc.validate(copy.deepcopy(big))
    dlc.validate({**copy.deepcopy(big), "max_memory_gib": 4096})  # (about 450 GiB: fine on a big node)
    with pytest.raises(dlc.ConfigError, match=r"more than max_memory_gib = 1 \(1.0 GiB\)"):
        dlc.validate({**copy.deepcopy(big), "max_memory_gib": 1})


def test_yaml_problems_are_one_line_errors(tmp_path):
    with pytest.raises(dlc.ConfigError, match=r"config file .*nope.yaml does not exist$"):
        dlc.load(tmp_path / "nope.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("results: [unclosed\n")
    with pytest.raises(dlc.ConfigError, match=r"is not valid YAML at line \d+, column \d+"):
        dlc.load(broken)
    dup = tmp_path / "dup.yaml"
    dup.write_text("results: a\nseed: 0\nresults: b\n")
    with pytest.raises(dlc.ConfigError, match=r"duplicate key 'results' \(line 3; first at line 1\)"):
        dlc.load(dup)
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("3\n")
    with pytest.raises(dlc.ConfigError, match="must be a mapping"):
        dlc.load(scalar)


def test_specs_are_canonical_and_depth_local(smoke):
    cfg = dlc.validate(smoke)
    mu = get_study("mori_ueda")
    a = mu.spec(cfg, "train", DepthJob("fig2", "2-local", 1))
    assert a.shape.width and a.shape.n_params and a.lrs is None and "lrsearch" in a.inputs()
    cfg2 = copy.deepcopy(cfg)
    fig2(cfg2)["depths"] = [1, 5]
    # a depth job does not depend on the list of other depths
    assert a.to_json() == mu.spec(cfg2, "train", DepthJob("fig2", "2-local", 1)).to_json()
    # but the figure does
    assert mu.spec(cfg, "figure", {"figure": "fig2"}) != mu.spec(cfg2, "figure", {"figure": "fig2"})
    # a change of the training cap reaches train but not data or ntk
    cfg3 = copy.deepcopy(cfg)
    mu_(cfg3)["training"]["max_epochs"] += 1
    assert mu.spec(cfg3, "train", DepthJob("fig2", "2-local", 1)) != a
    assert mu.spec(cfg3, "ntk", DepthJob("fig2", "2-local", 1)) == mu.spec(cfg, "ntk", DepthJob("fig2", "2-local", 1))
    # the device is not part of any spec: switching it reruns nothing
    cfg4 = copy.deepcopy(cfg)
    cfg4["device"] = "cpu"
    assert mu.spec(cfg4, "train", DepthJob("fig2", "2-local", 1)) == a
    assert dlc.spec_hash({"a": 1.0e-4}) == dlc.spec_hash({"a": 0.0001})
    # the spec a store records is the one the audit recomputes from its (study, stage, job), and it parses back typed
    assert mu.spec(cfg, "train", {"figure": "fig2", "target": "2-local", "depth": 1}) == a
    assert mu.spec_from_dict(a.to_dict()) == a


def test_every_spec_of_every_shipped_config_round_trips_through_its_json():
    for name in ("smoke.yaml", "config.yaml"):
        cfg = dlc.load(ROOT / "config" / name)
        for s in cfg["studies"]:
            study = get_study(s)
            for stage in study.stages:
                for job in study.jobs(cfg, stage.name):
                    spec = study.spec(cfg, stage.name, job)
                    assert study.spec_from_dict(__import__("json").loads(spec.to_json())) == spec, (s, stage.name, job)


def test_a_misspelled_stage_or_figure_is_an_error_naming_the_known_ones(smoke):
    cfg = dlc.validate(smoke)
    mu = get_study("mori_ueda")
    with pytest.raises(KeyError, match=r"no stage 'trian'; stages: data, lrsearch, train, ntk, entk, figure, claims"):
        mu.jobs(cfg, "trian")
    with pytest.raises(KeyError, match=r"no figure 'fig9' in this config; figures: fig1, fig2, fig3, fig4, fig5, fig6"):
        mu.spec(cfg, "figure", {"figure": "fig9"})
    with pytest.raises(KeyError, match=r"unknown study 'mori'; known studies: acceleration, fractals, mori_ueda"):
        get_study("mori")


def test_the_validator_fills_every_schema_default_once(smoke):
    """One default mechanism: the schemas' defaults, filled by the validator (config.used.yaml shows them)."""
    cfg = dlc.validate(smoke)
    assert cfg["max_memory_gib"] == "auto" and cfg["device_by_study"] == {}
    assert dlc.device_of(cfg, "separation") == cfg["device"]
    assert tuple(dlc.load_schema("config")["properties"]["device"]["enum"]) == dlc.DEVICES  # one list of devices
    assert dlc.device_of({**cfg, "device_by_study": {"separation": "cpu"}}, "separation") == "cpu"
    assert cfg["studies"]["mori_ueda"]["lrsearch"]["seed"] == 0
    assert fig2(cfg)["kind"] == "depth_sweep" and local2(cfg)["g"] == "product" and local2(cfg)["noise"] == 0.0
    assert dlc.validate(copy.deepcopy(cfg)) == cfg, "validating a filled config changes nothing"


def _schemas():
    out = {"config.schema.yaml": dlc.load_schema("config")}
    out.update({f"{s}/schema.yaml": dlc.load_schema(s) for s in STUDIES})
    return out


def test_every_schema_field_has_a_description_and_every_study_a_schema():
    schemas = _schemas()
    assert set(schemas) == {"config.schema.yaml"} | {f"{s}/schema.yaml" for s in STUDIES}
    assert all(get_study(s).schema_path.parent.name == s for s in STUDIES)

    def walk(node, path):
        if isinstance(node, dict):
            if "type" in node:
                assert node.get("description"), f"schema field {path} lacks a description"
            for k, v in node.get("properties", {}).items():
                walk(v, f"{path}.{k}")
            for v in node.get("patternProperties", {}).values():
                walk(v, f"{path}.*")
            if isinstance(node.get("items"), dict) and node["items"].get("properties"):
                walk(node["items"], f"{path}[]")

    for name, schema in schemas.items():
        walk(schema, name)


def test_config_readme_documents_every_key():
    text = (ROOT / "config" / "README.md").read_text()
    keys = set()

    def walk(node):
        for k, v in node.get("properties", {}).items():
            keys.add(k)
            walk(v)
        for v in node.get("patternProperties", {}).values():
            walk(v)
        if isinstance(node.get("items"), dict):
            walk(node["items"])

    for schema in _schemas().values():
        walk(schema)
    missing = sorted(k for k in keys if f"`{k}`" not in text)
    assert not missing, f"config/README.md does not document: {missing}"


def test_config_readme_key_reference_is_generated_from_the_schemas():
    """config/README.md's key reference is what docs/config_reference.py makes of the schemas today, and the check
    can fail: a reference edited by hand (or left behind by a schema change) is not current, and is regenerated."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("config_reference", ROOT / "docs" / "config_reference.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    text = (ROOT / "config" / "README.md").read_text()
    assert ref.render(text) == text, "config/README.md's key reference is stale: run make docs"
    line = next(ln for ln in text.split(ref.BEGIN, 1)[1].splitlines() if ln.startswith("- `seed`"))
    stale = text.replace(line, line + " (an old sentence)")
    assert ref.render(stale) != stale and ref.render(stale) == text
    assert ref.main(["--check"]) == 0


def test_alias_bombs_and_self_reference_stop_while_loading_and_merge_keys_work(tmp_path):
    levels = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]'] + [
        f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 12)
    ]  # 9^12 values once expanded
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("results: r\nbomb:\n" + "\n".join("  " + line for line in levels) + "\n")
    with pytest.raises(dlc.ConfigError, match=r"the YAML expands to more than 100000 values through its aliases"):
        dlc.read_yaml(bomb)
    loop = tmp_path / "loop.yaml"
    loop.write_text("a: &a [1, *a]\n")
    with pytest.raises(dlc.ConfigError, match="refers to itself"):
        dlc.read_yaml(loop)
    # YAML 1.1 merge keys (PyYAML accepts them): a base mapping reused with one value overridden
    text = "defaults: &d\n  results: r\n  seed: 3\nmine:\n  <<: *d\n  seed: 4\n"
    m = tmp_path / "m.yaml"
    m.write_text(text)
    assert dlc.read_yaml(m)["mine"] == {"results": "r", "seed": 4}
    m.write_text("mine:\n  seed: 1\n  seed: 2\n")
    with pytest.raises(dlc.ConfigError, match="duplicate key 'seed'"):
        dlc.read_yaml(m)


def test_every_integer_in_every_schema_has_a_maximum():
    """Counts, depths, seeds and sizes are bounded before any job: a depth of 1e9 is a config error, not a hang."""
    from depthlab.config import load_schema

    def walk(node, path, out):
        if isinstance(node, dict):
            if node.get("type") == "integer" and "maximum" not in node and "enum" not in node:
                out.append(".".join(path))
            for k, v in node.items():
                walk(v, path + [str(k)], out)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, path + [str(i)], out)

    missing = []
    for name in ["config", *STUDIES]:
        walk(load_schema(name), [name], missing)
    assert not missing, missing


def test_the_shipped_configs_train_every_fractal_net_with_two_seeds_or_more():
    """A fractal row resting on one trajectory is not decided (fractals.claims._one_run); the shipped default and paper
    configs give every fractal net two seeds or more, while one seed stays a valid choice for a quick look."""
    import depthlab.config as dlc

    for name in ("config.yaml", "paper.yaml", "workstation.yaml"):
        cfg = dlc.load(ROOT / "config" / name)
        assert len(cfg["studies"]["fractals"]["training"]["seeds"]) >= 2, name
    smoke = dlc.load(ROOT / "config" / "smoke.yaml")
    assert smoke["studies"]["fractals"]["training"]["seeds"] == [0]


@pytest.mark.parametrize("name", ["smoke.yaml", "config.yaml", "paper.yaml", "workstation.yaml"])
def test_a_shipped_configs_header_names_the_folder_its_results_land_in(name):
    """A header that says where results land says what `depthlab where` prints (workstation.yaml said
    results/default/ while its results went to results/workstation)."""
    import re

    import depthlab.config as dlc

    text = (ROOT / "config" / name).read_text()
    where = dlc.load(ROOT / "config" / name)["results"]
    for said in re.findall(r"[Rr]esults land in (\S+?)/? ", text):
        assert said.rstrip("/") == where.rstrip("/"), (name, said, where)
