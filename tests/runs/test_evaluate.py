"""nasmlcn evaluate: the training code's own test figures, and timed inference."""

from __future__ import annotations

import json
from pathlib import Path

from nasmlcn.runs import InferenceSettings, evaluate_run, load_run
from nasmlcn.specs import create_arch
from tests.conftest import run_cli
from tests.runs.conftest import write_run

FAST = InferenceSettings(batch=4, passes=2, warmup=1)


def test_evaluate_gives_the_test_figures_nasmlcn_train_reported(trained_run: Path) -> None:
    reported = json.loads((trained_run / "result.json").read_text())
    phases: list[str] = []
    result = evaluate_run(
        load_run(trained_run),
        test_limit=reported["test_images"],
        device="cpu",
        inference=FAST,
        on_phase=phases.append,
    )
    assert result.test_images == reported["test_images"] == 120
    assert result.test_accuracy == reported["test_accuracy"]
    assert result.test_loss == reported["test_loss"]  # margin + reconstruction, as trained
    assert result.params == reported["params"]
    assert phases == ["loading data", "testing", "timing inference"]
    timing = result.inference
    assert (timing.batch_size, timing.passes, timing.warmup) == (4, 2, 1)
    assert result.images_per_second == 1 / timing.seconds_per_image


def test_a_capsnet_run_is_evaluated_and_timed_too(tmp_path: Path, data_dir: Path) -> None:
    write_run(tmp_path / "caps", create_arch("capsnet-tiny"))
    result = evaluate_run(
        load_run(tmp_path / "caps"),
        data_dir=data_dir,
        download=False,
        test_limit=30,
        inference=FAST,
    ).to_dict()
    assert result["kind"] == "capsnet"
    assert result["dataset"] == "fashion-mnist"
    assert result["test_images"] == 30
    assert 0 <= result["test_accuracy"] <= 1
    assert result["test_loss"] > 0
    assert result["inference_images_per_second"] > 0


def test_cli_evaluate_json(trained_run: Path) -> None:
    result = run_cli(
        "evaluate",
        "--run",
        str(trained_run),
        "--test-limit",
        "120",
        "--json",
        "--inference-batch",
        "3",
        "--passes",
        "2",
    )
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    reported = json.loads((trained_run / "result.json").read_text())
    assert printed["test_accuracy"] == reported["test_accuracy"]  # the same 120 images
    assert printed["inference"]["batch_size"] == 3
    assert printed["dataset_source"] == "result.json"
