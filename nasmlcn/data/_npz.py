"""An ``.npz`` file of images and labels, read with NumPy (no torch).

Keys: ``x_train`` and ``y_train``, optionally ``x_test`` and ``y_test`` (both or
neither) and ``class_names`` (one string per class; else ``0``..``K-1``). Any other
key is refused. Images are uint8 (0 to 255) or floats in [0, 1] (scaled to uint8,
rounded), in one of three layouts:

- ``(N, H, W)``: grey;
- ``(N, H, W, C)``: channels last (NumPy, Keras, TensorFlow), ``C`` 1 or 3;
- ``(N, C, H, W)``: channels first (PyTorch), ``C`` 1 or 3.

A 4-D array whose second and last axes could both be channels (1 or 3) is refused
as ambiguous. Labels are whole numbers ``(N,)`` from 0 to K-1 (labels from 1 to K are
refused, saying so).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nasmlcn.errors import DatasetError

if TYPE_CHECKING:
    import numpy as np

KEYS = ("x_train", "y_train", "x_test", "y_test", "class_names")
LAYOUTS = "(N, H, W) grey, (N, H, W, C) or (N, C, H, W) with C 1 or 3"


@dataclass(frozen=True)
class NpzData:
    """An ``.npz``'s arrays: images uint8 ``(N, C, H, W)``, labels int64 ``(N,)``."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray | None
    test_labels: np.ndarray | None
    classes: list[str]
    layout: str  # how the images were laid out, for data inspect

    def digests(self) -> list[str]:
        """The sha1 of each training image's bytes (the held-out test rule hashes them)."""
        return [
            hashlib.sha1(image.tobytes(), usedforsecurity=False).hexdigest()
            for image in self.train_images
        ]


def read_npz(path: Path) -> NpzData:
    """Reads and checks ``path`` (see the module docstring).

    Raises:
        DatasetError: A missing or unknown key, images or labels of another type,
            shape or length, labels out of range, a class without training images.
    """
    import zipfile

    import numpy as np

    name = path.name
    _check_zip(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as err:
        raise DatasetError(f"{name} is not a readable .npz file ({err})") from None
    unknown = sorted(set(arrays) - set(KEYS))
    if unknown:
        raise DatasetError(
            f"{name} has unknown key(s) {', '.join(unknown)}; the keys read are "
            f"{', '.join(KEYS)} (x_test, y_test and class_names optional)"
        )
    for key in ("x_train", "y_train"):
        if key not in arrays:
            raise DatasetError(
                f"{name} has no {key} (keys: {', '.join(sorted(arrays)) or 'none'}); "
                "expected x_train, y_train and optionally x_test, y_test, class_names"
            )
    if ("x_test" in arrays) != ("y_test" in arrays):
        given, missing = ("x_test", "y_test") if "x_test" in arrays else ("y_test", "x_test")
        raise DatasetError(f"{name} has {given} but no {missing}; give both or neither")
    train, layout = _images(arrays["x_train"], name, "x_train")
    test = None
    if "x_test" in arrays:
        test, _ = _images(arrays["x_test"], name, "x_test")
        if test.shape[1:] != train.shape[1:]:
            raise DatasetError(
                f"{name}: x_test's images are {_shape(test)}, x_train's {_shape(train)}; "
                "both splits must have one shape"
            )
    y_train = _labels(arrays["y_train"], len(train), name, "y_train")
    y_test = _labels(arrays["y_test"], len(test), name, "y_test") if test is not None else None
    classes = _classes(arrays.get("class_names"), y_train, y_test, name)
    return NpzData(train, y_train, test, y_test, classes, layout)


ZIP_STARTS = (b"PK\x03\x04", b"PK\x05\x06")
"""How a zip archive starts (with a file, or empty): what ``numpy.savez`` writes."""


def _check_zip(path: Path) -> None:
    """Refuses a file that is no zip archive, saying what it is instead (NumPy's own
    error for a text file is advice about pickles).

    Raises:
        DatasetError: ``path`` is not a zip archive, or cannot be read.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError as err:
        raise DatasetError(f"{path.name} cannot be read ({err.strerror or err})") from None
    if head.startswith(ZIP_STARTS):
        return
    raise DatasetError(
        f"{path.name} is not an .npz file (a zip archive of arrays, as numpy.savez writes): "
        f"it is {_what(head)}; save the arrays with numpy.savez(path, x_train=..., "
        "y_train=...)"
    )


def _what(head: bytes) -> str:
    """What a file starting with ``head`` is, in a few words."""
    if not head:
        return "empty"
    if head.startswith(b"\x93NUMPY"):
        return "one .npy array (numpy.save)"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "not a zip archive"
    return "text" if b"\0" not in head else "not a zip archive"


def _shape(images: np.ndarray) -> str:
    return "x".join(str(v) for v in images.shape[1:])


def _images(x: np.ndarray, name: str, key: str) -> tuple[np.ndarray, str]:
    """``x`` as uint8 ``(N, C, H, W)``, and the layout it came in."""
    import numpy as np

    if x.ndim == 3:
        layout, x = "(N, H, W) grey", x[:, None]
    elif x.ndim == 4:
        first, last = x.shape[1] in (1, 3), x.shape[3] in (1, 3)
        if first and last:
            raise DatasetError(
                f"{name}: {key} has shape {x.shape}, which could be channels first or last; "
                f"the layouts read are {LAYOUTS}"
            )
        if not (first or last):
            raise DatasetError(
                f"{name}: {key} has shape {x.shape}: no axis of 1 or 3 channels; the "
                f"layouts read are {LAYOUTS}"
            )
        layout = "(N, C, H, W) channels first" if first else "(N, H, W, C) channels last"
        x = x if first else x.transpose(0, 3, 1, 2)
    else:
        raise DatasetError(
            f"{name}: {key} has {x.ndim} dimensions {x.shape}; the layouts read are {LAYOUTS}"
        )
    if len(x) == 0:
        raise DatasetError(f"{name}: {key} holds no images")
    if x.dtype == np.uint8:
        return np.ascontiguousarray(x), layout
    if not np.issubdtype(x.dtype, np.floating):
        raise DatasetError(f"{name}: {key} is {x.dtype}; give uint8 (0 to 255) or floats in [0, 1]")
    low, high = float(np.nanmin(x)), float(np.nanmax(x))
    if np.isnan(x).any() or low < 0.0 or high > 1.0:
        raise DatasetError(
            f"{name}: {key} holds values from {low:g} to {high:g}"
            f"{' and NaN' if np.isnan(x).any() else ''}; floats must be in [0, 1] "
            "(or give uint8 0 to 255)"
        )
    return np.ascontiguousarray(np.rint(x * 255.0).astype(np.uint8)), layout


def _labels(y: np.ndarray, n: int, name: str, key: str) -> np.ndarray:
    import numpy as np

    if y.ndim == 2 and y.shape[1] > 1:
        raise DatasetError(
            f"{name}: {key} has shape {y.shape} (one-hot?); give class indices (N,), "
            "e.g. y.argmax(1)"
        )
    y = y.reshape(-1) if y.ndim == 2 else y
    if y.ndim != 1:
        raise DatasetError(f"{name}: {key} has shape {y.shape}; give class indices (N,)")
    if len(y) != n:
        raise DatasetError(
            f"{name}: {key} has {len(y):,} labels for {n:,} images; give one label per image"
        )
    if np.issubdtype(y.dtype, np.floating) and np.all(np.isfinite(y)) and np.all(y == np.rint(y)):
        y = y.astype(np.int64)
    if not np.issubdtype(y.dtype, np.integer) or y.dtype == np.bool_:
        raise DatasetError(f"{name}: {key} is {y.dtype}; labels must be whole numbers 0 to K-1")
    if len(y) and int(y.min()) < 0:
        raise DatasetError(f"{name}: {key} holds label {int(y.min())}; labels must be 0 to K-1")
    return y.astype(np.int64)


def _classes(
    names: np.ndarray | None, y_train: np.ndarray, y_test: np.ndarray | None, name: str
) -> list[str]:
    import numpy as np

    highest = max(
        int(y_train.max()), int(y_test.max()) if y_test is not None and len(y_test) else 0
    )
    if names is not None:
        classes = [str(v) for v in np.asarray(names).reshape(-1)]
        if len(set(classes)) != len(classes):
            raise DatasetError(f"{name}: class_names repeats a name; give one name per class")
        if highest >= len(classes):
            raise DatasetError(
                f"{name}: a label is {highest} but class_names has {len(classes)} names; "
                f"labels must be 0 to {len(classes) - 1}{_start_at_one(y_train, y_test)}"
            )
    else:
        classes = [str(k) for k in range(highest + 1)]
        if _start_at_one(y_train, y_test):
            raise DatasetError(
                f"{name}: labels run from 1 to {highest}, so class 0 would have no images; "
                f"labels must be 0 to K-1{_start_at_one(y_train, y_test, '')}"
            )
    missing = sorted(set(range(len(classes))) - set(np.unique(y_train).tolist()))
    if missing:
        shown = ", ".join(classes[k] for k in missing[:5])
        raise DatasetError(
            f"{name}: class(es) {shown} have no training images (y_train never holds "
            f"label {missing[0]}); every class needs some"
        )
    if len(classes) < 2:
        raise DatasetError(f"{name}: y_train holds one class; a classifier needs two or more")
    return classes


def _start_at_one(
    y_train: np.ndarray, y_test: np.ndarray | None, text: str = "; these start at 1"
) -> str:
    """``text`` and how to make the labels 0-based, to add to a message when they
    start at 1 (``1``..``K``, as MATLAB's or R's); empty otherwise."""
    lowest = min(int(y.min()) for y in (y_train, y_test) if y is not None and len(y))
    if lowest != 1:
        return ""
    both = "y_train - 1 and y_test - 1" if y_test is not None else "y_train - 1"
    return f"{text}: save {both}"
