"""Fashion-MNIST, MNIST, CIFAR-10 and SVHN through torchvision's own dataset classes.

Files are looked for where torchvision puts them: ``<data_dir>/<Class>/raw`` for
the IDX sets, ``<data_dir>/cifar-10-batches-py`` for CIFAR-10 and
``<data_dir>/SVHN/{train,test}_32x32.mat`` for SVHN (read with scipy). For
Fashion-MNIST, Debian's ``dataset-fashion-mnist`` package is used when present:
its four ``.gz`` files are unpacked into the data directory once. Otherwise
torchvision downloads the files where a network exists.

The colour sets declare their per-channel normalisation (published training-split
constants, :mod:`nasmlcn.data._normalize`); the grey sets declare none.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from nasmlcn.data._normalize import CIFAR10_NORMALIZATION, SVHN_NORMALIZATION
from nasmlcn.data._registry import DATASETS, DatasetInfo
from nasmlcn.errors import DatasetError

if TYPE_CHECKING:
    from nasmlcn.data._splits import RawData

DEBIAN_FASHION_MNIST_ENV = "NASMLCN_DEBIAN_FASHION_MNIST"
DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")

IDX_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
CIFAR10_FILES = (*tuple(f"data_batch_{i}" for i in range(1, 6)), "test_batch", "batches.meta")
SVHN_DIR = "SVHN"
DIGITS = tuple(str(k) for k in range(10))
FASHION_MNIST_CLASSES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)  # fmt: skip
"""Label order of Fashion-MNIST (torchvision's ``FashionMNIST.classes``)."""
CIFAR10_CLASSES = (
    "airplane", "automobile", "bird", "cat", "deer",
    "dog", "frog", "horse", "ship", "truck",
)  # fmt: skip
"""Label order of CIFAR-10 (its ``batches.meta``)."""
SVHN_FILES = ("train_32x32.mat", "test_32x32.mat")


def debian_fashion_mnist_dir() -> Path:
    return Path(os.environ.get(DEBIAN_FASHION_MNIST_ENV, str(DEBIAN_FASHION_MNIST)))


def _unpack_gz(sources: list[Path], target_dir: Path) -> None:
    """Gunzips ``sources`` into ``target_dir``; all files appear or none do."""
    from torchvision.datasets.utils import extract_archive

    target_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target_dir))
    try:
        for src in sources:
            extract_archive(str(src), str(tmp))
        for src in sources:
            name = src.name.removesuffix(".gz")
            os.replace(tmp / name, target_dir / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _download(
    class_name: str,
    data_dir: Path,
    pretty: str,
    looked_for: Path,
    splits: tuple[dict[str, object], ...] = ({"train": True}, {"train": False}),
) -> None:
    """Has torchvision's ``class_name`` download every one of ``splits`` (its
    constructor's split arguments) into ``data_dir``."""
    from torchvision import datasets

    cls = getattr(datasets, class_name)
    try:
        for split in splits:
            cls(str(data_dir), download=True, **split)
    except Exception as err:  # network errors come in many types
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise DatasetError(
            f"{pretty} is not in {str(looked_for)!r} and could not be downloaded ({reason})"
        ) from None


def _prepare_idx(
    class_name: str, pretty: str, data_dir: Path, download: bool, debian: Path | None
) -> str:
    raw = data_dir / class_name / "raw"
    present = all((raw / f).is_file() for f in IDX_FILES)
    damaged = [f for f in IDX_FILES if not _idx_whole(raw / f)] if present else []
    if present and not damaged:
        return f"{pretty}: found in {raw}"
    again = " (a damaged file replaced)" if damaged else ""
    if debian is not None:
        gz = [debian / f"{f}.gz" for f in IDX_FILES]
        if all(p.is_file() for p in gz):
            _unpack_gz(gz, raw)
            return f"{pretty}: unpacked {debian} into {raw}{again}"
    if download:
        for name in damaged:  # else torchvision would keep them
            (raw / name).unlink()
        _download(class_name, data_dir, pretty, raw)
        return f"{pretty}: downloaded into {raw}{again}"
    if damaged:
        raise DatasetError(
            f"{pretty} in {str(raw)!r} is damaged: {', '.join(damaged)} is shorter or longer "
            "than its header says; delete it and prepare the data again"
        )
    hint = " or install Debian's dataset-fashion-mnist" if debian is not None else ""
    raise DatasetError(
        f"{pretty} is not in {str(raw)!r} (expected {', '.join(IDX_FILES)}); "
        f"put the files there{hint}, or allow downloading"
    )


def _idx_whole(path: Path) -> bool:
    """Whether an IDX file is as long as its header says (a magic number whose last
    byte is the number of dimensions, then one 4-byte size per dimension)."""
    with path.open("rb") as f:
        head = f.read(4)
        if len(head) < 4 or head[:2] != b"\0\0":
            return False
        sizes = f.read(4 * head[3])
    if len(sizes) < 4 * head[3]:
        return False
    count = 1
    for i in range(head[3]):
        count *= int.from_bytes(sizes[4 * i : 4 * i + 4], "big")
    return path.stat().st_size == 4 + 4 * head[3] + count


def _load_idx(class_name: str, data_dir: Path) -> RawData:
    from torchvision import datasets

    from nasmlcn.data._splits import RawData

    cls = getattr(datasets, class_name)
    try:
        train = cls(str(data_dir), train=True, download=False)
        test = cls(str(data_dir), train=False, download=False)
    except Exception as err:
        raise DatasetError(f"cannot read {class_name} from {str(data_dir)!r}: {err}") from None
    return RawData(
        train.data.unsqueeze(1).contiguous(),  # (N, 1, 28, 28) uint8
        train.targets.long(),
        test.data.unsqueeze(1).contiguous(),
        test.targets.long(),
    )


def _prepare_fashion_mnist(data_dir: Path, download: bool) -> str:
    return _prepare_idx(
        "FashionMNIST", "Fashion-MNIST", data_dir, download, debian_fashion_mnist_dir()
    )


def _load_fashion_mnist(data_dir: Path, download: bool) -> RawData:
    _prepare_fashion_mnist(data_dir, download)
    return _load_idx("FashionMNIST", data_dir)


def _prepare_mnist(data_dir: Path, download: bool) -> str:
    return _prepare_idx("MNIST", "MNIST", data_dir, download, None)


def _load_mnist(data_dir: Path, download: bool) -> RawData:
    _prepare_mnist(data_dir, download)
    return _load_idx("MNIST", data_dir)


def _prepare_cifar10(data_dir: Path, download: bool) -> str:
    folder = data_dir / "cifar-10-batches-py"
    if all((folder / f).is_file() for f in CIFAR10_FILES):
        return f"CIFAR-10: found in {folder}"
    if download:
        _download("CIFAR10", data_dir, "CIFAR-10", folder)
        return f"CIFAR-10: downloaded into {folder}"
    raise DatasetError(
        f"CIFAR-10 is not in {str(folder)!r} (expected {', '.join(CIFAR10_FILES)}); "
        "put the python-version batches there, or allow downloading"
    )


def _load_cifar10(data_dir: Path, download: bool) -> RawData:
    import torch
    from torchvision import datasets

    from nasmlcn.data._splits import RawData

    _prepare_cifar10(data_dir, download)
    try:
        train = datasets.CIFAR10(str(data_dir), train=True, download=False)
        test = datasets.CIFAR10(str(data_dir), train=False, download=False)
    except Exception as err:
        raise DatasetError(f"cannot read CIFAR-10 from {str(data_dir)!r}: {err}") from None

    def images(ds: datasets.CIFAR10) -> torch.Tensor:
        return torch.from_numpy(ds.data).permute(0, 3, 1, 2).contiguous()  # (N, 3, 32, 32)

    return RawData(
        images(train),
        torch.tensor(train.targets, dtype=torch.long),
        images(test),
        torch.tensor(test.targets, dtype=torch.long),
    )


def _prepare_svhn(data_dir: Path, download: bool) -> str:
    folder = data_dir / SVHN_DIR
    if all((folder / f).is_file() for f in SVHN_FILES):
        return f"SVHN: found in {folder}"
    if download:
        folder.mkdir(parents=True, exist_ok=True)
        _download("SVHN", folder, "SVHN", folder, ({"split": "train"}, {"split": "test"}))
        return f"SVHN: downloaded into {folder}"
    raise DatasetError(
        f"SVHN is not in {str(folder)!r} (expected {', '.join(SVHN_FILES)}); "
        "put the .mat files there, or allow downloading"
    )


def _load_svhn(data_dir: Path, download: bool) -> RawData:
    import torch
    from torchvision import datasets

    from nasmlcn.data._splits import RawData

    _prepare_svhn(data_dir, download)
    folder = str(data_dir / SVHN_DIR)
    try:
        # torchvision maps the files' label 10 (the digit 0) to 0, and the .mat's
        # (32, 32, 3, N) array to (N, 3, 32, 32).
        train = datasets.SVHN(folder, split="train", download=False)
        test = datasets.SVHN(folder, split="test", download=False)
    except Exception as err:
        raise DatasetError(f"cannot read SVHN from {folder!r}: {err}") from None

    def images(ds: datasets.SVHN) -> torch.Tensor:
        return torch.from_numpy(ds.data).contiguous()  # (N, 3, 32, 32) uint8

    def labels(ds: datasets.SVHN) -> torch.Tensor:
        return torch.from_numpy(ds.labels).long()  # (N,) in 0..9

    return RawData(images(train), labels(train), images(test), labels(test))


DATASETS.register(
    "fashion-mnist",
    DatasetInfo(
        "fashion-mnist",
        10,
        (1, 28, 28),
        "Zalando Fashion-MNIST, 60k/10k 28x28 grey (Debian: dataset-fashion-mnist)",
        _load_fashion_mnist,
        _prepare_fashion_mnist,
        classes=FASHION_MNIST_CLASSES,
        images=(60_000, 10_000),
    ),
)
DATASETS.register(
    "mnist",
    DatasetInfo(
        "mnist",
        10,
        (1, 28, 28),
        "MNIST digits, 60k/10k 28x28 grey",
        _load_mnist,
        _prepare_mnist,
        classes=DIGITS,
        images=(60_000, 10_000),
    ),
)
DATASETS.register(
    "cifar10",
    DatasetInfo(
        "cifar10",
        10,
        (3, 32, 32),
        "CIFAR-10, 50k/10k 32x32 colour, normalised per channel",
        _load_cifar10,
        _prepare_cifar10,
        CIFAR10_NORMALIZATION,
        classes=CIFAR10_CLASSES,
        images=(50_000, 10_000),
    ),
)
DATASETS.register(
    "svhn",
    DatasetInfo(
        "svhn",
        10,
        (3, 32, 32),
        "SVHN street-view digits (train/test .mat), 73k/26k 32x32 colour, normalised per channel",
        _load_svhn,
        _prepare_svhn,
        SVHN_NORMALIZATION,
        classes=DIGITS,  # torchvision maps the files' 10 to the digit 0
        images=(73_257, 26_032),
    ),
)
