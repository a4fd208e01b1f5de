"""Checkpoints and weights of trained trials as Optuna artifacts: a trial stopped
mid-training resumes from its last epoch with the result of an uninterrupted run;
finished trials keep their weights; ``--keep-weights`` keeps fewer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from optuna.artifacts import get_all_artifact_meta
from optuna.trial import TrialState

from nasmlcn.errors import SearchError
from nasmlcn.search import (
    EpochCallback,
    EpochDecision,
    EpochReport,
    EvalRequest,
    Evaluation,
    SearchConfig,
    TrainEvaluator,
    run_search,
)
from nasmlcn.study import TrialRecord, artifacts_dir, load_existing_study, parse_keep
from nasmlcn.training import load_checkpoint


def _folder(path: Path) -> Path:
    """``path``, made (a storage's folder must exist)."""
    path.mkdir(parents=True, exist_ok=True)
    return path


def _config(data_dir: Path, tmp_path: Path, name: str, **kw: Any) -> SearchConfig:
    base: dict[str, Any] = {
        "devices": "2xK80",
        "mem": "12GB",
        "flops": "0.1x",  # small models: a few seconds a trial on one thread
        "evaluator": "train",
        "dataset": "fashion-mnist",
        "data_dir": str(data_dir),
        "epochs": 3,
        "train_limit": 300,
        "val_limit": 200,
        "batch_size": 20,  # enough steps that the models learn (beat chance clearly)
        "trials": 1,
        "sampler": "random",
        "storage": f"sqlite:///{_folder(tmp_path / name) / 'study.db'}",  # artifacts/ beside it
        "study": "s",
        "run_on": "cpu",
        "seed": 3,
        "prune": False,
    }
    base.update(kw)
    return SearchConfig(**base)


class _StopAfter(TrainEvaluator):
    """Ctrl-C after ``epoch`` epochs (the epoch's checkpoint is stored by then)."""

    def __init__(self, epoch: int, **kw: Any) -> None:
        super().__init__(**kw)
        self.epoch = epoch

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        def stop(report: EpochReport) -> EpochDecision:
            decision = on_epoch(report)
            if report.epoch == self.epoch:
                raise KeyboardInterrupt
            return decision

        return super().evaluate(job, stop)


def _weights(config: SearchConfig, trial: Any) -> dict[str, torch.Tensor]:
    weights = trial.user_attrs["weights"]
    path = artifacts_dir(config.storage, None) / weights["artifact_id"]
    return load_checkpoint(path)["model"]


def test_a_stopped_trial_resumes_from_its_checkpoint_with_identical_results(
    data_dir: Path, tmp_path: Path
) -> None:
    small = {"train_limit": 100, "val_limit": 100}  # equality, not learning, is checked
    whole = _config(data_dir, tmp_path, "whole", **small)
    run_search(whole)
    (reference,) = load_existing_study("s", whole.storage).trials

    cut = _config(data_dir, tmp_path, "cut", **small)
    stopped = run_search(cut, evaluator=_StopAfter(2, config=cut, dataset=_dataset()))
    assert stopped.stopped == "interrupted"
    study = load_existing_study("s", cut.storage)
    _failed, queued = study.trials
    assert queued.state == TrialState.WAITING
    assert queued.user_attrs["checkpoint"]["epoch"] == 2  # what the retry resumes from
    assert queued.params == reference.params
    resumed = run_search(cut)
    (outcome,) = resumed.run_trials
    assert outcome.number == queued.number
    assert outcome.state == "COMPLETE"
    done = load_existing_study("s", cut.storage).trials[queued.number]
    training = done.user_attrs["training"]
    assert done.user_attrs["resumed_from_epoch"] == 2
    # epochs 1-2 come from the checkpoint, epoch 3 was trained after resuming
    assert [e["epoch"] for e in training["extra"]["per_epoch"]] == [1, 2, 3]
    assert (
        training["val_accuracy_per_epoch"]
        == reference.user_attrs["training"]["val_accuracy_per_epoch"]
    )
    assert done.value == reference.value
    ours, theirs = _weights(cut, done), _weights(whole, reference)
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    # the working checkpoints are gone; the weights are listed on the trial
    files = {p.name for p in artifacts_dir(cut.storage, None).iterdir()}
    assert files == {done.user_attrs["weights"]["artifact_id"]}
    metas = get_all_artifact_meta(done, storage=load_existing_study("s", cut.storage)._storage)
    assert [m.artifact_id for m in metas] == [done.user_attrs["weights"]["artifact_id"]]
    assert metas[0].filename == f"trial-{done.number}.pt"
    # the weights are a copy of the last epoch's checkpoint without its resume state;
    # that checkpoint went once the trial was told
    assert done.user_attrs["checkpoint"]["epoch"] == 3
    assert done.user_attrs["checkpoint"]["artifact_id"] not in files


def _tensors(payload: Any) -> list[torch.Tensor]:
    """Every tensor in a loaded checkpoint (nested dicts included)."""
    if isinstance(payload, torch.Tensor):
        return [payload]
    if isinstance(payload, dict):
        return [t for v in payload.values() for t in _tensors(v)]
    return []


def _model_file_bytes(payload: dict[str, Any]) -> int:
    """The most a file of what loading the model reads (its weights and the selected
    epoch's) takes: their bytes, and torch.save's archive around them (a file header,
    and per tensor a record, two zip headers and padding: about 280 bytes measured)."""
    model = _tensors(payload["model"]) + _tensors(payload.get("selected"))
    return sum(t.numel() * t.element_size() for t in model) + 4096 + 512 * len(model)


def _trained_checkpoint(path: Path, epoch: int, epochs: int) -> None:
    """A real checkpoint after ``epoch`` of ``epochs``, with Adam's state (one step)."""
    from nasmlcn.models import build_model
    from nasmlcn.specs import MLCNSpec
    from nasmlcn.training import save_checkpoint

    spec = MLCNSpec.from_lanes("mlcn1:2x1")
    model = build_model(spec)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    out = model(torch.rand(2, 1, 28, 28))
    (out.lengths.sum() + out.reconstruction.sum()).backward()
    optimizer.step()
    save_checkpoint(
        path, arch=spec, model=model, epoch=epoch, optimizer=optimizer,
        train_config={"epochs": epochs},
    )  # fmt: skip


@pytest.mark.parametrize(("epoch", "resumable"), [(2, False), (1, True)])
def test_a_finished_trial_keeps_weights_without_the_state_only_a_resume_needs(
    tmp_path: Path, epoch: int, resumable: bool
) -> None:
    """A trial that ran all its epochs keeps its weights without Adam's state (twice
    the model: a kept trial's file was three times its weights); one with epochs
    left, pruned, keeps it for the ``train --resume`` that ``best --export`` prints.
    Until the trial is told, its stored checkpoint keeps everything for a retry."""
    import optuna

    from nasmlcn.study import TrialFiles, open_store
    from nasmlcn.training import load_model

    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 's.db'}")
    store = open_store(tmp_path / "artifacts")
    trial = study.ask()
    files = TrialFiles(store, trial, tmp_path)
    _trained_checkpoint(files.path, epoch=epoch, epochs=2)
    files.saved(epoch)
    weights = files.keep()
    assert weights is not None
    stored = tmp_path / "artifacts" / trial.user_attrs["checkpoint"]["artifact_id"]
    working = torch.load(stored, weights_only=True)
    assert {"optimizer", "scheduler"} & working.keys() == {"optimizer"}  # a retry resumes
    files.close()
    assert {p.name for p in (tmp_path / "artifacts").iterdir()} == {weights}
    kept = tmp_path / "artifacts" / weights
    payload = torch.load(kept, weights_only=True)
    assert ("optimizer" in payload) is resumable
    if not resumable:
        assert kept.stat().st_size <= _model_file_bytes(payload)
    model, _ = load_model(kept)
    state = model.state_dict()
    assert all(torch.equal(state[k], working["model"][k]) for k in working["model"])
    metas = get_all_artifact_meta(trial, storage=study._storage)
    assert [(m.artifact_id, m.filename) for m in metas] == [(weights, files.path.name)]


def test_a_file_another_evaluator_wrote_is_kept_as_written(tmp_path: Path) -> None:
    import optuna

    from nasmlcn.study import TrialFiles, open_store

    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 's.db'}")
    trial = study.ask()
    files = TrialFiles(open_store(tmp_path / "artifacts"), trial, tmp_path)
    files.path.write_bytes(b"epoch 1")
    files.saved(1)
    weights = files.keep()
    files.close()
    assert weights is not None
    assert {p.name for p in (tmp_path / "artifacts").iterdir()} == {weights}
    assert (tmp_path / "artifacts" / weights).read_bytes() == b"epoch 1"


def _dataset() -> Any:
    from nasmlcn.data import DATASETS

    return DATASETS.get("fashion-mnist")


def test_keep_weights_best_k_removes_the_others(data_dir: Path, tmp_path: Path) -> None:
    config = _config(
        data_dir, tmp_path, "keep", trials=3, epochs=1, train_limit=200, keep_weights="best:1"
    )
    run_search(config)
    trials = load_existing_study("s", config.storage).trials
    kept = [t.number for t in trials if TrialRecord.of(t).weights_kept]
    best = max(trials, key=lambda t: t.value or 0.0)
    assert kept == [best.number]
    files = {p.name for p in artifacts_dir(config.storage, None).iterdir()}
    assert files == {best.user_attrs["weights"]["artifact_id"]}


@pytest.fixture(scope="module")
def searched(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> SearchConfig:
    """One trial trained for 2 epochs (seed 5: it learns, so it keeps its weights), in
    a storage of its own; the tests that export, evaluate or serve it only read it."""
    config = _config(
        data_dir, tmp_path_factory.mktemp("searched"), "export", epochs=2, train_limit=200, seed=5
    )
    run_search(config)
    return config


@pytest.mark.parametrize("bad", ["some", "best:0", "best:x", ""])
def test_a_bad_keep_policy_is_refused_naming_what_is_accepted(bad: str) -> None:
    with pytest.raises(SearchError, match="use all, pareto or best:K"):
        parse_keep(bad)


def test_best_export_writes_arch_and_weights_that_train_resume_tests(
    data_dir: Path, tmp_path: Path, searched: SearchConfig
) -> None:
    import json
    import shlex

    from tests.conftest import run_cli

    config = searched
    folder = tmp_path / "best"
    result = run_cli("best", "--storage", config.storage, "--export", str(folder), "--json")
    assert result.returncode == 0, result.stderr
    exported = json.loads(result.stdout)["exported"]
    assert exported["trial"] == 0
    assert {p.name for p in folder.iterdir()} == {"arch.json", "checkpoint.pt"}
    (trial,) = load_existing_study("s", config.storage).trials
    theirs = _weights(config, trial)
    ours = load_checkpoint(folder / "checkpoint.pt")["model"]
    assert all(torch.equal(ours[k], theirs[k]) for k in theirs)
    # the trial ran all its epochs: nothing is left to resume (that command trained
    # nothing, then tested on every test image), so the printed command trains a
    # fresh model for twice its epochs, beside the export
    assert exported["command_does"] == "longer"
    command = shlex.split(exported["command"])[1:]
    assert command[:3] == ["train", "--arch", str(folder / "arch.json")]
    assert "--resume" not in command
    assert command[command.index("--out") + 1] == str(tmp_path / "best-4-epochs")
    # the search's split and image limits are part of it (seed 5, train_limit 200,
    # val_limit 200): it validates on the images the search validated on
    assert command[command.index("--seed") + 1] == "5"
    assert command[command.index("--train-limit") + 1] == "200"
    assert command[command.index("--val-limit") + 1] == "200"
    limits = ["--data-dir", str(data_dir), "--test-limit", "200", "-q", "--json"]
    trained = run_cli(*command, *limits)
    assert trained.returncode == 0, trained.stderr
    report = json.loads(trained.stdout)
    assert report["epochs"] == 4
    assert len(report["val_accuracy_per_epoch"]) == 4
    assert 0.0 <= report["test_accuracy"] <= 1.0
    assert {p.name for p in folder.iterdir()} == {"arch.json", "checkpoint.pt"}  # untouched
    shown = run_cli("best", "--storage", config.storage, "--export", str(tmp_path / "again"))
    assert "train a fresh one for twice its epochs: nasmlcn train" in " ".join(shown.stdout.split())
    # a trial without weights (and a bad number) get one clear line each
    missing = run_cli("best", "--storage", config.storage, "--export", str(folder), "--trial", "5")
    assert missing.returncode != 0
    assert missing.stderr.strip().splitlines() == ["error: --trial 5: study 's' has trials 0-0"]


def test_a_best_export_folder_is_evaluated_and_exported_as_it_stands(
    data_dir: Path, tmp_path: Path, searched: SearchConfig
) -> None:
    """``best --export`` names the study's dataset in the folder, so ``evaluate`` and
    ``export-model`` need no --dataset, and its hint names them."""
    import json

    from tests.conftest import run_cli

    config = searched
    folder = tmp_path / "best"
    shown = run_cli("best", "--storage", config.storage, "--export", str(folder))
    assert shown.returncode == 0, shown.stderr
    assert f"test it: nasmlcn evaluate --run {folder}" in " ".join(shown.stdout.split())
    assert load_checkpoint(folder / "checkpoint.pt")["train_config"]["dataset"] == "fashion-mnist"
    evaluated = run_cli(
        *("evaluate", "--run", str(folder), "--data-dir", str(data_dir)),
        *("--test-limit", "100", "--passes", "1", "--json"),
    )
    assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads(evaluated.stdout)
    assert report["dataset"] == "fashion-mnist"
    assert 0.0 <= report["test_accuracy"] <= 1.0
    exported = run_cli("export-model", "--run", str(folder), "--json")
    assert exported.returncode == 0, exported.stderr
    assert Path(json.loads(exported.stdout)["path"]).is_file()


def test_a_searched_trial_s_weights_hold_what_loading_its_model_needs(
    searched: SearchConfig,
) -> None:
    """A finished trial's weights were its last checkpoint as it was, Adam's two
    moments of every parameter included: three times the model (28 MB for a
    1xK80 fashion-mnist trial whose model is 9.3 MB). The exports read them in the
    tests above and the dashboard serves them (below)."""
    from nasmlcn.training import load_model

    (trial,) = load_existing_study("s", searched.storage).trials
    path = artifacts_dir(searched.storage, None) / trial.user_attrs["weights"]["artifact_id"]
    payload = torch.load(path, weights_only=True)
    assert not {"optimizer", "scheduler"} & payload.keys()
    assert path.stat().st_size <= _model_file_bytes(payload)
    model, _ = load_model(path)
    assert model.state_dict().keys() == payload["model"].keys()


def test_optuna_dashboard_lists_and_serves_a_trial_s_weights(searched: SearchConfig) -> None:
    import json
    import threading
    import urllib.request

    from nasmlcn.dashboard import make_dashboard_server

    config = searched  # its one trial learned, so it kept its weights
    study = load_existing_study("s", config.storage)
    (trial,) = study.trials
    study_id = study._study_id
    weights = trial.user_attrs["weights"]["artifact_id"]
    server = make_dashboard_server(config.storage, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        with urllib.request.urlopen(f"{base}/api/studies/{study_id}?after=0") as r:
            listed = json.load(r)["trials"][0]["artifacts"]
        assert [a["artifact_id"] for a in listed] == [weights]
        url = f"{base}/artifacts/{study_id}/{trial._trial_id}/{weights}"
        with urllib.request.urlopen(url) as r:
            body = r.read()
        path = artifacts_dir(config.storage, None) / weights
        assert body == path.read_bytes()
    finally:
        server.shutdown()
        server.server_close()


def test_the_search_timeout_stops_a_trial_within_a_batch_and_a_re_run_resumes_it(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search's --timeout stops the running trial between two
    batches, as Ctrl-C does (FAIL, queued again, resumed by a re-run), never as
    PRUNED with "saved" seconds. The deadline is a fake one (no wall clock): it
    passes in the second epoch's first batch."""
    from nasmlcn.search import SearchObserver
    from nasmlcn.search._run import trial as _trial_run

    class Epochs(SearchObserver):
        seen = 0

        def on_epoch(self, number: int, report: EpochReport, epochs: int) -> None:
            self.seen += 1

    epochs = Epochs()
    asked_after_epoch_1: list[int] = []

    def deadline(config: SearchConfig, at: float | None) -> Any:
        def check() -> str | None:
            if epochs.seen >= 1:
                asked_after_epoch_1.append(1)
            # the first ask after epoch 1 is the runner's own at the epoch's end
            return "stopped by the test's deadline" if len(asked_after_epoch_1) == 2 else None

        return check

    small = {"train_limit": 100, "val_limit": 100}  # where it stops, not what it learns
    config = _config(data_dir, tmp_path, "timeout", epochs=2, timeout=3600, **small)
    monkeypatch.setattr(_trial_run, "search_deadline", deadline)
    stopped = run_search(config, [epochs])
    monkeypatch.undo()
    assert stopped.stopped == "timeout"
    (outcome,) = stopped.run_trials
    assert outcome.state == "FAIL"
    assert outcome.reason == "stopped by the test's deadline (in epoch 2, batch 1)"
    assert stopped.to_dict()["seconds_saved_by_pruning"] == 0
    failed, queued = load_existing_study("s", config.storage).trials
    assert failed.user_attrs["failure"] == "interrupted"
    assert "seconds_saved" not in failed.user_attrs
    assert queued.state == TrialState.WAITING
    assert queued.user_attrs["checkpoint"]["epoch"] == 1
    resumed = run_search(config)
    assert [(t.number, t.state) for t in resumed.run_trials] == [(queued.number, "COMPLETE")]
    done = load_existing_study("s", config.storage).trials[queued.number]
    assert done.user_attrs["resumed_from_epoch"] == 1


@pytest.mark.parametrize(
    ("state", "attrs", "why"),
    [
        (
            "COMPLETE",
            {"training": {"evaluator": "proxy"}},
            "the study was searched with the proxy evaluator, which trains nothing",
        ),
        ("PRUNED", {"training": {"evaluator": "train"}}, "it was pruned, and a pruned trial"),
        ("COMPLETE", {"repeat_of": 2}, "it took trial 2's result (the same model): export that"),
    ],
)
def test_a_trial_without_weights_says_why_and_offers_its_architecture(
    tmp_path: Path, state: str, attrs: dict[str, Any], why: str
) -> None:
    # it said "only trials trained by this version's train evaluator keep them" for a
    # proxy study and a pruned trial alike, and never named --export-arch
    import optuna

    from nasmlcn.specs import MLCNSpec
    from nasmlcn.study import export_trial, open_store

    arch = {"arch": MLCNSpec.from_lanes("mlcn1:2x1").to_dict()}
    trial = optuna.trial.create_trial(
        state=getattr(optuna.trial.TrialState, state),
        values=[0.5] if state == "COMPLETE" else None,
        params={},
        distributions={},
        user_attrs={**arch, **attrs},
    )
    with pytest.raises(SearchError) as err:
        export_trial(trial, open_store(tmp_path / "store"), tmp_path / "out")
    assert f"has no weights to export: {why}" in str(err.value)
    assert err.value.for_cli().endswith(
        "--export-arch FILE writes its architecture alone, to train with nasmlcn train"
    )
    assert not (tmp_path / "out").exists()
