"""What a dataset is, as a study, a run folder and an export record it (pure Python).

A dataset is named on the command line by a built-in name (``fashion-mnist``) or
by a path: a folder of class folders of images, or an ``.npz`` file
(:func:`is_dataset_path` tells which). Whatever trains on it records a
:class:`DataIdentity`: its kind, its shape, its classes, the resize asked for and,
for a user's own data, the hash of its decoded content, by which a later command
finds the same data again (in the cache, or at another path) and by which other
data is told apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

from nasmlcn.errors import DatasetError, option

IDENTITY_SCHEMA_VERSION = 1

RESIZE_METHOD = "Pillow's bilinear filter, antialiased when shrinking; stretched, not cropped"
"""How ``--image-size`` resizes: every image to exactly H x W, its aspect ratio not
kept, nothing cropped."""

_SIZE = re.compile(r"^\s*(\d+)\s*(?:[xX×]\s*(\d+))?\s*$")

MIN_SIDE, MAX_SIDE = 8, 1024
"""The image sides ``--image-size`` takes (the lanes need about 20 pixels; larger
than 1024 is no capsule network's input but a typo)."""


def is_dataset_path(value: str) -> bool:
    """Whether ``value`` names a path (it holds a path separator or ends in ``.npz``)
    rather than a built-in dataset's name."""
    return "/" in value or "\\" in value or value.lower().endswith(".npz")


def parse_image_size(value: str | int | None) -> tuple[int, int] | None:
    """``28`` or ``28x32`` (height x width) as ``(H, W)``; None stays None.

    Raises:
        DatasetError: Not one or two whole numbers, or a side outside
            :data:`MIN_SIDE`..:data:`MAX_SIDE`.
    """
    if value is None:
        return None
    match = _SIZE.match(str(value))
    if match is None:
        raise DatasetError(
            f"{option('image_size')} {str(value)!r} is not a size; give N (square) or HxW, "
            "e.g. 28 or 32x48"
        )
    h = int(match[1])
    w = int(match[2]) if match[2] is not None else h
    for side in (h, w):
        if not MIN_SIDE <= side <= MAX_SIDE:
            raise DatasetError(
                f"{option('image_size')} {str(value)!r}: each side must be {MIN_SIDE} to "
                f"{MAX_SIDE} pixels"
            )
    return h, w


def format_image_size(value: str | int | None) -> str | None:
    """The canonical spelling ``HxW`` of an image size (None stays None)."""
    return spell_image_size(_size(value))


def spell_image_size(size: tuple[int, int] | None) -> str | None:
    """``(H, W)`` parsed already, spelled ``HxW`` (None stays None)."""
    return None if size is None else f"{size[0]}x{size[1]}"


class Spelling(NamedTuple):
    """A ``--dataset`` value and its ``--image-size``, worked out (:func:`spell`).

    Attributes:
        dataset: A built-in's name as given, or the path made absolute (a study
            records where its data was read; a relative path would mean another
            folder from another one).
        image_size: ``HxW`` (None: none given).
        size: ``(H, W)`` (None: none given).
        path: Whether ``dataset`` is a path (:func:`is_dataset_path`).
    """

    dataset: str
    image_size: str | None
    size: tuple[int, int] | None
    path: bool


_DATASETS: dict[str, tuple[str, bool]] = {}
"""The datasets :func:`spell` worked out in this process, by its answer (an absolute
path and a name each spell themselves; a relative path is not kept: it means
another folder from another working folder)."""

_SIZES: dict[str | int, tuple[int, int]] = {}
"""The image sizes worked out in this process, by the value given and by ``HxW``."""


def spell(dataset: str, image_size: str | int | None = None) -> Spelling:
    """The one place a ``--dataset`` value and its ``--image-size`` are read: the
    size parsed, whether the value is a path, the path made absolute. Once per value
    a process: the search's config is copied many times, and each copy, like
    :func:`~nasmlcn.data.open_dataset` after it, is handed the answer
    (:data:`_DATASETS`, :data:`_SIZES`).

    Raises:
        DatasetError: ``image_size`` is no size (see :func:`parse_image_size`).
    """
    size = _size(image_size)
    known = _DATASETS.get(dataset)
    if known is None:
        path = is_dataset_path(dataset)
        name = str(Path(dataset).expanduser().resolve()) if path else dataset
        known = _DATASETS[name] = (name, path)
    return Spelling(known[0], spell_image_size(size), size, known[1])


def _size(value: str | int | None) -> tuple[int, int] | None:
    """:func:`parse_image_size`, once per value a process (see :data:`_SIZES`)."""
    if value is None:
        return None
    kept = type(value) in (str, int)  # not 24.0, which is no size, nor a list
    known = _SIZES.get(value) if kept else None
    if known is None:
        known = parse_image_size(value)
        assert known is not None
        _SIZES[f"{known[0]}x{known[1]}"] = known
        if kept:
            _SIZES[value] = known
    return known


@dataclass(frozen=True)
class DataIdentity:
    """A dataset as recorded with what trained on it.

    Attributes:
        kind: ``builtin``, ``folder`` or ``npz``.
        name: The built-in name, or the folder's or file's name (for display).
        source: The absolute path it was read from (None for a built-in).
        input_shape: ``(C, H, W)`` of every image, after any resize.
        classes: The class names, in label order.
        image_size: The ``HxW`` every image was resized to (None: as stored).
        sha256: The hash of the decoded images, labels and class names (None for a
            built-in, whose files torchvision checks).
        train_images: Images of the training split (validation is held out of it).
        test_images: Images of the test split.
        test_split: Where the test images came from (``test/``, ``x_test`` or the
            fixed held-out rule).
    """

    kind: str
    name: str
    input_shape: tuple[int, int, int]
    classes: tuple[str, ...]
    source: str | None = None
    image_size: str | None = None
    sha256: str | None = None
    train_images: int | None = None
    test_images: int | None = None
    test_split: str | None = None

    @property
    def own(self) -> bool:
        """Whether this is a user's own data (a folder or ``.npz``)."""
        return self.kind != "builtin"

    @property
    def short_hash(self) -> str:
        return (self.sha256 or "")[:12]

    def describe(self) -> str:
        """One line: ``folder 'digits' (1x28x28, 10 classes, sha256 1a2b3c4d5e6f)``."""
        c, h, w = self.input_shape
        text = f"{c}x{h}x{w}, {len(self.classes)} classes"
        if not self.own:
            return f"{self.name} ({text})"
        return f"{self.kind} {self.name!r} ({text}, sha256 {self.short_hash})"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["input_shape"] = list(self.input_shape)
        data["classes"] = list(self.classes)
        if self.image_size is not None:
            data["resize"] = RESIZE_METHOD
        data["schema_version"] = IDENTITY_SCHEMA_VERSION
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DataIdentity:
        """Reads what :meth:`to_dict` wrote.

        Raises:
            DatasetError: Not such a record, or one of a newer nasmlcn.
        """
        given = {k: v for k, v in data.items() if k not in ("resize", "schema_version")}
        version = data.get("schema_version", IDENTITY_SCHEMA_VERSION)
        if not isinstance(version, int) or version > IDENTITY_SCHEMA_VERSION:
            raise DatasetError(
                f"a dataset record of schema {version!r} is newer than this nasmlcn reads; "
                "upgrade nasmlcn"
            )
        try:
            given["input_shape"] = tuple(int(v) for v in given["input_shape"])
            given["classes"] = tuple(str(v) for v in given["classes"])
            identity = cls(**given)
        except (KeyError, TypeError, ValueError) as err:
            raise DatasetError(f"not a dataset record: {err}") from None
        if len(identity.input_shape) != 3:
            raise DatasetError(f"not a dataset record: input_shape {identity.input_shape}")
        return identity

    def same_data(self, other: DataIdentity) -> bool:
        """Whether ``other`` is the same data (the same built-in, or the same content)."""
        if self.own or other.own:
            return self.sha256 is not None and self.sha256 == other.sha256
        return self.name == other.name
