"""Generated dataset files in the official formats, for tests that cannot download."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import scipy.io


def write_svhn(folder: Path, n_train: int, n_test: int) -> dict[str, dict[str, np.ndarray]]:
    """Writes ``train_32x32.mat``/``test_32x32.mat`` in SVHN's format into ``folder``:
    ``X`` uint8 (32, 32, 3, N) and ``y`` (N, 1) with labels 1..10, 10 meaning the
    digit 0. Label ``i % 10`` (10 for 0) goes to image ``i``: every class occurs."""
    rng = np.random.default_rng(2)
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, n in (("train", n_train), ("test", n_test)):
        digits = np.arange(n) % 10
        arrays = {
            "X": rng.integers(0, 256, (32, 32, 3, n), dtype=np.uint8),
            "y": np.where(digits == 0, 10, digits).astype(np.uint8).reshape(n, 1),
        }
        scipy.io.savemat(str(folder / f"{name}_32x32.mat"), arrays)
        written[name] = arrays
    return written


def write_cifar10(folder: Path, per_batch: int) -> None:
    """Writes the python-version CIFAR-10 batches (5 training, 1 test) into ``folder``."""
    rng = np.random.default_rng(1)
    folder.mkdir(parents=True, exist_ok=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {
            "data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
            "labels": (np.arange(per_batch) % 10).tolist(),
        }
        (folder / name).write_bytes(pickle.dumps(batch))
    (folder / "batches.meta").write_bytes(
        pickle.dumps({"label_names": [f"c{i}" for i in range(10)]})
    )


def trust_generated_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """torchvision checks the official files' MD5 sums; generated files cannot match."""
    monkeypatch.setattr("torchvision.datasets.svhn.check_integrity", lambda *a, **k: True)
    monkeypatch.setattr("torchvision.datasets.cifar.check_integrity", lambda *a, **k: True)
