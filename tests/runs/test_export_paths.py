"""What ``export-model`` is given and what it says: ``--out`` naming a folder (it
wrote a file ``dir`` and ``dir.json`` for ``--out dir/``), ``--format`` in any case
(``ONNX`` was refused), and the data of an own-data study's ``best --export`` folder
in ``--json`` (its top-level fields were null while its preprocessing had them)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nasmlcn.data import open_dataset
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import arch_for_dataset
from tests.conftest import run_cli
from tests.data._images import write_folder
from tests.runs.conftest import write_run

GREY = MLCNSpec("mlcn1:1x1,mlcn2:1x1")


def _export(run: Path, *more: str) -> dict[str, object]:
    done = run_cli("export-model", "--run", str(run), "--json", *more)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.mark.parametrize("existing", [False, True])
def test_an_out_folder_gets_the_model_under_its_default_name(
    tmp_path: Path, existing: bool
) -> None:
    # a path ending in "/" (made if missing), or a folder that exists
    write_run(tmp_path / "run", GREY, dataset=None)
    folder = tmp_path / "exports"
    if existing:
        folder.mkdir()
    printed = _export(tmp_path / "run", "--out", str(folder) + ("" if existing else "/"))
    assert printed["path"] == str(folder / "model.torchscript.pt")
    assert printed["preprocessing_path"] == str(folder / "model.torchscript.pt.json")
    assert sorted(p.name for p in folder.iterdir()) == [
        "model.torchscript.pt",
        "model.torchscript.pt.json",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exports", "run"]


@pytest.mark.parametrize(("given", "name"), [("ONNX", "onnx"), ("TorchScript", "torchscript")])
def test_a_format_is_taken_in_any_case(tmp_path: Path, given: str, name: str) -> None:
    write_run(tmp_path / "run", GREY, dataset=None)
    printed = _export(tmp_path / "run", "--format", given)
    assert printed["format"] == name
    suffix = ".onnx" if name == "onnx" else ".torchscript.pt"
    assert printed["path"] == str(tmp_path / "run" / f"model{suffix}")
    assert Path(str(printed["path"])).stat().st_size == printed["bytes"]


def test_an_unknown_format_names_every_accepted_one_before_the_run_is_read(
    tmp_path: Path,
) -> None:
    done = run_cli("export-model", "--run", str(tmp_path / "none"), "--format", "ONX")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: unknown export format 'ONX'; did you mean 'onnx'? accepted, in any case: "
        "onnx, torchscript"
    ]


def test_an_own_data_export_reports_its_data_as_its_preprocessing_does(tmp_path: Path) -> None:
    write_folder(tmp_path / "imgs", classes=3, per_class=6, size=(20, 20))
    (tmp_path / "cache").mkdir()
    data = open_dataset(str(tmp_path / "imgs"), image_size="28x28", data_dir=tmp_path / "cache")
    identity = data.identity
    arch = arch_for_dataset(GREY, data, strict=False)
    write_run(tmp_path / "best", arch, dataset=None, recorded=identity)  # as best --export
    shutil.rmtree(tmp_path / "imgs")  # the record is read, not the data
    printed = _export(tmp_path / "best")
    preprocessing = printed["preprocessing"]
    assert isinstance(preprocessing, dict)
    assert preprocessing["dataset"]["source"] == identity.source == str(tmp_path / "imgs")
    assert (printed["dataset"], printed["image_size"], printed["dataset_source"]) == (
        identity.source,
        preprocessing["image_size"],
        "checkpoint",
    )
    assert printed["image_size"] == "28x28"
