"""A user's own dataset read once: decoded, split, hashed (NumPy and Pillow, no torch).

:func:`read_own` turns a folder (:mod:`nasmlcn.data._folder`) or an ``.npz``
(:mod:`nasmlcn.data._npz`) into :class:`OwnArrays`: uint8 images ``(N, C, H, W)``
and int64 labels for a training and a test split, the class names, the
normalisation and the :class:`~nasmlcn.data.DataIdentity` with the content's hash.
:mod:`nasmlcn.data._cache` keeps the result so that nothing is decoded twice.

The test split is the folder's ``test/`` (or the ``.npz``'s ``x_test``); without
one, :func:`held_out` keeps one image in :data:`HELD_OUT` of every class for it,
chosen by a hash of the image's bytes: no seed changes it, so no search, training
or retraining of this data ever trains on those images (and identical images land
on the same side).

Colour data is normalised per channel with its training split's mean and standard
deviation (as CIFAR-10's published constants are); grey data goes to the model in
[0, 1], as the built-in grey sets do.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nasmlcn.data._identity import DataIdentity
from nasmlcn.data._normalize import Normalization
from nasmlcn.errors import DatasetError, option

if TYPE_CHECKING:
    import numpy as np


logger = logging.getLogger(__name__)

HELD_OUT = 7
"""Without a test split, one image in 7 of each class is held out for it (as
Fashion-MNIST's 10,000 of 70,000)."""

MEMORY_SHARE = 0.5
"""The most of this machine's free memory the decoded images may take: training
copies its split again, and the model needs the rest."""


@dataclass(frozen=True)
class OwnArrays:
    """A user's dataset, decoded."""

    train_images: np.ndarray  # (N, C, H, W) uint8
    train_labels: np.ndarray  # (N,) int64
    test_images: np.ndarray  # (M, C, H, W) uint8
    test_labels: np.ndarray  # (M,) int64
    identity: DataIdentity
    normalization: Normalization | None
    skipped: int = 0
    made_colour: int = 0


def read_own(path: Path, image_size: tuple[int, int] | None) -> OwnArrays:
    """Reads the folder or ``.npz`` at ``path`` (absolute), resized to ``image_size``.

    Raises:
        DatasetError: Whatever makes it unreadable, the first problem in one line.
    """
    if path.suffix.lower() == ".npz" and path.is_file():
        return _read_npz(path, image_size)
    if path.is_dir():
        return _read_folder(path, image_size)
    raise DatasetError(
        f"dataset {str(path)!r} is neither a folder of class folders nor an .npz file"
    )


def _read_folder(path: Path, image_size: tuple[int, int] | None) -> OwnArrays:
    from nasmlcn.data._folder import check_sizes, decode_folder, scan_folder

    scan = scan_folder(path)
    check_sizes(scan, image_size)
    if scan.problems:
        more = f" (and {len(scan.problems) - 1} more problems)" if len(scan.problems) > 1 else ""
        raise DatasetError(f"dataset {str(path)!r}: {scan.problems[0]}{more}")
    channels = 3 if scan.colour else 1
    height, width = image_size or next(iter(scan.sizes()))
    shape = (channels, height, width)
    check_memory(len(scan.images), shape, str(path))
    logger.info("decoding %d images of %s (once; they are cached)", len(scan.images), path)
    train, train_y, digests = decode_folder(scan, scan.train, shape)
    if scan.test_folder:
        test, test_y, _ = decode_folder(scan, scan.test, shape)
        test_split = "test/"
    else:
        train, train_y, test, test_y = held_out(train, train_y, digests)
        test_split = f"held out: 1 in {HELD_OUT} of each class, by a hash of the file"
    made_colour = sum(f.grey for f in scan.images) if channels == 3 else 0
    return _arrays(
        path, "folder", (train, train_y, test, test_y), scan.classes, image_size, test_split,
        skipped=len(scan.skipped), made_colour=made_colour,
    )  # fmt: skip


def _read_npz(path: Path, image_size: tuple[int, int] | None) -> OwnArrays:
    from nasmlcn.data._npz import read_npz

    data = read_npz(path)
    train, test = data.train_images, data.test_images
    if image_size is not None:
        check_memory(
            len(train) + (0 if test is None else len(test)),
            (train.shape[1], *image_size),
            str(path),
        )
        train = resize_all(train, image_size)
        test = None if test is None else resize_all(test, image_size)
    if test is not None and data.test_labels is not None:
        split = (train, data.train_labels, test, data.test_labels)
        test_split = "x_test"
    else:
        split = held_out(train, data.train_labels, data.digests())
        test_split = f"held out: 1 in {HELD_OUT} of each class, by a hash of the image"
    return _arrays(path, "npz", split, data.classes, image_size, test_split)


def resize_all(images: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``images`` uint8 ``(N, C, H, W)`` resized to ``size`` as a folder's images are."""
    import numpy as np
    from PIL import Image

    if images.shape[2:] == size:
        return images
    n, c = images.shape[:2]
    out = np.empty((n, c, *size), dtype=np.uint8)  # (N, C, H', W')
    for i, image in enumerate(images):
        pil = Image.fromarray(image[0] if c == 1 else image.transpose(1, 2, 0))
        array = np.asarray(pil.resize((size[1], size[0]), Image.Resampling.BILINEAR))
        out[i] = array[None] if c == 1 else array.transpose(2, 0, 1)
    return out


def held_out(
    images: np.ndarray, labels: np.ndarray, digests: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Splits ``images`` into training and test by :func:`held_out_mask`; both splits
    keep the images' order."""
    test = held_out_mask(labels, digests)
    train = ~test
    return images[train], labels[train], images[test], labels[test]


def held_out_mask(labels: np.ndarray, digests: list[str]) -> np.ndarray:
    """Which images are test images, ``(N,)`` bool: of each class of ``n >= 2``
    images, the ``max(1, round(n / HELD_OUT))`` whose ``digests`` sort first."""
    import numpy as np

    test = np.zeros(len(labels), dtype=bool)
    for k in np.unique(labels).tolist():
        members = np.flatnonzero(labels == k).tolist()
        if len(members) < 2:
            continue
        count = max(1, round(len(members) / HELD_OUT))
        chosen = sorted(members, key=lambda i: (digests[i], i))[:count]
        test[chosen] = True
    return test


def check_memory(count: int, shape: tuple[int, int, int], where: str) -> None:
    """Refuses images that would take more than :data:`MEMORY_SHARE` of the free memory.

    Raises:
        DatasetError: Naming how much they need and how much there is.
    """
    from nasmlcn.hardware import format_bytes

    c, h, w = shape
    need = count * c * h * w
    free = free_memory()
    if free is None or need <= free * MEMORY_SHARE:
        return
    raise DatasetError(
        f"the {count:,} images of {where!r} need {format_bytes(need)} decoded ({c}x{h}x{w} "
        f"each), more than half of the {format_bytes(free)} free here; pass "
        f"{option('image_size')} to make them smaller (64: {format_bytes(count * c * 64 * 64)})"
    )


def free_memory() -> int | None:
    """This machine's free memory in bytes (None: unknown)."""
    from nasmlcn.hardware import available_memory

    return available_memory("cpu")


def _arrays(
    path: Path,
    kind: str,
    split: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    classes: list[str],
    image_size: tuple[int, int] | None,
    test_split: str,
    *,
    skipped: int = 0,
    made_colour: int = 0,
) -> OwnArrays:
    train, train_y, test, test_y = split
    if len(train) < 2:
        raise DatasetError(
            f"dataset {str(path)!r} has {len(train)} training image(s); training needs more"
        )
    shape = tuple(int(v) for v in train.shape[1:])
    identity = DataIdentity(
        kind=kind,
        name=path.stem if kind == "npz" else path.name,
        input_shape=(shape[0], shape[1], shape[2]),
        classes=tuple(classes),
        source=str(path),
        image_size=None if image_size is None else f"{image_size[0]}x{image_size[1]}",
        sha256=content_hash(split, classes),
        train_images=len(train),
        test_images=len(test),
        test_split=test_split,
    )
    return OwnArrays(
        train, train_y, test, test_y, identity, channel_stats(train), skipped, made_colour
    )


def content_hash(
    split: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], classes: list[str]
) -> str:
    """The sha256 of the decoded splits and the class names: what the data *is*,
    wherever it is read from."""
    digest = hashlib.sha256(b"nasmlcn-own-data-1\0")
    digest.update(json.dumps(classes).encode())
    for array in split:
        digest.update(json.dumps(list(array.shape)).encode())
        digest.update(array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes())
    return digest.hexdigest()


def channel_stats(images: np.ndarray) -> Normalization | None:
    """Colour images' per-channel mean and standard deviation in [0, 1] units; None
    for grey images (they go to the model in [0, 1])."""
    import numpy as np

    if images.shape[1] == 1:
        return None
    total = np.zeros(images.shape[1])
    squares = np.zeros(images.shape[1])
    for start in range(0, len(images), 4096):  # in chunks: float64 of all would be 8x the images
        chunk = images[start : start + 4096].astype(np.float64)  # (n, C, H, W)
        total += chunk.sum(axis=(0, 2, 3))
        squares += (chunk * chunk).sum(axis=(0, 2, 3))
    count = images.shape[0] * images.shape[2] * images.shape[3]
    mean = total / count / 255.0
    std = np.sqrt(np.maximum(squares / count / 255.0**2 - mean**2, 0.0))
    std = np.where(std > 0, std, 1.0)  # a constant channel: nothing to scale
    return Normalization(
        tuple(round(float(m), 6) for m in mean), tuple(round(float(s), 6) for s in std)
    )
