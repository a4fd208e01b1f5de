"""``nasmlcn/reproduce/engines/thesis_table.py``: its rows beside the thesis's (the reference code's
lanes and the thesis text's), each the mean over its seeds of the test accuracy at
the best-validation epoch, its results file (a rerun trains nothing, a killed run
resumes from its checkpoint) and its overrides."""

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

ENGINE = command("thesis_table")
THESIS = ["capsnet", "mlcn1-2x4", "mlcn1-8x4", "mlcn2-2x4", "mlcn2-8x4"]
ROWS = [*THESIS, *(f"{name}-text" for name in THESIS[1:])]
PROTOCOL = "test at the best-validation epoch"


@pytest.fixture
def script(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The script as a module, run in this process (no torch import per run)."""
    return load_script("thesis_table", data_dir, monkeypatch)


def _first_best(values: list[float]) -> int:
    """The 1-based epoch of the best value, the first one on a tie."""
    return values.index(max(values)) + 1


def check_protocol(report: dict[str, Any], results: Path) -> None:
    """Every row is the mean of its runs' best-validation-epoch test accuracies, and
    nothing reports (or stores) a test accuracy picked by the test set."""
    for data in (report, json.loads(results.read_text())):
        keys = every_key(data)
        assert not [k for k in keys if "max_test" in k], keys
        assert not {"test_accuracy_per_epoch", "test_accuracy_at_best_val"} & keys
    for row in report["rows"]:
        runs = row["per_seed"]
        assert row["seeds"] == [r["seed"] for r in runs]
        for name in ("test_accuracy", "last_epoch_test_accuracy", "best_val_accuracy"):
            values = [r[name] for r in runs]
            assert row[name] == pytest.approx(statistics.fmean(values)), (row["row"], name)
            sd = statistics.stdev(values) if len(values) > 1 else 0.0
            assert row[f"{name}_sd"] == pytest.approx(sd), (row["row"], name)
        assert row["selected_epochs"] == [r["selected_epoch"] for r in runs]
        for run in runs:
            assert run["selected_epoch"] == _first_best(run["val_accuracy_per_epoch"])
            assert run["best_val_accuracy"] == max(run["val_accuracy_per_epoch"])
            assert run["protocol"] == PROTOCOL
            # the run folder's result.json is the library's own report of the run
            stored = json.loads((Path(run["out_dir"]) / "result.json").read_text())
            for name in ("test_accuracy", "selected_epoch", "last_epoch_test_accuracy"):
                assert stored[name] == run[name], name
    assert "best validation accuracy" in report["test_accuracy_of"]


def test_one_row_beside_the_thesis_and_a_rerun_that_trains_nothing(
    script: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / "r.json"
    args: tuple[str, ...] = ("--quick", "--rows", "mlcn2-2x4-text", "--results", str(results))
    args += ("--train", "augment=shift routing=classwise")
    first, stderr = run_json(script, capsys, *args)
    assert first["trained"] == 1
    assert first["from_results"] == 0
    assert first["settings"]["test_images"] == 500
    assert first["settings"]["train_images"] == 500
    assert first["settings"]["seeds"] == [0]  # --quick: one seed
    assert first["protocol"] == PROTOCOL
    (row,) = first["rows"]
    assert row["row"] == "mlcn2-2x4-text"
    assert row["model"] == "2*mlcn2:4x1"  # the text's lanes, whatever --mlcn2-type says
    assert row["epochs"] == 1
    assert row["seeds"] == [0]
    assert row["overrides"] == {"augment": "shift", "routing": "classwise"}
    assert row["arch"]["routing"] == "classwise"
    (run,) = row["per_seed"]
    assert run["train_config"]["augment"] == "shift"
    assert 0.0 <= row["test_accuracy"] <= 1.0
    assert row["test_accuracy_sd"] == 0.0
    assert row["params"] == run["params"] > 0
    # One epoch: it is both the selected and the last one.
    assert row["selected_epochs"] == [1]
    assert row["last_epoch_test_accuracy"] == row["test_accuracy"]
    check_protocol(first, results)
    assert row["thesis"] == {
        "row": "mlcn2-2x4",  # the thesis row a -text row stands for
        "model": "Mlcn2, 2 lanes, width 4",
        "params": 3_655_376,
        "seconds_per_epoch": 20,
        "test_accuracy": 0.9101,
        "speed_ratio_to_capsnet": 11.0,
    }
    assert row["speed_ratio_to_capsnet"] is None  # no CapsNet run at these settings yet
    assert "[mlcn2-2x4-text, seed 0] epoch 1/1" in stderr
    assert "test accuracy" not in stderr  # no epoch is tested
    (key,) = json.loads(results.read_text())["runs"]
    assert json.loads(key)["params"] == row["params"]
    assert json.loads(key)["protocol"] == PROTOCOL  # runs of another protocol train anew
    # Every setting as used is in the key, defaults too: a changed default trains anew.
    settings = json.loads(key)["settings"]
    assert settings["augment"] == "shift"
    assert settings["routing"] == "classwise"
    assert settings["lr_policy"] == run["train_config"]["lr_policy"] == "one-cycle"
    out = Path(run["out_dir"])
    assert (out / "result.json").is_file()
    assert not (out / "checkpoint.pt").exists()

    second, stderr = run_json(script, capsys, *args)
    assert second["trained"] == 0
    assert second["from_results"] == 1
    assert "[mlcn2-2x4-text, seed 0] from the results file" in stderr
    assert "epoch" not in stderr
    assert second["rows"] == first["rows"]
    # A default spelled out is the same run: the key holds the settings as used.
    spelled = (*args[:-1], "augment=shift routing=classwise lr_policy=one-cycle batch_size=100")
    third, _ = run_json(script, capsys, *spelled)
    assert third["trained"] == 0
    assert third["from_results"] == 1


def test_seeds_are_runs_of_their_own_and_a_row_is_their_mean(
    script: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / "r.json"
    # Two epochs, so that one is selected; one batch each (the lanes' smallest rows).
    args: tuple[str, ...] = (
        "--rows",
        "mlcn2-2x4-text,mlcn1-2x4-text",
        "--epochs",
        "2",
        "--train-limit",
        "40",
    )
    args += ("--val-limit", "40", "--test-limit", "40", "--results", str(results))
    first, stderr = run_json(script, capsys, *args, "--seed", "5", "--seeds", "2")
    assert first["trained"] == 4  # 2 rows x 2 seeds
    assert first["settings"]["seeds"] == [5, 6]
    # In the order of --rows' default, whatever order --rows names them in.
    assert [r["row"] for r in first["rows"]] == ["mlcn1-2x4-text", "mlcn2-2x4-text"]
    for row in first["rows"]:
        assert row["seeds"] == [5, 6]
        assert [r["train_config"]["seed"] for r in row["per_seed"]] == [5, 6]
        assert all(len(r["val_accuracy_per_epoch"]) == 2 for r in row["per_seed"])
    check_protocol(first, results)
    # Seed after seed: every row of seed 5 trains before any of seed 6.
    assert stderr.index("[mlcn2-2x4-text, seed 5] training") < stderr.index(
        "[mlcn1-2x4-text, seed 6] training"
    )
    assert len(json.loads(results.read_text())["runs"]) == 4

    again, _ = run_json(script, capsys, *args, "--seed", "5", "--seeds", "2")
    assert (again["trained"], again["from_results"]) == (0, 4)
    assert again["rows"] == first["rows"]
    # Seeds 6 and 7 of one row: only seed 7 trains.
    more, stderr = run_json(
        script, capsys, *args, "--rows", "mlcn1-2x4-text", "--seed", "6", "--seeds", "2"
    )
    assert (more["trained"], more["from_results"]) == (1, 1)
    assert "[mlcn1-2x4-text, seed 6] from the results file" in stderr
    assert [r["seeds"] for r in more["rows"]] == [[6, 7]]
    check_protocol(more, results)

    # A row with fewer finished runs than asked is shown with those it has.
    planned = script.plan_runs(script.parse_args([*args, "--seed", "5", "--seeds", "3"]))
    (dropped,) = [p.key for p in planned if p.row.name == "mlcn2-2x4-text" and p.seed == 5]
    data = json.loads(results.read_text())
    del data["runs"][dropped]
    (tmp_path / "partial.json").write_text(json.dumps(data))
    partial = script.ResultsFile(tmp_path / "partial.json", "thesis-table")
    rows = script.table_rows(planned, partial, ["mlcn1-2x4-text", "mlcn2-2x4-text"])
    assert [r["seeds"] for r in rows] == [[5, 6, 7], [6]]
    report = {**first, "rows": rows, "settings": {**first["settings"], "seeds": [5, 6, 7]}}
    table = script.render(report).splitlines()
    assert any("(mlcn2-2x4-text: only the finished seeds)" in line for line in table)
    seeds = {line.split()[0]: line.split()[3] for line in table if "-2x4-text " in line}
    assert seeds == {"mlcn1-2x4-text": "3/3", "mlcn2-2x4-text": "1/3"}


def test_the_thesis_rows_are_built_from_the_reference_codes_lanes(script: Any) -> None:
    planned = script.plan_runs(script.parse_args(["--seeds", "2"]))  # plans, trains nothing
    assert [p.row.name for p in planned] == ROWS * 2
    assert [p.seed for p in planned] == [0] * 9 + [1] * 9
    models = {p.row.name: (script.model_name(p.arch), json.loads(p.key)) for p in planned}
    assert models["mlcn2-8x4"][0] == "8*mlcn2-ref:4x1"
    # the reference code's network (lanes-capsnet, Keras) has exactly this many
    assert models["mlcn2-8x4"][1]["params"] == 5_499_152
    assert models["mlcn1-2x4"][0] == "2*mlcn1-ref:4x1"
    assert models["mlcn2-8x4-text"][0] == "8*mlcn2:4x1"
    assert models["mlcn1-2x4-text"][0] == "2*mlcn1:4x1"
    assert models["capsnet"][0] == "capsnet"
    assert len({p.key for p in planned}) == 18  # a run per row and seed
    # The text's lanes on a thesis row: the same runs as its -text row.
    texts = script.parse_args(["--mlcn2-type", "mlcn2", "--rows", "mlcn2-8x4,mlcn2-8x4-text"])
    keys = {p.row.name: p.key for p in script.plan_runs(texts) if p.seed == 0}
    assert keys["mlcn2-8x4"] == keys["mlcn2-8x4-text"]
    # --mlcn2-type goes to the lane parser as it is (a bad one: see below); the -text
    # rows keep their lanes.
    kept = script.parse_args(["--rows", "mlcn2-2x4-text", "--mlcn2-type", "mlcn9"])
    assert {script.model_name(p.arch) for p in script.plan_runs(kept)} == {
        "capsnet",  # planned for the speed ratio
        "2*mlcn2:4x1",
    }


def test_a_recipe_study_plans_no_capsnet_and_its_overrides_key_new_runs(script: Any) -> None:
    """``--no-capsnet``: the rows alone (a recipe study spends no time on CapsNet); a
    variant's runs have keys of their own, the baseline's stay where they were."""
    base = script.parse_args(base_args())
    planned = script.plan_runs(base)
    assert [(p.row.name, p.seed) for p in planned] == [("mlcn2-8x4-text", 0), ("mlcn2-8x4-text", 1)]
    with_capsnet = script.plan_runs(script.parse_args(["--rows", "mlcn2-8x4-text", "--seeds", "2"]))
    assert [p.key for p in with_capsnet if p.row.name != "capsnet"] == [p.key for p in planned]
    shifted = script.parse_args([*base_args(), "--train", "augment=shift"])
    variant = script.plan_runs(shifted)
    assert [p.config.augment for p in variant] == ["shift", "shift"]
    assert not {p.key for p in variant} & {p.key for p in planned}


def base_args() -> list[str]:
    return ["--rows", "mlcn2-8x4-text", "--seeds", "2", "--no-capsnet"]


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
        (("--seeds", "0"), "--seeds must be >= 1, got 0"),
        (
            ("--rows", "mlcn2-2x4", "--mlcn2-type", "mlcn9"),
            "row mlcn2-2x4: invalid lane '2*mlcn9:4x1': unknown lane type 'mlcn9'",
        ),
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


@pytest.mark.slow  # 20 s; the trainer resume tests cover the mechanism
def test_a_killed_run_resumes_from_its_checkpoint(
    script: Any, capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path
) -> None:
    # Epochs of a few seconds: the kill lands well before the second one ends.
    results = tmp_path / "r.json"
    args: tuple[str, ...] = ("--rows", "mlcn2-2x4-text", "--epochs", "2", "--seeds", "1")
    args += ("--train-limit", "1200", "--val-limit", "50", "--test-limit", "100")
    args += ("--results", str(results))
    proc = subprocess.Popen(
        [*ENGINE, *args, "--threads", "1", "--json"],
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
    (progress,) = json.loads(results.read_text())["progress"].values()
    assert progress["epochs_done"] == 1

    resumed, stderr = run_json(script, capsys, *args)
    assert "resuming from its checkpoint after epoch 1" in stderr
    assert "epoch 1/2" not in stderr
    (row,) = resumed["rows"]
    assert row["epochs"] == 2
    (run,) = row["per_seed"]
    assert len(run["val_accuracy_per_epoch"]) == 2
    # Epoch 1 was trained before the kill and is still a candidate: the selection
    # spans every epoch of the run.
    check_protocol(resumed, results)
    assert not list((tmp_path / "runs").glob("*/checkpoint.pt"))


@pytest.mark.slow
def test_quick_table_has_every_row_and_the_capsnet_ratio(data_dir: Path, tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*ENGINE, "--quick", "--threads", "1", *args],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=ROOT,
            env={**os.environ, "NASMLCN_DATA_DIR": str(data_dir), "OMP_NUM_THREADS": "1"},
        )

    results = tmp_path / "r.json"
    proc = run("--json", "--results", str(results))
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert [r["row"] for r in report["rows"]] == ROWS
    assert report["trained"] == 9
    check_protocol(report, results)
    rows = {r["row"]: r for r in report["rows"]}
    capsnet = rows["capsnet"]
    assert capsnet["model"] == "capsnet"
    assert capsnet["params"] > 8_000_000
    assert rows["mlcn2-8x4"]["model"] == "8*mlcn2-ref:4x1"
    assert rows["mlcn2-8x4"]["params"] == 5_499_152
    assert rows["mlcn2-8x4-text"]["model"] == "8*mlcn2:4x1"
    for name, row in rows.items():
        assert row["epochs"] == 1
        assert row["seeds"] == [0]
        assert row["test_images"] == 500
        expected = capsnet["seconds_per_epoch"] / row["seconds_per_epoch"]
        assert row["speed_ratio_to_capsnet"] == pytest.approx(expected), name
    assert rows["mlcn2-8x4"]["thesis"]["speed_ratio_to_capsnet"] == pytest.approx(220 / 92)
    assert rows["mlcn2-8x4-text"]["thesis"] == rows["mlcn2-8x4"]["thesis"]

    table = run("--results", str(results))  # the text table, all from the results file
    assert table.returncode == 0, table.stderr[-3000:]
    assert "runs: 0 trained now, 9 from" in table.stdout
    assert "test: the model of the epoch with the best validation accuracy" in table.stdout
    assert "last: after the last epoch" in table.stdout
    for name in ROWS:
        line = next(line for line in table.stdout.splitlines() if line.startswith(name + " "))
        assert line.split()[2:4] == ["1", "1/1"]  # the epochs and seeds columns


def test_a_variant_is_set_against_the_runs_without_overrides_seed_by_seed(
    script: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The H200 file's lr 3e-3 runs against its 1e-3 ones (the default), paired by
    seed, training nothing: the keys of the committed runs still match, so a GPU call
    with ``--results-from`` trains only the variants."""
    import shutil

    results = tmp_path / "results.json"
    shutil.copy(ROOT / "docs" / "figures" / "table41-h200.json", results)
    args = ["--rows", "mlcn2-8x4-text", "--no-capsnet", "--epochs", "20", "--seeds", "3"]
    args += ["--results", str(results), "--device", "cpu", "--json"]
    assert script.main([*args, "--train", "lr=0.003"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["trained"] == 0
    [row] = report["rows"]
    compared = row["vs_baseline"]
    assert compared["seeds"] == [0, 1, 2]
    runs = json.loads(results.read_text())["runs"].values()
    by_lr: dict[float, dict[int, float]] = {}
    for run in runs:
        if run["model"] == "8*mlcn2:4x1" and run["epochs"] == 20:
            by_lr.setdefault(run["train_config"]["lr"], {})[run["seed"]] = run["best_val_accuracy"]
    diffs = [by_lr[0.003][s] - by_lr[0.001][s] for s in (0, 1, 2)]
    assert compared["best_val_accuracy"]["mean"] == pytest.approx(sum(diffs) / 3)
    assert compared["best_val_accuracy"]["verdict"] == "behind"  # docs/hardware.md's finding
    assert compared["test_accuracy"]["pairs"] == 3
