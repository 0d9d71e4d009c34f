"""The conda env file (untestable here beyond syntax) stays in step with the pip pins that set-up uses."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def pins() -> dict[str, str]:
    out = {}
    for line in (ROOT / "envs" / "constraints.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;#]+)", line)
        if m:
            out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out


def test_torch_is_pinned_exactly_and_set_up_installed_that_pin():
    """A looser torch requirement pulls a multi-GB CUDA build: the constraint pins one version, and the environment
    `make setup` built from these files runs exactly it (torch reports e.g. 2.13.0+cpu for the CPU wheel)."""
    import torch

    pin = pins()["torch"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", pin), pin
    assert torch.__version__.split("+")[0] == pin


def test_the_packages_torch_range_admits_the_pin_and_not_the_next_minor_release():
    """``pip install .`` reads pyproject.toml, not the constraints file: its torch range is the release the suite passes
    with, so pip does not take the newest one (2.14.1+cu130 at the install issue's try)."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.version import Version

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    torch_req = next(Requirement(d) for d in deps if Requirement(d).name == "torch")
    pin = Version(pins()["torch"])
    assert torch_req.specifier.contains(pin), (str(torch_req), pin)
    assert not torch_req.specifier.contains(Version(f"{pin.major}.{pin.minor + 1}.0")), str(torch_req)


def test_every_requirement_is_pinned():
    p = pins()
    reqs = [
        r.strip().lower()
        for r in (ROOT / "envs" / "requirements.txt").read_text().splitlines()
        if r.strip() and not r.startswith("#")
    ]
    assert reqs and all(r in p for r in reqs), [r for r in reqs if r not in p]


def test_conda_env_matches_pip_pins():
    env = yaml.safe_load((ROOT / "envs" / "depthlab.yaml").read_text())
    p = pins()
    seen = set()
    for dep in env["dependencies"]:
        items = dep["pip"] if isinstance(dep, dict) else [dep]
        for item in items:
            m = re.match(r"^([A-Za-z0-9_.\-]+)\s*={1,2}\s*([^\s]+)$", item)
            if not m or m.group(1) == "python":
                continue
            name = m.group(1).lower()
            assert name in p, f"{name} is in envs/depthlab.yaml but not pinned in envs/constraints.txt"
            assert m.group(2) == p[name], f"{name}: conda {m.group(2)} vs pip {p[name]}"
            seen.add(name)
    reqs = {
        r.strip().lower()
        for r in (ROOT / "envs" / "requirements.txt").read_text().splitlines()
        if r.strip() and not r.startswith("#")
    }
    assert reqs <= seen, f"missing from envs/depthlab.yaml: {sorted(reqs - seen)}"


def test_a_wheel_installed_elsewhere_validates_audits_and_plans(smoke_run, tmp_path):
    """`pip install .` (not editable) or a wheel gave a working `depthlab stage`, but `validate` and
    `audit` failed with FileNotFoundError on '<site-packages>/schemas/config.schema.yaml': the schema lay beside the
    package.  It is package data now, read with importlib.resources.  The wheel is built from this checkout, installed
    into a fresh target (no editable link back to it) and run from another folder."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    whl = tmp_path / "wheel"
    p = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(root), "-w", str(whl)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    target = tmp_path / "site"
    wheel = next(whl.glob("depthlab-*.whl"))
    p = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert (target / "depthlab" / "schemas" / "config.schema.yaml").is_file()
    env = {**__import__("os").environ, "PYTHONPATH": str(target)}
    where = subprocess.run(
        [sys.executable, "-c", "import depthlab; print(depthlab.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert where.stdout.strip() == str(target / "depthlab" / "__init__.py"), where.stdout + where.stderr
    # plan reads every calibration of the package (the GPU points too: the wheel lacked gpu_points.json)
    for args in (
        ["validate", str(root / "config" / "smoke.yaml")],
        ["audit", str(smoke_run.results / "claims.md")],
        ["plan", "--no-probe", str(root / "config" / "config.yaml")],
        ["plan", "--no-probe", str(root / "config" / "paper.yaml")],
    ):
        p = subprocess.run(
            [sys.executable, "-m", "depthlab", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=900,
        )
        assert p.returncode == 0, (args, p.stdout[-2000:], p.stderr[-3000:])
