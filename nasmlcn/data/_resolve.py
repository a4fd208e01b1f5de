"""Finding the data directory, preparing and loading a dataset by name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nasmlcn.data._registry import DATASETS, default_data_dir
from nasmlcn.errors import DatasetError

if TYPE_CHECKING:
    from nasmlcn.data._splits import DataSplits


def resolve_data_dir(data_dir: str | Path | None, *, create: bool = False) -> Path:
    """An explicit directory must exist (a typo must not start a second copy of the
    data), unless ``create``; the default one is created."""
    if data_dir is None:
        path = default_data_dir()
        path.mkdir(parents=True, exist_ok=True)
        return path
    path = Path(data_dir).expanduser()
    if create and not path.exists():
        try:
            path.mkdir(parents=True)
        except OSError as err:
            raise DatasetError(f"cannot create {str(path)!r}: {err.strerror or err}") from None
    if not path.exists():
        raise DatasetError(f"data directory {str(path)!r} does not exist")
    if not path.is_dir():
        raise DatasetError(f"data directory {str(path)!r} is not a directory")
    return path


def prepare_dataset(name: str, data_dir: str | Path | None = None, *, download: bool = True) -> str:
    """Makes ``name`` loadable (unpacks Debian's copy or downloads) in ``data_dir``,
    creating it if missing; returns what it did."""
    info = DATASETS.get(name)
    return info.prepare(resolve_data_dir(data_dir, create=True), download)


def load_splits(
    name: str,
    data_dir: str | Path | None = None,
    *,
    download: bool = True,
    val_fraction: float = 0.1,
    seed: int = 0,
    train_limit: int | None = None,
    val_limit: int | None = None,
    test_limit: int | None = None,
) -> DataSplits:
    """Loads ``name`` and splits it (see :func:`nasmlcn.data._splits.make_splits`);
    the splits carry the dataset's normalisation."""
    from nasmlcn.data._splits import make_splits

    info = DATASETS.get(name)
    for label, value in (
        ("train_limit", train_limit),
        ("val_limit", val_limit),
        ("test_limit", test_limit),
    ):
        if value is not None and value < 1:
            raise DatasetError(f"{label} must be >= 1, got {value}")
    raw = info.load(resolve_data_dir(data_dir), download)
    return make_splits(
        raw,
        val_fraction=val_fraction,
        seed=seed,
        train_limit=train_limit,
        val_limit=val_limit,
        test_limit=test_limit,
        normalization=info.normalization,
    )
