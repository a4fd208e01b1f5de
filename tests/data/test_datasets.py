"""Datasets through torchvision's classes, on real and generated files."""

from __future__ import annotations

import gzip
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from nasmlcn.data import DATASETS, Normalization, RawData, load_splits, make_splits, prepare_dataset
from nasmlcn.errors import DatasetError, UnknownNameError
from tests.data._files import trust_generated_files, write_svhn

DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
"""Where Debian's dataset-fashion-mnist package puts the gzipped IDX files."""
CIFAR10_NORMALIZATION = Normalization(mean=(0.4914, 0.4822, 0.4465), std=(0.2470, 0.2435, 0.2616))
"""CIFAR-10's published per-channel mean and std (of its 50,000 training images)."""
SVHN_NORMALIZATION = Normalization(mean=(0.4377, 0.4438, 0.4728), std=(0.1980, 0.2010, 0.1970))
"""SVHN's published per-channel mean and std (of its 73,257 ``train`` images)."""


def _write_idx(path: Path, array: np.ndarray, compress: bool) -> None:
    """Writes ``array`` (uint8) in the IDX format of the MNIST files."""
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + array.astype(np.uint8).tobytes()
    if compress:
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)


def _fake_idx_set(folder: Path, n_train: int, n_test: int, compress: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": rng.integers(0, 10, (n_train,), dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, (n_test,), dtype=np.uint8),
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, array in arrays.items():
        _write_idx(folder / (name + (".gz" if compress else "")), array, compress)
    return arrays


def test_registry_lists_builtins() -> None:
    assert DATASETS.names() == ["cifar10", "fashion-mnist", "mnist", "svhn", "synthetic"]
    assert DATASETS.get("cifar10").input_shape == (3, 32, 32)
    assert DATASETS.get("svhn").input_shape == (3, 32, 32)
    assert DATASETS.get("svhn").num_classes == 10
    with pytest.raises(UnknownNameError, match="did you mean 'fashion-mnist'"):
        DATASETS.get("fashion_mnist")


def test_real_fashion_mnist_from_debian_package(data_dir: Path) -> None:
    assert (DEBIAN_FASHION_MNIST / "train-images-idx3-ubyte.gz").is_file(), (
        "Debian's dataset-fashion-mnist is not installed; run scripts/setup.sh"
    )
    splits = load_splits("fashion-mnist", data_dir, download=False, seed=0)
    assert (len(splits.train), len(splits.val), len(splits.test)) == (54_000, 6_000, 10_000)
    assert splits.train.images.dtype == torch.uint8
    assert splits.train.images.shape[1:] == (1, 28, 28)
    assert sorted(splits.test.labels.unique().tolist()) == list(range(10))
    assert "found in" in prepare_dataset("fashion-mnist", data_dir, download=False)


def test_fashion_mnist_unpacks_a_debian_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    debian = tmp_path / "debian"
    arrays = _fake_idx_set(debian, 50, 20, compress=True)
    monkeypatch.setenv("NASMLCN_DEBIAN_FASHION_MNIST", str(debian))
    data = tmp_path / "data"
    data.mkdir()
    message = prepare_dataset("fashion-mnist", data, download=False)
    assert "unpacked" in message
    assert sorted(p.name for p in (data / "FashionMNIST" / "raw").iterdir()) == sorted(arrays)
    raw = DATASETS.get("fashion-mnist").load(data, False)
    assert torch.equal(raw.train_images[:, 0], torch.from_numpy(arrays["train-images-idx3-ubyte"]))
    assert torch.equal(raw.test_labels, torch.from_numpy(arrays["t10k-labels-idx1-ubyte"]).long())


def test_a_damaged_file_is_named_or_replaced_never_found_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    debian = tmp_path / "debian"
    _fake_idx_set(debian, 50, 20, compress=True)
    monkeypatch.setenv("NASMLCN_DEBIAN_FASHION_MNIST", str(debian))
    data = tmp_path / "data" / "new"  # prepare makes a missing folder
    assert "unpacked" in prepare_dataset("fashion-mnist", data, download=False)
    damaged = data / "FashionMNIST" / "raw" / "t10k-images-idx3-ubyte"
    damaged.write_bytes(damaged.read_bytes()[:1000])  # cut short, as by a full disk
    assert prepare_dataset("fashion-mnist", data, download=False).endswith(
        "(a damaged file replaced)"
    )
    assert len(DATASETS.get("fashion-mnist").load(data, False).test_images) == 20
    damaged.write_bytes(damaged.read_bytes() + b"x")
    monkeypatch.setenv("NASMLCN_DEBIAN_FASHION_MNIST", str(tmp_path / "no-debian"))
    with pytest.raises(
        DatasetError, match="is damaged: t10k-images-idx3-ubyte is shorter or longer"
    ):
        prepare_dataset("fashion-mnist", data, download=False)


def test_mnist_reads_torchvision_layout(tmp_path: Path) -> None:
    arrays = _fake_idx_set(tmp_path / "MNIST" / "raw", 30, 10, compress=False)
    splits = load_splits("mnist", tmp_path, download=False, val_fraction=0.2)
    assert (len(splits.train), len(splits.val), len(splits.test)) == (24, 6, 10)
    assert torch.equal(
        splits.test.labels, torch.from_numpy(arrays["t10k-labels-idx1-ubyte"]).long()
    )


def test_cifar10_reads_python_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(1)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {
            "data": rng.integers(0, 256, (4, 3072), dtype=np.uint8),
            "labels": rng.integers(0, 10, 4).tolist(),
        }
        (folder / name).write_bytes(pickle.dumps(batch))
    (folder / "batches.meta").write_bytes(
        pickle.dumps({"label_names": [f"c{i}" for i in range(10)]})
    )
    first = pickle.loads((folder / "data_batch_1").read_bytes())
    # torchvision checks the official files' MD5 sums; generated files cannot match
    monkeypatch.setattr("torchvision.datasets.cifar.check_integrity", lambda *a, **k: True)
    raw = DATASETS.get("cifar10").load(tmp_path, False)
    assert raw.train_images.shape == (20, 3, 32, 32)
    assert raw.test_images.shape == (4, 3, 32, 32)
    expected = torch.from_numpy(first["data"][0].reshape(3, 32, 32))
    assert torch.equal(raw.train_images[0], expected)


def test_svhn_reads_mat_files_and_maps_label_10_to_digit_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = write_svhn(tmp_path / "SVHN", 30, 12)
    trust_generated_files(monkeypatch)
    assert prepare_dataset("svhn", tmp_path, download=False) == (
        f"SVHN: found in {tmp_path / 'SVHN'}"
    )
    raw = DATASETS.get("svhn").load(tmp_path, False)
    assert raw.train_images.shape == (30, 3, 32, 32)
    assert raw.test_images.shape == (12, 3, 32, 32)
    assert raw.train_images.dtype == torch.uint8
    # image i is X[:, :, :, i] with channels first
    x = written["train"]["X"]
    assert torch.equal(raw.train_images[4], torch.from_numpy(x[:, :, :, 4]).permute(2, 0, 1))
    y = written["test"]["y"][:, 0].astype(np.int64)
    assert y[0] == 10
    assert raw.test_labels.tolist() == [0 if v == 10 else int(v) for v in y]
    assert raw.test_labels.dtype == torch.int64
    assert sorted(raw.test_labels.unique().tolist()) == list(range(10))


def test_svhn_missing_files_and_failed_download_are_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the two files torchvision's SVHN reads, named
    expected = r"SVHN is not in .*SVHN' \(expected train_32x32.mat, test_32x32.mat\)"
    with pytest.raises(DatasetError, match=expected):
        load_splits("svhn", tmp_path, download=False)

    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("Error downloading train_32x32.mat: no network")

    monkeypatch.setattr("torchvision.datasets.SVHN.download", refuse)
    with pytest.raises(DatasetError, match=r"SVHN is not in .* could not be downloaded"):
        prepare_dataset("svhn", tmp_path, download=True)


def test_colour_sets_declare_published_normalisation_grey_sets_none() -> None:
    assert DATASETS.get("cifar10").normalization == CIFAR10_NORMALIZATION
    assert DATASETS.get("svhn").normalization == SVHN_NORMALIZATION
    for name in ("fashion-mnist", "mnist", "synthetic"):
        assert DATASETS.get(name).normalization is None


def test_splits_carry_the_normalisation_and_inputs_apply_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_svhn(tmp_path / "SVHN", 40, 10)
    trust_generated_files(monkeypatch)
    splits = load_splits("svhn", tmp_path, download=False, val_fraction=0.25)
    for split in (splits.train, splits.val, splits.test):
        assert split.normalization == SVHN_NORMALIZATION
    x, _ = next(splits.test.batches(10))
    assert float(x.min()) >= 0.0  # batches stay in [0, 1]: the reconstruction target
    assert float(x.max()) <= 1.0
    inputs = splits.test.inputs(x)
    assert inputs.shape == x.shape
    for c, (mean, std) in enumerate(
        zip(SVHN_NORMALIZATION.mean, SVHN_NORMALIZATION.std, strict=True)
    ):
        expected = (splits.test.images[:, c].double() / 255 - mean) / std
        assert torch.allclose(inputs[:, c].double(), expected, atol=1e-5)
    # what inference is timed on (evaluate, prune, retrain, the search): the same
    assert torch.equal(splits.test.first_inputs(10), inputs)
    assert torch.equal(splits.test.first_inputs(4), inputs[:4])
    grey = load_splits("synthetic", train_limit=8)
    g, _ = next(grey.train.batches(8))
    assert grey.train.normalization is None
    assert grey.train.inputs(g) is g  # grey sets: unchanged, as before


def test_normalization_is_validated_and_round_trips() -> None:
    n = Normalization((0.5, 0.25), (0.5, 0.125))
    assert Normalization.from_dict(n.to_dict()) == n
    x = torch.tensor([[[[1.0]], [[0.0]]]])  # (1, 2, 1, 1)
    assert n.apply(x).flatten().tolist() == [1.0, -2.0]
    with pytest.raises(DatasetError, match="one mean and one std per channel"):
        Normalization((0.5,), (0.1, 0.2))
    with pytest.raises(DatasetError, match=r"std must be > 0, got \[0.0\]"):
        Normalization((0.5,), (0.0,))
    with pytest.raises(
        DatasetError, match=r"for 2 channel\(s\), got images of shape \(1, 1, 1, 1\)"
    ):
        n.apply(torch.zeros(1, 1, 1, 1))
    with pytest.raises(DatasetError, match="not a normalization record"):
        Normalization.from_dict({"mean": [0.5]})


def test_missing_files_and_directories_give_clear_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(DatasetError, match=r"data directory '.*nope' does not exist"):
        load_splits("fashion-mnist", tmp_path / "nope")
    monkeypatch.setenv("NASMLCN_DEBIAN_FASHION_MNIST", str(tmp_path / "no-debian"))
    with pytest.raises(DatasetError, match=r"Fashion-MNIST is not in .*dataset-fashion-mnist"):
        load_splits("fashion-mnist", tmp_path, download=False)
    with pytest.raises(DatasetError, match="CIFAR-10 is not in"):
        load_splits("cifar10", tmp_path, download=False)


def test_download_failure_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("Error downloading train-images-idx3-ubyte.gz: no network")

    monkeypatch.setattr("torchvision.datasets.MNIST.download", refuse)
    with pytest.raises(
        DatasetError, match=r"MNIST is not in .* could not be downloaded \(Error downloading"
    ):
        load_splits("mnist", tmp_path, download=True)


def test_synthetic_split_is_seeded_disjoint_and_limited() -> None:
    a = load_splits("synthetic", seed=0)
    b = load_splits("synthetic", seed=0)
    c = load_splits("synthetic", seed=1)
    assert torch.equal(a.val.images, b.val.images)
    assert not torch.equal(a.val.images, c.val.images)
    assert len(a.train) + len(a.val) == 2000
    assert len(a.val) == 200
    limited = load_splits("synthetic", seed=0, train_limit=100, val_limit=50, test_limit=30)
    assert (len(limited.train), len(limited.val), len(limited.test)) == (100, 50, 30)
    assert torch.equal(limited.train.images, a.train.images[:100])


def test_train_and_validation_never_overlap() -> None:
    n = 1000
    images = torch.arange(n, dtype=torch.int64).view(n, 1, 1, 1)  # each image is its index
    raw = RawData(
        images, torch.zeros(n, dtype=torch.long), images[:10], torch.zeros(10, dtype=torch.long)
    )
    splits = make_splits(raw, val_fraction=0.25, seed=3)
    train_ids = set(splits.train.images.flatten().tolist())
    val_ids = set(splits.val.images.flatten().tolist())
    assert len(val_ids) == 250
    assert not train_ids & val_ids
    assert len(train_ids | val_ids) == n


def test_a_refit_trains_on_the_training_and_validation_images_and_validates_on_none() -> None:
    from nasmlcn.models import build_model
    from nasmlcn.specs import MLCNSpec
    from nasmlcn.training import evaluate

    splits = load_splits("synthetic", train_limit=30, val_limit=20, test_limit=10)
    refit = splits.refit()
    assert torch.equal(refit.train.images, torch.cat((splits.train.images, splits.val.images)))
    assert torch.equal(refit.train.labels, torch.cat((splits.train.labels, splits.val.labels)))
    assert len(refit.train) == 50
    assert len(refit.val) == 0
    assert refit.val.images.shape[1:] == splits.val.images.shape[1:]
    assert refit.test is splits.test
    assert refit.train.normalization is splits.train.normalization
    # nothing to validate on: an evaluation of zero images reports zeros, no error
    model = build_model(MLCNSpec("mlcn1:1x1"))
    assert evaluate(model, refit.val) == (0.0, 0.0)


def test_batches_are_float_in_unit_range_and_shuffled_by_generator() -> None:
    splits = load_splits("synthetic", train_limit=64)
    x, _ = next(splits.train.batches(16))
    assert x.dtype == torch.float32
    assert x.shape == (16, 1, 28, 28)
    assert x.min() >= 0
    assert x.max() <= 1
    order1 = [
        yb.tolist()
        for _, yb in splits.train.batches(16, generator=torch.Generator().manual_seed(5))
    ]
    order2 = [
        yb.tolist()
        for _, yb in splits.train.batches(16, generator=torch.Generator().manual_seed(5))
    ]
    plain = [yb.tolist() for _, yb in splits.train.batches(16)]
    assert order1 == order2
    assert order1 != plain
    assert sorted(v for b in order1 for v in b) == sorted(v for b in plain for v in b)
