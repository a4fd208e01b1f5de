"""Conformance of every registered dataset (``nasmlcn.data.DATASETS``).

The contract (``nasmlcn/data/_registry.py``): a :class:`DatasetInfo` states its
classes and ``(C, H, W)`` shape, which every model of a search is built for;
``prepare(data_dir, download)`` makes the files loadable or raises
:class:`DatasetError`; ``load`` returns uint8 ``(N, C, H, W)`` images and int64
``(N,)`` labels, or raises :class:`DatasetError` when the files are missing and
cannot be fetched.

Nothing is downloaded: datasets are loaded from the session's data directory
(``tests/conftest.py``: Fashion-MNIST unpacked from Debian's package) or
generated (``synthetic``). A dataset whose files are not there offline (MNIST,
CIFAR-10, SVHN on this machine) is checked for its metadata and for failing with a
:class:`DatasetError` when downloading is not allowed; its contents are not.
A declared normalisation has one positive std per input channel.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nasmlcn.costs import CostContext
from nasmlcn.data import DATASETS, DatasetInfo
from nasmlcn.errors import DatasetError
from nasmlcn.models import build_model
from nasmlcn.specs import MLCNSpec

NAMES = list(DATASETS)


@pytest.mark.parametrize("name", NAMES)
def test_info_is_consistent_and_models_build_for_it(name: str) -> None:
    info = DATASETS.get(name)
    assert isinstance(info, DatasetInfo)
    assert info.name == name
    assert info.description
    assert isinstance(info.num_classes, int)
    assert info.num_classes >= 2
    assert len(info.input_shape) == 3
    assert all(isinstance(v, int) and v >= 1 for v in info.input_shape)
    CostContext(input_shape=info.input_shape, num_classes=info.num_classes)
    if info.normalization is not None:
        assert info.normalization.channels == info.input_shape[0]
        assert all(s > 0 for s in info.normalization.std)
    spec = MLCNSpec.from_lanes(
        "mlcn1:1x1", input_shape=info.input_shape, num_classes=info.num_classes
    )
    out = build_model(spec).eval()(torch.rand(2, *info.input_shape))  # (B, C, H, W)
    assert out.lengths.shape == (2, info.num_classes)


@pytest.mark.parametrize("name", NAMES)
def test_offline_it_loads_consistent_data_or_raises_dataset_error(
    name: str, data_dir: Path
) -> None:
    info = DATASETS.get(name)
    try:
        said = info.prepare(data_dir, False)
    except DatasetError:
        # not here and not to be downloaded: loading must say so the same way
        with pytest.raises(DatasetError):
            info.load(data_dir, False)
        return
    assert isinstance(said, str)
    assert said
    raw = info.load(data_dir, False)
    for images, labels in (
        (raw.train_images, raw.train_labels),
        (raw.test_images, raw.test_labels),
    ):
        assert images.dtype == torch.uint8
        assert labels.dtype == torch.int64
        assert images.dim() == 4
        assert tuple(images.shape[1:]) == info.input_shape
        assert labels.shape == (images.shape[0],)
        assert images.shape[0] > 0
        assert int(labels.min()) >= 0
        assert int(labels.max()) < info.num_classes
    assert torch.unique(raw.test_labels).numel() == info.num_classes  # every class occurs
    assert int(raw.train_images.max()) > int(raw.train_images.min())  # not blank
