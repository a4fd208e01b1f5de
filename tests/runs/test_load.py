"""Loading run folders: what train --out and best --export write, and every way a
folder can be wrong (one clear error each)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from nasmlcn.errors import CheckpointError, RunError, SpecError, UnknownNameError
from nasmlcn.runs import load_run
from nasmlcn.specs import CapsNetSpec, MLCNSpec, arch_to_json, create_arch, save_arch
from nasmlcn.training import load_checkpoint
from tests.conftest import run_cli
from tests.runs.conftest import TINY_MLCN, write_run


def test_a_trained_run_loads_with_its_weights_dataset_and_split_seed(trained_run: Path) -> None:
    run = load_run(trained_run)
    payload = load_checkpoint(trained_run / "checkpoint.pt")
    assert run.arch == payload["arch"] == MLCNSpec(TINY_MLCN)
    assert (run.dataset, run.dataset_source) == ("synthetic", "result.json")
    assert run.seed == 2  # the training seed, which is also the split's
    # result.json records the run id of the checkpoint beside it
    result = json.loads((trained_run / "result.json").read_text())
    assert isinstance(payload["run_id"], str)
    assert len(payload["run_id"]) == 32
    assert result["run_id"] == payload["run_id"]
    assert run.epoch == 1
    assert not run.model.training
    state = run.model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in payload["model"].items())


def test_without_result_json_the_dataset_comes_from_the_checkpoint(
    trained_run: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    shutil.copytree(trained_run, folder)
    (folder / "result.json").unlink()
    run = load_run(folder)
    assert (run.dataset, run.dataset_source) == ("synthetic", "checkpoint")


def test_dataset_option_overrides_the_runs_and_is_checked(tmp_path: Path) -> None:
    write_run(tmp_path / "run", MLCNSpec(TINY_MLCN), dataset="fashion-mnist")
    assert load_run(tmp_path / "run", dataset="synthetic").dataset_source == "--dataset"
    with pytest.raises(UnknownNameError, match="fashion-mnst"):
        load_run(tmp_path / "run", dataset="fashion-mnst")
    with pytest.raises(SpecError, match=r"--dataset 'cifar10' does not fit run .*3x32x32"):
        load_run(tmp_path / "run", dataset="cifar10")


def test_an_exported_trial_needs_dataset_unless_none_is_asked_for(tmp_path: Path) -> None:
    folder = tmp_path / "best"
    write_run(folder, create_arch("capsnet-tiny"), dataset=None)  # as best --export writes
    with pytest.raises(RunError, match=r"does not say which dataset .* give the dataset \(dataset"):
        load_run(folder)
    run = load_run(folder, require_dataset=False)
    assert run.dataset is None
    assert isinstance(run.arch, CapsNetSpec)
    assert load_run(folder, dataset="mnist").dataset == "mnist"


def _refusals(tmp_path: Path) -> list[tuple[Path, type[Exception], str]]:
    spec = MLCNSpec(TINY_MLCN)
    missing, empty, foreign, mixed, broken_result, other_run, other_arch = (
        tmp_path / n
        for n in ("missing", "empty", "foreign", "mixed", "broken", "other-run", "other-arch")
    )
    empty.mkdir()
    foreign.mkdir()
    (foreign / "checkpoint.pt").write_bytes(b"not a torch file")
    write_run(mixed, spec)
    save_arch(MLCNSpec("mlcn1:2x1"), mixed / "arch.json")
    # the result.json of another run of the same model (run ids differ)
    write_run(other_run, spec)
    (other_run / "result.json").write_text(
        json.dumps({"dataset": "synthetic", "arch": spec.to_dict(), "run_id": "f" * 32})
    )
    # a result.json written before run ids, of another model
    write_run(other_arch, spec)
    (other_arch / "result.json").write_text(
        json.dumps({"dataset": "synthetic", "arch": MLCNSpec("mlcn1:2x1").to_dict()})
    )
    write_run(broken_result, spec)
    (broken_result / "result.json").write_text("{oops")
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    return [
        (missing, RunError, "does not exist"),
        (a_file, RunError, "is a file; give the run folder that holds checkpoint.pt"),
        (empty, RunError, "holds no checkpoint.pt; give a folder written by nasmlcn train"),
        (foreign, CheckpointError, "is not a nasmlcn checkpoint"),
        (
            mixed,
            RunError,
            "mixes two models: arch.json describes mlcn1:2x1 but checkpoint.pt holds "
            f"{TINY_MLCN}; remove the stale arch.json, or export or train into a new folder",
        ),
        (broken_result, RunError, "is not valid JSON"),
        (other_run, RunError, "mixes two models: result.json reports run ffffffff but "),
        (
            other_arch,
            RunError,
            f"result.json reports mlcn1:2x1 but checkpoint.pt holds {TINY_MLCN}; remove the "
            "stale result.json",
        ),
    ]


def test_every_wrong_folder_gets_its_own_error(tmp_path: Path) -> None:
    for folder, error, message in _refusals(tmp_path):
        with pytest.raises(error, match=re.escape(message)):
            load_run(folder)


def test_a_folder_from_before_run_ids_still_loads(tmp_path: Path) -> None:
    """Checkpoints and result.json files written before run ids (None) are
    compared by architecture only."""
    spec = MLCNSpec(TINY_MLCN)
    folder = tmp_path / "old"
    write_run(folder, spec)
    payload = torch.load(folder / "checkpoint.pt", weights_only=True)
    del payload["run_id"]
    torch.save(payload, folder / "checkpoint.pt")
    (folder / "result.json").write_text(
        json.dumps({"dataset": "synthetic", "arch": spec.to_dict()})
    )
    assert load_run(folder).arch == spec
    # a run id on one side only is not a mismatch either
    (folder / "result.json").write_text(
        json.dumps({"dataset": "synthetic", "arch": spec.to_dict(), "run_id": "a" * 32})
    )
    assert load_run(folder).dataset == "synthetic"


def test_weights_of_another_architecture_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    write_run(folder, MLCNSpec(TINY_MLCN))
    payload = torch.load(folder / "checkpoint.pt", weights_only=True)
    payload["arch"] = arch_to_json(MLCNSpec("mlcn1:2x1,mlcn2:1x1"))
    torch.save(payload, folder / "checkpoint.pt")
    (folder / "arch.json").unlink()
    with pytest.raises(CheckpointError, match="do not fit its architecture mlcn1:2x1,mlcn2:1x1"):
        load_run(folder)


def test_the_cli_refuses_a_wrong_folder_in_one_line(tmp_path: Path) -> None:
    for command in ("evaluate", "export-model"):
        result = run_cli(command, "--run", str(tmp_path / "nope"))
        _one_line(result, "run folder")
    write_run(tmp_path / "run", MLCNSpec(TINY_MLCN))
    result = run_cli("evaluate", "--run", str(tmp_path / "run"), "--dataset", "fashion-mnst")
    _one_line(result, "did you mean 'fashion-mnist'")


def _one_line(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert expected in lines[0], lines[0]


def test_arch_json_alone_is_not_required(tmp_path: Path) -> None:
    write_run(tmp_path / "run", MLCNSpec(TINY_MLCN))
    (tmp_path / "run" / "arch.json").unlink()
    assert load_run(tmp_path / "run").arch == MLCNSpec(TINY_MLCN)
