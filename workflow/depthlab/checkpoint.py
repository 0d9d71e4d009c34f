"""Checkpoint files: tensors only, written atomically, tagged with the fingerprint of the run that made them.

A job killed by SIGTERM, SIGKILL or a SLURM time limit leaves ``<store>.ckpt``
(and children such as ``<store>.ckpt.round1``); the next run of the same job
resumes from it.  A checkpoint is used only if its fingerprint equals the
resuming run's (same data, rates, seeds, shapes and settings) and its code
fingerprint equals the resuming stage's (``code``: the fingerprint of the modules
the stage runs), so a job killed under old code and resumed under edited code
starts afresh instead of continuing the old trainer's state; the log line names
both fingerprints.  One that cannot
be read, that holds anything but tensors, or that lacks a fingerprint is ignored
with a warning, never trusted: ``torch.load(weights_only=True)`` refuses
arbitrary pickled objects.  Each checkpoint carries a SHA-256 of its tensors, checked on load: one whose bytes were
damaged on disk or in a copy (it still loads, with other numbers) is discarded with a warning and the job starts over.
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

log = logging.getLogger("depthlab")
_FP = "fingerprint"
_CODE = "code_fingerprint"
_HASH = "content_sha256"  # over every other tensor: a flipped byte (a disk or copy error) is caught on load
HOLD = "DEPTHLAB_TEST_HOLD"  # tests only: a folder; a job waits after each checkpoint it writes until <folder>/release exists
CHILD = r"round[0-9]+|final|grow[0-9]+|half[0-9]+|part[0-9]+|screen|rest|kept"  # the children the trainers take (lrsearch rounds, the radial final run, grid growth, a halved rate, a round in parts, a one-fold first rung, its kept candidates' other folds, and those joined)
_MINE = re.compile(
    rf"(?:\.(?:{CHILD}))*(?:\.tmp-[0-9]+(?:-[A-Za-z0-9]+-[0-9a-f]+)?)?"
)  # what follows a checkpoint's name in the files it writes


def _as_bytes(text: str) -> "torch.Tensor":
    import torch

    return torch.frombuffer(bytearray(text.encode()), dtype=torch.uint8) if text else torch.zeros(0, dtype=torch.uint8)


def tensors_hash(tensors: dict[str, "torch.Tensor"]) -> str:
    """SHA-256 over the names, dtypes, shapes and bytes of ``tensors`` (sorted by name)."""
    import hashlib

    import torch

    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().to("cpu").contiguous().reshape(-1)
        h.update(f"{name}|{t.dtype}|{tuple(tensors[name].shape)}|".encode())
        h.update(t.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _test_hold(path: Path) -> None:
    """Fault injection that does not depend on the machine's speed: with ``$DEPTHLAB_TEST_HOLD`` set
    to a folder, a job that has just written a checkpoint waits until ``<folder>/release`` exists, so a test can cut
    its time limit, cancel or requeue it while it is certainly running and resumable.  It leaves ``held-<pid>`` in the
    folder while it waits.  Unset (every real run), nothing happens."""
    folder = os.environ.get(HOLD, "")
    if not folder:
        return
    release = Path(folder) / "release"
    if release.exists():
        return
    mark = Path(folder) / f"held-{os.getpid()}"
    try:
        mark.touch()
    except OSError:
        pass
    log.info("held after writing %s until %s exists ($%s: a test's fault injection)", path, release, HOLD)
    while not release.exists():
        time.sleep(0.5)
    log.info("released")


class FileCheckpoint:
    """Implements the trainer's Checkpoint protocol (load / save) on one file, plus named children."""

    def __init__(self, path: str | Path, code: str = ""):
        self.path = Path(path)
        self.code = code  # the code fingerprint of the stage that writes and reads this checkpoint

    def child(self, name: str) -> "FileCheckpoint":
        if not re.fullmatch(CHILD, name):
            raise ValueError(f"checkpoint child {name!r} is not one of {CHILD} (clear() removes those names only)")
        return FileCheckpoint(self.path.with_name(f"{self.path.name}.{name}"), self.code)

    def save(self, fingerprint: str, tensors: dict[str, "torch.Tensor"]) -> None:
        import torch

        from .storage import own

        tmp = own(self.path)
        body = {**tensors, _FP: _as_bytes(fingerprint), _CODE: _as_bytes(self.code)}
        try:
            torch.save({**body, _HASH: _as_bytes(tensors_hash(body))}, tmp)
            os.replace(tmp, self.path)  # atomic: a kill mid-write leaves the previous checkpoint intact
        except (
            BaseException
        ):  # SIGTERM raises here (the stage's handler) as a full disk does: no half-written temporary left
            tmp.unlink(missing_ok=True)
            raise
        _test_hold(self.path)

    def load(self, fingerprint: str) -> dict[str, "torch.Tensor"] | None:
        if not self.path.exists():
            return None
        import torch

        try:
            state = torch.load(self.path, weights_only=True, map_location="cpu")
            if not all(isinstance(v, torch.Tensor) for v in state.values()):
                raise TypeError("holds something other than tensors")
            if _HASH not in state:
                raise ValueError("it carries no content hash (written before checkpoints carried one)")
            recorded = bytes(state.pop(_HASH).tolist()).decode()
            if tensors_hash(state) != recorded:
                raise ValueError(
                    "its tensors do not hash to the content hash it carries: damaged (a disk or copy "
                    "error?), so the job starts over"
                )
            stored = bytes(state.pop(_FP).tolist()).decode()
            code = bytes(state.pop(_CODE).tolist()).decode() if _CODE in state else "(none recorded)"
        except Exception as e:  # unreadable, malformed or missing the fingerprint: ignored, never trusted
            log.warning("ignoring unusable checkpoint %s (%s: %s)", self.path, type(e).__name__, e)
            return None
        if code != self.code:
            log.warning(
                "ignoring checkpoint %s: it was made by other code (code fingerprint %s; this run's is %s), "
                "so training starts afresh",
                self.path,
                code,
                self.code,
            )
            return None
        if stored != fingerprint:
            log.warning(
                "ignoring checkpoint %s: it was made by a different run (other data, rates, seeds or settings)",
                self.path,
            )
            return None
        return state

    def clear(self) -> None:
        """Remove this checkpoint, its children and any half-written temporaries: exactly the names this class writes
        (a user's ``<store>.ckpt.notes`` or ``<store>.ckpt-old`` beside it is left alone)."""
        for p in self.path.parent.iterdir():
            rest = p.name[len(self.path.name) :] if p.name.startswith(self.path.name) else None
            if rest is not None and _MINE.fullmatch(rest) and p.is_file() and not p.is_symlink():
                p.unlink(missing_ok=True)
