"""Your own images, measured on Fashion-MNIST written as PNG class folders.

1. Writes Fashion-MNIST's 60,000 training and 10,000 test images as 8-bit grey
   PNGs, ``train/<label>/<index>.png`` and ``test/<label>/<index>.png`` (files named
   by index), from the built-in copy (``nasmlcn data prepare fashion-mnist``).
2. **Identical**: the folder's decoded tensors against the built-in loader's
   (torchvision's IDX reader), image for image and label for label, and the
   seeded splits of both.
3. **First read**: ``open_dataset(folder)`` and loading its arrays into a fresh data
   directory (decode, hash, write the cache), in this process; then the **cached
   read**, the same call in a fresh process each time (no memory of the first), the
   median of ``--repeats``; beside it, the built-in IDX load in the same fresh-process
   way, as the baseline; the fingerprint walk (stat of every file) timed on its own.
4. **Same training**: ``nasmlcn train`` of one model, 1 epoch on ``--train-limit``
   images, through the folder and through the built-in name with the same seed: every
   figure of the two ``--json`` reports (losses, accuracies) must be equal.

    python benchmarks/own_images.py [--limit N] [--repeats 5] [--json]

``--limit N`` writes only the first N training and N/6 test images (a quick run; the
identity then covers that subset, and step 4 is skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nasmlcn.reproduce.engines.common import say

READ = """
import sys, time
t = time.perf_counter()
from nasmlcn.data import open_dataset, resolve_data_dir
info = open_dataset(sys.argv[1])
raw = info.load(resolve_data_dir(None), False)
n = len(raw.train_labels) + len(raw.test_labels)
print(time.perf_counter() - t, n)
"""
"""A fresh process's open and load (the imports included: what a command pays)."""


def write_pngs(root: Path, limit: int | None) -> tuple[int, float]:
    """Fashion-MNIST as PNG class folders under ``root``; the images written and the
    seconds it took."""
    from PIL import Image

    from nasmlcn.data import open_dataset

    raw = open_dataset("fashion-mnist").load(_data_dir(), False)
    started = time.perf_counter()
    count = 0
    for split, images, labels in (
        ("train", raw.train_images, raw.train_labels),
        ("test", raw.test_images, raw.test_labels),
    ):
        n = len(labels) if limit is None else (limit if split == "train" else limit // 6)
        for i in range(n):
            folder = root / split / str(int(labels[i]))
            folder.mkdir(parents=True, exist_ok=True)
            Image.fromarray(images[i, 0].numpy(), "L").save(folder / f"{i:05d}.png")
            count += 1
    return count, time.perf_counter() - started


def _data_dir() -> Path:
    from nasmlcn.data import default_data_dir

    return default_data_dir()


def identical(folder: Path, cache: Path, limit: int | None) -> dict[str, Any]:
    """The folder's tensors and seeded splits against the built-in loader's."""
    import torch

    from nasmlcn.data import load_splits, open_dataset

    builtin = open_dataset("fashion-mnist").load(_data_dir(), False)
    own = open_dataset(str(folder), data_dir=cache).load(cache, False)
    n = len(own.train_labels)
    m = len(own.test_labels)
    same = {
        "train_images": torch.equal(own.train_images, builtin.train_images[:n]),
        "train_labels": torch.equal(own.train_labels, builtin.train_labels[:n]),
        "test_images": torch.equal(own.test_images, builtin.test_images[:m]),
        "test_labels": torch.equal(own.test_labels, builtin.test_labels[:m]),
    }
    if limit is None:
        a = load_splits(str(folder), cache, seed=0)
        b = load_splits("fashion-mnist", seed=0)
        same["splits"] = all(
            torch.equal(x.dense().images, y.dense().images)
            and torch.equal(x.dense().labels, y.dense().labels)
            for x, y in ((a.train, b.train), (a.val, b.val), (a.test, b.test))
        )
    return same


def fresh_read(dataset: str, cache: Path) -> tuple[float, int]:
    """Seconds a fresh process takes to open and load ``dataset`` (imports included)."""
    env = {**os.environ, "NASMLCN_DATA_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", READ, dataset], env=env, capture_output=True, text=True, check=True
    )
    seconds, count = done.stdout.split()
    return float(seconds), int(count)


def same_training(folder: Path, cache: Path, train_limit: int) -> dict[str, Any]:
    """One model, 1 epoch, through the folder and through the built-in name."""
    reports = {}
    for name, dataset in (("folder", str(folder)), ("builtin", "fashion-mnist")):
        env = {**os.environ, "NASMLCN_DATA_DIR": str(cache if name == "folder" else _data_dir())}
        args = [
            *("train", "--dataset", dataset, "--lanes", "2*mlcn2:2x1", "--epochs", "1"),
            *("--train-limit", str(train_limit), "--val-limit", "1000", "--test-limit", "2000"),
            *("--seed", "0", "--run-on", "cpu", "--json", "-q"),
        ]
        done = subprocess.run(
            [sys.executable, "-m", "nasmlcn", *args], env=env, capture_output=True, text=True,
            check=True,
        )  # fmt: skip
        reports[name] = json.loads(done.stdout)
    keys = ("test_accuracy", "test_loss", "val_accuracy_per_epoch", "train_images", "test_images")
    epoch = ("train_loss", "train_accuracy", "val_loss", "val_accuracy")
    a, b = reports["folder"], reports["builtin"]
    equal = all(a[k] == b[k] for k in keys) and all(
        a["per_epoch"][0][k] == b["per_epoch"][0][k] for k in epoch
    )
    return {
        "equal": equal,
        "folder": {k: a[k] for k in keys},
        "builtin": {k: b[k] for k in keys},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="training images to write")
    parser.add_argument("--repeats", type=int, default=5, help="fresh-process reads to time")
    parser.add_argument("--train-limit", type=int, default=2000)
    parser.add_argument("--work", type=Path, default=None, help="folder for the PNGs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from nasmlcn.data import open_dataset, prepare_dataset
    from nasmlcn.data._cache import fingerprint  # the walk a cached read pays

    prepare_dataset("fashion-mnist", download=False)
    work = Path(tempfile.mkdtemp(prefix="own-images-")) if args.work is None else args.work
    folder, cache = work / "fashion-png", work / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    written, write_s = write_pngs(folder, args.limit)
    say(f"wrote {written:,} PNGs in {write_s:.1f} s into {folder}")
    started = time.perf_counter()
    open_dataset(str(folder), data_dir=cache).load(cache, False)
    first = time.perf_counter() - started
    say(f"first read (decode, hash, cache): {first:.1f} s")
    cached, builtin = [], []
    for _ in range(args.repeats):  # alternating, in fresh processes
        cached.append(fresh_read(str(folder), cache)[0])
        builtin.append(fresh_read("fashion-mnist", _data_dir())[0])
    walk = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        fingerprint(folder.resolve(), None)
        walk.append(time.perf_counter() - t)
    result: dict[str, Any] = {
        "images": written,
        "write_seconds": write_s,
        "first_read_seconds": first,
        "cached_read_seconds": statistics.median(cached),
        "cached_read_runs": cached,
        "builtin_read_seconds": statistics.median(builtin),
        "builtin_read_runs": builtin,
        "fingerprint_seconds": statistics.median(walk),
        "speedup_first_to_cached": first / statistics.median(cached),
        "cached_over_builtin": statistics.median(cached) / statistics.median(builtin),
        "identical": identical(folder, cache, args.limit),
        "cpus": os.cpu_count(),
    }
    if args.limit is None:
        result["same_training"] = same_training(folder, cache, args.train_limit)
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"{written:,} PNGs: first read {first:.1f} s; cached read {result['cached_read_seconds']:.2f} s "
        f"(median of {args.repeats} fresh processes, imports included; "
        f"{result['speedup_first_to_cached']:.0f}x faster), built-in IDX read "
        f"{result['builtin_read_seconds']:.2f} s ({result['cached_over_builtin']:.2f}x of it); "
        f"fingerprint walk {result['fingerprint_seconds']:.2f} s"
    )
    print(f"identical to the built-in loader: {result['identical']}")
    if "same_training" in result:
        print(f"same 1-epoch training through both: {result['same_training']}")
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
