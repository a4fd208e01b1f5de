"""The dataset registry (pure Python: loaders import torch only when called)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nasmlcn.data._identity import DataIdentity
from nasmlcn.registry import Registry

if TYPE_CHECKING:
    from nasmlcn.data._normalize import Normalization
    from nasmlcn.data._splits import RawData


@dataclass(frozen=True)
class DatasetInfo:
    """A dataset nasmlcn can train on.

    Attributes:
        name: Registry name (``fashion-mnist``).
        num_classes: Number of classes.
        input_shape: ``(C, H, W)``.
        description: One line for listings.
        load: ``load(data_dir, download)`` returns the train and test sets as uint8
            tensors; it raises :class:`~nasmlcn.errors.DatasetError` when the files
            are missing and cannot be fetched.
        prepare: ``prepare(data_dir, download)`` makes the files loadable (unpack,
            download) without reading them; returns a line saying what it did.
        normalization: Per-channel mean/std that model inputs are normalised with
            (the colour sets' published training-split constants, a user's colour
            data's own); None: the images go to the model in [0, 1] (grey sets).
        classes: The class names in label order (empty: ``0``..``K-1``).
        own: What a user's own data is (a folder or ``.npz``, see
            :func:`~nasmlcn.data.open_dataset`); None for a registered dataset.
        images: Its training images (validation is held out of them) and test
            images, known before it is read (None: not known until then).
    """

    name: str
    num_classes: int
    input_shape: tuple[int, int, int]
    description: str
    load: Callable[[Path, bool], RawData]
    prepare: Callable[[Path, bool], str]
    normalization: Normalization | None = None
    classes: tuple[str, ...] = ()
    own: DataIdentity | None = None
    images: tuple[int, int] | None = None

    def split_sizes(self, val_fraction: float = 0.1) -> tuple[int, int] | None:
        """The images of its training and validation splits, before any limit, as
        :func:`~nasmlcn.data.make_splits` cuts them (None: not known until read)."""
        if self.images is None:
            return None
        n = self.images[0]
        val = max(1, round(n * val_fraction))
        return n - val, val

    @property
    def class_names(self) -> tuple[str, ...]:
        """The class names, ``0``..``K-1`` where none are declared."""
        return self.classes or tuple(str(k) for k in range(self.num_classes))

    @property
    def identity(self) -> DataIdentity:
        """What a study or run records of this dataset (see :class:`DataIdentity`)."""
        if self.own is not None:
            return self.own
        return DataIdentity("builtin", self.name, self.input_shape, self.class_names)


DATASETS: Registry[DatasetInfo] = Registry("dataset")
