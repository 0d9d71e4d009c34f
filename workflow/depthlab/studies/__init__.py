"""The study registry: every study folder in this package, and in the folders on ``$DEPTHLAB_STUDY_PATH``.

A study is a subpackage ``depthlab.studies.<name>`` whose ``__init__`` defines ``STUDY`` (a
:class:`depthlab.study.Study`); it is found by looking, not by a list kept by hand.  A folder
``<dir>/<name>/`` outside the checkout joins the registry when ``<dir>`` is on
``$DEPTHLAB_STUDY_PATH`` (``os.pathsep``-separated), and is imported as
``depthlab.studies.<name>`` like the built-in ones, so its code is fingerprinted the same way.
Looking a study up imports its ``__init__`` and specs only (no numpy, no torch).
"""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
from pathlib import Path

from depthlab.study import NAME, Stage, Study, bind

BUILTIN = Path(__file__).resolve().parent


# extra folders holding study packages (a namespace-style search path for this package)
def _search_path() -> list[str]:
    """This package's folder, then each folder on $DEPTHLAB_STUDY_PATH once (a folder named twice, or the built-in one
    named again, is the same folder: its studies are not defined twice)."""
    out, seen = [str(BUILTIN)], {BUILTIN}
    for p in os.environ.get("DEPTHLAB_STUDY_PATH", "").split(os.pathsep):
        if p and Path(p).resolve() not in seen:
            seen.add(Path(p).resolve())
            out.append(p)
    return out


__path__ = _search_path()


class StudyPathError(ImportError):
    """A study folder on $DEPTHLAB_STUDY_PATH that cannot join the registry; the message names it."""


def folders() -> list[Path]:
    """Where studies are looked for: this package's folder, then each folder on $DEPTHLAB_STUDY_PATH."""
    return [Path(p) for p in __path__]


@functools.lru_cache(maxsize=1)
def names() -> tuple[str, ...]:
    """Every study name, sorted (a name found twice is an error: a study from $DEPTHLAB_STUDY_PATH never shadows another)."""
    seen: dict[str, Path] = {}
    for folder in folders():
        if not folder.is_dir():
            continue
        for info in pkgutil.iter_modules([str(folder)]):
            if not info.ispkg or not NAME.match(info.name):
                continue
            if info.name in seen:
                where = "a built-in study" if seen[info.name].resolve() == BUILTIN else f"a study in {seen[info.name]}"
                raise StudyPathError(
                    f"$DEPTHLAB_STUDY_PATH: the study folder {folder / info.name} has the name of {where}; "
                    f"rename the folder (a study from the path never replaces another)"
                )
            if (folder / info.name / "schema.yaml").is_file():
                seen[info.name] = folder
    return tuple(sorted(seen))


@functools.lru_cache(maxsize=None)
def get_study(name: str) -> Study:
    """The study ``name`` (KeyError naming the known studies otherwise)."""
    if name not in names():
        raise KeyError(f"unknown study {name!r}; known studies: {', '.join(names())}")
    init = next((f / name / "__init__.py" for f in folders() if (f / name / "schema.yaml").is_file()), name)
    try:
        mod = importlib.import_module(f"{__name__}.{name}")
    except Exception as e:  # a study folder's own code failed (a bad stage, a raise, a syntax error): one line
        raise StudyPathError(f"study {name} ({init}) cannot be loaded: {type(e).__name__}: {_first_line(e)}") from e
    study = getattr(mod, "STUDY", None)
    if not isinstance(study, Study) or study.name != name:
        raise StudyPathError(
            f"study {name} ({init}) must define STUDY = Study(name={name!r}, ...); found {study!r:.80}"
        )
    return bind(study, mod.__name__)


def stage_of(spec: object) -> Stage | None:
    """The stage a spec is a job of (its ``STUDY``'s stage ``STAGE``); None for a spec of no study or stage known here."""
    try:
        return get_study(str(getattr(spec, "STUDY", ""))).stage(str(getattr(spec, "STAGE", "")))
    except KeyError:
        return None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else "(no message)"
