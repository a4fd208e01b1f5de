"""A file a user keeps is never replaced by a command that only meant to write beside
it (docs/what-deletes.md): an existing ``best --export-arch`` file, an export's
``FILE.json``, a calibration, a lane removal's report, a ``train --out`` folder's
``result.json`` or another model's ``arch.json``. Each is refused in one line that
names the file and the way on (``--replace``, or another folder), exit 2, with the
file byte for byte as it was; ``--replace`` then writes over it.

Each refusal below failed on the code before it: the command ran and replaced the
file in silence.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from nasmlcn.specs import MLCNSpec, load_arch, save_arch
from tests.conftest import run_cli
from tests.runs.conftest import write_run

MINE = '{"mine": true}\n'
"""What the user kept (not what any command writes)."""
LANES = "mlcn1:1x1,mlcn2:1x1"
TINY_TRAIN = (
    *("train", "--dataset", "synthetic", "--epochs", "1", "--train-limit", "40"),
    *("--val-limit", "20", "--test-limit", "20", "--batch-size", "20", "--run-on", "cpu"),
    "-q",
)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A proxy study's storage (its trials store their architectures)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('study') / 's.db'}"
    result = run_cli(
        *("search", "--evaluator", "proxy", "--devices", "2xK80", "--epochs", "2"),
        *("--study", "p", "--trials", "2", "--storage", url, "-q"),
    )
    assert result.returncode == 0, result.stderr
    return url


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-lane run folder on synthetic data (as train --out lays it out)."""
    folder = tmp_path_factory.mktemp("run") / "run"
    write_run(folder, MLCNSpec.from_lanes(LANES), dataset="synthetic")
    return folder


@dataclass(frozen=True)
class Kept:
    """A file the user keeps at ``path`` and a command that would write over it."""

    path: Path
    args: tuple[str, ...]
    says: str


def _refused(kept: Kept) -> None:
    kept.path.parent.mkdir(parents=True, exist_ok=True)
    kept.path.write_text(MINE)
    result = run_cli(*kept.args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ")
    assert kept.says in line
    assert "Traceback" not in result.stderr
    assert kept.path.read_text() == MINE


def test_best_export_arch_keeps_an_existing_file(study: str, tmp_path: Path) -> None:
    path = tmp_path / "fast.json"
    args = ("best", "--storage", study, "--export-arch", str(path))
    _refused(Kept(path, args, f"--export-arch {str(path)!r} already exists"))
    assert "--replace" in run_cli(*args).stderr
    result = run_cli(*args, "--replace")
    assert result.returncode == 0, result.stderr
    assert isinstance(load_arch(path), MLCNSpec)
    alone = run_cli("best", "--storage", study, "--replace")
    assert alone.returncode == 2
    assert "give --export-arch FILE" in alone.stderr


def test_export_model_keeps_an_existing_file_json(run: Path, tmp_path: Path) -> None:
    # the model file is new, its FILE.json beside it is the user's
    path = tmp_path / "model.pt.json"
    args = ("export-model", "--run", str(run), "--out", str(tmp_path / "model.pt"), "-q")
    _refused(Kept(path, args, f"export file {str(path)!r} already exists"))
    assert not (tmp_path / "model.pt").exists()
    result = run_cli(*args, "--replace")
    assert result.returncode == 0, result.stderr
    assert json.loads(path.read_text())["input_shape"] == [1, 28, 28]


def test_calibrate_keeps_an_existing_calibration(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    given = ("calibrate", "--quick", "--lanes", "3", "--run-on", "cpu", "--out", str(path))
    _refused(Kept(path, given, f"calibration file {str(path)!r} already exists"))
    default = tmp_path / "default.json"  # the file plans read, where --out is not given
    default.write_text(MINE)
    result = run_cli("calibrate", "--lanes", "20", env={"NASMLCN_CALIBRATION": str(default)})
    assert result.returncode == 2
    assert "--replace to write over it" in result.stderr
    assert default.read_text() == MINE


def test_remove_lanes_keeps_an_earlier_report(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "pruned"
    args = (
        *("remove-lanes", "--run", str(run), "--out", str(out), "--val-limit", "20"),
        *("--passes", "1", "--inference-batch", "10", "--run-on", "cpu", "--no-png", "-q"),
    )
    _refused(Kept(out / "prune.json", args, "already holds a lane removal's report"))
    (out / "lane_pruning.png").write_text(MINE)  # an earlier report's picture
    result = run_cli(*args, "--replace")
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "prune.json").read_text())["images"] == 20
    assert not (out / "lane_pruning.png").exists()  # it was not this report's


def test_train_keeps_a_report_whose_checkpoint_is_gone(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = (*TINY_TRAIN, "--lanes", LANES, "--out", str(out))
    _refused(Kept(out / "result.json", args, "already holds a run's result.json"))
    assert sorted(p.name for p in out.iterdir()) == ["result.json"]


def test_train_keeps_another_models_arch_json(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    save_arch(MLCNSpec.from_lanes("mlcn1:1x1"), out / "arch.json")
    written = (out / "arch.json").read_text()
    result = run_cli(*TINY_TRAIN, "--lanes", LANES, "--out", str(out))
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"describes mlcn1:1x1, not {LANES}" in line
    assert f"--arch {str(out / 'arch.json')!r}" in line
    assert (out / "arch.json").read_text() == written
    assert sorted(p.name for p in out.iterdir()) == ["arch.json"]
    # the model it describes trains there, as best --export-arch's file is meant to
    result = run_cli(*TINY_TRAIN, "--arch", str(out / "arch.json"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "checkpoint.pt").is_file()
