"""What ``nasmlcn data inspect`` says of data it cannot read: each problem names the
file and what to do, in the CLI's words (options, not fields), and a mistake made
300 times is not 300 lines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from nasmlcn.data import inspect_dataset
from tests.conftest import run_cli
from tests.data._images import write_folder, write_npz


def _bomb(path: Path) -> None:
    """A 14000x14000 PNG: 196M pixels, past twice Pillow's ``MAX_IMAGE_PIXELS``
    (where it refuses to open one), yet 24 KB on disk (1 bit a pixel, all black)."""
    Image.new("1", (14000, 14000)).save(path)


def _problems(path: Path, *more: str) -> list[str]:
    """The problem lines of ``data inspect PATH``, which exits 1 for them."""
    result = run_cli("data", "inspect", str(path), *more)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert all(line.startswith("problem: ") for line in lines), result.stderr
    return lines


def test_an_image_too_large_for_pillow_is_a_problem_naming_the_file_and_the_limit(
    tmp_path: Path,
) -> None:
    root = tmp_path / "imgs"
    write_folder(root, classes=2, per_class=5)
    _bomb(root / "c1" / "huge.png")
    [problem] = inspect_dataset(root).problems
    assert problem.startswith("c1/huge.png has 196,000,000 pixels, more than the 178,956,970")
    assert "downscale it" in problem
    assert _problems(root) == [f"problem: {problem}"]


def test_a_flat_folder_of_images_is_one_problem_not_one_per_image(tmp_path: Path) -> None:
    root = tmp_path / "flat"
    root.mkdir()
    for i in range(300):
        Image.fromarray(np.zeros((8, 8), np.uint8)).save(root / f"{i}.png")
    lines = _problems(root)
    assert len(lines) == 2  # the images without a class, and the folder without classes
    assert "300 images (0.png, 1.png, 2.png and 297 more) are not in a class folder" in lines[0]
    assert "holds no class folders" in lines[1]


def test_many_problems_are_capped_with_how_many_more(tmp_path: Path) -> None:
    root = tmp_path / "imgs"
    write_folder(root, classes=2, per_class=5)
    for i in range(14):
        (root / "c0" / f"note{i}.txt").write_text("not an image")
    lines = _problems(root)
    assert len(lines) == 11
    assert lines[-1] == "problem: and 4 more (--json lists them all)"
    report = json.loads(run_cli("data", "inspect", str(root), "--json").stdout)
    assert len(report["problems"]) == 14


def test_hints_name_the_option_not_the_field(tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    write_folder(root, classes=2, per_class=5, size=(20, 20))
    Image.fromarray(np.zeros((32, 32), np.uint8)).save(root / "c0" / "big.png")
    [line] = _problems(root)
    assert "pass --image-size N or HxW to resize them all" in line
    assert "\u2039" not in line
    report = json.loads(run_cli("data", "inspect", str(root), "--json").stdout)
    assert "pass --image-size N or HxW" in report["problems"][0]
    assert "pass image_size N or HxW" in inspect_dataset(root).to_dict()["problems"][0]


def test_a_text_file_named_npz_is_said_to_be_no_npz(tmp_path: Path) -> None:
    path = tmp_path / "data.npz"
    path.write_text("label,pixels\n0,1 2 3\n")
    [problem] = inspect_dataset(path).problems
    assert problem.startswith("data.npz is not an .npz file (a zip archive of arrays")
    assert "it is text" in problem
    assert "pickle" not in problem
    np.save(tmp_path / "one.npy", np.zeros((3, 4)))
    (tmp_path / "one.npy").rename(tmp_path / "one.npz")
    [problem] = inspect_dataset(tmp_path / "one.npz").problems
    assert "it is one .npy array (numpy.save)" in problem


def test_labels_from_one_are_said_to_start_at_one(tmp_path: Path) -> None:
    x = np.zeros((6, 20, 20), np.uint8)
    y = np.array([1, 2, 3, 1, 2, 3])
    path = write_npz(tmp_path / "ones.npz", x_train=x, y_train=y, x_test=x[:3], y_test=y[:3])
    [problem] = inspect_dataset(path).problems
    assert "labels run from 1 to 3, so class 0 would have no images" in problem
    assert "labels must be 0 to K-1: save y_train - 1 and y_test - 1" in problem
    named = write_npz(
        tmp_path / "named.npz", x_train=x, y_train=y, class_names=np.array(["a", "b", "c"])
    )
    [problem] = inspect_dataset(named).problems
    assert "labels must be 0 to 2; these start at 1: save y_train - 1" in problem
