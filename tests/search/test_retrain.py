"""``retrain_study``: NASCaps' second stage on a real (tiny) search, trained for
real on the synthetic dataset; the stored record; the correlation with the
retrained test accuracy."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest
from scipy import stats

from nasmlcn.errors import CheckpointError, SearchError, UnknownNameError
from nasmlcn.search import (
    RetrainOptions,
    SearchConfig,
    best_trials,
    correlation_report,
    epoch_correlations,
    final_correlations,
    retrain_study,
    retrained_correlations,
)
from nasmlcn.search._results.retrain_plan import plan_retrain, run_folder, selection_notes
from nasmlcn.study import (
    RetrainedModel,
    load_existing_study,
    retrained_by_trial,
    retrained_models,
    study_info,
)
from tests.conftest import copy_sqlite, small_search

RETRAINED_VERSION = RetrainedModel.version
"""The version of the retrained-model records this package writes (a record's own)."""

TINY: dict[str, Any] = {
    "epochs": 1,
    "train_limit": 50,
    "test_limit": 30,
    "inference_batch_size": 10,
}
# --pareto may select every trial: fewer images still
PARETO_TINY: dict[str, Any] = {
    "epochs": 1,
    "train_limit": 20,
    "test_limit": 20,
    "inference_batch_size": 1,
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> SearchConfig:
    """A real search: 3 trials of 2 epochs on 300 synthetic images, two objectives;
    all three learn (seed 10: validation accuracy 0.40 to 0.96; training is seeded by
    each model, search/_run/repeats.py)."""
    folder = tmp_path_factory.mktemp("trained")
    config = small_search(
        folder, evaluator="train", trials=3, objectives=("accuracy", "latency"), seed=10
    )
    copy_sqlite(config.storage.removeprefix("sqlite:///"), folder / PRISTINE)
    return config


PRISTINE = "pristine.db"
"""The trained study as its search left it, before any test retrained it."""


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> SearchConfig:
    """A single-objective search with the proxy evaluator (fast, no training)."""
    return small_search(tmp_path_factory.mktemp("proxy"), evaluator="proxy", trials=5)


def _own_copy(config: SearchConfig, folder: Path) -> str:
    """A copy of ``config``'s study for a test that reads what retrain stores: the
    module's other tests store their retrainings beside its own in the shared one."""
    source = Path(config.storage.removeprefix("sqlite:///")).with_name(PRISTINE)
    return f"sqlite:///{copy_sqlite(source, folder / 'own.db')}"


def _ranked(study: optuna.Study) -> list[int]:
    done = [t for t in study.trials if t.state.name == "COMPLETE" and t.values]
    return [t.number for t in sorted(done, key=lambda t: (-(t.values or [0.0])[0], t.number))]


def test_retrain_top_2_trains_tests_and_stores_loadable_weights(
    trained: SearchConfig, tmp_path: Path
) -> None:
    import torch

    from nasmlcn.data import load_splits
    from nasmlcn.training import evaluate, load_checkpoint, load_model

    out = tmp_path / "runs"
    report = retrain_study("s", trained.storage, RetrainOptions(top=2, out_dir=str(out), **TINY))
    study = load_existing_study("s", trained.storage)
    assert [m.number for m in report.models] == _ranked(study)[:2]
    test = load_splits("synthetic", seed=trained.seed, test_limit=30).test
    for model in report.models:
        trial = study.trials[model.number]
        run = out / f"trial-{model.number:04d}"
        assert model.weights == str((run / "checkpoint.pt").resolve())
        assert {p.name for p in run.iterdir()} >= {"checkpoint.pt", "arch.json", "result.json"}
        payload = load_checkpoint(model.weights)
        assert payload["arch"].to_dict() == trial.user_attrs["arch"]
        # the weights as written give the reported test accuracy again
        net, _ = load_model(model.weights)
        loss, accuracy = evaluate(net, test, batch_size=500, device=torch.device("cpu"))
        assert (loss, accuracy) == pytest.approx((model.test_loss, model.test_accuracy))
        assert model.test_images == 30
        assert model.train_images == 50
        assert model.epochs == 1
        assert model.params == sum(p.numel() for p in net.parameters() if p.requires_grad)
        assert model.train_images_per_second > 0
        assert model.inference_images_per_second > 0
        assert model.inference_batch_size == 10
        # the trial's own settings and its search-time accuracy
        assert model.batch_size == int(trial.params.get("batch_size", trained.batch_size))
        assert model.search_accuracy == trial.values[0]
        assert model.search_epochs == 2
        result = json.loads((run / "result.json").read_text())
        assert result["test_accuracy"] == model.test_accuracy
        assert result["retrain"]["number"] == model.number
    stored = retrained_by_trial(study_info(study))
    assert {n: m.test_accuracy for n, m in stored.items()} == {
        m.number: m.test_accuracy for m in report.models
    }
    # what the search stored on the study is kept
    assert study_info(study)["config"]["epochs"] == 2


def test_retrain_with_the_search_s_settings_reaches_the_trial_s_figures(
    trained: SearchConfig, tmp_path: Path
) -> None:
    # the search splits with the study's seed and trains each model with its own
    # training seed (the study's seed and the model); retrain took the study's seed
    # for both and reached another figure (0.2133 where the trial had 0.3000)
    from nasmlcn.training import load_checkpoint

    study = load_existing_study("s", trained.storage)
    options = RetrainOptions(
        top=1,
        out_dir=str(tmp_path),
        test_limit=10,
        epochs=trained.epochs,  # the search's settings
        train_limit=trained.train_limit,
    )
    report = retrain_study("s", trained.storage, options)
    (model,) = report.models
    trial = study.trials[model.number]
    seed = trial.user_attrs["training"]["training_seed"]
    assert isinstance(seed, int)
    assert seed != trained.seed
    assert model.val_accuracy_per_epoch == trial.user_attrs["training"]["val_accuracy_per_epoch"]
    # stored under the search's seed, as before; the run records both seeds
    assert model.seed == trained.seed
    payload = load_checkpoint(model.weights)
    assert payload["train_config"]["seed"] == seed
    assert payload["train_config"]["data"]["split_seed"] == trained.seed


# 3 epochs of 40 images, with the trial's own seeds: the search's best trial
# validates best after epoch 1 (0.16, then 0.06 and 0.08), so epoch 1 is selected,
# not the last epoch, and tested (0.05 on 20 test images; the last epoch's: 0.25)
SELECTING: dict[str, Any] = {
    "top": 1,
    "epochs": 3,
    "train_limit": 40,
    "test_limit": 20,
    "inference_batch_size": 5,
}


def test_a_retrained_model_is_tested_at_its_best_validation_epoch(
    trained: SearchConfig, tmp_path: Path
) -> None:
    from nasmlcn.training import PROTOCOL

    [model] = retrain_study(
        "s", trained.storage, RetrainOptions(out_dir=str(tmp_path), **SELECTING)
    ).models
    curve = model.val_accuracy_per_epoch
    assert len(curve) == model.epochs == 3
    assert model.selected_epoch == curve.index(max(curve)) + 1
    assert model.selected_epoch < 3, "this setting is to select an epoch before the last"
    assert model.protocol == PROTOCOL
    assert not model.refit
    assert model.validation_run_test_accuracy is None
    result = json.loads((Path(model.run_dir) / "result.json").read_text())
    assert result["selected_epoch"] == model.selected_epoch
    assert result["test_accuracy"] == model.test_accuracy
    assert result["last_epoch_test_accuracy"] == model.last_epoch_test_accuracy
    assert model.test_accuracy != model.last_epoch_test_accuracy  # another model was tested
    # stored beside the module's earlier retrainings of the trial
    assert model in retrained_models(study_info(load_existing_study("s", trained.storage)))


def test_a_refit_trains_anew_on_training_and_validation_for_the_selected_epochs(
    trained: SearchConfig, tmp_path: Path
) -> None:
    from nasmlcn.data import load_splits
    from nasmlcn.runs import evaluate_run, load_run
    from nasmlcn.training import FIXED_EPOCHS_PROTOCOL, load_checkpoint

    options = RetrainOptions(out_dir=str(tmp_path), refit=True, **SELECTING)
    report = retrain_study("s", trained.storage, options)
    [model] = report.models
    assert report.refit
    assert report.run_folders == "trial-NNNN-refit"
    number = model.number
    first, refit = tmp_path / f"trial-{number:04d}", tmp_path / f"trial-{number:04d}-refit"
    assert model.run_dir == str(refit.resolve())
    assert model.weights == str((refit / "checkpoint.pt").resolve())
    # the first run selects the epochs on validation ...
    chosen = json.loads((first / "result.json").read_text())
    curve = chosen["val_accuracy_per_epoch"]
    assert model.val_accuracy_per_epoch == curve
    assert model.selected_epoch == chosen["selected_epoch"] == curve.index(max(curve)) + 1 < 3
    assert model.validation_run_test_accuracy == chosen["test_accuracy"]
    assert model.last_epoch_test_accuracy == chosen["last_epoch_test_accuracy"]
    # ... the refit trains that many on training + validation images, tested once
    splits = load_splits("synthetic", seed=trained.seed, train_limit=40, val_limit=50)
    result = json.loads((refit / "result.json").read_text())
    assert result["train_images"] == model.train_images == len(splits.train) + len(splits.val)
    assert result["epochs"] == len(result["per_epoch"]) == model.selected_epoch
    saved = load_checkpoint(refit / "checkpoint.pt")
    assert saved["train_config"]["epochs"] == model.selected_epoch  # one-cycle laid out so
    assert result["protocol"] == FIXED_EPOCHS_PROTOCOL
    epochs = "1 epoch" if model.selected_epoch == 1 else f"{model.selected_epoch} epochs"
    said = f"refit on training + validation for {epochs} (chosen on validation), tested once"
    assert model.protocol == result["retrain"]["protocol"] == said
    assert "refit" in model.protocol
    assert model.refit
    assert model.test_accuracy == result["test_accuracy"]
    assert model.test_loss != chosen["test_loss"]  # another model
    # what `nasmlcn evaluate` of the refit's run folder says, on the same test images
    evaluation = evaluate_run(load_run(refit), test_limit=20, device="cpu")
    assert evaluation.test_images == model.test_images == 20
    assert evaluation.test_accuracy == pytest.approx(model.test_accuracy, abs=1e-9)
    # resumed, both folders are taken up as they are: nothing trains again
    again = retrain_study("s", trained.storage, replace(options, resume=True)).models[0]
    assert (again.test_accuracy, again.validation_run_test_accuracy) == (
        model.test_accuracy,
        model.validation_run_test_accuracy,
    )
    # and without --resume the occupied refit folder is refused before any training
    (first / "checkpoint.pt").rename(tmp_path / "moved.pt")
    (first / "result.json").rename(tmp_path / "moved.json")  # (else that folder is refused)
    with pytest.raises(CheckpointError, match="-refit' already holds a checkpoint"):
        retrain_study("s", trained.storage, options)
    assert not (first / "checkpoint.pt").exists()


def test_retraining_again_with_other_settings_is_kept_beside_and_the_longest_answers(
    trained: SearchConfig, tmp_path: Path
) -> None:
    storage = _own_copy(trained, tmp_path)
    # a quick check (`retrain --top 1 --epochs 1 --train-limit 100`) replaced a stored
    # full retraining, and `best` then said the model "did not learn"
    first = retrain_study("s", storage, RetrainOptions(top=1, out_dir=str(tmp_path / "a"), **TINY))
    quick = RetrainOptions(
        top=1,
        out_dir=str(tmp_path / "b"),
        epochs=2,
        train_limit=10,
        test_limit=10,
        inference_batch_size=1,
    )
    again = retrain_study("s", storage, quick)
    (number,) = {m.number for m in (*first.models, *again.models)}
    models = retrained_models(study_info(load_existing_study("s", storage)))
    mine = [m for m in models if m.number == number and m.seed == trained.seed]
    assert sorted(m.epochs for m in mine) == [1, 2], "both kept"
    # the answer trained most (1 x 50 images against 2 x 10), whichever came last
    answer = retrained_by_trial(study_info(load_existing_study("s", storage)))[number]
    assert (answer.epochs, answer.train_images) == (1, 50)
    assert again.stored == (
        f"trial {number}: stored beside 1 earlier retraining, kept: "
        f"{first.models[0].test_accuracy:.4f} (1 ep x 50 images (train limit 50, test limit "
        f"30), seed {trained.seed}); 'nasmlcn best' shows the one of 1 ep x 50 images (train "
        f"limit 50, test limit 30), seed {trained.seed}",
    )
    # the very same settings and seed again: that one entry is replaced, and said so
    twice = retrain_study("s", storage, replace(quick, out_dir=str(tmp_path / "c")))
    assert twice.stored[0].startswith(f"trial {number}: replaced 1 retraining with the same")
    models = retrained_models(study_info(load_existing_study("s", storage)))
    assert len([m for m in models if m.number == number and m.seed == trained.seed]) == 2
    assert any(m.run_dir.endswith(f"c/trial-{number:04d}") for m in models)


def test_another_seed_is_another_entry_and_run_folder_and_the_search_seed_stays_the_default(
    trained: SearchConfig, tmp_path: Path
) -> None:
    storage = _own_copy(trained, tmp_path)
    out = str(tmp_path / "seeds")
    default = retrain_study("s", storage, RetrainOptions(top=1, out_dir=out, **TINY))
    other = retrain_study("s", storage, RetrainOptions(top=1, out_dir=out, seed=3, **TINY))
    [first], [second] = default.models, other.models
    number = first.number
    assert second.number == number
    assert (first.seed, second.seed) == (trained.seed, 3)
    assert first.run_dir == str((tmp_path / "seeds" / f"trial-{number:04d}").resolve())
    assert second.run_dir == str((tmp_path / "seeds" / f"trial-{number:04d}-seed-3").resolve())
    # another split and initialisation: another model (same architecture and epochs)
    assert second.test_loss != first.test_loss
    result = json.loads((Path(second.run_dir) / "result.json").read_text())
    assert result["retrain"]["seed"] == 3
    info = study_info(load_existing_study("s", storage))
    mine = [m for m in retrained_models(info) if m.number == number]
    assert [m.seed for m in mine] == sorted([trained.seed, 3])
    # what best and the correlation compare with the search: the search's seed
    assert retrained_by_trial(info)[number].seed == trained.seed
    # the same seed again replaces its own entry only
    retrain_study(
        "s", storage, RetrainOptions(top=1, out_dir=str(tmp_path / "again"), seed=3, **TINY)
    )
    info = study_info(load_existing_study("s", storage))
    assert [m.seed for m in retrained_models(info) if m.number == number] == sorted(
        [trained.seed, 3]
    )


def test_by_trial_takes_the_search_seed_else_the_lowest() -> None:
    info = {
        "config": {"dataset": "synthetic", "seed": 5},
        "retrained": {
            "models": [
                _model(1, 0.7, seed=9).to_dict(),
                _model(1, 0.8, seed=5).to_dict(),
                _model(2, 0.6, seed=4).to_dict(),
                _model(2, 0.5, seed=8).to_dict(),
                _model(3, 0.4).to_dict(),  # written before seeds were stored
                _model(3, 0.3, seed=1).to_dict(),
            ]
        },
    }
    chosen = retrained_by_trial(info)
    assert {n: m.test_accuracy for n, m in chosen.items()} == {1: 0.8, 2: 0.6, 3: 0.4}


def test_pareto_retrains_the_front_of_a_multi_objective_study(
    trained: SearchConfig, tmp_path: Path
) -> None:
    study = load_existing_study("s", trained.storage)
    front = [t.number for t in best_trials(study)]
    report = retrain_study(
        "s",
        trained.storage,
        RetrainOptions(pareto=True, out_dir=str(tmp_path), **PARETO_TINY),
    )
    assert [m.number for m in report.models] == front
    assert report.selection == "pareto"


def test_correlation_with_the_retrained_test_accuracy_over_every_trial(
    trained: SearchConfig, tmp_path: Path
) -> None:
    storage = _own_copy(trained, tmp_path)
    report = retrain_study("s", storage, RetrainOptions(top=3, out_dir=str(tmp_path), **TINY))
    study = load_existing_study("s", storage)
    corr = correlation_report(study)
    curves = [
        study.trials[m.number].user_attrs["training"]["val_accuracy_per_epoch"]
        for m in report.models
    ]
    tests = [m.test_accuracy for m in report.models]
    assert [c.epoch for c in corr.retrained] == [1, 2]
    for c in corr.retrained:
        at_n = [curve[c.epoch - 1] for curve in curves]
        assert c.trials == 3
        if len(set(at_n)) > 1 and len(set(tests)) > 1:
            assert c.pearson == pytest.approx(stats.pearsonr(at_n, tests).statistic)


def test_pareto_on_a_single_objective_study_is_its_best_trial(
    proxy: SearchConfig, tmp_path: Path
) -> None:
    study = load_existing_study("s", proxy.storage)
    report = retrain_study(
        "s",
        proxy.storage,
        RetrainOptions(pareto=True, out_dir=str(tmp_path), allow_proxy=True, **PARETO_TINY),
    )
    assert [m.number for m in report.models] == _ranked(study)[:1]


def test_top_k_are_k_different_models(proxy: SearchConfig, tmp_path: Path) -> None:
    from optuna.trial import create_trial

    url = f"sqlite:///{tmp_path / 'copy.db'}"
    optuna.copy_study(
        from_study_name="s", from_storage=proxy.storage, to_storage=url, to_study_name="s"
    )
    study = load_existing_study("s", url, read_only=False)
    first, second = _ranked(study)[:2]
    best = study.trials[first]
    assert best.values is not None
    # a sampler proposing the best point again: the same model, a little less accurate
    study.add_trial(
        create_trial(
            values=[best.values[0] - 1e-9],
            params=best.params,
            distributions=best.distributions,
            user_attrs=best.user_attrs,
            system_attrs=best.system_attrs,
        )
    )
    copy = study.trials[-1].number
    assert _ranked(study)[:3] == [first, copy, second]
    options = RetrainOptions(top=2, out_dir=str(tmp_path / "r"), allow_proxy=True)
    targets = plan_retrain(study, options)
    assert [t.number for t in targets] == [first, second]
    # and it says so: the repeat skipped, by name
    assert selection_notes(study, options) == [
        f"trial {copy} skipped: the same model and training as trial {first}"
    ]
    many = replace(options, top=len(study.trials) + 5)
    assert selection_notes(study, many)[-1].startswith(
        f"{len(study.trials) - 1} of the top {len(study.trials) + 5}: the study has "
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pareto": True, "top": 2}, "give pareto or top K, not both"),
        ({}, "say which trials to retrain: pareto"),
        ({"top": 0}, "top must be >= 1, got 0"),
        ({"top": 1, "seed": -1}, "seed must be an integer >= 0, got -1"),
    ],
)
def test_bad_selections_are_refused(options: dict[str, Any], message: str) -> None:
    """The library names the fields; the CLI, their options (``--pareto``, ``--top``)."""
    with pytest.raises(SearchError, match=message) as err:
        RetrainOptions(**options)
    assert "--" not in str(err.value)
    if "pareto" in message:
        assert "--pareto" in err.value.for_cli()
        assert "--top K" in err.value.for_cli()


def _attrs(config: SearchConfig) -> dict[str, object]:
    return dict(load_existing_study("s", config.storage).user_attrs)


def test_refusals_leave_the_study_and_the_run_folder_untouched(
    proxy: SearchConfig, tmp_path: Path
) -> None:
    before = _attrs(proxy)
    with pytest.raises(UnknownNameError, match="nope"):
        retrain_study(
            "s",
            proxy.storage,
            RetrainOptions(top=1, dataset="nope", out_dir=str(tmp_path / "x"), allow_proxy=True),
        )
    assert not (tmp_path / "x").exists()
    best = _ranked(load_existing_study("s", proxy.storage))[0]
    taken = tmp_path / "taken" / f"trial-{best:04d}"
    taken.mkdir(parents=True)
    (taken / "checkpoint.pt").write_bytes(b"mine")
    with pytest.raises(CheckpointError, match="already holds a checkpoint"):
        retrain_study(
            "s",
            proxy.storage,
            RetrainOptions(top=1, out_dir=str(tmp_path / "taken"), allow_proxy=True),
        )
    assert (taken / "checkpoint.pt").read_bytes() == b"mine"
    # a proxy study's "best" were chosen by made-up figures: refused unless asked
    with pytest.raises(SearchError, match="searched with the proxy evaluator") as err:
        retrain_study("s", proxy.storage, RetrainOptions(top=1, out_dir=str(tmp_path / "p")))
    assert "--allow-proxy" in err.value.for_cli()
    assert not (tmp_path / "p").exists()
    assert _attrs(proxy) == before


def test_a_study_without_completed_trials_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    study = optuna.create_study(study_name="empty", storage=url)
    study.ask()  # a running trial, none completed
    with pytest.raises(SearchError, match="no completed feasible trial to retrain"):
        retrain_study("empty", url, RetrainOptions(top=1, out_dir=str(tmp_path / "r")))


# -- the record and the correlation (pure) ------------------------------------------


def _model(number: int, test_accuracy: float, **extra: Any) -> RetrainedModel:
    fields: dict[str, Any] = {
        "number": number, "dataset": "synthetic", "lanes": "2*mlcn1:1x1",
        "test_accuracy": test_accuracy, "test_loss": 0.1, "test_images": 10, "params": 5,
        "epochs": 1, "batch_size": 10, "lr": 1e-3, "train_images": 10,
        "train_images_per_second": 1.0, "inference_images_per_second": 2.0,
        "inference_batch_size": 100, "device": "cpu", "seconds": 1.0,
        "search_accuracy": 0.5, "search_epochs": 2, **extra,
    }  # fmt: skip
    return RetrainedModel(**fields)


def test_records_round_trip_and_newer_or_broken_ones_are_skipped() -> None:
    model = _model(3, 0.8)
    info = {
        "retrained": {
            "version": RETRAINED_VERSION,
            "models": [
                {**model.to_dict(), "added_later": 1},
                {**_model(4, 0.7).to_dict(), "version": RETRAINED_VERSION + 1},
                {"number": 5},
            ],
        }
    }
    assert retrained_models(info) == [model]
    assert retrained_models({}) == []


def _shown(proxy: SearchConfig, folder: Path, entries: list[dict[str, Any]]) -> tuple[str, str]:
    """A copy of the proxy's study whose retrained models are ``entries`` (as stored):
    what ``nasmlcn best`` prints, and the study note the dashboard shows."""
    import optuna_dashboard

    from nasmlcn.dashboard import refresh_study
    from nasmlcn.study import update_study_info
    from tests.conftest import run_cli

    url = f"sqlite:///{folder / 'copy.db'}"
    optuna.copy_study(
        from_study_name="s", from_storage=proxy.storage, to_storage=url, to_study_name="s"
    )
    study = load_existing_study("s", url, read_only=False)
    update_study_info(study, "retrained", {"version": RETRAINED_VERSION, "models": entries})
    best = run_cli("best", "--storage", url, "--top", "5", env={"COLUMNS": "250"})
    assert best.returncode == 0, best.stderr
    refresh_study(study, notes="none")
    return best.stdout, optuna_dashboard.get_note(study)


def test_an_entry_stored_before_epochs_were_selected_still_loads_and_shows(
    proxy: SearchConfig, tmp_path: Path
) -> None:
    new = ("selected_epoch", "last_epoch_test_accuracy", "protocol", "validation_run_test_accuracy")
    old = {k: v for k, v in _model(3, 0.8, epochs=20).to_dict().items() if k not in new}
    info = {"retrained": {"version": RETRAINED_VERSION, "models": [old]}}
    [model] = retrained_models(info)
    assert (model.selected_epoch, model.protocol, model.refit) == (None, "", False)
    assert model.protocol_text == "test after the last epoch"
    table, note = _shown(proxy, tmp_path, [old])  # best's line under its table, the note's row
    assert "test acc 0.8000 (ep 20/20, last)" in table
    assert "| 0.8000 (ep 20/20, last) |" in note


def test_the_tested_model_is_named_in_each_cell(proxy: SearchConfig, tmp_path: Path) -> None:
    selected = _model(3, 0.9012, epochs=10, selected_epoch=9, protocol="p")
    refit = replace(selected, validation_run_test_accuracy=0.89, protocol="refit ...")
    table, _ = _shown(proxy, tmp_path, [selected.to_dict(), replace(refit, number=4).to_dict()])
    assert "test acc 0.9012 (ep 9/10 by val.)" in table  # the lines under best's table
    assert "test acc 0.9012 (refit, 9 ep)" in table


def test_final_correlations_match_scipy_and_epoch_correlations_use_the_last_epoch() -> None:
    curves = [[0.1, 0.3, 0.5], [0.2, 0.2, 0.6], [0.4, 0.5, 0.55], [0.3, 0.6, 0.9], [0.5]]
    finals = [0.52, 0.61, 0.58, 0.93, 0.1]
    rows = final_correlations(curves, finals)
    assert [r.trials for r in rows] == [4, 4, 4]  # the odd one-epoch curve is left out
    for r in rows:
        at_n = [c[r.epoch - 1] for c in curves[:4]]
        assert r.pearson == pytest.approx(stats.pearsonr(at_n, finals[:4]).statistic)
        assert r.spearman == pytest.approx(stats.spearmanr(at_n, finals[:4]).statistic)
    assert epoch_correlations(curves) == final_correlations(curves[:4], [c[-1] for c in curves[:4]])


def test_retrained_correlations_pair_each_curve_with_its_own_trial() -> None:
    curves = {1: [0.1, 0.2], 2: [0.3, 0.4], 3: [0.5, 0.9], 9: [0.9, 0.9]}
    models = [_model(3, 0.95), _model(1, 0.2), _model(2, 0.5), _model(7, 0.1)]  # 7: no curve
    rows = retrained_correlations(curves, models)
    assert [(r.epoch, r.trials) for r in rows] == [(1, 3), (2, 3)]
    assert rows[0].spearman == pytest.approx(1.0)
    expected = np.corrcoef([0.1, 0.3, 0.5], [0.2, 0.5, 0.95])[0, 1]
    assert rows[0].pearson == pytest.approx(expected)
    assert math.isnan(retrained_correlations({1: [0.5]}, [_model(1, 0.2)])[0].pearson)


def test_the_report_names_the_run_folders_it_wrote() -> None:
    from nasmlcn.search import RetrainReport

    plain = RetrainReport("s", "top 1", "synthetic", "out", ())
    seeded = replace(plain, seed=1)
    assert plain.run_folders == "trial-NNNN"
    assert seeded.run_folders == "trial-NNNN-seed-1"
    assert run_folder(7, 1) == "trial-0007-seed-1"  # the folder that pattern names
