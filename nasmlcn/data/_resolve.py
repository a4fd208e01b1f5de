"""Preparing a dataset's files and loading its splits."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nasmlcn.data._data_dir import resolve_data_dir
from nasmlcn.data._registry import DATASETS, DatasetInfo
from nasmlcn.errors import DatasetError

if TYPE_CHECKING:
    from nasmlcn.data._splits import DataSplits


def prepare_dataset(name: str, data_dir: str | Path | None = None, *, download: bool = True) -> str:
    """Makes ``name`` loadable (unpacks Debian's copy or downloads) in ``data_dir``,
    creating it if missing; returns what it did."""
    info = DATASETS.get(name)
    return info.prepare(resolve_data_dir(data_dir, create=True), download)


def load_splits(
    dataset: str | DatasetInfo,
    data_dir: str | Path | None = None,
    *,
    download: bool = True,
    val_fraction: float = 0.1,
    seed: int = 0,
    train_limit: int | None = None,
    val_limit: int | None = None,
    test_limit: int | None = None,
) -> DataSplits:
    """Loads ``dataset`` (a name or path, see :func:`~nasmlcn.data.open_dataset`, or
    one opened already, with a resize: ``open_dataset(path, image_size=...)``) and splits it (see :func:`nasmlcn.data._splits.make_splits`);
    the splits carry the dataset's normalisation. One opened already is loaded from
    the data directory it was opened against (``data_dir`` is for a name or path)."""
    from nasmlcn.data._open import open_dataset
    from nasmlcn.data._splits import make_splits

    info = dataset if isinstance(dataset, DatasetInfo) else open_dataset(dataset, data_dir=data_dir)
    for label, value in (
        ("train_limit", train_limit),
        ("val_limit", val_limit),
        ("test_limit", test_limit),
    ):
        if value is not None and value < 1:
            raise DatasetError(f"{label} must be >= 1, got {value}")
    raw = info.load(info.data_folder(data_dir), download)
    return make_splits(
        raw,
        val_fraction=val_fraction,
        seed=seed,
        train_limit=train_limit,
        val_limit=val_limit,
        test_limit=test_limit,
        normalization=info.normalization,
    )
