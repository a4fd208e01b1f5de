"""Run folders written whole (``write_run_folder``) and checked on reading
(``check_run_files``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nasmlcn.errors import CheckpointError, RunError
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import (
    ARCH_NAME,
    CHECKPOINT_NAME,
    RESULT_NAME,
    check_run_files,
    write_run_folder,
)

SPEC = MLCNSpec("mlcn1:1x1,mlcn2:1x1")


def _write(folder: Path) -> None:
    (folder / CHECKPOINT_NAME).write_bytes(b"weights")
    (folder / ARCH_NAME).write_text("{}")


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("state", ["missing", "empty", "other files"])
def test_a_model_is_written_whole_into_a_folder_without_one(tmp_path: Path, state: str) -> None:
    folder = tmp_path / "out"
    if state != "missing":
        folder.mkdir()
    if state == "other files":
        (folder / "prune.json").write_text("{}")  # what prune writes before its model
    write_run_folder(folder, _write, option="--export")
    expected = {ARCH_NAME: b"{}", CHECKPOINT_NAME: b"weights"}
    if state == "other files":
        expected["prune.json"] = b"{}"
    assert _files(folder) == expected
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary folder left
    assert oct(folder.stat().st_mode & 0o777) != oct(0o700)  # not mkdtemp's private mode


def test_a_folder_holding_a_model_is_refused_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / RESULT_NAME).write_text('{"dataset": "synthetic"}')
    before = _files(folder)
    with pytest.raises(CheckpointError, match=r"--export '.*run' already holds a model \(result"):
        write_run_folder(folder, _write, option="--export")
    assert _files(folder) == before
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    folder = tmp_path / "out"

    def fail_half_way(target: Path) -> None:
        (target / CHECKPOINT_NAME).write_bytes(b"weights")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_run_folder(folder, fail_half_way, option="--export")
    assert list(tmp_path.iterdir()) == []


def test_a_file_is_not_a_folder(tmp_path: Path) -> None:
    target = tmp_path / "model.pt"
    target.write_bytes(b"x")
    with pytest.raises(CheckpointError, match="is a file, not a folder; choose another --export"):
        write_run_folder(target, _write, option="--export")
    assert target.read_bytes() == b"x"


def _checkpoint(run_id: str | None) -> dict[str, object]:
    return {"arch": SPEC, "run_id": run_id}


def test_the_files_of_one_run_pass_and_those_of_two_do_not(tmp_path: Path) -> None:
    (tmp_path / RESULT_NAME).write_text(
        json.dumps({"dataset": "synthetic", "arch": SPEC.to_dict(), "run_id": "a" * 32})
    )
    assert check_run_files(tmp_path, _checkpoint("a" * 32)) == {
        "dataset": "synthetic",
        "arch": SPEC.to_dict(),
        "run_id": "a" * 32,
    }
    with pytest.raises(
        RunError, match=r"result\.json reports run aaaaaaaa but checkpoint\.pt is of"
    ):
        check_run_files(tmp_path, _checkpoint("b" * 32))
    # a checkpoint from before run ids: compared by architecture, which agrees
    assert check_run_files(tmp_path, _checkpoint(None)) is not None
    other = {"arch": MLCNSpec("mlcn1:2x1"), "run_id": None}
    with pytest.raises(RunError, match=r"result\.json reports mlcn1:1x1,mlcn2:1x1 but"):
        check_run_files(tmp_path, other)
