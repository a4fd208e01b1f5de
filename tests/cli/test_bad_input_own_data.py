"""Bad own data, one row each: every row ends in exactly one line on stderr, starting
``error:``, naming what is wrong (the file, the key, the value) and what would be
accepted; exit code 2, no traceback, and nothing written anywhere: no study, no
file in the user's folder, no cache entry for data that cannot be read (images that
read well but are too small for the lanes are cached: a cache, not a result)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.conftest import run_cli
from tests.data._images import write_folder, write_npz

PROXY = (
    *("search", "--evaluator", "proxy", "--devices", "2xK80", "--mem", "12GB"),
    *("--trials", "2", "--epochs", "1", "-q"),
)
TRAIN = ("train", "--lanes", "mlcn2:1x1", "--epochs", "1", "-q")


def _empty(root: Path) -> Path:
    (root / "imgs").mkdir()
    return root / "imgs"


def _one_class(root: Path) -> Path:
    write_folder(root / "imgs", classes=1, per_class=5)
    return root / "imgs"


def _class_without_images(root: Path) -> Path:
    write_folder(root / "imgs", classes=2, per_class=5)
    (root / "imgs" / "c2").mkdir()
    return root / "imgs"


def _not_an_image(root: Path) -> Path:
    write_folder(root / "imgs", classes=2, per_class=5)
    (root / "imgs" / "c0" / "notes.txt").write_text("taken on a Tuesday")
    return root / "imgs"


def _damaged(root: Path) -> Path:
    write_folder(root / "imgs", classes=2, per_class=5)
    (root / "imgs" / "c1" / "broken.png").write_bytes(b"\x89PNG not really")
    return root / "imgs"


def _truncated(root: Path) -> Path:
    write_folder(root / "imgs", classes=2, per_class=5)
    noise = np.random.default_rng(0).integers(0, 256, (20, 20), dtype=np.uint8)
    Image.fromarray(noise).save(root / "cut.png")
    data = (root / "cut.png").read_bytes()
    (root / "imgs" / "c1" / "0100.png").write_bytes(data[: len(data) // 2])  # header intact
    (root / "cut.png").unlink()
    return root / "imgs"


def _mixed_sizes(root: Path) -> Path:
    write_folder(root / "imgs", classes=2, per_class=5, size=(20, 20))
    Image.fromarray(np.zeros((32, 32), np.uint8)).save(root / "imgs" / "c0" / "big.png")
    return root / "imgs"


def _tiny(root: Path) -> Path:
    write_folder(root / "imgs", classes=3, per_class=7, size=(8, 8))
    return root / "imgs"


def _too_many_pixels(root: Path) -> Path:
    write_folder(root / "imgs", classes=2, per_class=5)
    Image.new("1", (14000, 14000)).save(root / "imgs" / "c1" / "huge.png")  # 196M pixels, 24 KB
    return root / "imgs"


def _text_npz(root: Path) -> Path:
    (root / "data.npz").write_text("label,pixels\n0,1 2 3\n")
    return root / "data.npz"


def _npz(root: Path, **arrays: np.ndarray) -> Path:
    return write_npz(root / "data.npz", **arrays)


X = np.zeros((6, 20, 20), np.uint8)
Y = np.array([0, 1, 2, 0, 1, 2])

Make = Callable[[Path], Path]
ROWS: list[tuple[str, Make, tuple[str, ...], str]] = [
    ("empty folder", _empty, PROXY, r"holds no class folders; expected .*/<class>/<image>"),
    ("one class", _one_class, PROXY, r"has one class \(c0/\); a classifier needs two or more"),
    ("class without images", _class_without_images, PROXY, r"class folder c2/ holds no training images"),
    ("not an image", _not_an_image, PROXY, r"c0/notes.txt is not an image \(PNG, JPEG or BMP\)"),
    ("damaged image", _damaged, PROXY, r"c1/broken.png is damaged or not an image"),
    ("truncated image", _truncated, TRAIN, r"c1/0100.png is damaged"),
    ("mixed sizes", _mixed_sizes, PROXY, r"2 sizes \(20x20: 10, 32x32: 1\); pass --image-size N or HxW"),
    ("too small", _tiny, PROXY, r"does not fit input 1x8x8.*too small for the lanes; pass --image-size 28"),
    ("too small to train", _tiny, TRAIN, r"does not fit input 1x8x8.*pass --image-size 28"),
    ("negative label", lambda r: _npz(r, x_train=X, y_train=Y - 1), PROXY, r"y_train holds label -1; labels must be 0 to K-1"),
    (
        "label past the names",
        lambda r: _npz(r, x_train=X, y_train=Y * 2, class_names=np.array(["a", "b", "c"])),
        PROXY,
        r"a label is 4 but class_names has 3 names; labels must be 0 to 2",
    ),
    ("labels of another length", lambda r: _npz(r, x_train=X, y_train=Y[:5]), PROXY, r"y_train has 5 labels for 6 images"),
    ("unknown key", lambda r: _npz(r, x_train=X, y_train=Y, extra=Y), PROXY, r"unknown key\(s\) extra; the keys read are x_train"),
    ("missing key", lambda r: _npz(r, x_train=X), PROXY, r"has no y_train"),
    ("floats out of range", lambda r: _npz(r, x_train=X + 2.0, y_train=Y), PROXY, r"values from 2 to 2; floats must be in \[0, 1\]"),
    ("one-hot labels", lambda r: _npz(r, x_train=X, y_train=np.eye(3)[Y]), PROXY, r"one-hot\?\); give class indices"),
    ("ambiguous layout", lambda r: _npz(r, x_train=np.zeros((6, 3, 20, 1), np.uint8), y_train=Y), PROXY, r"channels first or last"),
    ("no such path", lambda r: r / "nowhere", PROXY, r"dataset '.*nowhere' does not exist"),
    ("too many pixels", _too_many_pixels, PROXY, r"c1/huge.png has 196,000,000 pixels, more than the 178,956,970 Pillow opens .*downscale it"),
    ("text named .npz", _text_npz, PROXY, r"data.npz is not an .npz file \(a zip archive of arrays.*\): it is text"),
    ("labels from 1", lambda r: _npz(r, x_train=X, y_train=Y + 1), PROXY, r"labels run from 1 to 3.*labels must be 0 to K-1: save y_train - 1"),
]  # fmt: skip


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "/"
        for p in sorted(root.rglob("*"))
    }


def _refused(root: Path, *args: str, cached: bool = False) -> str:
    """The one error line of ``nasmlcn ARGS`` (a search's study in ``root/s.db``);
    ``cached``: the data read well, and its cache entry may stay."""
    before = _snapshot(root)
    if args[0] == "search":
        args = (*args, "--storage", f"sqlite:///{root / 's.db'}")
    result = run_cli(*args, env={"NASMLCN_DATA_DIR": str(root / "data")}, cwd=root)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    after = {k: v for k, v in _snapshot(root).items() if not (cached and k.startswith("data/own"))}
    assert after == before  # no study, no cache entry, nothing in the user's folder
    return lines[0]


@pytest.mark.parametrize(("name", "make", "command", "message"), ROWS, ids=[r[0] for r in ROWS])
def test_bad_own_data_is_refused_in_one_line_and_nothing_is_written(
    tmp_path: Path, name: str, make: Make, command: tuple[str, ...], message: str
) -> None:
    (tmp_path / "data").mkdir()
    path = make(tmp_path)
    out = ("--out", str(tmp_path / "run")) if command[0] == "train" else ()
    line = _refused(tmp_path, *command, "--dataset", str(path), *out, cached=make is _tiny)
    assert re.search(message, line), line


def test_images_too_large_for_the_memory_say_how_much_they_need(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "data").mkdir()
    write_folder(tmp_path / "imgs", classes=2, per_class=5, size=(20, 20))
    monkeypatch.setattr("nasmlcn.hardware.available_memory", lambda device: 6000)
    line = _refused(tmp_path, *PROXY, "--dataset", str(tmp_path / "imgs"))
    assert "the 10 images of" in line
    assert "need 3.91 KiB decoded (1x20x20 each)" in line
    assert "more than half of the 5.86 KiB free here; pass --image-size" in line


def test_image_size_is_for_own_images_and_must_be_a_size(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    line = _refused(tmp_path, *PROXY, "--image-size", "32")
    assert "--image-size resizes your own images" in line
    assert "'fashion-mnist'" in line
    write_folder(tmp_path / "imgs", classes=2, per_class=5)
    line = _refused(tmp_path, *PROXY, "--dataset", str(tmp_path / "imgs"), "--image-size", "big")
    assert "--image-size 'big' is not a size; give N (square) or HxW" in line
    line = _refused(tmp_path, *PROXY, "--dataset", str(tmp_path / "imgs"), "--image-size", "4")
    assert "each side must be 8 to 1024 pixels" in line


def test_a_folder_given_as_a_name_is_pointed_to_as_a_path(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    write_folder(tmp_path / "imgs", classes=2, per_class=5)
    line = _refused(tmp_path, *PROXY, "--dataset", "imgs")
    assert "unknown dataset 'imgs'" in line
    assert "given as a path: ./imgs" in line


def test_a_data_dir_of_ones_own_images_is_not_filled_with_fashion_mnist(tmp_path: Path) -> None:
    write_folder(tmp_path / "imgs", classes=2, per_class=5)
    (tmp_path / "data").mkdir()
    line = _refused(tmp_path, *PROXY, "--data-dir", str(tmp_path / "imgs"))
    assert "--data-dir" in line
    assert "holds files nasmlcn does not know (c0/, c1/)" in line
    assert "Your own images go to --dataset" in line
