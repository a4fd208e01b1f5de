"""A folder of class folders of images (torchvision's ``ImageFolder`` layout), read
with Pillow and NumPy (no torch).

Layouts::

    ROOT/<class>/<image>                 every image; the test split is held out
    ROOT/train/<class>/<image>           the training images
    ROOT/test/<class>/<image>            (optional) the test images

Images are PNG, JPEG or BMP (any case of ``.png``, ``.jpg``, ``.jpeg``, ``.bmp``),
also inside sub-folders of a class folder. Classes are the class folders' names in
sorted order (as ``ImageFolder``). A split's images are in the natural order of
their path inside the class folder (``2.png`` before ``10.png``), then by class:
files named by index keep the order they were written in. Stray files
(:data:`STRAY_NAMES`, names starting with ``.``) are skipped and counted; so are
files beside the class folders in ``ROOT``. Any other file in a class folder is an
error that names it, as is an image Pillow cannot read.

:func:`scan_folder` reads every image's header only (size and mode) and lists what
is wrong; :func:`decode_folder` decodes them into one uint8 array.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn.errors import DatasetError, option

if TYPE_CHECKING:
    import numpy as np

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
STRAY_NAMES = frozenset({".ds_store", "thumbs.db", "desktop.ini", "ehthumbs.db"})
"""Files an operating system leaves in folders; skipped (as every name starting with ``.``)."""

GREY_MODES = frozenset({"1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "I;16N", "F"})
"""Pillow modes read as one grey channel; every other mode is read as RGB (a palette
image of grey colours only is grey too). Alpha is dropped."""

KINDS = "PNG, JPEG or BMP"


@dataclass(frozen=True)
class ImageFile:
    """One image of the folder: its path relative to the root, its class, and what
    its header says."""

    path: str
    label: int
    size: tuple[int, int]  # (H, W)
    grey: bool


@dataclass
class FolderScan:
    """What a folder holds, read from the images' headers only.

    Attributes:
        root: The folder.
        classes: The class names (label order).
        train: The training split's images, in order.
        test: The test split's images (empty: none given, held out later).
        test_folder: Whether a ``test/`` folder gave them.
        skipped: Stray files skipped (relative paths).
        problems: What makes the folder unreadable, one line each.
        stats: ``(relative path, size, mtime_ns)`` of every file read, for the cache's key.
    """

    root: Path
    classes: list[str] = field(default_factory=list)
    train: list[ImageFile] = field(default_factory=list)
    test: list[ImageFile] = field(default_factory=list)
    test_folder: bool = False
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    stats: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def images(self) -> list[ImageFile]:
        return [*self.train, *self.test]

    def sizes(self) -> Counter[tuple[int, int]]:
        return Counter(f.size for f in self.images)

    @property
    def colour(self) -> bool:
        """Whether any image is in colour (then every image is read as RGB)."""
        return any(not f.grey for f in self.images)


def _natural(text: str) -> list[Any]:
    """A sort key that orders digit runs by value: ``img2`` before ``img10``."""
    return [int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", text)]


def _stray(name: str) -> bool:
    return name.startswith(".") or name.lower() in STRAY_NAMES


def _walk_class(folder: Path, root: Path, scan: FolderScan) -> list[str]:
    """The image files under one class folder (relative to ``root``); strays are
    counted, any other file is a problem."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if _stray(name):
                scan.skipped.append(rel)
            elif name.lower().endswith(IMAGE_SUFFIXES):
                found.append(rel)
            else:
                scan.problems.append(
                    f"{rel} is not an image ({KINDS}); move it out of the class folder"
                )
    return found


def _class_folders(root: Path, scan: FolderScan, prefix: str = "") -> dict[str, Path]:
    """The class folders in ``root`` by name; files beside them are skipped (an
    image there is a problem: it has no class)."""
    folders, loose = {}, []
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        rel = prefix + entry.name
        if entry.is_dir() and not entry.name.startswith("."):
            folders[entry.name] = Path(entry.path)
        elif entry.name.lower().endswith(IMAGE_SUFFIXES) and not _stray(entry.name):
            loose.append(rel)
        elif entry.is_file():
            scan.skipped.append(rel)
    if loose:  # one problem for them all: a flat folder of 300 images is one mistake
        loose.sort(key=_natural)
        scan.problems.append(
            f"{_listed(loose, 'image')} {'is' if len(loose) == 1 else 'are'} not in a class "
            "folder; put each image in a folder named after its class"
        )
    return folders


def _listed(names: list[str], what: str, shown: int = 3) -> str:
    """``names`` for a message: ``a.png`` alone, else ``5 images (a.png, b.png, c.png and
    2 more)``."""
    if len(names) == 1:
        return names[0]
    more = f" and {len(names) - shown:,} more" if len(names) > shown else ""
    return f"{len(names):,} {what}s ({', '.join(names[:shown])}{more})"


def _header(root: Path, rel: str) -> tuple[tuple[int, int], bool] | str:
    """An image's ``(H, W)`` and whether it is grey, from its header; or what is wrong."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(root / rel) as im:
            w, h = im.size
            grey = im.mode in GREY_MODES or (im.mode in ("P", "PA") and _grey_palette(im))
            return (h, w), grey
    except Image.DecompressionBombError as err:
        return too_many_pixels(rel, err)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as err:
        return f"{rel} is damaged or not an image ({_reason(err)})"


def too_many_pixels(rel: str, err: BaseException) -> str:
    """What to say of image ``rel`` that Pillow refuses to open as a possible
    decompression bomb (``err``): its pixels, Pillow's limit, and what to do."""
    from PIL import Image

    limit = 2 * (Image.MAX_IMAGE_PIXELS or 0)  # Pillow raises past twice the limit it warns at
    found = re.search(r"\((\d+) pixels\)", str(err))
    pixels = f"{int(found[1]):,} pixels" if found else "too many pixels"
    return (
        f"{rel} has {pixels}, more than the {limit:,} Pillow opens (its guard against "
        "decompression bombs); downscale it (to 1024 pixels a side or less) or remove it"
    )


def _grey_palette(im: Any) -> bool:
    palette = im.getpalette() or []
    return all(palette[i] == palette[i + 1] == palette[i + 2] for i in range(0, len(palette), 3))


def _reason(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def scan_folder(root: Path) -> FolderScan:
    """Lists ``root``'s classes and images and reads every image's header.

    Raises:
        DatasetError: ``root`` is not a folder.
    """
    if not root.is_dir():
        raise DatasetError(f"dataset {str(root)!r} is not a folder")
    scan = FolderScan(root)
    top = _class_folders(root, scan)
    split = "train" in top and set(top) <= {"train", "test"}
    if "train" in top and not split:
        others = ", ".join(sorted(set(top) - {"train", "test"})[:3])
        scan.problems.append(
            f"{root} holds train/ beside class folders ({others}); put every class folder "
            "in train/ (and test/), or none"
        )
        return scan
    train_dirs = _class_folders(root / "train", scan, "train/") if split else top
    test_dirs = _class_folders(root / "test", scan, "test/") if "test" in top else {}
    scan.classes = sorted(train_dirs)
    scan.test_folder = bool(test_dirs)
    _check_classes(scan, train_dirs, test_dirs, "train/" if split else "")
    labels = {name: i for i, name in enumerate(scan.classes)}
    for name, folder in train_dirs.items():
        scan.train += _files(root, folder, labels[name], scan)
    for name, folder in test_dirs.items():
        if name in labels:
            scan.test += _files(root, folder, labels[name], scan, test=True)
    scan.train.sort(key=lambda f: (_natural(os.path.relpath(f.path, _class_dir(f))), f.label))
    scan.test.sort(key=lambda f: (_natural(os.path.relpath(f.path, _class_dir(f))), f.label))
    return scan


def _class_dir(f: ImageFile) -> str:
    """The class folder of ``f`` (relative to the root): its first one or two parts."""
    parts = Path(f.path).parts
    return os.path.join(*parts[:2]) if parts[0] in ("train", "test") else parts[0]


def _check_classes(
    scan: FolderScan, train: dict[str, Path], test: dict[str, Path], where: str
) -> None:
    if not train:
        scan.problems.append(
            f"{scan.root} holds no class folders; expected {scan.root}/<class>/<image> "
            f"({KINDS}), optionally inside train/ and test/"
        )
    elif len(train) == 1:
        scan.problems.append(
            f"{scan.root} has one class ({where}{next(iter(train))}/); a classifier needs "
            "two or more class folders"
        )
    extra = sorted(set(test) - set(train))
    if extra:
        scan.problems.append(
            f"test/ has class folders that train/ lacks: {', '.join(extra[:5])}; every "
            "test class must also be a training class"
        )


def _files(
    root: Path, folder: Path, label: int, scan: FolderScan, test: bool = False
) -> list[ImageFile]:
    rel_folder = os.path.relpath(folder, root)
    names = _walk_class(folder, root, scan)
    if not names:
        split = "test" if test else "training"
        scan.problems.append(f"class folder {rel_folder}/ holds no {split} images ({KINDS})")
    files = []
    for rel in names:
        st = os.stat(root / rel)
        scan.stats.append((rel, st.st_size, st.st_mtime_ns))
        head = _header(root, rel)
        if isinstance(head, str):
            scan.problems.append(head)
            continue
        files.append(ImageFile(rel, label, *head))
    return files


def check_sizes(scan: FolderScan, image_size: tuple[int, int] | None) -> None:
    """Images of several sizes need ``--image-size``: a problem of ``scan`` otherwise."""
    sizes = scan.sizes()
    if image_size is None and len(sizes) > 1:
        common = ", ".join(f"{h}x{w}: {n:,}" for (h, w), n in sizes.most_common(3))
        more = f" and {len(sizes) - 3} more" if len(sizes) > 3 else ""
        scan.problems.append(
            f"the images are of {len(sizes)} sizes ({common}{more}); pass "
            f"{option('image_size')} N or HxW to resize them all (bilinear, stretched)"
        )


def decode_folder(
    scan: FolderScan, files: list[ImageFile], shape: tuple[int, int, int]
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Decodes ``files`` into uint8 images ``(N, C, H, W)`` of ``shape``, their int64
    labels and the sha1 of each file's bytes (the held-out test rule hashes them).

    Raises:
        DatasetError: An image Pillow cannot decode (named).
    """
    import numpy as np

    c, h, w = shape
    images = np.empty((len(files), c, h, w), dtype=np.uint8)  # (N, C, H, W)
    labels = np.fromiter((f.label for f in files), dtype=np.int64, count=len(files))
    digests = []
    for i, f in enumerate(files):
        with open(scan.root / f.path, "rb") as fh:
            data = fh.read()
        digests.append(digest(data))
        images[i] = decode_image(data, f.path, c, (h, w))
    return images, labels, digests


def digest(data: bytes) -> str:
    """The sha1 of an image file's bytes: what the held-out test rule sorts by."""
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def file_digests(scan: FolderScan, files: list[ImageFile]) -> list[str]:
    """The :func:`digest` of each of ``files`` (read, not decoded), as
    :func:`decode_folder` gives them."""
    return [digest((scan.root / f.path).read_bytes()) for f in files]


def decode_image(data: bytes, name: str, channels: int, size: tuple[int, int]) -> np.ndarray:
    """One image file's bytes as uint8 ``(C, H, W)``: grey or RGB as ``channels``
    says, resized to ``size`` where it differs (bilinear, stretched)."""
    import io

    import numpy as np
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            pixels = to_mode(im, channels)
            if pixels.size != (size[1], size[0]):
                pixels = pixels.resize((size[1], size[0]), Image.Resampling.BILINEAR)
            array = np.asarray(pixels, dtype=np.uint8)
    except Image.DecompressionBombError as err:
        raise DatasetError(too_many_pixels(name, err)) from None
    except (OSError, ValueError, SyntaxError) as err:
        raise DatasetError(f"{name} is damaged ({_reason(err)})") from None
    return array[None] if channels == 1 else array.transpose(2, 0, 1)  # (C, H, W)


def to_mode(im: Any, channels: int) -> Any:
    """``im`` as Pillow's ``L`` (one channel) or ``RGB``; 16-bit grey scaled to 8 bits."""
    import numpy as np
    from PIL import Image

    if im.mode.startswith("I;16") or (im.mode == "I" and im.getextrema()[1] > 255):
        wide = np.asarray(im, dtype=np.float64)  # (H, W) in 0..65535
        im = Image.fromarray(np.clip(np.rint(wide / 257.0), 0, 255).astype(np.uint8), "L")
    return im.convert("L" if channels == 1 else "RGB")
