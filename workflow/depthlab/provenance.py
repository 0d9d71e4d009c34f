"""What made a result: code version, package versions, and the code fingerprint of a stage.

**Code fingerprint.**  A stage runs one entry function; its fingerprint is the SHA-256 of the
source of the module defining it and of every ``depthlab`` module it imports, transitively
(imports anywhere in a module, lazy ones inside functions included; imports under
``if TYPE_CHECKING:`` are for type hints only and are not followed).  Figure and claims stages
also cover :mod:`depthlab.render`, which decides the bytes of their files (CSV number format,
PNG and PDF rendering, the claims markdown).  Each module's source is hashed as its syntax tree
with docstrings removed, so comments, docstrings and formatting never change a fingerprint,
while any change to code does.  Parent packages' ``__init__`` files are not part of it (they
hold only lazy export tables and registrations), and neither is the infrastructure that moves
arrays losslessly (``cli``, ``storage``, ``provenance``, ``audit``: the audit checks every
store's content hash) unless a stage module imports it.

Modules are split so that a fingerprint follows what a stage runs: one loss per module
(``core/losses``), one optimiser per module (``core/optim``), the kernel recursion apart from
kernel regression (``core/kernels``, ``core/kernel_regression``), one stage per module in the
studies, and random streams identified by name (``core/seeds``) with no table of every study's
streams.  So editing the hinge loss reruns no Mori & Ueda job, and adding a stream for a new
study reruns nothing else.

Each Snakemake job carries its stage's fingerprint in its ``params``, so editing the trainer
reruns exactly the jobs whose stages import it (and what depends on them), editing a plotting
module reruns only figures, and a study's module never reruns another study.
``depthlab fingerprint <study> <stage>`` lists the modules.
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
from typing import Sequence

PACKAGE_DIR = Path(__file__).resolve().parent  # .../workflow/depthlab
REPO = PACKAGE_DIR.parents[1]
PACKAGES = ("depthlab", "torch", "numpy", "scipy", "xarray", "zarr", "numba", "bayesian-optimization", "snakemake")


def _bases(parts: list[str], root: Path) -> list[Path]:
    """Where module ``depthlab.<parts>`` may live: under ``root``, and for a study, in a folder on $DEPTHLAB_STUDY_PATH."""
    out = [root.joinpath(*parts)]
    if len(parts) >= 2 and parts[0] == "studies":
        out += [Path(f).joinpath(*parts[1:]) for f in os.environ.get("DEPTHLAB_STUDY_PATH", "").split(os.pathsep) if f]
    return out


def _module_path(name: str, root: Path) -> Path | None:
    """File of depthlab module ``name`` (``depthlab.core.trainer``) under package dir ``root``; None if not a module."""
    for base in _bases(name.split(".")[1:], root):
        if base.with_suffix(".py").is_file():
            return base.with_suffix(".py")
        if (base / "__init__.py").is_file():
            return base / "__init__.py"
    return None


def _type_checking_only(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): imports for type hints, never run."""
    t = node.test if isinstance(node, ast.If) else None
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _walk(tree: ast.AST):
    """ast.walk, skipping the bodies of ``if TYPE_CHECKING:`` blocks."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and _type_checking_only(node):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


@functools.lru_cache(maxsize=None)
def _import_records(name: str, path: Path, mtime_ns: int, size: int) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The depthlab imports written in module ``name`` (file ``path``), unresolved: ``(module, names)`` per import
    (``names`` empty for a plain ``import``).  Cached per file version: parsing and walking the syntax tree is the
    costly part, and Snakemake fingerprints dozens of stages that share most modules."""
    _, tree = _parse(path, mtime_ns)
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[tuple[str, tuple[str, ...]]] = []
    for node in _walk(tree):
        if isinstance(node, ast.Import):
            out.extend((a.name, ()) for a in node.names if a.name.split(".")[0] == "depthlab")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] == "depthlab":
                out.append((mod, tuple(a.name for a in node.names)))
    return tuple(out)


def _imports(name: str, path: Path, root: Path) -> set[str]:
    """depthlab modules imported anywhere in module ``name`` (file ``path``), resolved against the files under ``root`` now."""
    st = path.stat()
    out: set[str] = set()
    for mod, names in _import_records(name, path, st.st_mtime_ns, st.st_size):
        if not names:
            out.add(mod)
            continue
        # `from pkg import sub` imports the submodule when sub is one; else a name of pkg
        subs = [f"{mod}.{n}" for n in names if _module_path(f"{mod}.{n}", root)]
        out.update(subs)
        if len(subs) < len(names):
            out.add(mod)
    return {m for m in out if _module_path(m, root) is not None}


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(getattr(body[0], "value", None), ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return tree


@functools.lru_cache(maxsize=None)
def _parse(path: Path, mtime_ns: int) -> tuple[str, ast.AST]:
    tree = _strip_docstrings(ast.parse(path.read_text(), filename=str(path)))
    return ast.dump(tree, annotate_fields=False, include_attributes=False), tree


def closure(entry: str | Sequence[str], root: Path = PACKAGE_DIR) -> list[str]:
    """Sorted depthlab modules that module(s) ``entry`` import, transitively, themselves included."""
    seen: set[str] = set()
    todo = [entry] if isinstance(entry, str) else list(entry)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_path(name, root)
        if path is None:
            raise ModuleNotFoundError(f"no depthlab module {name!r} under {root}")
        seen.add(name)
        todo.extend(_imports(name, path, root) - seen)
    return sorted(seen)


def code_fingerprint(entry: str | Sequence[str], root: Path = PACKAGE_DIR) -> str:
    """SHA-256 over the docstring-free syntax trees of ``closure(entry)``."""
    h = hashlib.sha256()
    for name in closure(entry, root):
        path = _module_path(name, root)
        dump, _ = _parse(path, path.stat().st_mtime_ns)
        h.update(f"{name}\0{dump}\0".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """'<git commit>' or '<git commit>+dirty' of the checkout; 'unknown (...)' with a hash of the code files when the code
    is not the top of a git repository of its own (a copy without .git unpacked inside another repository records
    that one's HEAD no more).  ``$DEPTHLAB_CODE_VERSION`` (used by tests to play another commit) is
    recorded as declared, beside the real version, never in its place (item 5)."""
    real = git_version(REPO, roots=(REPO,))
    env = os.environ.get("DEPTHLAB_CODE_VERSION")
    return f"{env} (declared by $DEPTHLAB_CODE_VERSION; the checkout is {real})" if env else real


def code_files_hash(folder: str | Path) -> str:
    """SHA-256 over the relative paths and bytes of every .py file below ``folder`` (caches left out)."""
    folder = Path(folder)
    h = hashlib.sha256()
    for f in sorted(folder.rglob("*.py")):
        if "__pycache__" in f.parts:
            continue
        h.update(str(f.relative_to(folder)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def git_version(folder: str | Path, roots: tuple = ()) -> str:
    """The git commit of the repository holding ``folder`` ('+dirty' when it has uncommitted changes to tracked files),
    'not a git repository' otherwise.  With ``roots``: only a repository whose top level is one of them counts; inside
    any other (a home or dotfiles repository), 'unknown (...)' with :func:`code_files_hash` of the folder."""
    try:
        top = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True
        ).stdout.strip()
        if roots and Path(top).resolve() not in {Path(r).resolve() for r in roots}:
            code = PACKAGE_DIR if Path(folder).resolve() == REPO.resolve() else Path(folder)
            return f"unknown (inside the repository {top}, not its own; code sha256 {code_files_hash(code)[:16]})"
        head = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no", "--", "."],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown" if Path(folder) == REPO else "not a git repository"
    return head + ("+dirty" if dirty else "")


BUILTIN_STUDIES = PACKAGE_DIR / "studies"  # the built-in studies' folder (named here: provenance knows no registry)


def study_source(folder: str | Path, builtin: Path = BUILTIN_STUDIES) -> dict[str, str] | None:
    """Where a study's code comes from when it is not built in (a folder on $DEPTHLAB_STUDY_PATH): the folder and its
    git version; None for a built-in study, one in ``builtin`` (the checkout's code_version covers it)."""
    folder = Path(folder).resolve()
    if folder.parent == Path(builtin).resolve():
        return None
    return {"folder": str(folder), "version": git_version(folder, roots=(folder, folder.parent))}


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
