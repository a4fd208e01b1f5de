"""Datasets: a registry of what can be trained on, and in-memory splits.

Importing this package does not import torch; loading a dataset does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn._lazy import lazy_exports
from nasmlcn.data import _synthetic, _torchvision  # noqa: F401  (register built-ins)
from nasmlcn.data._normalize import Normalization, normalization_record
from nasmlcn.data._registry import DATA_DIR_ENV, DATASETS, DatasetInfo, default_data_dir
from nasmlcn.data._resolve import load_splits, prepare_dataset, resolve_data_dir

if TYPE_CHECKING:  # what the module __getattr__ below imports when first used
    from nasmlcn.data._splits import DataSplits, RawData, Split, make_splits, to_device

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
    "make_splits",
    "normalization_record",
    "prepare_dataset",
    "resolve_data_dir",
    "to_device",
]

_LAZY = {
    "DataSplits": "_splits",
    "RawData": "_splits",
    "Split": "_splits",
    "make_splits": "_splits",
    "to_device": "_splits",
}


__getattr__ = lazy_exports(__name__, _LAZY)
