"""Datasets: a registry of what can be trained on, a user's own images (a folder or
an ``.npz``, :func:`open_dataset`), and in-memory splits.

Importing this package does not import torch; loading a dataset does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn._lazy import face
from nasmlcn.data import _synthetic, _torchvision
from nasmlcn.data._data_dir import DATA_DIR_ENV, default_data_dir, resolve_data_dir
from nasmlcn.data._fit import images_too_small_hint
from nasmlcn.data._identity import (
    RESIZE_METHOD,
    DataIdentity,
    format_image_size,
    is_dataset_path,
    parse_image_size,
)
from nasmlcn.data._inspect import DataReport, inspect_dataset
from nasmlcn.data._normalize import Normalization, normalization_record
from nasmlcn.data._open import known_identity, open_dataset, open_recorded
from nasmlcn.data._registry import DATASETS, DatasetInfo
from nasmlcn.data._resolve import load_splits, prepare_dataset

if TYPE_CHECKING:  # what the module __getattr__ below imports when first used
    from nasmlcn.data._splits import DataSplits, RawData, Split, make_splits, to_device

__getattr__, __all__ = face(__name__)
