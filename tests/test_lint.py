"""The linter and the formatter (ruff, pinned in envs/constraints.txt; configured in pyproject.toml): the code passes
both as it is, and the linter does find what its selection names (a check that cannot fail checks nothing)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).parent / "ruff"


def ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUFF), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_the_code_passes_the_linter_and_is_formatted():
    lint = ruff("check", "--no-cache", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = ruff("format", "--no-cache", "--check", ".")
    assert fmt.returncode == 0, "run `.venv/bin/ruff format .`:\n" + fmt.stdout + fmt.stderr


def test_the_linter_finds_an_undefined_name_and_an_unformatted_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    bad = tmp_path / "bad.py"
    bad.write_text("def f(x):\n    return  y+x\n")
    lint = ruff("check", "--no-cache", "bad.py", cwd=tmp_path)
    assert lint.returncode == 1 and "F821" in lint.stdout, lint.stdout + lint.stderr
    fmt = ruff("format", "--no-cache", "--check", "bad.py", cwd=tmp_path)
    assert fmt.returncode == 1 and "bad.py" in fmt.stdout + fmt.stderr


MAX_MODULE_LINES = 600  # a module past this does several jobs: split it by job (the cost model is a package for it)


def long_modules(root: Path, limit: int = MAX_MODULE_LINES) -> list[str]:
    return sorted(
        f"{p.relative_to(root)}: {n} lines"
        for p in root.rglob("*.py")
        if "__pycache__" not in p.parts and (n := len(p.read_text().splitlines())) > limit
    )


def test_no_module_of_the_package_is_over_600_lines(tmp_path):
    assert long_modules(ROOT / "workflow" / "depthlab") == []
    (tmp_path / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    (tmp_path / "ok.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    assert long_modules(tmp_path) == [f"big.py: {MAX_MODULE_LINES + 1} lines"]
