"""Config loading and validation: the single gate every value passes before any job runs.

A config has a few top-level keys (``results``, ``device``, ``seed``, ...) and a
``studies`` section with one sub-section per study a run builds; a study left out
is not built.  Validation, in order, stops at the first problem and raises
:class:`ConfigError` naming the key (dotted path) and what is allowed:

1. YAML: a missing or unparsable file, a duplicate key (PyYAML silently keeps the
   last one; we refuse), aliases that expand beyond ``MAX_YAML_NODES`` nodes or refer
   to themselves (checked on the parsed node graph before anything is expanded, so an
   alias bomb cannot hang the loader or Snakemake).  Merge keys (``<<: *base``) work.
2. Every string and key: no control characters (a newline in a name would pass a
   ``^...$`` pattern and end up in a file name), and no quote, backtick, dollar or backslash (a cluster
   executor puts values on a job script's command line quoted with Python's repr, which they could break out
   of); keys are text (a target named ``1`` or ``true`` must be quoted); no key longer than a file name may be (255 bytes).
   ``results`` must not start with ``-``, hold braces (Snakemake wildcards), name an
   existing file, or make paths longer than the file system allows.
3. JSON schema (``depthlab/schemas/config.schema.yaml``, package data, for the top level, and each study's
   ``schema.yaml`` in its folder for its section; the top level's ``studies`` keys are the studies
   the registry finds), with a strict type checker: an ``integer`` is an int (``2.0`` is refused:
   JSON-schema alone accepts it), a ``number`` is a finite int or float (``.inf`` and ``.nan`` are
   refused), booleans are neither.  The schemas' ``default`` values are filled in here, and only
   here, so ``config.used.yaml`` shows every value a run used.
4. Each study's cross-field rules (k <= d, a budget big enough for every depth, ...).
5. Sizes: the estimated peak memory of every job (each stage spec's ``memory``) must fit in this
   machine's memory, or in ``max_memory_gib`` when a config sets it (a bigger cluster node).

A *spec* is the exact, canonical set of config values one job depends on.  Its
canonical JSON is the job's Snakemake ``params`` (so a change reruns exactly the
jobs it touches) and its SHA-256 is the ``config_hash`` recorded in the store.
"""

from __future__ import annotations

import copy
import functools
import math
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from . import safeio
from .provenance import canonical_json, spec_hash  # noqa: F401  (re-exported: specs use them)

SCHEMA_FILE = "schemas/config.schema.yaml"  # package data of depthlab (importlib.resources): a wheel has it too
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Characters that can break out of the quoting a cluster executor gives a value on a job's command line: Snakemake's
# executor interface quotes --config values, paths and targets with Python's repr, which is not shell quoting (a value
# holding ' is wrapped in "...", inside which $(...) and `...` run on the compute node).  Refused in every config key and
# value, and (under a cluster executor) in the working directory and config paths (:func:`check_remote_paths`).
SHELL_META = re.compile(r"['\"`$\\\n]")
SHELL_META_SHOWN = "' \" ` $ \\ or a newline"
# A key can become a file or folder name (a target's stores): one that looks like a store, a temporary of one, or a
# checkpoint would hide stores from the listing and the audit, or be cleaned up as a leftover.
RESERVED_NAME = re.compile(r"[.]zarr$|[.]zarr[.](?:tmp|old)-|[.]ckpt")
MAX_YAML_NODES = 100_000  # a real config has a few hundred; aliases may not expand a file beyond this
NAME_MAX = 255  # bytes in one file name (ext4, xfs, ...): keys become path components
PATH_MAX = 4096
MAX_CONFIG_BYTES = 4 * 2**20  # a config is a few kB; a FIFO or /dev/zero is refused unread (depthlab.safeio)


DEVICES = ("auto", "cpu", "cuda")  # the schema's `device` enum (tests/test_config.py checks they agree)


class ConfigError(ValueError):
    """A config value is invalid; the message names the key and what is allowed."""


def key(path: Any) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


# ---- YAML -------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys."""


def set_dotted(cfg: dict, parts: list[str], value: Any) -> None:
    """Set ``cfg[parts[0]]...[parts[-1]] = value``, making each missing (or non-mapping) parent a mapping: a dotted key
    of ``sweep --set``, ``fork --set`` or ``decide`` that the raw config leaves to its default."""
    node = cfg
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = value


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for k_node, _ in node.value:
        if k_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` merges (flatten_mapping below); own keys win
            continue
        k = loader.construct_object(k_node, deep=deep)
        if k in seen:
            raise ConfigError(
                f"config error: duplicate key {k!r} (line {k_node.start_mark.line + 1}; first at line "
                f"{seen[k] + 1}); each key may appear once"
            )
        seen[k] = k_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _written_size(root: yaml.Node) -> int:
    """Distinct nodes of the document as written (an aliased node counted once), iteratively (no recursion limit)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(x for pair in node.value for x in pair)
    return len(seen)


def _expanded_size(root: yaml.Node) -> int:
    """Nodes the document has once every alias is expanded, computed on the node graph (shared nodes counted once per
    use, memoised), stopping at MAX_YAML_NODES; a self-referring alias is refused."""
    memo: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node) -> int:
        if id(node) in memo:
            return memo[id(node)]
        if id(node) in active:
            raise ConfigError(
                f"config error: the alias at line {node.start_mark.line + 1} refers to itself; a config is a tree"
            )
        active.add(id(node))
        n = 1
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [x for pair in node.value for x in pair]
        else:
            children = []
        for child in children:
            n += size(child)
            if n > MAX_YAML_NODES:
                raise ConfigError(
                    f"config error: the YAML expands to more than {MAX_YAML_NODES} values through its aliases "
                    f"(near line {node.start_mark.line + 1}); a config is small: write it out"
                )
        active.discard(id(node))
        memo[id(node)] = n
        return n

    try:
        return size(root)
    except RecursionError:
        raise ConfigError("config error: the YAML is nested too deeply to be a config") from None


def read_yaml(path: str | Path) -> Any:
    """Parse a YAML file strictly; a missing or broken file is a one-line ConfigError."""
    p = Path(path)
    try:
        text = safeio.read_text(p, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"config file {p} does not exist") from None
    except safeio.UnsafeFile as e:
        raise ConfigError(f"config file {e}") from None
    keys = text.count(":")  # every key has one; a file with more keys than a config can hold is refused before parsing
    if keys > MAX_YAML_NODES:  # (200 000 plain keys took 35 s to parse, then were refused for aliases it did not have)
        raise ConfigError(
            f"config file {p} holds {keys} ':' (keys), more than the {MAX_YAML_NODES} values a config may "
            "have; a config is small"
        )
    loader = _StrictLoader(text)  # a SafeLoader subclass
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        written = _written_size(node)
        if written > MAX_YAML_NODES:
            raise ConfigError(
                f"config file {p} has {written} values as written (no alias counted twice), more than the "
                f"{MAX_YAML_NODES} a config may have; a config is small"
            )
        _expanded_size(node)  # before anything is constructed: an alias bomb stops here
        return loader.construct_document(node)
    except RecursionError:
        raise ConfigError(f"config file {p} is nested too deeply to be a config") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"config file {p} is not valid YAML{where}: {getattr(e, 'problem', None) or e}") from None
    finally:
        loader.dispose()


# ---- schema -----------------------------------------------------------------------------


def _is_int(checker: Any, v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(checker: Any, v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


_TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many({"integer": _is_int, "number": _is_number})
StrictValidator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=_TYPES)
_properties = jsonschema.Draft202012Validator.VALIDATORS["properties"]


def _fill_defaults(validator: Any, properties: dict, instance: Any, schema: dict) -> Any:
    """The ``properties`` keyword, filling each missing property that has a ``default`` before validating it."""
    if validator.is_type(instance, "object"):
        for prop, sub in properties.items():
            if isinstance(sub, dict) and "default" in sub and prop not in instance:
                instance[prop] = copy.deepcopy(sub["default"])
    yield from _properties(validator, properties, instance, schema)


FillingValidator = jsonschema.validators.extend(StrictValidator, {"properties": _fill_defaults})


def load_schema(name: str = "config") -> dict:
    """The top-level schema, its ``studies`` keys those of the study registry; or a study's own schema by name.
    Parsed once per process (a fresh copy each call: callers may change it)."""
    return copy.deepcopy(_parsed_schema(name))


@functools.lru_cache(maxsize=None)
def _parsed_schema(name: str) -> dict:
    from .studies import get_study, names

    if name != "config":
        from .studies import StudyPathError

        path = get_study(name).schema_path
        try:
            schema = yaml.safe_load(path.read_text())
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
            raise StudyPathError(
                f"study {name}: its schema {path} cannot be read: {str(e).splitlines()[0][:200]}"
            ) from e
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise StudyPathError(f"study {name}: its schema {path} is not a JSON schema of an object (type: object)")
        return schema
    from importlib.resources import files

    schema = yaml.safe_load(files("depthlab").joinpath(SCHEMA_FILE).read_text())
    schema["properties"]["studies"]["properties"] = {
        s: {"type": "object", "description": f"The {s} study's section (its schema: the study folder's schema.yaml)."}
        for s in names()
    }
    schema["properties"]["device_by_study"]["properties"] = {
        s: {"type": "string", "enum": list(DEVICES), "description": f"The {s} study's device."} for s in names()
    }
    return schema


def device_of(config: dict, study: str) -> str:
    """The device a study's GPU stages ask for: its ``device_by_study`` entry, else ``device``."""
    return config.get("device_by_study", {}).get(study, config["device"])


def _allowed_keys(schema: dict, path: list) -> list[str] | None:
    node = schema
    for p in path:
        props = node.get("properties", {})
        if p in props:
            node = props[p]
            continue
        pats = node.get("patternProperties", {})
        node = next(iter(pats.values())) if pats else {}
    props = node.get("properties")
    return sorted(props) if props else None


def check_schema(value: Any, schema: dict, prefix: tuple = (), fill: bool = False) -> None:
    """Validate ``value`` against ``schema`` (filling in its defaults if ``fill``); raise ConfigError on the first
    (shallowest) problem."""
    validator = (FillingValidator if fill else StrictValidator)(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return
    e = errors[0]
    where = key(prefix + tuple(e.absolute_path))
    msg = f"config error at {where}: {e.message}"
    if e.validator == "additionalProperties":
        allowed = _allowed_keys(schema, list(e.absolute_path))
        if allowed:
            msg += f"; allowed keys: {', '.join(allowed)}"
        elif "patternProperties" in e.schema:
            msg += f"; keys must match {', '.join(e.schema['patternProperties'])}"
    if e.validator == "type":
        want = e.validator_value
        if isinstance(e.instance, str) and "number" in str(want):
            msg += " (YAML 1.1 reads 1e-4 and 2.0e3 as strings: write 1.0e-4, 2.0e+3 or 2000)"
        elif isinstance(e.instance, float) and not math.isfinite(e.instance):
            msg += " (a finite number is required)"
        elif isinstance(e.instance, float) and "integer" in str(want):
            msg += " (write whole numbers without a decimal point)"
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more problem(s))"
    raise ConfigError(msg)


def _unprintable(text: str) -> str | None:
    """The first character of ``text`` for which str.isprintable() is false (C0/C1 controls, U+2028, the right-to-left
    override, ...), or None.  Under SLURM a U+2028 value reached the compute node escaped, as another value."""
    return next((c for c in text if not c.isprintable()), None)


def _no_angles(text: str, path: tuple, shown: str) -> None:
    """Snakemake reads ``<logs>``, ``<script>`` ... in a path as its own variables."""
    if "<" in text or ">" in text:
        raise ConfigError(
            f"config error at {key(path)}: {shown} holds '<' or '>', which Snakemake reads as one of its path "
            "variables (<logs>, <script>, ...); choose a name without them"
        )


def _no_control(value: Any, path: tuple = ()) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConfigError(
                    f"config error at {key(path + (k,))}: the key {k!r} is a {type(k).__name__}, but keys are "
                    f"names: quote it ('{k}')"
                )
            if CONTROL.search(k) or _unprintable(k):
                raise ConfigError(
                    f"config error at {key(path + (k,))!r}: the key contains a control character (or another "
                    f"non-printable one: {_unprintable(k)!r} in {k!r}); keys are plain text"
                )
            _no_angles(k, path + (k,), "the key")
            _no_shell_meta(k, path + (k,), "the key")
            if RESERVED_NAME.search(k):
                raise ConfigError(
                    f"config error at {key(path + (k,))}: the name {k!r} ends in .zarr or holds .zarr.tmp-, "
                    f".zarr.old- or .ckpt, which depthlab's own files use (a store, a write in progress, a "
                    f"checkpoint); choose another name"
                )
            if len(k.encode()) > NAME_MAX:
                raise ConfigError(
                    f"config error at {key(path)}: the key {k[:40]!r}... is {len(k.encode())} bytes long; a key "
                    f"can become a file name, which the file system limits to {NAME_MAX} bytes"
                )
            _no_control(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _no_control(v, path + (i,))
    elif isinstance(value, str):
        if CONTROL.search(value) or _unprintable(value):
            raise ConfigError(
                f"config error at {key(path)}: {value!r} contains a control character (or another "
                f"non-printable one: {_unprintable(value)!r}); values are plain text"
            )
        _no_shell_meta(value, path, repr(value))
        _no_angles(value, path, repr(value))


def _no_shell_meta(text: str, path: tuple, shown: str) -> None:
    m = SHELL_META.search(text)
    if m:
        raise ConfigError(
            f"config error at {key(path)}: {shown} holds {m.group()!r}, which a cluster job's shell could run as "
            f"code (Snakemake's executors quote with Python's repr); no key or value may hold {SHELL_META_SHOWN}"
        )


def check_remote_paths(paths: list[tuple[str, str]]) -> None:
    """Under a cluster executor every one of ``paths`` (the working directory, the Snakefile's folder, the config files)
    reaches the job script's command line with Snakemake's repr quoting: refuse one holding a shell metacharacter."""
    for what, p in paths:
        m = SHELL_META.search(str(p))
        if m:
            raise ConfigError(
                f"depthlab: {what} {str(p)!r} holds {m.group()!r}; under a cluster executor it reaches the job "
                f"script's shell, quoted with Python's repr, and could run as code there. Run from a folder "
                f"whose path holds none of {SHELL_META_SHOWN}"
            )


def _check_results(results: str) -> None:
    where = f"config error at results: {results!r}"
    if results.startswith("~"):
        raise ConfigError(
            f"{where} starts with '~', which no shell expands here (it would make a folder named '~'); "
            f"write the full path, e.g. {os.path.expanduser(results)!r}"
        )
    if not results.strip().rstrip("/"):
        raise ConfigError(f"{where} is empty or the filesystem root; give a folder such as 'results'")
    if results.startswith("-"):
        raise ConfigError(f"{where} starts with '-', which a command would read as an option; write ./{results}")
    if "{" in results or "}" in results:
        raise ConfigError(
            f"{where} holds braces, which Snakemake reads as wildcards; choose a folder name without {{ }}"
        )
    full = os.path.abspath(results)
    if len(full.encode()) > PATH_MAX - 512:
        raise ConfigError(
            f"{where} is {len(full.encode())} bytes as an absolute path; the stores below it need up to 512 "
            f"more and the file system allows {PATH_MAX}"
        )
    long = [part for part in Path(full).parts if len(part.encode()) > NAME_MAX]
    if long:
        raise ConfigError(
            f"{where} has a component of {len(long[0].encode())} bytes; the file system allows {NAME_MAX}"
        )
    if os.path.exists(full) and not os.path.isdir(full):
        raise ConfigError(f"{where} names an existing file, not a folder; choose another folder for the results")
    for parent in Path(full).parents:
        if os.path.exists(parent) and not os.path.isdir(parent):
            raise ConfigError(
                f"{where} lies below {parent}, which is a file, not a folder; no folder can be made there"
            )
    real = Path(os.path.realpath(full))
    if any(real == Path(v) or Path(v) in real.parents for v in VIRTUAL_ROOTS):
        raise ConfigError(
            f"{where} lies in {next(v for v in VIRTUAL_ROOTS if real == Path(v) or Path(v) in real.parents)}, the "
            "kernel's own view of the machine, where no folder can be made; choose a folder on a disk"
        )
    ancestor = next((q for q in (real, *real.parents) if os.path.exists(q)), None)
    if ancestor is not None and not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConfigError(f"{where}: {ancestor} is not writable, so the folder cannot be made there")
    _check_nesting(where, Path(full))


VIRTUAL_ROOTS = ("/proc", "/sys", "/dev")  # pseudo file systems: a results folder there cannot be created

RESULTS_MARKERS = ("config.used.yaml", ".depthlab.lock", ".depthlab.config.json")  # what a results folder holds


def _is_results(folder: Path) -> bool:
    return any(os.path.lexists(folder / m) for m in RESULTS_MARKERS)


def _check_nesting(where: str, full: Path) -> None:
    """A results folder inside a store, inside another results folder, or holding one (a folder written
    inside another run's store vanished, whole, when that run rebuilt the store by rename), or inside the code."""
    store = next((part for part in full.parts if part.endswith(".zarr")), None)
    if store:
        raise ConfigError(
            f"{where} has a component {store!r}: a store's name; a rebuild of that store would delete the "
            "folder. Choose a folder outside every results folder"
        )
    outer = next((parent for parent in full.parents if _is_results(parent)), None)
    if outer is not None:
        raise ConfigError(
            f"{where} lies inside the results folder {outer} of another run, whose rebuilds may replace or "
            "delete it. Choose a folder outside every results folder"
        )
    code = Path(__file__).resolve().parent
    if full == code or code in full.parents:
        raise ConfigError(f"{where} lies inside the depthlab package ({code}); choose a folder outside the code")
    if full.is_dir():
        inner = _holds_results(full)
        if inner is not None:
            raise ConfigError(
                f"{where} holds the results folder {inner} of another run; a run here would mix the two. "
                "Choose another folder"
            )


def _holds_results(top: Path, depth: int = 3) -> Path | None:
    """A results folder strictly below ``top``, looking ``depth`` levels down (stores are not entered); None if none."""
    level = [top]
    for _ in range(depth):
        nxt = []
        for folder in level:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for e in entries:
                if (
                    e.is_dir(follow_symlinks=False)
                    and not e.name.endswith(".zarr")
                    and e.name not in ("logs", ".snakemake")
                ):
                    sub = Path(e.path)
                    if _is_results(sub):
                        return sub
                    nxt.append(sub)
        level = nxt[:2000]
    return None


def default_results(source: str | Path | None) -> str:
    """The results folder of a config that names none: ``results/<its name>``, where a config's name is its file's stem
    (``config.yaml`` is the default config: ``results/default``; a run's own snapshot ``config.used.yaml`` names its
    folder itself)."""
    stem = Path(source).stem if source else "config"
    name = "default" if stem == "config" else stem
    if not name.strip(".") or "/" in name:  # '...yaml' -> results/.., '..yaml' -> results/.
        raise ConfigError(
            f"config error: the config file {str(source)!r} has no usable name ({name!r} would put the results "
            "outside results/); rename the file, or give it a `results:` folder"
        )
    return f"results/{name}"


def validate(config: Any, memory: bool = True, source: str | Path | None = None) -> dict:
    """Validate a whole config in place (see the module docstring); returns it with every default filled in.
    ``memory=False`` skips the check that the largest job fits this machine (reading another machine's results);
    ``source``: the config's file, whose name gives the results folder when the config names none."""
    from .studies import get_study

    if not isinstance(config, dict):
        raise ConfigError(f"config error: the config must be a mapping of keys to values, got {type(config).__name__}")
    if "results" not in config:
        config["results"] = default_results(source)
    _no_control(config)
    check_schema(config, load_schema("config"), fill=True)
    _check_results(config["results"])
    for name, section in config["studies"].items():
        study = get_study(name)
        check_schema(section, load_schema(name), ("studies", name), fill=True)
        study.check(section, config)
    if memory:
        _check_memory(config)
    return config


def job_memory(config: dict) -> list[tuple[int, str, str]]:
    """(estimated peak bytes, job label, the config key of its largest part) of every store job of the config."""
    from .jobs import JobGraph

    out = []
    for node in JobGraph(config):
        parts = node.spec.memory()
        if parts:
            label = f"{node.study} {node.stage} {node.path.split('/', 1)[1].removesuffix('.zarr')}"
            out.append((sum(parts.values()), label, max(parts, key=parts.get)))
    return out


def _check_memory(config: dict) -> None:
    from . import memory

    limit = config.get("max_memory_gib", "auto")
    cap = memory.machine_bytes() if limit == "auto" else int(limit * memory.GIB)
    where = "this machine's memory" if limit == "auto" else f"max_memory_gib = {limit}"
    jobs = job_memory(config)
    if not jobs:
        return
    nbytes, label, k = max(jobs)
    if nbytes > cap:
        raise ConfigError(
            f"config error at {k}: the largest job, {label}, needs about {memory.gib(nbytes)}, more than "
            f"{where} ({memory.gib(cap)}); lower it, or set max_memory_gib (top level) on a machine with more memory"
        )


def load(path: str | Path) -> dict:
    """Read a YAML config file and validate it."""
    return validate(read_yaml(path), source=path)
