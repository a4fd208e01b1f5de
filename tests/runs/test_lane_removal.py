"""Lane pruning: the pruned models are the full model without those lanes, the
accuracies are those of the pruned models, and a kept model is a run folder."""

from __future__ import annotations

import json
import struct
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from nasmlcn.data import load_splits
from nasmlcn.errors import CheckpointError, SpecError
from nasmlcn.models import MLCN, build_model
from nasmlcn.runs import (
    InferenceSettings,
    evaluate_run,
    load_run,
    remove_lanes,
    save_without_lanes,
    write_lane_removal_figure,
)
from nasmlcn.runs._lane_removal import (
    lane_importance,
    removal_order,
    select_lanes,
    subset_accuracy,
)
from nasmlcn.specs import MLCNSpec, create_arch
from nasmlcn.training import TrainConfig, TrainJob, evaluate, train
from tests.conftest import run_cli
from tests.runs.conftest import html_figure, write_run

FAST = InferenceSettings(batch=4, passes=2, warmup=1)


@pytest.fixture(scope="module")
def images(data_dir: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """Twelve Fashion-MNIST test images ``(12, 1, 28, 28)`` and their labels."""
    split = load_splits("fashion-mnist", data_dir, download=False, test_limit=12).test
    return next(split.batches(12))


@pytest.mark.parametrize("decoder", ["full", "reduced"])
def test_a_pruned_model_is_the_full_model_without_those_lanes(
    images: tuple[torch.Tensor, torch.Tensor], decoder: str
) -> None:
    torch.manual_seed(0)
    full = build_model(MLCNSpec("mlcn1:1x1,mlcn2:1x1,mlcn1:2x1,mlcn2:1x2", decoder=decoder))
    keep = [3, 1]
    pruned = select_lanes(full, keep).eval()
    full.eval()
    x, y = images
    assert pruned.spec.describe() == "mlcn2:1x2,mlcn2:1x1"
    with torch.no_grad():
        whole = full(x, y)
        cut = pruned(x, y)
        # the full model with the removed lanes zeroed: what the decoder then sees
        zeroed = whole.class_capsules.clone()
        zeroed[:, :, [0, 2]] = 0
        assert full.capsule_head.decoder is not None
        expected_reconstruction = full.capsule_head.decoder(zeroed, y)
    torch.testing.assert_close(cut.class_capsules, whole.class_capsules[:, :, keep])
    torch.testing.assert_close(
        cut.lengths, torch.linalg.vector_norm(whole.class_capsules[:, :, keep], dim=-1)
    )
    assert cut.reconstruction is not None
    torch.testing.assert_close(cut.reconstruction, expected_reconstruction)
    assert sum(p.numel() for p in pruned.parameters()) < sum(p.numel() for p in full.parameters())


def test_importance_is_the_accuracy_lost_without_each_lane() -> None:
    # 4 images, 2 classes, 3 lanes. Lane 0 alone is always right; lane 1 points at
    # the wrong class for images 0 and 1; lane 2 is zero (adds nothing).
    right = torch.tensor([0, 1, 0, 1])
    capsules = torch.zeros(4, 2, 3)
    capsules[torch.arange(4), right, 0] = 1.0
    capsules[0, 1, 1] = capsules[1, 0, 1] = 0.8
    capsules[2, 0, 1] = capsules[3, 1, 1] = 0.1
    assert subset_accuracy(capsules, right, [0, 1, 2]) == 1.0
    assert subset_accuracy(capsules, right, [1, 2]) == 0.5
    importance = lane_importance(capsules, right)
    assert importance == [0.5, 0.0, 0.0]
    assert removal_order(importance) == [1, 2, 0]  # ties: the lower lane first
    assert removal_order([0.1, -0.05, 0.0]) == [1, 2, 0]  # a harmful lane goes first


@pytest.fixture(scope="module")
def three_lane_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("prune") / "run"
    train(
        TrainJob(
            MLCNSpec("mlcn1:1x1,mlcn2:1x1,mlcn1:1x1", lane_dropout=0.1),
            dataset="synthetic",
            config=TrainConfig(epochs=1, seed=4, batch_size=50),
            train_limit=200,
            val_limit=150,
            test_limit=50,
            out_dir=str(out),
        )
    )
    return out


def test_every_steps_accuracy_is_its_pruned_models_own(three_lane_run: Path) -> None:
    run = load_run(three_lane_run)
    calls: list[tuple[str, int, int]] = []
    report = remove_lanes(
        run, val_limit=150, device="cpu", inference=FAST, progress=lambda *a: calls.append(a)
    )
    steps = report.steps
    assert [len(s.removed_lanes) for s in steps] == [0, 1, 2]
    assert steps[0].removed is None
    assert steps[0].speedup == 1.0
    assert steps[0].full_images_per_second == steps[0].inference_images_per_second
    for step in steps[1:]:  # over the full model timed next to it
        assert step.speedup == step.inference_images_per_second / step.full_images_per_second
    assert list(report.order[:2]) == [s.removed for s in steps[1:]]
    assert sorted(report.order) == [0, 1, 2]
    # step 0 is the trained model: its accuracy is the one training validated
    history = torch.load(three_lane_run / "checkpoint.pt", weights_only=True)["history"]
    assert steps[0].accuracy == json.loads(history)[-1]["val_accuracy"]
    splits = load_splits("synthetic", None, seed=run.seed, train_limit=1, val_limit=150)
    assert isinstance(run.model, MLCN)
    for step in steps:
        kept = [i for i in range(3) if i not in step.removed_lanes]
        pruned = select_lanes(run.model, kept)
        assert pruned.spec.num_lanes == 3 - len(step.removed_lanes)
        assert step.params == sum(p.numel() for p in pruned.parameters())
        _, accuracy = evaluate(pruned, splits.val, device="cpu")
        assert accuracy == step.accuracy
    assert calls[-1] == ("timing", 3, 3)
    assert ("lane outputs", 1, 1) in calls


def test_a_kept_model_is_a_run_that_evaluates_and_trains_on(
    three_lane_run: Path, tmp_path: Path
) -> None:
    run = load_run(three_lane_run)
    report = remove_lanes(run, val_limit=150, device="cpu", inference=FAST)
    out = tmp_path / "kept"
    save_without_lanes(report, 2, out)
    kept = load_run(out)
    assert isinstance(kept.arch, MLCNSpec)
    assert kept.arch.num_lanes == 2
    assert (kept.dataset, kept.dataset_source, kept.seed) == ("synthetic", "checkpoint", 4)
    evaluated = evaluate_run(kept, test_limit=50, inference=FAST)
    assert evaluated.test_images == 50
    with pytest.raises(
        CheckpointError, match=r"already holds a model \(checkpoint.pt, arch.json\)"
    ):
        save_without_lanes(report, 2, out)
    # train --arch OUT/arch.json --out OUT --resume: fine-tunes from epoch 1
    report_after = train(
        TrainJob(
            kept.arch,
            dataset="synthetic",
            config=TrainConfig(epochs=1, seed=4, batch_size=50),
            train_limit=100,
            val_limit=50,
            test_limit=50,
            out_dir=str(out),
            resume=True,
        )
    )
    assert [h.epoch for h in report_after.history] == [1]


def test_what_cannot_be_pruned_is_refused(tmp_path: Path, three_lane_run: Path) -> None:
    write_run(tmp_path / "caps", create_arch("capsnet-tiny"))
    with pytest.raises(SpecError, match="is a capsnet model; lane pruning needs an MLCN"):
        remove_lanes(load_run(tmp_path / "caps"))
    write_run(tmp_path / "one", MLCNSpec("mlcn1:1x1"))
    with pytest.raises(SpecError, match="has a single lane"):
        remove_lanes(load_run(tmp_path / "one"))
    result = run_cli("remove-lanes", "--run", str(three_lane_run), "--keep", "4")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: --keep 4: the run has 3 lanes; keep 1 to 3"


def test_cli_prune_json_figure_and_kept_model(three_lane_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "pruned"
    result = run_cli(
        "remove-lanes",
        "--run",
        str(three_lane_run),
        "--val-limit",
        "150",
        "--keep",
        "1",
        "--out",
        str(out),
        "--inference-batch",
        "4",
        "--passes",
        "2",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    steps = printed["steps"]
    assert len(steps) == 3
    assert {"removed_lanes", "removed", "accuracy", "inference_images_per_second", "speedup"} <= (
        steps[0].keys()
    )
    assert steps[0]["removed_lanes"] == []
    assert json.loads((out / "prune.json").read_text())["steps"] == steps
    png = (out / "lane_pruning.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24])[0] == 1000  # the report's figure width
    assert "Plotly.newPlot" in (out / "lane_pruning.html").read_text()
    kept = load_run(out)
    most_important = printed["order"][-1]
    assert printed["importance"][most_important] == max(printed["importance"])
    original = load_run(three_lane_run).arch
    assert isinstance(original, MLCNSpec)
    assert kept.arch == replace(original, lanes=(original.lanes[most_important],))


def test_figure_draws_one_curve_per_run_in_each_panel(three_lane_run: Path, tmp_path: Path) -> None:
    report = remove_lanes(load_run(three_lane_run), val_limit=50, device="cpu", inference=FAST)
    (html,) = write_lane_removal_figure({"a": report, "b": report}, tmp_path, png=False)
    fig = html_figure(html)
    assert [t.name for t in fig.data] == ["a", "a", "b", "b"]
    assert list(fig.data[1].y) == [s.speedup for s in report.steps]
    assert html.name == "lane_pruning.html"
