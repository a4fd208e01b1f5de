"""A user's own images: folders of class folders and ``.npz`` files read into the
splits a search trains on, their identity, normalisation and cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from nasmlcn.data import (
    DataIdentity,
    inspect_dataset,
    known_identity,
    load_splits,
    open_dataset,
    open_recorded,
)
from nasmlcn.errors import DatasetError
from tests.data._images import write_folder, write_npz


def _all(info_splits: object) -> tuple[torch.Tensor, torch.Tensor]:
    """Every image and label of the splits (training, validation, test), sorted so that
    two splittings of one dataset compare equal."""
    from nasmlcn.data import DataSplits

    assert isinstance(info_splits, DataSplits)
    parts = [s.dense() for s in (info_splits.train, info_splits.val, info_splits.test)]
    images = torch.cat([p.images for p in parts])
    labels = torch.cat([p.labels for p in parts])
    order = sorted(range(len(labels)), key=lambda i: (int(labels[i]), images[i].flatten().tolist()))
    return images[order], labels[order]


def test_a_grey_folder_reads_its_classes_shape_and_pixels(tmp_path: Path) -> None:
    written = write_folder(tmp_path / "grey", classes=3, per_class=14, size=(20, 24))
    info = open_dataset(str(tmp_path / "grey"), data_dir=tmp_path)
    identity = info.identity
    assert (identity.kind, identity.name) == ("folder", "grey")
    assert info.input_shape == (1, 20, 24)
    assert info.num_classes == 3
    assert info.class_names == ("c0", "c1", "c2")
    assert info.normalization is None  # grey: [0, 1], as the built-in grey sets
    # one image in 7 of each class of 14 is a test image: 2 a class
    assert (identity.train_images, identity.test_images) == (36, 6)
    splits = load_splits(info, seed=0)
    assert (len(splits.train), len(splits.val), len(splits.test)) == (32, 4, 6)
    images, labels = _all(splits)
    expected_labels = torch.arange(42) % 3
    order = sorted(
        range(42), key=lambda i: (int(expected_labels[i]), written[i].flatten().tolist())
    )
    assert torch.equal(labels, expected_labels[order])
    assert torch.equal(images, torch.from_numpy(written)[order])  # lossless PNG, pixel for pixel


def test_a_colour_folder_of_twelve_classes_is_normalised_by_its_training_split(
    tmp_path: Path,
) -> None:
    names = [f"kind-{k:02d}" for k in range(12)]
    write_folder(
        tmp_path / "colour", classes=12, per_class=3, size=(30, 21), channels=3,
        suffix=".bmp", names=names,
    )  # fmt: skip
    info = open_dataset(str(tmp_path / "colour"), data_dir=tmp_path)
    assert info.input_shape == (3, 30, 21)
    assert info.class_names == tuple(names)
    raw = info.load(tmp_path, False)
    train = raw.train_images.double() / 255  # (N, 3, H, W)
    assert info.normalization is not None
    mean = train.mean(dim=(0, 2, 3))
    std = train.permute(1, 0, 2, 3).reshape(3, -1).std(dim=1, unbiased=False)
    assert torch.allclose(
        torch.tensor(info.normalization.mean, dtype=torch.float64), mean, atol=1e-5
    )
    assert torch.allclose(torch.tensor(info.normalization.std, dtype=torch.float64), std, atol=1e-5)
    # the test images are not in the statistics: they are another split
    assert len(raw.test_labels) == 12  # one of each class's three


def test_train_and_test_folders_give_the_splits_and_files_keep_their_natural_order(
    tmp_path: Path,
) -> None:
    root = tmp_path / "split"
    write_folder(root, classes=3, per_class=8, split=True)
    info = open_dataset(str(root), data_dir=tmp_path)
    assert info.identity.test_split == "test/"
    raw = info.load(tmp_path, False)
    # files are named by index (i % 4 == 0 went to test/): across classes, in that order
    assert raw.test_labels.tolist() == [i % 3 for i in range(24) if i % 4 == 0]
    assert raw.train_labels.tolist() == [i % 3 for i in range(24) if i % 4 != 0]
    # natural order: 2 before 10, whatever the zero padding
    other = tmp_path / "natural"
    for name, label in (("10.png", "b"), ("2.png", "a"), ("3.png", "b"), ("11.png", "a")):
        (other / label).mkdir(parents=True, exist_ok=True)
        value = int(name.split(".")[0])
        Image.fromarray(np.full((20, 20), value, np.uint8)).save(other / label / name)
    held = open_dataset(str(other), data_dir=tmp_path).load(tmp_path, False)
    both = torch.cat((held.train_images, held.test_images))[:, 0, 0, 0].tolist()
    assert sorted(both) == [2, 3, 10, 11]
    assert held.train_images[:, 0, 0, 0].tolist() == sorted(held.train_images[:, 0, 0, 0].tolist())


def test_the_held_out_test_split_does_not_move_with_the_seed(tmp_path: Path) -> None:
    write_folder(tmp_path / "d", classes=3, per_class=21)
    info = open_dataset(str(tmp_path / "d"), data_dir=tmp_path)
    a, b = load_splits(info, seed=0), load_splits(info, seed=1)
    assert torch.equal(a.test.images, b.test.images)
    assert not torch.equal(a.val.dense().images, b.val.dense().images)  # the seed draws validation
    test_rows = {tuple(x.flatten().tolist()) for x in a.test.images}
    for splits in (a, b):
        seen = splits.train.dense().images
        assert not test_rows & {tuple(x.flatten().tolist()) for x in seen}
    assert (len(a.test), a.test.labels.bincount().tolist()) == (9, [3, 3, 3])


def test_splits_index_the_memory_mapped_cache_rather_than_copy_it(tmp_path: Path) -> None:
    write_folder(tmp_path / "d", classes=3, per_class=14)
    info = open_dataset(str(tmp_path / "d"), data_dir=tmp_path)
    splits = load_splits(info, seed=0, train_limit=20)
    assert splits.train.index is not None
    assert len(splits.train) == 20
    assert len(splits.train.images) == 36  # the whole cached training set, shared
    dense = splits.train.dense()
    batches = list(splits.train.batches(7))
    assert torch.equal(torch.cat([x for x, _ in batches]), dense.images.float() / 255)
    assert torch.equal(torch.cat([y for _, y in batches]), dense.labels)
    assert splits.train.nbytes == dense.nbytes
    refit = splits.refit()
    assert len(refit.train) == 20 + len(splits.val)
    assert len(refit.val) == 0


def test_sizes_differ_only_with_an_image_size_and_resize_bilinear_stretched(
    tmp_path: Path,
) -> None:
    root = tmp_path / "mixed"
    write_folder(root, classes=2, per_class=4, size=(20, 20))
    odd = np.arange(30 * 40, dtype=np.uint32).reshape(30, 40).astype(np.uint8)
    Image.fromarray(odd).save(root / "c0" / "9999.png")
    with pytest.raises(DatasetError, match=r"2 sizes \(20x20: 8, 30x40: 1\).*image_size"):
        open_dataset(str(root), data_dir=tmp_path)
    info = open_dataset(str(root), image_size="24x28", data_dir=tmp_path)
    assert info.input_shape == (1, 24, 28)
    assert info.identity.image_size == "24x28"
    raw = info.load(tmp_path, False)
    stretched = np.array(Image.fromarray(odd).resize((28, 24), Image.Resampling.BILINEAR))
    everything = torch.cat((raw.train_images, raw.test_images))[:, 0]
    assert any(torch.equal(x, torch.from_numpy(stretched)) for x in everything)
    assert open_dataset(str(root), image_size=24, data_dir=tmp_path).input_shape == (1, 24, 24)


def test_grey_images_among_colour_ones_are_made_colour_and_counted(tmp_path: Path) -> None:
    root = tmp_path / "mix"
    write_folder(root, classes=2, per_class=7, channels=3)
    grey = np.full((20, 20), 77, np.uint8)
    Image.fromarray(grey).save(root / "c1" / "0100.png")
    report = inspect_dataset(root)
    assert (report.grey, report.colour) == (1, 14)
    assert any("1 grey images will be made colour" in n for n in report.notes)
    raw = open_dataset(str(root), data_dir=tmp_path).load(tmp_path, False)
    every = torch.cat((raw.train_images, raw.test_images))
    assert every.shape[1] == 3
    assert any(bool((x == 77).all()) for x in every)  # the grey one, its value on all 3 channels


def test_sixteen_bit_and_palette_images_are_read_as_grey(tmp_path: Path) -> None:
    root = tmp_path / "deep"
    for k, label in enumerate(("a", "b")):
        (root / label).mkdir(parents=True)
        for i in range(3):
            wide = np.full((20, 20), 257 * (50 * k + i), np.uint16)
            Image.fromarray(wide).save(root / label / f"{i}.png")  # mode I;16
    palette = Image.fromarray(np.full((20, 20), 3, np.uint8), "L").convert("P")
    palette.save(root / "a" / "9.png")
    info = open_dataset(str(root), data_dir=tmp_path)
    assert info.input_shape[0] == 1
    raw = info.load(tmp_path, False)
    values = sorted({int(x[0, 0, 0]) for x in torch.cat((raw.train_images, raw.test_images))})
    assert values == [0, 1, 2, 3, 50, 51, 52]  # 257 * v scaled back to v


@pytest.mark.parametrize(
    ("layout", "shape"),
    [("grey", (5, 20, 22)), ("last", (5, 20, 22, 3)), ("first", (5, 3, 20, 22))],
)
def test_npz_layouts_and_float_images_read_as_uint8_channels_first(
    tmp_path: Path, layout: str, shape: tuple[int, ...]
) -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (8, *shape[1:]), dtype=np.uint8)
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    path = write_npz(tmp_path / f"{layout}.npz", x_train=x, y_train=y, x_test=x[:3], y_test=y[:3])
    info = open_dataset(str(path), data_dir=tmp_path)
    raw = info.load(tmp_path, False)
    expected = (
        x[:, None] if layout == "grey" else x.transpose(0, 3, 1, 2) if layout == "last" else x
    )
    assert torch.equal(raw.train_images, torch.from_numpy(expected))
    assert info.identity.test_split == "x_test"
    assert raw.test_labels.tolist() == [0, 1, 2]
    floats = write_npz(
        tmp_path / f"{layout}-float.npz", x_train=x.astype(np.float32) / 255, y_train=y
    )
    again = open_dataset(str(floats), data_dir=tmp_path).load(tmp_path, False)
    both = torch.cat((again.train_images, again.test_images))
    assert sorted(map(bytes, both.numpy())) == sorted(map(bytes, expected))  # 255 * x, rounded


def test_npz_class_names_name_the_classes(tmp_path: Path) -> None:
    x = np.zeros((6, 20, 20), np.uint8)
    path = write_npz(
        tmp_path / "named.npz", x_train=x, y_train=np.array([0, 1, 2, 0, 1, 2]),
        class_names=np.array(["cat", "dog", "eel"]),
    )  # fmt: skip
    info = open_dataset(str(path), data_dir=tmp_path)
    assert info.class_names == ("cat", "dog", "eel")
    assert info.identity.kind == "npz"


def test_stray_files_are_skipped_and_counted(tmp_path: Path) -> None:
    root = tmp_path / "strays"
    write_folder(root, classes=2, per_class=3)
    for name in (".DS_Store", "Thumbs.db"):
        (root / "c0" / name).write_bytes(b"x")
    (root / "README.txt").write_text("about these images")
    report = inspect_dataset(root)
    assert sorted(report.skipped) == ["README.txt", "c0/.DS_Store", "c0/Thumbs.db"]
    assert not report.problems
    assert open_dataset(str(root), data_dir=tmp_path).identity.train_images == 4


def test_the_same_images_elsewhere_are_the_same_data_and_a_change_is_other_data(
    tmp_path: Path,
) -> None:
    write_folder(tmp_path / "a", classes=2, per_class=5)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    a = open_dataset(str(tmp_path / "a"), data_dir=tmp_path).identity
    b = open_dataset(str(tmp_path / "b"), data_dir=tmp_path).identity
    assert a.sha256 == b.sha256
    assert a.same_data(b)
    assert a.source != b.source
    Image.fromarray(np.zeros((20, 20), np.uint8)).save(tmp_path / "b" / "c0" / "0000.png")
    changed = open_dataset(str(tmp_path / "b"), data_dir=tmp_path).identity
    assert not changed.same_data(a)
    with pytest.raises(
        DatasetError, match=r"has changed since run r was trained \(sha256 .*other pixels or labels"
    ):
        open_recorded(b, data_dir=tmp_path, what="run r was trained")
    assert DataIdentity.from_dict(a.to_dict()) == a


def test_gone_data_is_found_again_by_its_content_in_the_cache(tmp_path: Path) -> None:
    write_folder(tmp_path / "imgs", classes=2, per_class=5)
    (tmp_path / "cache").mkdir()
    (tmp_path / "empty-cache").mkdir()
    first = open_dataset(str(tmp_path / "imgs"), data_dir=tmp_path / "cache")
    shutil.rmtree(tmp_path / "imgs")
    again = open_recorded(first.identity, data_dir=tmp_path / "cache", what="study s searched")
    assert again.identity.sha256 == first.identity.sha256
    assert open_dataset(str(tmp_path / "imgs"), data_dir=tmp_path / "cache").num_classes == 2
    known = known_identity(str(tmp_path / "imgs"), tmp_path / "cache")
    assert known is not None
    assert known.sha256 == first.identity.sha256
    with pytest.raises(DatasetError, match="holds no copy"):
        open_recorded(first.identity, data_dir=tmp_path / "empty-cache", what="study s searched")


def test_the_cache_is_never_written_into_the_users_folder(tmp_path: Path) -> None:
    root = tmp_path / "imgs"
    write_folder(root, classes=2, per_class=4)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    (tmp_path / "cache").mkdir()
    open_dataset(str(root), data_dir=tmp_path / "cache")
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    assert list((tmp_path / "cache" / "own").iterdir())
    with pytest.raises(DatasetError, match="inside the dataset"):
        open_dataset(str(root), data_dir=root)
