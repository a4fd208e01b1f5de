"""``--dataset``: a built-in name or a path to a user's own images, opened as a
:class:`~nasmlcn.data.DatasetInfo`.

A value with a path separator, or ending in ``.npz``, is a path
(:func:`~nasmlcn.data.is_dataset_path`): a folder of class folders or an ``.npz``
file, read once into the cache (:mod:`nasmlcn.data._cache`) under the data
directory (``--data-dir``, else ``$NASMLCN_DATA_DIR``), never into the user's
folder. Anything else is a registered name. Opening an unchanged path again in one
process reads nothing but its files' sizes and times.

:func:`open_dataset` is where a ``--dataset`` value is resolved, once per command:
whether it is a path and its ``--image-size`` (:func:`~nasmlcn.data._identity.spell`,
which a search's config shares, so that its copies ask nothing again) and the data
directory are worked out there and nowhere after; the
:class:`~nasmlcn.data.DatasetInfo` it returns carries them (``data_dir``,
``image_size``, ``source``), so that loading and preparing it, and every later
layer, ask nothing again.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn.data._data_dir import default_data_dir, resolve_data_dir
from nasmlcn.data._identity import RESIZE_METHOD, DataIdentity, spell
from nasmlcn.data._registry import DATASETS, DatasetInfo
from nasmlcn.errors import DatasetError, UnknownNameError, nested, option

if TYPE_CHECKING:
    from nasmlcn.data._cache import CacheEntry
    from nasmlcn.data._identity import Spelling
    from nasmlcn.data._splits import RawData

logger = logging.getLogger(__name__)

BUILTIN_FOLDERS = {
    "fashion-mnist": "FashionMNIST",
    "mnist": "MNIST",
    "cifar10": "cifar-10-batches-py",
    "svhn": "SVHN",
}
"""Where each built-in's files go inside the data directory (torchvision's places)."""

KNOWN_ENTRIES = frozenset({*BUILTIN_FOLDERS.values(), "own", "cifar-10-python.tar.gz"})
"""What nasmlcn and torchvision write into a data directory."""

_OPENED: dict[tuple[str, str, str], DatasetInfo] = {}
"""The datasets opened in this process, by fingerprint, path and data directory."""


def open_dataset(
    dataset: str,
    *,
    image_size: str | int | None = None,
    data_dir: str | Path | None = None,
    expect: DataIdentity | None = None,
) -> DatasetInfo:
    """The dataset ``dataset`` names: a built-in, or a user's folder or ``.npz``.

    Args:
        dataset: A registered name, or a path (see the module docstring).
        image_size: Resize a user's images to ``N`` or ``HxW`` (bilinear, stretched).
        data_dir: The data directory (None: ``$NASMLCN_DATA_DIR``); it holds the
            built-ins' files and the cache of decoded user datasets.
        expect: The data a study or run recorded: where ``dataset`` is a path that
            no longer exists, the cache's copy of this content is used.

    Raises:
        UnknownNameError: An unknown name.
        DatasetError: ``image_size`` for a built-in, a path that cannot be read
            (the first problem, in one line) or that is gone with no cached copy,
            or a ``data_dir`` holding files nasmlcn does not know.
    """
    spelled = spell(dataset, image_size)
    if not spelled.path:
        info = _builtin(dataset)
        if spelled.size is not None:
            raise DatasetError(
                f"{option('image_size')} resizes your own images (a folder or .npz); "
                f"{dataset}'s are {'x'.join(map(str, info.input_shape[1:]))}"
            )
        if data_dir is None:  # the default is made when the files are (see load_splits)
            return replace(info, data_dir=default_data_dir())
        root = resolve_data_dir(data_dir)
        check_data_dir(root, info)
        return replace(info, data_dir=root)
    path = Path(spelled.dataset)
    root = resolve_data_dir(data_dir)
    if path.exists():
        return _open_path(path, spelled, root)
    entry = _cached_copy(path, spelled.image_size, root, expect)
    return _info(entry, spelled.dataset, root)


def known_identity(dataset: str, data_dir: str | Path | None = None) -> DataIdentity | None:
    """What ``dataset`` is, without reading it: a built-in's identity, or that of the
    newest cached copy of a user's path; None when neither is known."""
    from nasmlcn.data import _cache

    spelled = spell(dataset)
    if not spelled.path:
        return DATASETS.get(dataset).identity if dataset in DATASETS else None
    entries = _cache.entries(resolve_data_dir(data_dir))
    found = _cache.newest(_cache.read_from(entries, spelled.dataset))
    return None if found is None else found.identity


def _builtin(name: str) -> DatasetInfo:
    try:
        return DATASETS.get(name)
    except UnknownNameError as err:
        if Path(name).exists():
            raise UnknownNameError(
                f"{nested(err)}; a folder or .npz of your own is given as a path: ./{name}"
            ) from None
        raise UnknownNameError(
            f"{nested(err)} (or a folder of class folders of images, or an .npz, as a path)"
        ) from None


def _open_path(path: Path, spelled: Spelling, root: Path) -> DatasetInfo:
    """The user's data at ``path``: from the cache when its fingerprint is known
    there (within a process, from memory), else read, hashed and cached."""
    from nasmlcn.data import _cache
    from nasmlcn.data._own import read_own

    if root == path or path in root.parents:
        raise DatasetError(
            f"the data directory {str(root)!r} is inside the dataset {str(path)!r}: its cache "
            f"would be written among your images; leave out {option('data_dir')} or choose "
            "another"
        )
    print_ = _cache.fingerprint(path, spelled.image_size)  # what is on disk now
    key = (print_, str(path), str(root))
    if key in _OPENED:
        return _OPENED[key]
    entry = _cache.find(root, key=print_)
    if entry is None:
        entry = _cache.write(root, read_own(path, spelled.size), print_)
        logger.info("cached %s in %s", path, entry.folder)
    info = _OPENED[key] = _info(entry, str(path), root)
    return info


def _cached_copy(
    path: Path, size: str | None, root: Path, expect: DataIdentity | None
) -> CacheEntry:
    """The cache's copy of a dataset whose path is gone: the ``expect``\\ ed content
    (described as ``expect`` says), else the newest read from ``path`` at ``size``."""
    from nasmlcn.data import _cache

    if expect is not None and expect.sha256:
        entry = _cache.find(root, sha256=expect.sha256)
        if entry is not None:  # the content's arrays, described as read from this path
            as_read = _cache.newest(_cache.read_from([entry], str(path)))
            return as_read or replace(entry, identity=expect)
    else:
        entry = _cache.find(root, source=str(path), image_size=size)
    if entry is not None:
        return entry
    what = f"; its cache {str(_cache.cache_root(root))!r} holds no copy"
    if expect is not None and expect.own:
        what += f" of {expect.describe()} either: give {option('dataset')} the path where it is now"
    raise DatasetError(f"dataset {str(path)!r} does not exist{what}")


def _info(entry: CacheEntry, source: str, root: Path) -> DatasetInfo:
    identity = replace(entry.identity, source=source)

    def load(data_dir: Path, download: bool) -> RawData:
        return raw_from_cache(entry)

    def prepare(data_dir: Path, download: bool) -> str:
        return f"{identity.describe()}: decoded and cached in {entry.folder}"

    return DatasetInfo(
        name=source,
        num_classes=len(identity.classes),
        input_shape=identity.input_shape,
        description=describe(identity, entry.meta),
        load=load,
        prepare=prepare,
        normalization=entry.normalization,
        classes=identity.classes,
        own=identity,
        images=(
            (identity.train_images, identity.test_images or 0)
            if identity.train_images is not None
            else None
        ),
        data_dir=root,
    )


def describe(identity: DataIdentity, meta: dict[str, Any]) -> str:
    """A user's dataset in one line, with what reading it did that a user should know."""
    parts = [
        f"{identity.describe()}: {identity.train_images:,} training and "
        f"{identity.test_images:,} test images (test split: {identity.test_split})"
    ]
    if identity.image_size:
        parts.append(f"resized to {identity.image_size} by {RESIZE_METHOD}")
    if meta.get("made_colour"):
        parts.append(f"{meta['made_colour']:,} grey images made colour")
    if meta.get("skipped"):
        parts.append(f"{meta['skipped']:,} stray files skipped")
    return "; ".join(parts)


def raw_from_cache(entry: CacheEntry) -> RawData:
    """The cached splits as tensors sharing the memory-mapped files' pages."""
    import torch

    from nasmlcn.data._splits import RawData

    arrays = [torch.from_numpy(a) for a in entry.arrays()]
    return RawData(*arrays, shared=True)


def check_data_dir(data_dir: Path, info: DatasetInfo) -> None:
    """Refuses a given data directory where preparing ``info`` would write a built-in's
    files among files nasmlcn does not know (a folder of the user's own images, say).

    Raises:
        DatasetError: Naming a few of those files and the options meant.
    """
    folder = BUILTIN_FOLDERS.get(info.name)
    if folder is None or (data_dir / folder).exists():
        return
    strangers = sorted(
        e.name + ("/" if e.is_dir() else "")
        for e in data_dir.iterdir()
        if not e.name.startswith(".") and e.name not in KNOWN_ENTRIES
    )
    if not strangers:
        return
    shown = ", ".join(strangers[:3]) + (
        f" and {len(strangers) - 3} more" if len(strangers) > 3 else ""
    )
    raise DatasetError(
        f"{option('data_dir')} {str(data_dir)!r} holds files nasmlcn does not know ({shown}) "
        f"and no {info.name}, whose files training would write there. Your own images go "
        f"to {option('dataset')} (a path); to keep {info.name} there anyway, prepare it "
        f"there first: nasmlcn data prepare {info.name} with {option('data_dir')} {data_dir}"
    )


def open_recorded(
    identity: DataIdentity, *, data_dir: str | Path | None = None, what: str
) -> DatasetInfo:
    """The dataset a study or run recorded (``what`` names it in errors), found where
    it was read, else by its content in the cache.

    Raises:
        DatasetError: The data is gone (with no cached copy), or a user's data at
            its path has changed since (its content hash differs).
    """
    if not identity.own:
        return open_dataset(identity.name, data_dir=data_dir)
    assert identity.source is not None, "a user's data records its source"
    info = open_dataset(
        identity.source, image_size=identity.image_size, data_dir=data_dir, expect=identity
    )
    if not info.identity.same_data(identity):
        raise DatasetError(
            f"the data at {identity.source!r} has changed since {what} (sha256 "
            f"{identity.short_hash}, now {info.identity.short_hash}; {_change(identity, info.identity)}); "
            f"to use it as it is now, give it as {option('dataset')}"
        )
    return info


def _change(then: DataIdentity, now: DataIdentity) -> str:
    """What differs between two records of a user's data, in a few words."""
    if then.classes != now.classes:
        return f"classes {', '.join(then.classes)} then, {', '.join(now.classes)} now"
    if then.input_shape != now.input_shape:
        return f"images {'x'.join(map(str, then.input_shape))} then, {'x'.join(map(str, now.input_shape))} now"
    if (then.train_images, then.test_images) == (now.train_images, now.test_images):
        return "as many images, other pixels or labels"
    return (
        f"{then.train_images} training and {then.test_images} test images then, "
        f"{now.train_images} and {now.test_images} now"
    )
