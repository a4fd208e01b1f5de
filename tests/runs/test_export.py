"""Every export format, on grey 28x28 and colour 32x32 models, MLCN and CapsNet:
the file loads on its own and gives the model's outputs on real images."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from nasmlcn.data import load_splits
from nasmlcn.errors import ExportError, UnknownNameError
from nasmlcn.models import MLCN
from nasmlcn.runs import EXPORT_FORMATS, classifier, export_run, load_run
from nasmlcn.specs import ArchSpec, MLCNSpec, create_arch
from tests.conftest import run_cli
from tests.runs.conftest import write_run

COLOUR = (3, 32, 32)
MODELS: dict[str, ArchSpec] = {
    "mlcn-grey": MLCNSpec("mlcn1:1x1,mlcn2:1x1"),
    "mlcn-colour": MLCNSpec(  # two narrow lanes of one kind: exported fused
        "2*mlcn2:1x1", routing="classwise", decoder="reduced", input_shape=COLOUR
    ),
    "capsnet-grey": create_arch("capsnet-tiny"),
    "capsnet-colour": replace(create_arch("capsnet-tiny"), input_shape=COLOUR),
}


@pytest.fixture(scope="module")
def real_images(data_dir: Path) -> torch.Tensor:
    """Seven Fashion-MNIST test images in [0, 1] ``(7, 1, 28, 28)``."""
    split = load_splits("fashion-mnist", data_dir, download=False, test_limit=7).test
    images, _ = next(split.batches(7))
    return images


def _inputs(images: torch.Tensor, shape: tuple[int, int, int]) -> torch.Tensor:
    """Real images in ``shape``: grey as they are; colour as 32x32 (padded) with the
    three channels scaled differently."""
    if shape == (1, 28, 28):
        return images
    padded = torch.nn.functional.pad(images, (2, 2, 2, 2))  # (N, 1, 32, 32)
    return torch.cat([padded, 0.8 * padded, padded.flip(-1)], dim=1)  # (N, 3, 32, 32)


# Every format on a grey and a colour model, one MLCN and one CapsNet; TorchScript
# (fast to write) on all four.
CASES = [(fmt, model) for fmt in EXPORT_FORMATS for model in ("mlcn-colour", "capsnet-grey")] + [
    ("torchscript", model) for model in ("mlcn-grey", "capsnet-colour")
]


@pytest.mark.parametrize(("fmt", "model"), CASES)
def test_export_loads_and_matches_the_model_on_real_images(
    tmp_path: Path, real_images: torch.Tensor, fmt: str, model: str
) -> None:
    arch = MODELS[model]
    original = write_run(tmp_path / "run", arch, dataset=None).eval()
    run = load_run(tmp_path / "run", require_dataset=False)
    images = _inputs(real_images, arch.input_shape)
    exported = export_run(run, fmt, images=images)
    assert exported.path == tmp_path / "run" / f"model{EXPORT_FORMATS.get(fmt).suffix}"
    # Loaded on its own (the format's loader: torch.jit.load, ONNX Runtime), on
    # another batch size than the one traced and checked.
    probabilities, capsules = EXPORT_FORMATS.get(fmt).load(exported.path)(images)
    with torch.no_grad():
        out = original(images)  # the model as written, decoder and all
    assert probabilities.shape == (7, arch.num_classes)
    torch.testing.assert_close(probabilities, out.lengths, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(capsules, out.class_capsules, rtol=1e-4, atol=1e-5)
    assert exported.to_dict()["outputs"]["class_capsules"][2] == out.class_capsules.shape[2]
    if isinstance(original, MLCN) and original.fuse_lanes:  # exported fused; = lane by lane
        original.fuse_lanes = False
        with torch.no_grad():
            per_lane = original(images)
        torch.testing.assert_close(probabilities, per_lane.lengths, rtol=1e-4, atol=1e-5)


def test_torchscript_export_runs_without_nasmlcn(tmp_path: Path) -> None:
    arch = MODELS["mlcn-grey"]
    write_run(tmp_path / "run", arch)
    path = export_run(load_run(tmp_path / "run"), "torchscript").path
    code = (
        "import sys, torch; m = torch.jit.load(sys.argv[1]); "
        "p, c = m(torch.zeros(3, 1, 28, 28)); "
        "print(tuple(p.shape), tuple(c.shape), 'nasmlcn' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["(3,", "10)", "(3,", "10,", "2)", "False"]


def test_a_wrong_export_is_refused(tmp_path: Path) -> None:
    write_run(tmp_path / "run", MODELS["mlcn-grey"])
    run = load_run(tmp_path / "run")
    with pytest.raises(UnknownNameError, match="did you mean 'onnx'"):
        export_run(run, "onx")
    (tmp_path / "out" / "model.torchscript.pt").mkdir(parents=True)  # the file a folder
    with pytest.raises(ExportError, match=r"model\.torchscript\.pt' is a folder"):
        export_run(run, "torchscript", tmp_path / "out")
    model = classifier(run.model, run.arch)

    def wrong(images: torch.Tensor) -> tuple[torch.Tensor, ...]:
        probabilities, capsules = model(images)
        return probabilities + 1e-3, capsules

    from nasmlcn.runs._export import compare_outputs

    images = torch.rand(2, 1, 28, 28)
    with pytest.raises(ExportError, match=r"probabilities differ from the model's by up to 0\.001"):
        compare_outputs(model(images), wrong(images))


@pytest.mark.parametrize("name", ["checkpoint.pt", "arch.json", "result.json"])
def test_an_export_over_a_run_s_own_files_is_refused_and_they_stay(
    tmp_path: Path, name: str
) -> None:
    write_run(tmp_path / "run", MODELS["mlcn-grey"])
    write_run(tmp_path / "other", MODELS["mlcn-grey"])
    files = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert (tmp_path / "run" / name) in files
    for target in (tmp_path / "run" / name, tmp_path / "other" / name):
        done = run_cli("export-model", "--run", str(tmp_path / "run"), "--out", str(target))
        assert done.returncode == 2
        assert done.stderr.strip().splitlines() == [
            f"error: export file {str(target)!r} is a run's {name}, which the export would "
            f"overwrite; give another file (default: {tmp_path / 'run'}/model.torchscript.pt)"
        ]
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == files


def test_cli_export_model_json(tmp_path: Path) -> None:
    """Into a folder not made yet, as every command's --out (it used to be refused)."""
    write_run(tmp_path / "run", MODELS["capsnet-grey"], dataset=None)
    target = tmp_path / "exports" / "caps.pt"
    result = run_cli("export-model", "--run", str(tmp_path / "run"), "--out", str(target), "--json")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["path"] == str(target)
    assert target.stat().st_size == printed["bytes"]
    assert printed["input"]["shape"] == ["batch", 1, 28, 28]
    assert printed["checked_images"] == 5
    assert printed["max_abs_difference"] < 1e-5


def test_an_existing_export_file_is_kept_unless_replace_is_given(tmp_path: Path) -> None:
    # export-model wrote over an earlier model file without a word
    write_run(tmp_path / "run", MODELS["capsnet-grey"], dataset=None)
    target = tmp_path / "model.pt"
    command = ("export-model", "--run", str(tmp_path / "run"), "--out", str(target), "-q")
    assert run_cli(*command).returncode == 0
    target.write_bytes(b"an earlier model")
    again = run_cli(*command)
    assert again.returncode == 2
    assert again.stderr.strip() == (
        f"error: export file {str(target)!r} already exists; give another --out, or "
        "--replace to write over it"
    )
    assert target.read_bytes() == b"an earlier model"
    replaced = run_cli(*command, "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert target.read_bytes() != b"an earlier model"


def test_runs_and_its_format_registry_import_without_torch() -> None:
    code = "import sys, nasmlcn.runs; nasmlcn.runs.EXPORT_FORMATS; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_export_model_help_names_every_format() -> None:
    import typer.core
    import typer.main

    from nasmlcn.cli import app

    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    command = group.commands["export-model"]
    (option,) = [p for p in command.params if "--format" in getattr(p, "opts", ())]
    assert all(name in str(getattr(option, "help", "")) for name in EXPORT_FORMATS)


@pytest.mark.parametrize("module", ["onnx", "onnxscript", "onnxruntime"])
def test_onnx_without_its_extra_is_one_line_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    write_run(tmp_path / "run", MODELS["mlcn-grey"])
    before = sorted(p.name for p in (tmp_path / "run").iterdir())
    monkeypatch.setitem(sys.modules, module, None)  # as if it were not installed
    with pytest.raises(ExportError) as info:
        export_run(load_run(tmp_path / "run"), "onnx")
    assert str(info.value) == (
        f"ONNX export needs the Python package(s) {module}: pip install 'nasmlcn[onnx]'"
    )
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before
