"""A folder and an ``.npz`` holding the same images share one cache entry (content
decides equality), but each keeps its own description: kind, name, source, test
split and what reading it skipped."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from nasmlcn.data import known_identity, open_dataset, open_recorded
from tests.data._images import write_folder, write_npz


def _folder_and_npz(tmp_path: Path) -> tuple[Path, Path]:
    """A folder with train/ and test/ (and a stray file), and an ``.npz`` of the same
    images, labels and class names, in the loader's order."""
    folder = tmp_path / "imgs"
    write_folder(folder, classes=3, per_class=8, split=True)
    (folder / "README.txt").write_text("where these came from")
    raw = open_dataset(str(folder), data_dir=tmp_path).load(tmp_path, False)
    npz = write_npz(
        tmp_path / "same.npz",
        x_train=raw.train_images.numpy(), y_train=raw.train_labels.numpy(),
        x_test=raw.test_images.numpy(), y_test=raw.test_labels.numpy(),
        class_names=np.array(["c0", "c1", "c2"]),
    )  # fmt: skip
    return folder, npz


def test_an_npz_of_a_folders_images_is_described_as_an_npz(tmp_path: Path) -> None:
    folder, npz = _folder_and_npz(tmp_path)
    first = open_dataset(str(folder), data_dir=tmp_path)
    info = open_dataset(str(npz), data_dir=tmp_path)
    assert info.identity.sha256 == first.identity.sha256  # the same data, one entry
    assert len(list((tmp_path / "own").iterdir())) == 1
    own = info.identity
    assert (own.kind, own.name, own.source, own.test_split) == ("npz", "same", str(npz), "x_test")
    assert "stray" not in info.description  # the folder's README.txt is not the npz's
    assert "test split: x_test" in info.description
    # and the folder's own description stays the folder's
    again = open_dataset(str(folder), data_dir=tmp_path).identity
    assert (again.kind, again.test_split) == ("folder", "test/")


def test_the_npz_keeps_its_description_without_reading_it_and_once_it_is_gone(
    tmp_path: Path,
) -> None:
    folder, npz = _folder_and_npz(tmp_path)
    open_dataset(str(folder), data_dir=tmp_path)
    recorded = open_dataset(str(npz), data_dir=tmp_path).identity
    known = known_identity(str(npz), tmp_path)
    assert known is not None
    assert (known.kind, known.source) == ("npz", str(npz))
    moved = tmp_path / "elsewhere.npz"
    shutil.move(npz, moved)
    found = open_recorded(recorded, data_dir=tmp_path, what="study s searched").identity
    assert (found.kind, found.name, found.test_split) == ("npz", "same", "x_test")
    folder_known = known_identity(str(folder), tmp_path)
    assert folder_known is not None
    assert folder_known.kind == "folder"
