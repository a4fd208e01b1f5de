"""A generated dataset for tests: learnable, deterministic, no files.

Each class is a fixed random pattern of a few bright blobs; an image is its class
pattern, randomly shifted by up to two pixels, scaled and noised. The content
depends only on the index, never on the training seed, so every run sees the same
data.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nasmlcn.data._registry import DATASETS, DatasetInfo

if TYPE_CHECKING:
    from nasmlcn.data._splits import RawData

SYNTHETIC_TRAIN = 2000
SYNTHETIC_TEST = 500
_CLASSES = 10
_SIDE = 28


def _generate(n: int, offset: int) -> tuple[object, object]:
    import torch

    g = torch.Generator().manual_seed(20170926)
    ys_grid, xs_grid = torch.meshgrid(
        torch.arange(_SIDE, dtype=torch.float32),
        torch.arange(_SIDE, dtype=torch.float32),
        indexing="ij",
    )
    templates = torch.zeros(_CLASSES, _SIDE, _SIDE)
    for k in range(_CLASSES):
        centres = torch.rand(3, 2, generator=g) * (_SIDE - 12) + 6
        for cy, cx in centres.tolist():
            templates[k] += torch.exp(-((ys_grid - cy) ** 2 + (xs_grid - cx) ** 2) / 8.0)
    templates = templates.clamp(max=1.0)
    g.manual_seed(1000 + offset)
    labels = torch.randint(0, _CLASSES, (n,), generator=g)
    shifts = torch.randint(-2, 3, (n, 2), generator=g)
    scale = 0.6 + 0.4 * torch.rand(n, 1, 1, generator=g)
    # each image its class's template rolled by its shift: pixel (y, x) is the
    # template's (y - dy, x - dx), wrapping around (torch.roll, for all at once)
    side = torch.arange(_SIDE)
    rows = (side - shifts[:, :1]) % _SIDE
    cols = (side - shifts[:, 1:]) % _SIDE
    images = templates[labels[:, None, None], rows[:, :, None], cols[:, None, :]]
    images = images * scale + 0.15 * torch.rand(n, _SIDE, _SIDE, generator=g)
    return (images.clamp(0, 1) * 255).round().to(torch.uint8).unsqueeze(1), labels


def _load_synthetic(data_dir: Path, download: bool) -> RawData:
    from nasmlcn.data._splits import RawData

    train_x, train_y = _generate(SYNTHETIC_TRAIN, 0)
    test_x, test_y = _generate(SYNTHETIC_TEST, 1)
    return RawData(train_x, train_y, test_x, test_y)  # type: ignore[arg-type]


def _prepare_synthetic(data_dir: Path, download: bool) -> str:
    return "synthetic: generated in memory, nothing to prepare"


DATASETS.register(
    "synthetic",
    DatasetInfo(
        "synthetic",
        _CLASSES,
        (1, _SIDE, _SIDE),
        f"generated blobs, {SYNTHETIC_TRAIN}/{SYNTHETIC_TEST} 28x28 grey (for tests, no files)",
        _load_synthetic,
        _prepare_synthetic,
        images=(SYNTHETIC_TRAIN, SYNTHETIC_TEST),
    ),
)
