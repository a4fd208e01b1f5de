"""``nasmlcn search --workers-per-gpu K``: what it refuses (one line, exit 2, no study
made) and a pool of K workers on one GPU. No GPU here: ``CUDA_VISIBLE_DEVICES``
names the GPUs, ``nasmlcn.hardware.detect_devices`` their memory."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import nasmlcn.hardware
from nasmlcn.hardware import LocalDevice, format_bytes
from nasmlcn.search import SearchConfig, setup_search
from nasmlcn.search._run.shares import largest_model_memory
from tests.conftest import run_cli

GiB = 2**30
TRAIN = ("--evaluator", "train", "--dataset", "synthetic", "--devices", "1xK80", "--mem", "12GB")


def _refused(result: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a refused command (asserting exit 2 and no traceback)."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def _one_gpu(monkeypatch: pytest.MonkeyPatch, memory: int) -> None:
    local = [
        LocalDevice("cpu", "cpu", 64 * GiB, "cpu", 2),
        LocalDevice("cuda:0", "NVIDIA H100", memory, "H100"),
    ]
    monkeypatch.setattr(nasmlcn.hardware, "detect_devices", lambda *a, **k: local)


def test_k_workers_whose_models_cannot_share_the_gpu_are_refused_before_the_study(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = setup_search(
        SearchConfig(devices="1xK80", mem="12GB", evaluator="train", dataset="synthetic")
    )
    largest = largest_model_memory(setup)
    size = int(2.5 * largest)
    _one_gpu(monkeypatch, size)
    db = tmp_path / "s.db"
    result = run_cli(
        *("search", *TRAIN, "--storage", f"sqlite:///{db}", "--workers-per-gpu", "4"),
        env={"CUDA_VISIBLE_DEVICES": "0"},
    )
    assert _refused(result) == (
        f"error: GPU 0 cannot hold 4 workers: the largest of 64 models drawn from this "
        f"search needs about {format_bytes(largest)} to train, and 4 of them need more than "
        f"the GPU's {format_bytes(size)}; use --workers-per-gpu 2 at most, or lower --flops "
        "or --batch-size"
    )
    assert not db.exists()


@pytest.mark.parametrize(
    ("visible", "options", "message"),
    [
        (
            "0,1",
            ("--workers", "9", "--workers-per-gpu", "4"),
            "error: --workers 9 at --workers-per-gpu 4 need 3 GPUs; this machine has 2 (0,1): "
            "use at most --workers 8",
        ),
        (
            "0,1",
            ("--workers-per-gpu", "2", "--gpus-per-trial", "2"),
            "error: --workers-per-gpu 2 puts several one-GPU workers on each GPU; it cannot "
            "give them --gpus-per-trial 2: leave --gpus-per-trial out (or 1), or leave "
            "--workers-per-gpu out",
        ),
        (
            "",
            ("--workers-per-gpu", "2"),
            "error: --workers-per-gpu 2 puts workers on GPUs, and this machine has none "
            "(CUDA_VISIBLE_DEVICES=''); leave the option out to run on the CPU",
        ),
        (
            "0",
            ("--workers-per-gpu", "2", "--run-on", "cpu"),
            "error: --workers-per-gpu gives each worker one GPU (its cuda:0), so --run-on must "
            "be auto or cuda:0, got 'cpu'",
        ),
    ],
    ids=["too many workers", "several GPUs per trial", "no GPU", "training on the CPU"],
)
def test_what_cannot_share_a_gpu_is_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    visible: str,
    options: tuple[str, ...],
    message: str,
) -> None:
    _one_gpu(monkeypatch, 80 * GiB)
    db = tmp_path / "s.db"
    result = run_cli(
        *("search", *TRAIN, "--storage", f"sqlite:///{db}", *options),
        env={"CUDA_VISIBLE_DEVICES": visible},
    )
    assert _refused(result) == message
    assert not db.exists()


def test_without_workers_k_workers_share_each_gpu(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    common = (
        *("search", "--evaluator", "proxy", "--devices", "2xK80", "--mem", "12GB"),
        *("--epochs", "1", "--trials", "4", "--storage", url, "--study", "p"),
    )
    env = {"CUDA_VISIBLE_DEVICES": "0", "COLUMNS": "200"}  # the proxy uses no GPU
    result = run_cli(*common, "--workers-per-gpu", "2", "--json", "-q", env=env)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [(w["gpus"], w["workers_on_gpu"]) for w in data["workers"]] == [(["0"], 2)] * 2
    assert data["errors"] == []
    # the table's last word: where the workers ran
    shown = run_cli(*common, "--trials", "5", "--workers-per-gpu", "2", "-q", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "2 workers (GPUs 0, up to 2 per GPU)" in shown.stdout
