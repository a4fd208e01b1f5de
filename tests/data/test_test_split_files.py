"""``nasmlcn data inspect PATH --test-files`` and ``--json`` name the images of the
test split: exactly those the loader puts there, in its order, so that a deployed
model can be tested on them. The oracle is the loader itself: the listed files,
decoded, are the test split a search or a training loads, pixel for pixel."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from nasmlcn.data import load_splits, open_dataset
from tests.conftest import run_cli
from tests.data._images import write_folder, write_npz


def _listed(path: Path, *more: str) -> tuple[list[str], str]:
    """The lines ``data inspect PATH --test-files`` prints, and its stderr."""
    result = run_cli("data", "inspect", str(path), "--test-files", *more)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines(), result.stderr


def _json(path: Path) -> dict[str, object]:
    result = run_cli("data", "inspect", str(path), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert isinstance(data, dict)
    return data


def _loaded_test_images(path: Path, data_dir: Path) -> torch.Tensor:
    """The test split's images as a training loads them (its seed draws validation,
    never the test split)."""
    splits = load_splits(open_dataset(str(path), data_dir=data_dir), seed=5)
    return splits.test.dense().images


def _decoded(root: Path, files: list[str]) -> torch.Tensor:
    return torch.stack([torch.from_numpy(np.array(Image.open(root / f)))[None] for f in files])


def test_a_held_out_split_lists_the_files_the_loader_tests_on(tmp_path: Path) -> None:
    root = tmp_path / "imgs"
    write_folder(root, classes=3, per_class=15)  # 2 of each class's 15 held out
    files, _ = _listed(root)
    assert len(files) == 6
    assert all(not Path(f).is_absolute() and (root / f).is_file() for f in files)
    assert _json(root)["test_files"] == files
    loaded = _loaded_test_images(root, tmp_path)
    assert torch.equal(_decoded(root, files), loaded)  # the same images, in the same order
    # chosen by the hash rule, not the first files of each class
    assert sorted(files) != sorted(f"c{k}/{i:04d}.png" for k in range(3) for i in (k, k + 3))


def test_a_test_folder_lists_its_files(tmp_path: Path) -> None:
    root = tmp_path / "split"
    write_folder(root, classes=3, per_class=8, split=True)
    files, _ = _listed(root)
    assert files == sorted(files, key=lambda f: int(Path(f).stem))  # the loader's order
    assert {Path(f).parts[0] for f in files} == {"test"}
    assert len(files) == len(list((root / "test").rglob("*.png")))
    assert torch.equal(_decoded(root, files), _loaded_test_images(root, tmp_path))


def test_an_npz_lists_the_indices_of_its_held_out_images(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (40, 20, 20), dtype=np.uint8)
    y = np.arange(40) % 4
    path = write_npz(tmp_path / "held.npz", x_train=x, y_train=y)
    lines, told = _listed(path)
    assert "indices into x_train" in told
    indices = [int(v) for v in lines]
    report = _json(path)
    assert (report["test_array"], report["test_indices"]) == ("x_train", indices)
    assert report["test_files"] is None
    loaded = _loaded_test_images(path, tmp_path)
    assert torch.equal(torch.from_numpy(x[indices])[:, None], loaded)


def test_an_npz_with_x_test_lists_all_of_x_test(tmp_path: Path) -> None:
    x = np.random.default_rng(4).integers(0, 256, (12, 20, 20), dtype=np.uint8)
    y = np.arange(12) % 3
    path = write_npz(tmp_path / "split.npz", x_train=x, y_train=y, x_test=x[:5], y_test=y[:5])
    lines, told = _listed(path)
    assert "indices into x_test" in told
    assert lines == [str(i) for i in range(5)]
    assert _json(path)["test_array"] == "x_test"
    assert torch.equal(torch.from_numpy(x[:5])[:, None], _loaded_test_images(path, tmp_path))


def test_unreadable_data_lists_no_test_files_and_says_why(tmp_path: Path) -> None:
    root = tmp_path / "imgs"
    write_folder(root, classes=2, per_class=5)
    (root / "c0" / "notes.txt").write_text("not an image")
    result = run_cli("data", "inspect", str(root), "--test-files")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "c0/notes.txt is not an image" in result.stderr
    assert json.loads(run_cli("data", "inspect", str(root), "--json").stdout)["test_files"] is None
