"""A store's provenance record, read one way: :func:`store_record` reads it from the store's root ``zarr.json`` alone
(no array opened, no xarray imported), through the safe JSON reader; :func:`stores_below` lists the stores under a
folder.  Every reader of a record (the audit, the runner, the lock, results, plan, compare, fork, sweep) comes here,
so a damaged record raises one error, :class:`RecordError`, with one message, whoever reads it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import safeio

RECORD_ATTR = "depthlab_provenance"  # the zarr attribute holding the record (storage writes it)


class RecordError(ValueError):
    """A path that is not a depthlab store with a readable provenance record; the message names the path."""


class NoRecord(RecordError, KeyError):
    """A zarr store with no depthlab record at all (a benchmark's scratch store): also a KeyError, as the attribute
    lookup it stands for, so a reader that treats a record-less store as such catches it by either name."""

    __str__ = ValueError.__str__  # KeyError's str() would quote the message


def store_record(path: str | Path) -> dict[str, Any]:
    """The provenance record of the store at ``path``, read from its root ``zarr.json`` alone."""
    path = Path(path)
    meta = path / "zarr.json"
    try:
        attrs = safeio.read_json(meta).get("attributes", {})
        text = attrs[RECORD_ATTR]
        if not isinstance(text, str):
            raise TypeError
        rec = safeio.parse_record(text, str(path))
    except FileNotFoundError:
        raise RecordError(f"{path}: not a zarr store (no zarr.json)") from None
    except safeio.UnsafeFile as e:
        raise RecordError(f"{path}: unreadable store metadata: {e}") from None
    except KeyError:
        raise NoRecord(f"{path}: a zarr store without a depthlab provenance record") from None
    except (TypeError, AttributeError):
        raise RecordError(f"{path}: its metadata holds no depthlab provenance record as text") from None
    except (OSError, ValueError) as e:
        raise RecordError(f"{path}: unreadable store metadata ({type(e).__name__}: {e})") from None
    if not isinstance(rec, dict):
        raise RecordError(f"{path}: its provenance record is not a JSON object")
    return rec


def stores_below(folder: str | Path):
    """Every ``*.zarr`` directory below ``folder`` (not descending into stores; temporary writes skipped)."""
    for dirpath, dirnames, _ in os.walk(folder):
        keep = []
        for d in sorted(dirnames):
            if d.endswith(".zarr"):
                yield Path(dirpath) / d
            elif ".zarr.tmp-" not in d and ".zarr.old-" not in d:
                keep.append(d)
        dirnames[:] = keep
