"""``nasmlcn/reproduce/engines/lane_variants.py``: its table, its comparison with the first variant
(paired by seed), its results file (a rerun trains nothing, a killed run resumes from its
checkpoint) and no test split anywhere."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks._scripts import command, every_key, load_script, run_json
from tests.conftest import ROOT

ENGINE = command("lane_variants")
SMALL = ("--epochs", "1", "--train-limit", "200", "--val-limit", "50")


def _env(data_dir: Path) -> dict[str, str]:
    return {**os.environ, "NASMLCN_DATA_DIR": str(data_dir), "OMP_NUM_THREADS": "1"}


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ENGINE, *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=_env(data_dir),
    )


@pytest.fixture
def script(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The script as a module, run in this process (no torch import per run)."""
    return load_script("lane_variants", data_dir, monkeypatch)


def test_variants_seeds_and_a_rerun_that_trains_nothing(
    script: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / "results.json"
    variants = ("--variant", "mlcn1:1x1", "--variant", "mlcn1:1x1 augment=shift lr=2e-3")
    args = (*SMALL, "--seeds", "2", "--results", str(results), *variants)
    first, stderr = run_json(script, capsys, *args)
    assert first["trained"] == 4
    assert first["from_results"] == 0
    assert [v["variant"] for v in first["variants"]] == [
        "mlcn1:1x1",
        "mlcn1:1x1 augment=shift lr=0.002",
    ]
    for v in first["variants"]:
        assert v["seeds"] == [0, 1]
        assert len(v["val_accuracy_per_epoch"]) == 1
        assert 0.0 <= v["final_val_accuracy"] <= 1.0
        assert v["final_val_accuracy_sd"] >= 0.0
        assert v["params"] > 0
        assert v["seconds_per_epoch"] > 0
        assert v["images_per_second"] > 0
    assert "[mlcn1:1x1 augment=shift lr=0.002, seed 1] epoch 1/1" in stderr
    stored = json.loads(results.read_text())
    shifted = [
        r for r in stored["runs"].values() if r["overrides"] == {"augment": "shift", "lr": 0.002}
    ]
    assert len(shifted) == 2
    assert all(r["train_config"]["augment"] == "shift" for r in shifted)
    assert all(r["val_images"] == 50 and r["train_images"] == 200 for r in stored["runs"].values())
    # The key holds the model's size (counted on the meta device): that of the trained model.
    assert all(json.loads(k)["params"] == r["params"] for k, r in stored["runs"].items())
    # Selection happens on validation: no test figure in the report or the stored runs.
    assert not any("test" in k for k in every_key(first) | every_key(stored))
    # The second variant against the first, seed by seed, checked on the stored runs.
    run_of = {(bool(r["overrides"]), r["seed"]): r for r in stored["runs"].values()}
    for v, shift in zip(first["variants"], (False, True), strict=True):
        for figures in v["per_seed"]:
            run = run_of[shift, figures["seed"]]
            assert figures == {k: run[k] for k in figures}
    [against] = first["comparisons"]
    assert against["baseline"] == "mlcn1:1x1"
    assert against["variant"] == "mlcn1:1x1 augment=shift lr=0.002"
    assert against["seeds"] == [0, 1]
    for name in ("final_val_accuracy", "best_val_accuracy"):
        diffs = [100 * (run_of[True, s][name] - run_of[False, s][name]) for s in (0, 1)]
        assert against[f"{name}_diff_points"] == pytest.approx(statistics.fmean(diffs))
        assert against[f"{name}_diff_points_sd"] == pytest.approx(statistics.stdev(diffs))
    speed = [
        run_of[True, s]["images_per_second"] / run_of[False, s]["images_per_second"] for s in (0, 1)
    ]
    assert against["images_per_second_ratio"] == pytest.approx(statistics.fmean(speed))

    second, stderr = run_json(script, capsys, *args)
    assert second["trained"] == 0
    assert second["from_results"] == 4
    assert stderr.count("from the results file") == 4
    assert "epoch 1/1" not in stderr
    assert second["variants"] == first["variants"]
    # A default spelled out is the same run: the key holds the settings as used.
    spelled = (*SMALL, "--seeds", "2", "--results", str(results))
    third, _ = run_json(script, capsys, *spelled, "--variant", "mlcn1:1x1 lr_policy=one-cycle")
    assert third["trained"] == 0
    assert third["from_results"] == 2
    # Other settings are other runs (the last --val-limit counts).
    other = (*SMALL, "--val-limit", "40", "--seeds", "2", "--results", str(results))
    fourth, _ = run_json(script, capsys, *other, "--variant", "mlcn1:1x1")
    assert fourth["trained"] == 2
    assert fourth["from_results"] == 0


@pytest.mark.slow  # 8 s; the trainer resume tests cover the mechanism
def test_a_killed_run_resumes_from_its_checkpoint(
    script: Any, capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results.json"
    # Epochs of about a second: the kill lands well before the second one ends.
    args: tuple[str, ...] = ("--epochs", "2", "--train-limit", "2000", "--val-limit", "50")
    args += ("--results", str(results), "--variant", "mlcn1:1x1")
    proc = subprocess.Popen(
        [*ENGINE, *args, "--threads", "1", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=_env(data_dir),
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "epoch 1/2" in line:  # printed after the epoch's checkpoint is written
            proc.kill()
            break
    proc.wait(timeout=60)
    progress = json.loads(results.read_text())["progress"]
    assert [p["epochs_done"] for p in progress.values()] == [1]

    resumed, stderr = run_json(script, capsys, *args)
    assert "resuming from its checkpoint after epoch 1" in stderr
    assert "epoch 2/2" in stderr
    assert "epoch 1/2" not in stderr
    assert resumed["trained"] == 1
    assert len(resumed["variants"][0]["val_accuracy_per_epoch"]) == 2
    stored = json.loads(results.read_text())
    assert stored["progress"] == {}
    assert len(stored["runs"]) == 1
    assert not list((tmp_path / "runs").glob("*/checkpoint.pt"))  # deleted once stored


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ("2*mlcn2:4x1 augmnt=shift", "unknown option 'augmnt'; known: augment,"),
        (
            "2*mlcn2:4x1 augment=flip",
            "unknown augmentation 'flip'; choose one of: crop, crop-flip, none, shift",
        ),
        ("2*mlcn2:4x1 batch_size=big", "batch_size='big' is not an integer"),
        ("2*mlcn2:4x1 routing=both", "routing"),
        ("2*mlcn9:4x1", "unknown lane type 'mlcn9'"),
    ],
)
def test_a_bad_variant_is_one_line_before_any_training(
    script: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, variant: str, message: str
) -> None:
    results = tmp_path / "r.json"
    with pytest.raises(SystemExit) as exc:
        script.main([*SMALL, "--results", str(results), "--variant", variant])
    text = str(exc.value)
    assert message in text
    assert repr(variant) in text
    assert "\n" not in text
    assert capsys.readouterr().err == ""
    assert not results.exists()


def test_the_cli_refuses_a_bad_variant_with_one_line(data_dir: Path, tmp_path: Path) -> None:
    proc = run(data_dir, "--results", str(tmp_path / "r.json"), "--variant", "mlcn1:1x1 lr=-1")
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == "--variant 'mlcn1:1x1 lr=-1': lr must be a number > 0, got -1.0"


def test_quick_default_variants(
    script: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import torch

    threads = torch.get_num_threads()  # --threads sets the process's count
    try:
        assert (
            script.main(["--quick", "--threads", "1", "--results", str(tmp_path / "r.json")]) == 0
        )
    finally:
        torch.set_num_threads(threads)
    stdout = capsys.readouterr().out
    for variant in (
        "2*mlcn2:4x1 ",
        "2*mlcn2:4x1 augment=shift",
        "2*mlcn2:4x1 batch_size=50",
        "2*mlcn2:4x1 routing=classwise",
    ):
        assert variant in stdout
    table, footer = stdout.split("\nruns: ")
    assert footer.startswith("4 trained now, 0 from")
    compared = table.split("\nagainst 2*mlcn2:4x1, paired by seed")[1].splitlines()[2:5]
    assert [line.split("  ")[0] for line in compared] == [
        "2*mlcn2:4x1 augment=shift",
        "2*mlcn2:4x1 batch_size=50",
        "2*mlcn2:4x1 routing=classwise",
    ]
    assert all(line.split()[-4] == "1" for line in compared)  # one seed each
    assert "test" not in table.replace("(validation only: no test accuracy)", "")


def test_variants_are_compared_with_the_baseline_seed_by_seed(script: Any) -> None:
    def summary(name: str, *runs: tuple[int, float, float, float]) -> dict[str, Any]:
        keys = ("seed", "final_val_accuracy", "best_val_accuracy", "images_per_second")
        return {"variant": name, "per_seed": [dict(zip(keys, r, strict=True)) for r in runs]}

    # Seeds in any order; seed 2 (only the baseline's) and 3 (only the variant's) drop out.
    base = summary("base", (2, 0.80, 0.81, 100.0), (0, 0.70, 0.72, 200.0), (1, 0.75, 0.78, 400.0))
    other = summary("other", (3, 0.99, 0.99, 1.0), (1, 0.78, 0.75, 200.0), (0, 0.72, 0.72, 300.0))
    against = script.compare(base, other)
    assert (against["variant"], against["baseline"], against["seeds"]) == ("other", "base", [0, 1])
    # final: +2 and +3 points; best: 0 and -3 points; images/s: 300/200 and 200/400
    assert against["final_val_accuracy_diff_points"] == pytest.approx(2.5)
    assert against["final_val_accuracy_diff_points_sd"] == pytest.approx(0.5**0.5)
    assert against["best_val_accuracy_diff_points"] == pytest.approx(-1.5)
    assert against["best_val_accuracy_diff_points_sd"] == pytest.approx(4.5**0.5)
    assert against["images_per_second_ratio"] == pytest.approx(1.0)
    assert against["images_per_second_ratio_sd"] == pytest.approx(0.5**0.5)
    # the paired 95 % t interval of the final differences (+2, +3): 2.5 ± 12.706 x 0.5
    interval = against["final_val_accuracy_diff_interval"]
    assert (interval["low"], interval["high"]) == (
        pytest.approx(2.5 - 12.7062 * 0.5, abs=1e-3),
        pytest.approx(2.5 + 12.7062 * 0.5, abs=1e-3),
    )
    assert (interval["pairs"], interval["verdict"]) == (2, "tie")
    one = script.compare(base, summary("one", (0, 0.72, 0.72, 300.0)))
    assert one["final_val_accuracy_diff_interval"] is None  # one seed: no interval


def test_a_variant_s_own_epochs_and_a_report_of_finished_runs_only(
    script: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / "results.json"
    base = (*SMALL, "--seeds", "1", "--results", str(results))
    first, _ = run_json(script, capsys, *base, "--variant", "mlcn1:1x1 epochs=2")
    (variant,) = first["variants"]
    assert variant["variant"] == "mlcn1:1x1 epochs=2"
    assert len(variant["val_accuracy_per_epoch"]) == 2  # its own epochs, not --epochs 1
    # --finished-only trains nothing: the plain variant (another run) is left out
    args = (*base, "--finished-only", "--variant", "mlcn1:1x1", "--variant", "mlcn1:1x1 epochs=2")
    report, stderr = run_json(script, capsys, *args)
    assert report["trained"] == 0
    assert [v["variant"] for v in report["variants"]] == ["mlcn1:1x1 epochs=2"]
    assert "[mlcn1:1x1, seed 0] not in the results file: left out" in stderr
    with pytest.raises(SystemExit, match="epochs= takes one integer >= 1, got 0"):
        script.main([*base, "--variant", "mlcn1:1x1 epochs=0"])


def test_two_invocations_share_a_results_file_without_losing_entries(
    script: Any, tmp_path: Path
) -> None:
    path = tmp_path / "r.json"
    a, b = (script.ResultsFile(path, "lane-variants") for _ in range(2))
    a.record_progress("one", {"epoch": 1})
    b.record("two", {"acc": 0.5})  # b loaded before a wrote: a's entry must survive
    a.record("one", {"acc": 0.7})  # and b's must survive a's save
    stored = json.loads(path.read_text())
    assert stored["runs"] == {"one": {"acc": 0.7}, "two": {"acc": 0.5}}
    assert stored["progress"] == {}  # a finished run leaves no progress entry behind
    assert b.finished("one") == {"acc": 0.7}  # finished by another process since b started


def test_speed_is_the_median_epoch_so_one_contended_epoch_does_not_move_it(script: Any) -> None:
    from nasmlcn.training import EpochResult

    def epoch(n: int, seconds: float, acc: float) -> EpochResult:
        return EpochResult(n, 0.1, 0.9, 0.1, acc, seconds, 1.0, 1000 / seconds, 1e-3)

    # the third epoch shared the cores with other work and took 5x as long
    figures = script.history_figures([epoch(1, 10, 0.5), epoch(2, 12, 0.7), epoch(3, 60, 0.6)])
    assert figures["seconds_per_epoch"] == 12
    assert figures["images_per_second"] == 1000 / 12
    assert figures["seconds_per_epoch_each"] == [10, 12, 60]
    assert (figures["best_val_accuracy"], figures["best_epoch"]) == (0.7, 2)
    assert figures["final_val_accuracy"] == 0.6
