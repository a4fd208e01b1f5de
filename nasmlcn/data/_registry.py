"""The dataset registry (pure Python: loaders import torch only when called)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nasmlcn._paths import cache_path
from nasmlcn.registry import Registry

if TYPE_CHECKING:
    from nasmlcn.data._normalize import Normalization
    from nasmlcn.data._splits import RawData

DATA_DIR_ENV = "NASMLCN_DATA_DIR"


def default_data_dir() -> Path:
    """``$NASMLCN_DATA_DIR``, else ``~/.cache/nasmlcn/data``."""
    return cache_path(DATA_DIR_ENV, "data")


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
            (the colour sets' published training-split constants); None: the
            images go to the model in [0, 1] (the grey sets).
    """

    name: str
    num_classes: int
    input_shape: tuple[int, int, int]
    description: str
    load: Callable[[Path, bool], RawData]
    prepare: Callable[[Path, bool], str]
    normalization: Normalization | None = None


DATASETS: Registry[DatasetInfo] = Registry("dataset")
