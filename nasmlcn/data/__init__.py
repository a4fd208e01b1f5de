"""Datasets: a registry of what can be trained on, and in-memory splits.

Importing this package does not import torch; loading a dataset does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn.data import _synthetic, _torchvision  # noqa: F401  (register built-ins)
from nasmlcn.data._normalize import Normalization
from nasmlcn.data._registry import DATA_DIR_ENV, DATASETS, DatasetInfo, default_data_dir
from nasmlcn.data._resolve import load_splits, prepare_dataset, resolve_data_dir

if TYPE_CHECKING:
    from nasmlcn.data._splits import DataSplits, RawData, Split

__all__ = [
    "DATASETS",
    "DATA_DIR_ENV",
    "DataSplits",
    "DatasetInfo",
    "Normalization",
    "RawData",
    "Split",
    "default_data_dir",
    "load_splits",
    "prepare_dataset",
    "resolve_data_dir",
]


def __getattr__(name: str) -> object:
    if name in ("DataSplits", "RawData", "Split", "make_splits"):
        from nasmlcn.data import _splits

        return getattr(_splits, name)
    raise AttributeError(f"module 'nasmlcn.data' has no attribute {name!r}")
