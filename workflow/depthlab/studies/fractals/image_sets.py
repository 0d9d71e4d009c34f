"""Real images for Fig. 7: scikit-learn's bundled 8x8 digits, or a user's local copy of CIFAR-10's binary distribution.

CIFAR-10 (binary version): ``data_batch_1.bin`` ... ``data_batch_5.bin`` and ``test_batch.bin``, each a
sequence of 3073-byte records: one label byte (0..9) and 3072 pixel bytes, channel-major (R, G, B planes
of 32 x 32, row-major).  Parsed with numpy from the bytes; the pickled Python version is never read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

CIFAR_TRAIN = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
CIFAR_TEST = "test_batch.bin"
RECORD = 1 + 3 * 32 * 32


class ImageDataError(ValueError):
    """A CIFAR-10 folder that is missing, incomplete or malformed; the message names the file."""


def check_cifar_folder(folder: str | Path) -> None:
    """Cheap checks before any job: every file there, a whole number of records, labels 0..9 in the first records."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ImageDataError(
            f"{folder} is not a folder (it should hold CIFAR-10's binary files {CIFAR_TRAIN[0]} ... {CIFAR_TEST})"
        )
    for name in (*CIFAR_TRAIN, CIFAR_TEST):
        p = folder / name
        if not p.is_file():
            raise ImageDataError(f"{p} is missing (CIFAR-10's binary version: {', '.join((*CIFAR_TRAIN, CIFAR_TEST))})")
        size = p.stat().st_size
        if size == 0 or size % RECORD:
            raise ImageDataError(
                f"{p} is {size} bytes, not a whole number of {RECORD}-byte records (label + 3072 pixels)"
            )
        with p.open("rb") as fh:
            head = np.frombuffer(fh.read(min(size, 16 * RECORD)), dtype=np.uint8).reshape(-1, RECORD)
        if head[:, 0].max() > 9:
            raise ImageDataError(f"{p}: a label byte is {int(head[:, 0].max())}, not 0..9 (is it the binary version?)")


def read_cifar_file(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 [n, 3, 32, 32], labels int64 [n]) of one CIFAR-10 binary file."""
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0 or raw.size % RECORD:
        raise ImageDataError(f"{path} is not a whole number of {RECORD}-byte records")
    rec = raw.reshape(-1, RECORD)
    labels = rec[:, 0].astype(np.int64)
    if labels.max() > 9:
        raise ImageDataError(f"{path}: label byte {labels.max()} is not 0..9")
    return rec[:, 1:].reshape(-1, 3, 32, 32), labels


def read_cifar(folder: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test) of a CIFAR-10 binary folder: 50 000 and 10 000 images as uint8."""
    check_cifar_folder(folder)
    parts = [read_cifar_file(Path(folder) / n) for n in CIFAR_TRAIN]
    xt, yt = read_cifar_file(Path(folder) / CIFAR_TEST)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), xt, yt


def read_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8x8 digits: (images float64 [1797, 1, 8, 8] in 0..16, labels [1797]); nothing downloaded."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.images[:, None, :, :].astype(np.float64), d.target.astype(np.int64)
