"""What made a result: code version, package versions, and the code fingerprint of a stage.

**Code fingerprint.**  A stage (``depthlab stage <study> <stage>``) runs one entry
function; the fingerprint is the SHA-256 of the source of the module defining it
and of every ``depthlab`` module it imports, transitively (imports anywhere in a
module, lazy ones inside functions included).  Each module's source is hashed
as its syntax tree with docstrings removed, so comments, docstrings and
formatting never change a fingerprint, while any change to code does.  Parent
packages' ``__init__`` files are not part of it (they hold only lazy export
tables), and neither is the infrastructure that moves bytes around (``cli``,
``storage``, ``provenance``, ``audit``) unless a stage module imports it.

Each Snakemake job carries its stage's fingerprint in its ``params``, so editing
the trainer reruns exactly the jobs whose stages import it (and what depends on
them), editing a plotting module reruns only figures, and a study's module never
reruns another study.  ``depthlab fingerprint <study> <stage>`` lists the modules.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import subprocess
from importlib import metadata
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent  # .../workflow/depthlab
REPO = PACKAGE_DIR.parents[1]
PACKAGES = ("depthlab", "torch", "numpy", "scipy", "xarray", "zarr", "bayesian-optimization", "snakemake")


def _module_path(name: str, root: Path) -> Path | None:
    """File of depthlab module ``name`` (``depthlab.core.trainer``) under package dir ``root``; None if not a module."""
    parts = name.split(".")[1:]
    base = root.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _is_package(name: str, root: Path) -> bool:
    p = _module_path(name, root)
    return p is not None and p.name == "__init__.py"


def _imports(name: str, tree: ast.AST, root: Path) -> set[str]:
    """depthlab modules imported anywhere in ``tree`` (the module ``name``)."""
    pkg = name if _is_package(name, root) else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "depthlab")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "depthlab":
                continue
            # `from pkg import sub` imports the submodule when sub is one; else a name of pkg
            subs = [f"{mod}.{a.name}" for a in node.names if _module_path(f"{mod}.{a.name}", root)]
            out.update(subs)
            if len(subs) < len(node.names):
                out.add(mod)
    return {m for m in out if _module_path(m, root) is not None}


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


@functools.lru_cache(maxsize=None)
def _parse(path: Path, mtime_ns: int) -> tuple[str, ast.AST]:
    tree = _strip_docstrings(ast.parse(path.read_text(), filename=str(path)))
    return ast.dump(tree, annotate_fields=False, include_attributes=False), tree


def closure(entry: str, root: Path = PACKAGE_DIR) -> list[str]:
    """Sorted depthlab modules that module ``entry`` imports, transitively, itself included."""
    seen: set[str] = set()
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_path(name, root)
        if path is None:
            raise ModuleNotFoundError(f"no depthlab module {name!r} under {root}")
        seen.add(name)
        _, tree = _parse(path, path.stat().st_mtime_ns)
        todo.extend(_imports(name, tree, root) - seen)
    return sorted(seen)


def code_fingerprint(entry: str, root: Path = PACKAGE_DIR) -> str:
    """SHA-256 over the docstring-free syntax trees of ``closure(entry)``."""
    h = hashlib.sha256()
    for name in closure(entry, root):
        path = _module_path(name, root)
        dump, _ = _parse(path, path.stat().st_mtime_ns)
        h.update(f"{name}\0{dump}\0".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """'<git commit>' or '<git commit>+dirty'; 'unknown' outside a git checkout."""
    env = os.environ.get("DEPTHLAB_CODE_VERSION")
    if env:
        return env
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


@functools.lru_cache(maxsize=1)
def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def canonical_json(obj: object) -> str:
    """Deterministic JSON: sorted keys, no whitespace, floats in repr form (1e-4 and 0.0001 agree), no NaN."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def spec_hash(spec: dict) -> str:
    return sha256(canonical_json(spec))


def record_hash(record: dict) -> str:
    """Hash of a provenance record: every field but ``record_hash`` and the wall-clock ``created``.

    Consumers store their inputs' record hashes, so rewriting one record (its
    inputs, its spec, a number-feeding attribute) without rewriting every record
    downstream of it, up to the figure, is detectable.
    """
    return spec_hash({k: v for k, v in record.items() if k not in ("record_hash", "created")})


def embedded(record: dict) -> dict:
    """The part of a figure's record that its PNG and PDF carry (the PDF's own hash cannot be inside it)."""
    return {k: v for k, v in record.items() if k not in ("pdf_sha256", "record_hash", "created")}
