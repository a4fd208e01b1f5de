"""``nasmlcn data inspect PATH``: what a folder or ``.npz`` holds and what is wrong
with it, before any search starts (headers only for a folder: nothing is decoded,
nothing is written).

Asked for the test split's members (``test_members``), it names the images every
training, retraining and evaluation of this data tests on, by the rule the loader
uses (:func:`~nasmlcn.data._own.held_out_mask`): a held-out split is chosen by a hash
of each file's bytes, so then every file of a folder is read (not decoded).

Problems and notes name configuration fields with :func:`~nasmlcn.errors.option`
(``‹image_size›``): :meth:`DataReport.to_dict` spells them as a library user reads
them, the CLI as its options.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn.data._identity import _size
from nasmlcn.errors import DatasetError, field_text, nested, option

if TYPE_CHECKING:
    from nasmlcn.data._folder import FolderScan
    from nasmlcn.data._npz import NpzData


@dataclass(frozen=True)
class ClassCount:
    name: str
    train: int
    test: int


@dataclass
class DataReport:
    """What :func:`inspect_dataset` found; ``to_dict`` is ``data inspect --json``.

    Attributes:
        source: The folder or file.
        kind: ``folder`` or ``npz``.
        classes: Each class's training and test images.
        sizes: ``HxW`` -> images of that size.
        grey: Images in grey; ``colour``: in colour (then all are read as colour).
        shape: ``CxHxW`` the images become (after ``image_size``), if readable.
        test_split: Where the test images come from.
        skipped: Stray files skipped (relative paths).
        problems: What makes it unreadable, one line each (empty: it reads).
        notes: What is worth knowing but no error (grey made colour, lanes that
            do not fit, memory).
        layout: An ``.npz``'s image layout.
        test_files: A folder's test images, relative to it, in the test split's
            order (None: not asked for, or the folder does not read).
        test_indices: An ``.npz``'s test images, as indices into its array
            ``test_array`` (``x_test``, or ``x_train`` for a held-out split), in order.
        test_array: The array ``test_indices`` index.
    """

    source: str
    kind: str
    classes: list[ClassCount] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)
    grey: int = 0
    colour: int = 0
    shape: str | None = None
    test_split: str | None = None
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    layout: str | None = None
    test_files: list[str] | None = None
    test_indices: list[int] | None = None
    test_array: str | None = None

    @property
    def images(self) -> int:
        return sum(c.train + c.test for c in self.classes)

    def to_dict(self, text: Callable[[str], str] = field_text) -> dict[str, Any]:
        """The report as JSON types; ``text`` spells the fields named in problems and
        notes (:func:`~nasmlcn.errors.field_text`, or the CLI's ``cli_text``)."""
        return {
            "source": self.source,
            "kind": self.kind,
            "images": self.images,
            "classes": [{"name": c.name, "train": c.train, "test": c.test} for c in self.classes],
            "sizes": self.sizes,
            "grey": self.grey,
            "colour": self.colour,
            "shape": self.shape,
            "test_split": self.test_split,
            "skipped": len(self.skipped),
            "skipped_files": self.skipped[:20],
            "problems": [text(p) for p in self.problems],
            "notes": [text(n) for n in self.notes],
            "layout": self.layout,
            "readable": not self.problems,
            "test_files": self.test_files,
            "test_indices": self.test_indices,
            "test_array": self.test_array,
        }


def inspect_dataset(
    path: str | Path, image_size: str | int | None = None, *, test_members: bool = False
) -> DataReport:
    """Looks at the folder or ``.npz`` at ``path`` (see the module docstring); with
    ``test_members``, names the test split's images too (where the data reads).

    Raises:
        DatasetError: ``path`` does not exist, or ``image_size`` is no size.
    """
    size = _size(image_size)
    source = Path(path).expanduser().resolve()
    if not source.exists():
        raise DatasetError(f"dataset {str(source)!r} does not exist")
    if source.is_dir():
        report = _folder(source, size, test_members)
    elif source.suffix.lower() == ".npz":
        report = _npz(source, size, test_members)
    else:
        raise DatasetError(f"{str(source)!r} is neither a folder of class folders nor an .npz file")
    if report.shape is not None and not report.problems:
        _lanes(report, report.shape)
    return report


def _folder(source: Path, size: tuple[int, int] | None, test_members: bool) -> DataReport:
    from nasmlcn.data._folder import check_sizes, scan_folder
    from nasmlcn.data._own import HELD_OUT

    scan = scan_folder(source)
    check_sizes(scan, size)
    train = Counter(f.label for f in scan.train)
    test = Counter(f.label for f in scan.test)
    sizes = Counter(f"{h}x{w}" for h, w in (f.size for f in scan.images))
    grey = sum(f.grey for f in scan.images)
    colour = len(scan.images) - grey
    report = DataReport(
        str(source),
        "folder",
        _counts(scan.classes, train, test if scan.test_folder else None),
        dict(sizes.most_common()),
        grey,
        colour,
        test_split="test/" if scan.test_folder else f"held out: 1 in {HELD_OUT} of each class",
        skipped=list(scan.skipped),
        problems=list(scan.problems),
    )
    if test_members and not scan.problems:
        report.test_files = folder_test_files(scan)
    if grey and colour:
        report.notes.append(f"{grey:,} grey images will be made colour (as the other {colour:,})")
    hw = size or (next(iter(scan.sizes())) if len(scan.sizes()) == 1 else None)
    if hw is not None and scan.images:
        shape = (3 if colour else 1, *hw)
        report.shape = "x".join(map(str, shape))
        _memory(report, len(scan.images), shape)
    return report


def _npz(source: Path, size: tuple[int, int] | None, test_members: bool) -> DataReport:
    from nasmlcn.data._npz import read_npz
    from nasmlcn.data._own import HELD_OUT

    try:
        data = read_npz(source)
    except DatasetError as err:
        return DataReport(str(source), "npz", problems=[nested(err)])
    train = Counter(data.train_labels.tolist())
    test = Counter(data.test_labels.tolist()) if data.test_labels is not None else Counter()
    c, h, w = data.train_images.shape[1:]
    count = len(data.train_images) + (len(data.test_images) if data.test_images is not None else 0)
    shape = (c, *(size or (h, w)))
    report = DataReport(
        str(source),
        "npz",
        _counts(data.classes, train, test if data.test_labels is not None else None),
        {f"{h}x{w}": count},
        count if c == 1 else 0,
        0 if c == 1 else count,
        shape="x".join(map(str, shape)),
        test_split="x_test"
        if data.test_images is not None
        else f"held out: 1 in {HELD_OUT} of each class",
        layout=data.layout,
    )
    if test_members:
        report.test_array, report.test_indices = npz_test_indices(data)
    _memory(report, count, shape)
    return report


def folder_test_files(scan: FolderScan) -> list[str]:
    """The test split's files of a readable folder (relative to it), in the order the
    loader puts them in: ``test/``'s, or those :func:`held_out_mask` keeps."""
    import numpy as np

    from nasmlcn.data._folder import file_digests
    from nasmlcn.data._own import held_out_mask

    if scan.test_folder:
        return [f.path for f in scan.test]
    labels = np.fromiter((f.label for f in scan.train), dtype=np.int64, count=len(scan.train))
    held = held_out_mask(labels, file_digests(scan, scan.train))
    return [f.path for f, test in zip(scan.train, held.tolist(), strict=True) if test]


def npz_test_indices(data: NpzData) -> tuple[str, list[int]]:
    """The array an ``.npz``'s test images are in and their indices there, in order:
    all of ``x_test``, or the ``x_train`` images :func:`held_out_mask` keeps."""
    import numpy as np

    from nasmlcn.data._own import held_out_mask

    if data.test_images is not None:
        return "x_test", list(range(len(data.test_images)))
    held = held_out_mask(data.train_labels, data.digests())
    return "x_train", np.flatnonzero(held).tolist()


def _counts(classes: list[str], train: Counter[int], test: Counter[int] | None) -> list[ClassCount]:
    """Each class's training and test images; without a test split, as the held-out
    rule will split them (:func:`~nasmlcn.data._own.held_out`)."""
    from nasmlcn.data._own import HELD_OUT

    if test is not None:
        return [ClassCount(n, train[k], test[k]) for k, n in enumerate(classes)]
    held = {k: max(1, round(v / HELD_OUT)) if v >= 2 else 0 for k, v in train.items()}
    return [ClassCount(n, train[k] - held.get(k, 0), held.get(k, 0)) for k, n in enumerate(classes)]


def _memory(report: DataReport, count: int, shape: tuple[int, int, int]) -> None:
    from nasmlcn.data._own import check_memory

    try:
        check_memory(count, shape, report.source)
    except DatasetError as err:
        report.problems.append(nested(err))


def _lanes(report: DataReport, shape: str) -> None:
    """Which lane types do not fit images of ``shape`` (``CxHxW``) at all: a problem
    when none does, a note when some do not."""
    from nasmlcn.errors import SpecError
    from nasmlcn.specs import LANE_TYPES, LaneSpec

    c, h, w = (int(v) for v in shape.split("x"))
    misfits = []
    for name in LANE_TYPES.names():
        try:
            LaneSpec(name, 1, 1).layout((c, h, w))
        except SpecError:
            misfits.append(name)
    if len(misfits) == len(LANE_TYPES):
        report.problems.append(
            f"no lane fits {h}x{w} images (their 9x9 convolutions have nothing left to read); "
            f"pass {option('image_size')} 28 or larger"
        )
    elif misfits:
        report.notes.append(
            f"lane types {', '.join(misfits)} do not fit {h}x{w} images, the others do "
            f"({option('image_size')} 28 fits all)"
        )
