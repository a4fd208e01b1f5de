"""``benchmarks/thesis_table.py``: its rows beside the thesis's, its results file (a rerun
trains nothing, a killed row resumes from its checkpoint) and its overrides."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks._scripts import load_script, run_json
from tests.conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "thesis_table.py"
ROWS = ["capsnet", "mlcn1-2x4", "mlcn1-8x4", "mlcn2-2x4", "mlcn2-8x4"]


@pytest.fixture
def script(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The script as a module, run in this process (no torch import per run)."""
    return load_script("thesis_table", data_dir, monkeypatch)


def test_one_row_beside_the_thesis_and_a_rerun_that_trains_nothing(
    script: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args: tuple[str, ...] = (
        "--quick",
        "--rows",
        "mlcn2-2x4",
        "--results",
        str(tmp_path / "r.json"),
    )
    args += ("--train", "augment=shift routing=classwise")
    first, stderr = run_json(script, capsys, *args)
    assert first["trained"] == 1
    assert first["from_results"] == 0
    assert first["settings"]["test_images"] == 500
    assert first["settings"]["train_images"] == 500
    (row,) = first["rows"]
    assert row["row"] == "mlcn2-2x4"
    assert row["model"] == "2*mlcn2:4x1"
    assert row["epochs"] == 1
    assert row["overrides"] == {"augment": "shift", "routing": "classwise"}
    assert row["train_config"]["augment"] == "shift"
    assert row["arch"]["routing"] == "classwise"
    assert 0.0 <= row["test_accuracy"] <= 1.0
    assert row["params"] > 0
    # Tested after every epoch too: after the last one, that is the figure itself.
    assert row["test_accuracy_per_epoch"] == [row["test_accuracy"]]
    assert row["test_accuracy_at_best_val"] == row["test_accuracy"]
    assert (row["max_test_accuracy"], row["max_test_epoch"]) == (row["test_accuracy"], 1)
    assert row["thesis"] == {
        "model": "Mlcn2, 2 lanes, width 4",
        "params": 3_655_376,
        "seconds_per_epoch": 20,
        "test_accuracy": 0.9101,
        "speed_ratio_to_capsnet": 11.0,
    }
    assert row["speed_ratio_to_capsnet"] is None  # no CapsNet run at these settings yet
    assert "[mlcn2-2x4] epoch 1/1" in stderr
    (key,) = json.loads((tmp_path / "r.json").read_text())["runs"]
    assert json.loads(key)["params"] == row["params"]
    # Every setting as used is in the key, defaults too: a changed default trains anew.
    settings = json.loads(key)["settings"]
    assert settings["augment"] == "shift"
    assert settings["routing"] == "classwise"
    assert settings["lr_policy"] == row["train_config"]["lr_policy"] == "one-cycle"
    out = Path(row["out_dir"])
    assert (out / "result.json").is_file()
    assert not (out / "checkpoint.pt").exists()

    second, stderr = run_json(script, capsys, *args)
    assert second["trained"] == 0
    assert second["from_results"] == 1
    assert "[mlcn2-2x4] from the results file" in stderr
    assert "epoch" not in stderr
    assert second["rows"] == first["rows"]
    # A default spelled out is the same run: the key holds the settings as used.
    spelled = (*args[:-1], "augment=shift routing=classwise lr_policy=one-cycle batch_size=100")
    third, _ = run_json(script, capsys, *spelled)
    assert third["trained"] == 0
    assert third["from_results"] == 1
    # --mlcn2-type goes to the lane parser as it is.
    with pytest.raises(SystemExit, match=r"^row mlcn2-2x4: .*unknown lane type 'mlcn9'"):
        script.main([*args, "--mlcn2-type", "mlcn9"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--train", "augment=flip"),
            "unknown augmentation 'flip'; choose one of: crop, crop-flip, none, shift",
        ),
        (("--train", "lr"), "'lr' is not key=value"),
        (("--rows", "capsnet,mlcn3-2x4"), "--rows: unknown mlcn3-2x4"),
        (("--epochs", "0"), "--epochs must be >= 1, got 0"),
    ],
)
def test_bad_options_are_one_line_before_any_training(
    script: Any, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    results = tmp_path / "r.json"
    with pytest.raises(SystemExit) as exc:
        script.main([*args, "--results", str(results)])
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)
    assert not results.exists()


@pytest.mark.slow  # 12 s; the trainer resume tests cover the mechanism
def test_a_killed_row_resumes_from_its_checkpoint(
    script: Any, capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path
) -> None:
    # Epochs of a few seconds: the kill lands well before the second one ends.
    args: tuple[str, ...] = ("--rows", "mlcn2-2x4", "--epochs", "2", "--train-limit", "1200")
    args += ("--val-limit", "50", "--test-limit", "100", "--results", str(tmp_path / "r.json"))
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), *args, "--threads", "1", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NASMLCN_DATA_DIR": str(data_dir), "OMP_NUM_THREADS": "1"},
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "epoch 1/2" in line:  # printed after the epoch's checkpoint is written
            proc.kill()
            break
    proc.wait(timeout=60)
    assert list((tmp_path / "runs").glob("*/checkpoint.pt"))

    resumed, stderr = run_json(script, capsys, *args)
    assert "resuming from its checkpoint after epoch 1" in stderr
    assert "epoch 1/2" not in stderr
    (row,) = resumed["rows"]
    assert row["epochs"] == 2
    assert len(row["val_accuracy_per_epoch"]) == 2
    # Epoch 1's test accuracy was kept in the results file across the kill.
    first, last = row["test_accuracy_per_epoch"]
    assert first is not None
    assert last == row["test_accuracy"]
    assert row["max_test_accuracy"] == max(first, last)
    assert not list((tmp_path / "runs").glob("*/checkpoint.pt"))


@pytest.mark.slow
def test_quick_table_has_every_row_and_the_capsnet_ratio(data_dir: Path, tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(SCRIPT), "--quick", "--threads", "1", *args],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=ROOT,
            env={**os.environ, "NASMLCN_DATA_DIR": str(data_dir), "OMP_NUM_THREADS": "1"},
        )

    results = str(tmp_path / "r.json")
    proc = run("--json", "--results", results)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert [r["row"] for r in report["rows"]] == ROWS
    assert report["trained"] == 5
    rows = {r["row"]: r for r in report["rows"]}
    capsnet = rows["capsnet"]
    assert capsnet["model"] == "capsnet"
    assert capsnet["params"] > 8_000_000
    for name, row in rows.items():
        assert row["epochs"] == 1
        assert row["test_images"] == 500
        expected = capsnet["seconds_per_epoch"] / row["seconds_per_epoch"]
        assert row["speed_ratio_to_capsnet"] == pytest.approx(expected), name
    assert rows["mlcn2-8x4"]["thesis"]["speed_ratio_to_capsnet"] == pytest.approx(220 / 92)

    table = run("--results", results)  # the text table, all from the results file
    assert table.returncode == 0, table.stderr[-3000:]
    assert "rows: 0 trained now, 5 from" in table.stdout
    assert "model after the last epoch" in table.stdout
    for name in ROWS:
        line = next(line for line in table.stdout.splitlines() if line.startswith(name + " "))
        assert line.split()[2] == "1"  # the epochs column
