"""3x32x32 colour inputs end to end: per-channel normalisation in training,
validation and test (recorded with the run), and ``nasmlcn train``, ``search``,
``plan`` and ``data`` on SVHN and CIFAR-10 files generated in their formats."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
import pytest
import torch

import nasmlcn.cli
from nasmlcn.data import DATASETS, DataSplits, Normalization, RawData, make_splits
from nasmlcn.models import CapsuleLoss, build_model, count_parameters
from nasmlcn.search import summarize
from nasmlcn.specs import MLCNSpec, save_arch
from nasmlcn.training import (
    InMemoryJob,
    RunOptions,
    TrainConfig,
    _step,
    evaluate,
    load_checkpoint,
    train,
)
from tests.conftest import run_cli
from tests.data._files import trust_generated_files, write_cifar10, write_svhn

COLOUR = (3, 32, 32)


def _declared(dataset: str) -> Normalization:
    """The per-channel normalisation ``dataset`` declares (its registry entry's)."""
    normalization = DATASETS.get(dataset).normalization
    assert normalization is not None
    return normalization


CIFAR10_NORMALIZATION = _declared("cifar10")
SVHN_NORMALIZATION = _declared("svhn")


def _colour_splits() -> tuple[MLCNSpec, DataSplits]:
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (50, *COLOUR), generator=g, dtype=torch.uint8)
    labels = torch.arange(50) % 10
    raw = RawData(images[:40], labels[:40], images[40:], labels[40:])
    splits = make_splits(raw, val_fraction=0.25, normalization=CIFAR10_NORMALIZATION)
    spec = MLCNSpec.from_lanes("mlcn2:1x1", input_shape=COLOUR, num_classes=10)
    return spec, splits


def _watched(inputs: list[torch.Tensor]) -> Callable[[torch.nn.Module], torch.nn.Module]:
    """An ``InMemoryJob``'s ``place``: the model as built, each input it is given
    appended to ``inputs``."""

    def place(model: torch.nn.Module) -> torch.nn.Module:
        model.register_forward_pre_hook(lambda _m, args: inputs.append(args[0].detach().clone()))
        return model

    return place


def test_models_get_normalised_images_and_reconstruct_the_plain_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, splits = _colour_splits()
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []  # (model input, reconstruction target)
    inputs: list[torch.Tensor] = []
    loss = _step.capsule_loss

    def spy(
        lengths: torch.Tensor,
        reconstruction: torch.Tensor | None,
        images: torch.Tensor,
        labels: torch.Tensor,
        weight: float,
    ) -> CapsuleLoss:
        seen.append((inputs[-1], images.detach().clone()))
        return loss(lengths, reconstruction, images, labels, weight)

    monkeypatch.setattr(_step, "capsule_loss", spy)  # every step computes its loss there
    config = TrainConfig(epochs=1, batch_size=10, eval_batch_size=10, augment="crop-flip")
    checkpoint = tmp_path / "checkpoint.pt"
    options = RunOptions(checkpoint_path=checkpoint, test=False)
    model = train(InMemoryJob(spec, splits, config, options, place=_watched(inputs))).module
    evaluate(model, splits.test, batch_size=10)
    assert len(seen) == 3 + 1 + 1  # 3 training, 1 validation, 1 test batch
    for model_input, target in seen:
        assert float(target.min()) >= 0.0  # the decoder's (sigmoid) target stays in [0, 1]
        assert float(target.max()) <= 1.0
        expected = CIFAR10_NORMALIZATION.apply(target)
        assert torch.allclose(model_input, expected, atol=1e-6)
        assert float(model_input.min()) < -1.0  # well outside [0, 1]: normalised
    # the validation and test batches are the plain images, in order
    assert torch.equal(seen[3][1], splits.val.images.float() / 255)
    assert torch.equal(seen[4][1], splits.test.images.float() / 255)
    recorded = load_checkpoint(checkpoint)["train_config"]
    assert recorded["normalization"] == CIFAR10_NORMALIZATION.to_dict()
    assert recorded["augment"] == "crop-flip"


def test_grey_sets_are_trained_on_plain_images_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    from nasmlcn.data import load_splits

    splits = load_splits("synthetic", train_limit=20, val_limit=10)
    spec = MLCNSpec.from_lanes("mlcn2:1x1")
    inputs: list[torch.Tensor] = []
    config = TrainConfig(epochs=1, batch_size=10, eval_batch_size=10)
    train(InMemoryJob(spec, splits, config, RunOptions(test=False), place=_watched(inputs)))
    assert torch.equal(inputs[-1], splits.val.images.float() / 255)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    """Runs the CLI in this process (so that the MD5 check can be patched) with --json."""
    capsys.readouterr()
    code = nasmlcn.cli.main([*args, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result = json.loads(captured.out)
    assert isinstance(result, dict)
    return result


def test_train_on_svhn_files_through_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_svhn(tmp_path / "data" / "SVHN", 60, 20)
    trust_generated_files(monkeypatch)
    out = tmp_path / "run"
    result = _cli(
        capsys,
        *("train", "--dataset", "svhn", "--data-dir", str(tmp_path / "data"), "--no-download"),
        *("--lanes", "mlcn1:1x1,mlcn2:1x1", "--epochs", "1", "--batch-size", "18"),
        *("--augment", "crop", "--run-on", "cpu", "--out", str(out), "-q"),
    )
    assert result["dataset"] == "svhn"
    assert result["arch"]["input_shape"] == [3, 32, 32]
    assert result["test_images"] == 20
    assert result["train_images"] == 54
    assert result["normalization"] == SVHN_NORMALIZATION.to_dict()
    assert json.loads((out / "result.json").read_text())["normalization"] == (
        SVHN_NORMALIZATION.to_dict()
    )
    payload = load_checkpoint(out / "checkpoint.pt")
    assert payload["arch"].input_shape == COLOUR
    assert payload["train_config"]["normalization"] == SVHN_NORMALIZATION.to_dict()
    assert payload["train_config"]["augment"] == "crop"


# CIFAR-10 goes the same way as SVHN (about 10 s each on a CPU): only SVHN by default.
@pytest.mark.parametrize("dataset", ["svhn", pytest.param("cifar10", marks=pytest.mark.slow)])
def test_search_trains_colour_candidates(
    dataset: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "data"
    if dataset == "svhn":
        write_svhn(data / "SVHN", 40, 10)
    else:
        write_cifar10(data / "cifar-10-batches-py", 8)
    trust_generated_files(monkeypatch)
    monkeypatch.chdir(tmp_path)
    result = _cli(
        capsys,
        *("search", "--dataset", dataset, "--data-dir", str(data), "--evaluator", "train"),
        *("--devices", "1xK80", "--trials", "1", "--epochs", "1", "--batch-size", "10"),
        *("--train-limit", "10", "--val-limit", "5", "--run-on", "cpu", "--no-prune"),
        *("--storage", f"sqlite:///{tmp_path / 'study.db'}", "-q"),
    )
    assert result["config"]["dataset"] == dataset
    assert result["completed"] == 1
    study = optuna.load_study(study_name=result["study"], storage=result["storage"])
    # 10 random images teach nothing (the trial may be marked not learning and be
    # no best trial): read the one trial itself
    best = summarize(study.trials[0], result["metric_names"]).to_dict()
    assert len(best["val_accuracy_per_epoch"]) == 1
    assert "measured_inference_latency_s" in best["measured"]
    # the candidate was built and costed for 3x32x32 input
    spec = MLCNSpec.from_lanes(best["lanes"], input_shape=COLOUR, num_classes=10)
    assert best["predicted"]["params"] == count_parameters(build_model(spec))
    assert study.trials[0].user_attrs["arch"]["input_shape"] == [3, 32, 32]


def test_plan_costs_a_colour_architecture_from_its_own_layers(tmp_path: Path) -> None:
    spec = MLCNSpec.from_lanes("mlcn1:1x1,mlcn2:1x1", input_shape=COLOUR, num_classes=10)
    save_arch(spec, tmp_path / "arch.json")
    result = run_cli("plan", "--devices", "2xK80", "--arch", str(tmp_path / "arch.json"), "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["arch"]["input_shape"] == [3, 32, 32]
    params = sum(lane["params"] for lane in plan["lane_details"]) + plan["head"]["params"]
    assert params == count_parameters(build_model(spec))


def test_data_list_and_prepare_know_svhn(tmp_path: Path) -> None:
    listed = run_cli("data", "list", "--json")
    assert listed.returncode == 0
    rows = {d["name"]: d for d in json.loads(listed.stdout)}
    assert rows["svhn"]["input_shape"] == [3, 32, 32]
    assert rows["svhn"]["normalization"] == SVHN_NORMALIZATION.to_dict()
    assert rows["fashion-mnist"]["normalization"] is None
    missing = run_cli("data", "prepare", "svhn", "--data-dir", str(tmp_path), "--no-download")
    assert missing.returncode != 0
    lines = missing.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "SVHN is not in" in lines[0]
    assert "Traceback" not in missing.stderr
    write_svhn(tmp_path / "SVHN", 10, 10)
    found = run_cli("data", "prepare", "svhn", "--data-dir", str(tmp_path), "--no-download")
    assert found.returncode == 0, found.stderr
    assert "SVHN: found in" in found.stdout
    assert DATASETS.get("svhn").prepare(tmp_path, False).startswith("SVHN: found in")


def test_a_data_parallel_shard_keeps_the_normalisation() -> None:
    from nasmlcn.parallel import ShardedSplit

    _, splits = _colour_splits()
    shard = ShardedSplit.of(splits.train, 1, 2)
    assert shard.normalization == CIFAR10_NORMALIZATION
    x, _ = next(shard.batches(10))
    assert torch.equal(shard.inputs(x), CIFAR10_NORMALIZATION.apply(x))
