"""``nasmlcn retrain`` end to end on a real (tiny) search, and what ``best``,
``correlate``, ``export`` and the dashboard's study note show afterwards; bad
requests are refused in one line and leave the study file as it was."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import optuna
import pytest

from nasmlcn.training import PROTOCOL
from tests.conftest import copy_sqlite, run_cli, small_search

WIDE = {"COLUMNS": "250"}  # tables unfolded, so their headers can be read


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real two-objective search: 3 trials of 2 epochs on 300 synthetic images,
    validated on 50; all three learn (seed 10)."""
    folder = tmp_path_factory.mktemp("retrain-cli")
    config = small_search(
        folder, evaluator="train", trials=3, objectives=("accuracy", "latency"), seed=10
    )
    copy_sqlite(folder / "s.db", folder / "pristine.db")  # before any test retrains
    return config.storage


def _ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def retrained(storage: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``nasmlcn retrain --top 2 --json`` on the search: what it printed and where."""
    out = tmp_path_factory.mktemp("runs") / "runs"
    tiny = ("--epochs", "1", "--train-limit", "30", "--test-limit", "20", "--inference-batch", "5")
    result = _ok(
        run_cli("retrain", "--storage", storage, "--top", "2", *tiny, "--out", str(out), "--json")
    )
    return {"out": out, "stderr": result.stderr, **json.loads(result.stdout)}


def test_retrain_top_2_is_stored_where_best_correlate_export_and_the_note_show_it(
    storage: str, retrained: dict[str, Any], tmp_path: Path
) -> None:
    import optuna_dashboard

    from nasmlcn.dashboard import export_study
    from nasmlcn.study import TrialRecord, load_existing_study

    out, models = retrained["out"], retrained["models"]
    study = load_existing_study("s", storage)
    done = [t for t in study.trials if t.values is not None]
    ranked = sorted(done, key=lambda t: (-(t.values or [0.0])[0], t.number))
    assert [m["number"] for m in models] == [t.number for t in ranked[:2]]
    for m in models:
        assert Path(m["weights"]) == (out / f"trial-{m['number']:04d}" / "checkpoint.pt").resolve()
        assert Path(m["weights"]).is_file()
        assert 0.0 <= m["test_accuracy"] <= 1.0
        assert m["test_images"] == 20
        assert m["params"] > 0
        assert m["train_images_per_second"] > 0
        assert m["inference_images_per_second"] > 0
        # tested at the best-validation epoch (of one: the first), and it says so
        assert m["protocol"] == PROTOCOL
        assert m["selected_epoch"] == 1
        assert m["last_epoch_test_accuracy"] == m["test_accuracy"]
        assert m["validation_run_test_accuracy"] is None
        # one spelling: retrain's is the one best's tables show
        record = TrialRecord.of(study.trials[m["number"]])
        assert m["lanes"] == record.lanes == record.lane_mix
    assert retrained["refit"] is False
    assert "test accuracy" in retrained["stderr"]  # the progress lines, on stderr
    assert "(ep 1/1 by val., 20 images)" in retrained["stderr"]

    best = json.loads(_ok(run_cli("best", "--storage", storage, "--json")).stdout)
    tested = {m["number"]: m["test_accuracy"] for m in models}
    assert {m["number"]: m["test_accuracy"] for m in best["retrained"]} == tested
    for row in best["best"]:
        if row["number"] in tested:
            assert row["retrained"]["test_accuracy"] == tested[row["number"]]
            assert row["retrained"]["protocol"] == PROTOCOL
        else:
            assert row["retrained"] is None

    correlate = json.loads(_ok(run_cli("correlate", "--storage", storage, "--json")).stdout)
    assert correlate["retrained"]["trials"] == 2
    assert [e["epoch"] for e in correlate["retrained"]["epochs"]] == [1, 2]

    # the HTML report's section (what `nasmlcn export` renders into report.html)
    export_study(study, tmp_path / "export", ("html",))
    page = (tmp_path / "export" / "report.html").read_text()
    section = page[page.index('<section id="retrained">') :]
    assert all(f"<td>{a:.4f}</td>" in section for a in tested.values())

    note = optuna_dashboard.get_note(study)  # the study note, as the dashboard reads it
    assert "Retrained (`nasmlcn retrain`)" in note
    assert all(f"| {n} |" in note for n in tested)


def test_retrain_json_carries_the_notes_the_table_shows(retrained: dict[str, Any]) -> None:
    """Each model's caveats (here: reduced data), the lines under the table, are in
    --json's notes too."""
    notes = retrained["notes"]
    assert [note.split(":")[0] for note in notes] == [
        f"trial {m['number']}" for m in retrained["models"]
    ]
    assert all(note.endswith("reduced data: 30 training, 20 test images") for note in notes)


@pytest.mark.slow
def test_the_best_and_correlate_tables_show_the_retrained_columns(
    storage: str, retrained: dict[str, Any]
) -> None:
    assert "retrained test acc" in _ok(run_cli("best", "--storage", storage, env=WIDE)).stdout
    table = _ok(run_cli("correlate", "--storage", storage, env=WIDE)).stdout
    assert "Pearson r vs retrained test" in table
    assert "Spearman rho vs retrained test" in table


def _fingerprint(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--study", "nope", "--top", "1"), "no study 'nope'"),
        (("--top", "2", "--pareto"), "give --pareto or --top K, not both"),
        ((), "say which trials to retrain: --pareto (the Pareto front) or --top K"),
        (("--top", "1", "--dataset", "nope"), "'nope'"),
    ],
    ids=["unknown-study", "top-and-pareto", "no-selection", "unknown-dataset"],
)
def test_bad_requests_are_refused_in_one_line_and_change_nothing(
    storage: str, tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    db = Path(storage.removeprefix("sqlite:///"))
    before = _fingerprint(db)
    out = tmp_path / "runs"
    result = run_cli("retrain", "--storage", storage, *args, "--out", str(out))
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert expected in lines[0]
    assert _fingerprint(db) == before
    assert not out.exists()


def test_a_study_without_completed_trials_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    optuna.create_study(study_name="empty", storage=url).ask()
    result = run_cli("retrain", "--storage", url, "--pareto", "--out", str(tmp_path / "r"))
    assert result.returncode == 2
    assert "study 'empty' has no completed feasible trial to retrain" in result.stderr


def test_seed_trains_another_model_beside_the_default_one(
    storage: str, retrained: dict[str, Any], tmp_path: Path
) -> None:
    [first, _] = retrained["models"]
    out = tmp_path / "seeded"
    tiny = ("--epochs", "1", "--train-limit", "30", "--test-limit", "20", "--inference-batch", "5")
    args = ("--storage", storage, "--top", "1", "--seed", "11", *tiny, "--out", str(out))
    result = _ok(run_cli("retrain", *args, "--json"))
    [model] = json.loads(result.stdout)["models"]
    assert model["number"] == first["number"]
    assert model["seed"] == 11
    assert first["seed"] == 10  # the search's seed by default
    assert Path(model["run_dir"]) == (out / f"trial-{model['number']:04d}-seed-11").resolve()
    refused = run_cli("retrain", "--storage", storage, "--top", "1", "--seed", "-1")
    assert refused.returncode == 2
    assert "--seed" in refused.stderr

    # one model per trial in the correlation (the search's seed); every seed in the tables
    import optuna_dashboard

    from nasmlcn.dashboard import export_study
    from nasmlcn.study import load_existing_study

    correlate = json.loads(_ok(run_cli("correlate", "--storage", storage, "--json")).stdout)
    assert correlate["retrained"]["trials"] == 2
    study = load_existing_study("s", storage)
    export_study(study, tmp_path / "export", ("html",))
    page = (tmp_path / "export" / "report.html").read_text()
    section = page[page.index('<section id="retrained">') :]
    assert "<th>seed</th>" in section
    assert "<tr><td>1</td><td>2</td>" in section  # epoch 1 over 2 trials, not 3 models
    assert f"<td>{model['test_accuracy']:.4f}</td>" in section
    note = optuna_dashboard.get_note(study)
    assert f"| {model['number']} | synthetic | 11 |" in note
    assert f"| {model['number']} | synthetic | 10 |" in note


def test_refit_trains_each_model_again_on_training_and_validation_and_says_so(
    storage: str, tmp_path: Path
) -> None:
    """A copy of the study: the refit's entry is stored beside the trial's default one."""
    db = copy_sqlite(storage.removeprefix("sqlite:///"), tmp_path / "copy.db")
    copy = f"sqlite:///{db}"
    out = tmp_path / "runs"
    tiny = ("--epochs", "1", "--train-limit", "20", "--test-limit", "20", "--inference-batch", "5")
    args = ("--storage", copy, "--top", "1", *tiny, "--out", str(out), "--refit")
    result = _ok(run_cli("retrain", *args, env={"COLUMNS": "80"}))
    table = result.stdout[: result.stdout.index("weights: ")]
    assert max(len(line) for line in table.splitlines()) <= 80
    assert "(refit," in table
    assert "val. run" in table
    assert "test acc: a refit on training + validation images" in table
    assert "refit on training + validation: trial" in result.stderr  # the refit's progress
    assert "/trial-NNNN-refit/checkpoint.pt" in result.stdout

    stored = json.loads(_ok(run_cli("best", "--storage", copy, "--json")).stdout)["retrained"]
    [model] = [m for m in stored if Path(m["run_dir"]).parent == out.resolve()]
    number, epochs = model["number"], model["selected_epoch"]
    assert Path(model["run_dir"]).name == f"trial-{number:04d}-refit"
    assert model["protocol"] == (
        f"refit on training + validation for {epochs} epoch{'s' * (epochs != 1)} (chosen on "
        "validation), tested once"
    )
    first = json.loads((out / f"trial-{number:04d}" / "result.json").read_text())
    assert model["validation_run_test_accuracy"] == first["test_accuracy"]
    assert model["train_images"] == 20 + 50  # the search's 50 validation images
    # the trial's earlier retrainings (the module's) stay, and the output says so
    earlier = [m for m in stored if m["number"] == number and m is not model]
    beside = " ".join(result.stdout[result.stdout.index("weights: ") :].split())
    assert (f"trial {number}: stored beside {len(earlier)} earlier" in beside) == bool(earlier)
    assert "--refit" in _ok(run_cli("retrain", "--help", env=WIDE)).stdout


def test_retrain_and_best_flag_results_from_reduced_data(storage: str, tmp_path: Path) -> None:
    """A retrain on a few images says so, beside its figure, in retrain and in best."""
    tiny = ("--epochs", "1", "--train-limit", "30", "--test-limit", "20", "--inference-batch", "5")
    shown = _ok(
        run_cli(
            "retrain",
            "--storage",
            storage,
            "--top",
            "1",
            *tiny,
            "--out",
            str(tmp_path / "r"),
            env=WIDE,
        )
    )
    assert "reduced data: 30 training, 20 test images" in shown.stdout
    best = _ok(run_cli("best", "--storage", storage, env=WIDE))
    assert "reduced data: 30 training, 20 test images" in " ".join(best.stdout.split())


def test_a_retrained_model_below_chance_is_said_to_have_learned_nothing() -> None:
    from nasmlcn.search import retrained_caveats
    from nasmlcn.study import RetrainedModel

    model = RetrainedModel(
        number=3, dataset="fashion-mnist", lanes="2*mlcn1:1x1", test_accuracy=0.078,
        test_loss=1.0, test_images=10_000, params=1, epochs=1, batch_size=100, lr=1e-3,
        train_images=54_000, train_images_per_second=1.0, inference_images_per_second=1.0,
        inference_batch_size=100, device="cpu", seconds=1.0, search_accuracy=None,
        search_epochs=None,
    )  # fmt: skip
    assert retrained_caveats(model) == ["did not learn (below 0.19; chance 0.10)"]
    learned = RetrainedModel.from_dict({**model.to_dict(), "test_accuracy": 0.85})
    assert learned is not None
    assert retrained_caveats(learned) == []


def test_a_quick_retrain_is_kept_beside_and_best_names_the_rule(
    storage: str, tmp_path: Path
) -> None:
    # `retrain --top 1 --epochs 1 --train-limit 100` replaced a stored full retraining,
    # and best then showed the quick one ("did not learn")
    pristine = Path(storage.removeprefix("sqlite:///")).with_name("pristine.db")
    copy = f"sqlite:///{copy_sqlite(pristine, tmp_path / 'c.db')}"
    runs = ("--storage", copy, "--top", "1", "--inference-batch", "5", "--test-limit", "20")
    longer = ("--epochs", "2", "--train-limit", "40")
    first = json.loads(
        _ok(run_cli("retrain", *runs, *longer, "--out", str(tmp_path / "a"), "--json")).stdout
    )
    quick = ("--epochs", "1", "--train-limit", "10", "--out", str(tmp_path / "b"))
    said = _ok(run_cli("retrain", *runs, *quick, env=WIDE)).stdout
    [model] = first["models"]
    number = model["number"]
    assert f"trial {number}: stored beside " in said
    assert f"{model['test_accuracy']:.4f} (2 ep x 40 images" in said
    assert "'nasmlcn best' shows the one of 2 ep x 40 images" in said
    shown = _ok(run_cli("best", "--storage", copy, env=WIDE)).stdout
    assert f"#{number} retrained: test acc {model['test_accuracy']:.4f}" in shown
    assert "the one that trained most (epochs x training images)" in shown
    assert "1 other retraining of these trials stored beside" in shown
    every = json.loads(_ok(run_cli("best", "--storage", copy, "--json")).stdout)["retrained"]
    assert sorted(m["epochs"] for m in every if m["number"] == number)[-2:] == [1, 2]
