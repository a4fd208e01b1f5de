"""Small generated datasets of a user's own kind: class folders of image files, and
``.npz`` files, written with Pillow and NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def class_images(classes: int, per_class: int, size: tuple[int, int], channels: int) -> np.ndarray:
    """Learnable uint8 images ``(classes * per_class, C, H, W)``, class ``k``'s a bright
    square at a place of its own plus noise; image ``i`` is of class ``i % classes``."""
    rng = np.random.default_rng(classes * 1000 + per_class)
    h, w = size
    n = classes * per_class
    images = rng.integers(0, 60, (n, channels, h, w), dtype=np.uint8)
    for i in range(n):
        k = i % classes
        y = (k * 5) % max(1, h - 6)
        x = (k * 3) % max(1, w - 6)
        images[i, :, y : y + 6, x : x + 6] = 220
    return images


def write_folder(
    root: Path,
    *,
    classes: int = 3,
    per_class: int = 14,
    size: tuple[int, int] = (20, 20),
    channels: int = 1,
    suffix: str = ".png",
    split: bool = False,
    names: list[str] | None = None,
) -> np.ndarray:
    """Writes ``classes`` class folders (``names``, else ``c0``, ``c1``, ...) of
    ``per_class`` images each into ``root`` (in ``train/`` and, one image in four,
    ``test/`` with ``split``); files are named by index. Returns the images."""
    images = class_images(classes, per_class, size, channels)
    labels = names or [f"c{k}" for k in range(classes)]
    for i, image in enumerate(images):
        k = i % classes
        part = "" if not split else ("test/" if i % 4 == 0 else "train/")
        folder = root / part / labels[k]
        folder.mkdir(parents=True, exist_ok=True)
        pixels = image[0] if channels == 1 else image.transpose(1, 2, 0)
        Image.fromarray(pixels, "L" if channels == 1 else "RGB").save(folder / f"{i:04d}{suffix}")
    return images


def write_npz(path: Path, **arrays: np.ndarray) -> Path:
    """``arrays`` saved as the ``.npz`` at ``path``."""
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return path
