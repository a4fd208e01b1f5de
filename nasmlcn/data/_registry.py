"""The dataset registry (pure Python: loaders import torch only when called)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nasmlcn.data._data_dir import resolve_data_dir
from nasmlcn.data._identity import DataIdentity, spell
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
        data_dir: The data directory it was opened against (``--data-dir``, else
            ``$NASMLCN_DATA_DIR``; :func:`~nasmlcn.data.open_dataset` sets it, so that
            loading and preparing it ask nothing again); None for a registry entry.
            Not compared: a dataset is the same wherever its files are kept.
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
    data_dir: Path | None = field(default=None, compare=False)

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

    spell = staticmethod(spell)
    """``DatasetInfo.spell(dataset, image_size)``: how a ``--dataset`` value and its
    ``--image-size`` are recorded, worked out once (the path made absolute, the size
    ``HxW``; :func:`nasmlcn.data._identity.spell`), for a config that records them
    before :func:`~nasmlcn.data.open_dataset` opens the data."""

    def data_folder(self, data_dir: str | Path | None = None) -> Path:
        """Where its files are: the data directory it was opened against, made if it is
        not there yet (the default one is made when first used); for a registry
        entry not opened, ``data_dir`` (see :func:`~nasmlcn.data.resolve_data_dir`)."""
        if self.data_dir is None:
            return resolve_data_dir(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return self.data_dir

    @property
    def image_size(self) -> str | None:
        """The ``HxW`` a user's images were resized to (None: as stored, or a built-in)."""
        return None if self.own is None else self.own.image_size

    @property
    def source(self) -> str | None:
        """The absolute path a user's data was read from (None for a built-in)."""
        return None if self.own is None else self.own.source

    @property
    def identity(self) -> DataIdentity:
        """What a study or run records of this dataset (see :class:`DataIdentity`)."""
        if self.own is not None:
            return self.own
        return DataIdentity("builtin", self.name, self.input_shape, self.class_names)


DATASETS: Registry[DatasetInfo] = Registry("dataset")
