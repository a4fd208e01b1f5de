"""Repeats: a trial proposing a model already trained takes the earlier result, the
same model trains with the same seed whatever its trial, and a run that gets only
repeats stops (search/_run/repeats.py)."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from nasmlcn.search import REPEATS_IN_A_ROW, EvalRequest, SearchConfig, run_search
from nasmlcn.search._run import trial as _trial_run
from nasmlcn.search._run.repeats import model_key, trained_original, training_seed, wait_for_twin
from nasmlcn.specs import MLCNSpec
from nasmlcn.study import TrialRecord, load_existing_study


def _config(tmp_path: Path, **overrides: object) -> SearchConfig:
    config = SearchConfig(
        evaluator="proxy",
        sampler="random",
        space="mlcn-table",  # the thesis's few fixed models: proposals repeat
        trials=12,
        epochs=2,
        devices="1xK80",
        mem="12GB",
        prune=False,
        storage=f"sqlite:///{tmp_path / 's.db'}",
        study="s",
        count_repeats=True,  # each proposal a trial: these tests watch single proposals
    )
    return config.with_overrides(**overrides)


def test_a_repeat_takes_its_original_s_result_and_trains_nothing(tmp_path: Path) -> None:
    config = _config(tmp_path)
    result = run_search(config)
    study = load_existing_study("s", config.storage)
    records = {t.number: TrialRecord.of(t) for t in study.trials}
    repeats = [r for r in records.values() if r.repeat_of is not None]
    assert repeats, "12 draws from a handful of models repeat some"
    models = {r.model_key for r in records.values()}
    assert len(models) == len(records) - len(repeats)  # every model trained once
    for repeat in repeats:
        original = records[repeat.repeat_of]  # type: ignore[index]
        assert original.repeat_of is None
        assert original.state == "COMPLETE"
        assert repeat.model_key == original.model_key
        assert repeat.values == original.values
        assert repeat.training["repeat_of"] == original.number
        assert repeat.lanes == original.lanes
    assert result.trial_counts["repeats"] == len(repeats)
    assert sum(t.repeat_of is not None for t in result.run_trials) == len(repeats)


def test_a_run_of_repeats_only_stops_and_says_why(tmp_path: Path) -> None:
    """One model in the space (``--space mlcn-table`` restricted to one row): after
    the first trial every proposal is a repeat."""
    from tests.conftest import ROOT

    text = (ROOT / "search_spaces" / "mlcn-table.toml").read_text()
    assert "models = [" in text
    one = tmp_path / "one.toml"
    rest = text.split("]", 1)[1]  # routing, decoder
    one.write_text(text.split("models = [", 1)[0] + 'models = ["mlcn2-2x4"]' + rest)
    result = run_search(_config(tmp_path, space=str(one), trials=100))
    assert result.stopped == "repeats"
    assert len(result.run_trials) == 1 + REPEATS_IN_A_ROW
    assert [t.repeat_of for t in result.run_trials[1:]] == [0] * REPEATS_IN_A_ROW


def test_one_model_trains_with_one_seed_whatever_its_trial() -> None:
    spec = MLCNSpec.from_lanes("2*mlcn2:4x1")
    settings = {"epochs": 2, "batch_size": 100, "lr": 1e-3, "seed": 0}
    key = model_key(spec, settings)
    assert key == model_key(MLCNSpec.from_lanes("2*mlcn2:4x1"), dict(settings))
    assert key != model_key(spec, {**settings, "lr": 2e-3})
    assert key != model_key(MLCNSpec.from_lanes("2*mlcn2:4x2"), settings)

    def request(trial: int) -> EvalRequest:
        return EvalRequest(
            spec=spec, trial=trial, seed=0, epochs=2, batch_size=100, lr=1e-3,
            lr_policy=None, batch_policy="fixed", assignment=(0, 0),
            model_seed=training_seed(key),
        )  # fmt: skip

    assert request(3).training_seed == request(17).training_seed
    assert EvalRequest(**{**request(3).__dict__, "model_seed": None}).training_seed != (
        request(3).training_seed
    )


@pytest.mark.parametrize("state", [TrialState.PRUNED, TrialState.FAIL])
def test_only_a_completed_model_is_taken(tmp_path: Path, state: TrialState) -> None:
    """A model whose trial was pruned or failed is trained again (it may deserve its
    full length now); a completed one, or a repeat's original, is taken."""
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'k.db'}", study_name="k")
    dist = {"x": FloatDistribution(0, 1)}

    def add(attrs: dict[str, object], **how: object) -> None:
        study.add_trial(
            create_trial(params={"x": 0.5}, distributions=dist, user_attrs=attrs, **how)  # type: ignore[arg-type]
        )

    add({"model_key": "k1"}, state=state)
    assert trained_original(study, "k1") is None
    add({"model_key": "k1"}, value=0.7)
    add({"model_key": "k1", "repeat_of": 1}, value=0.7)
    original = trained_original(study, "k1")
    assert original is not None
    assert original.number == 1
    assert trained_original(study, "other") is None


def test_answers_list_each_model_once(tmp_path: Path) -> None:
    from nasmlcn.search import best_trials, proposals
    from tests.conftest import run_cli

    config = _config(tmp_path, trials=16)
    run_search(config)
    study = load_existing_study("s", config.storage)
    best = best_trials(study, top=16)
    lanes = [TrialRecord.of(t).model_key for t in best]
    assert len(lanes) == len(set(lanes))  # no model twice
    assert all(TrialRecord.of(t).repeat_of is None for t in best)
    # with how many trials proposed it: in best's JSON and table
    proposed = proposals(study)
    repeated = max(proposed, key=lambda n: proposed[n])
    assert proposed[repeated] > 1
    shown = json.loads(run_cli("best", "--storage", config.storage, "--top", "16", "--json").stdout)
    rows = {row["number"]: row for row in shown["best"]}
    assert rows[repeated]["proposed"] == proposed[repeated]
    assert sum(row["proposed"] for row in rows.values()) == len(study.trials)
    table = run_cli("best", "--storage", config.storage, "--top", "16", env={"COLUMNS": "250"})
    assert f"{repeated} (x{proposed[repeated]})" in table.stdout


def test_a_model_finished_elsewhere_meanwhile_makes_this_trial_a_repeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers training one model at once: the one that finishes second takes
    the first one's result (simulated: the original appears during training)."""

    config = _config(tmp_path, trials=2, space="mlcn-homogeneous")
    run_search(config.with_overrides(trials=1))
    first = load_existing_study("s", config.storage).trials[0]
    calls: list[str] = []

    def before(study: optuna.Study, key: str) -> tuple[None, None]:
        calls.append(key)
        return None, None  # nothing yet

    def later(study: optuna.Study, key: str) -> object:
        calls.append(key)
        return first  # found only after training

    monkeypatch.setattr(_trial_run, "originals", before)
    monkeypatch.setattr(_trial_run, "trained_original", later)
    result = run_search(config)
    (outcome,) = result.run_trials
    assert len(calls) == 2  # looked before and after training
    assert outcome.repeat_of == first.number
    assert outcome.values == tuple(first.values)
    record = TrialRecord.of(load_existing_study("s", config.storage).trials[1])
    assert record.repeat_of == first.number


@pytest.mark.parametrize("ends_after", [1, 2], ids=["first-look", "second-look"])
def test_a_twin_that_ends_between_this_trial_s_looks_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ends_after: int
) -> None:
    """Another worker's trial training the same model completes right after this
    trial's first (or second) look at the study: this trial takes its result and
    trains nothing. Looking for a finished original before a running twin missed a
    twin that ended in between, and the model was trained twice."""

    config = _config(tmp_path, trials=2, space="mlcn-homogeneous")
    run_search(config.with_overrides(trials=1))
    first = load_existing_study("s", config.storage).trials[0]
    looks: list[str] = []

    def running_twin(study: optuna.Study, key: str, number: int) -> object:
        looks.append("running")
        return first if len(looks) <= ends_after else None

    def originals(study: optuna.Study, key: str) -> tuple[object, None]:
        looks.append("finished")
        return (None if len(looks) <= ends_after else first), None

    def waited(study: optuna.Study, key: str, number: int, **how: object) -> None:
        looks.append("wait")
        return None  # the twin had ended: no trial of the model runs

    monkeypatch.setattr(_trial_run, "running_twin", running_twin)
    monkeypatch.setattr(_trial_run, "originals", originals)
    monkeypatch.setattr(_trial_run, "wait_for_twin", waited)
    monkeypatch.setattr(_trial_run, "trained_original", lambda study, key: None)
    (outcome,) = run_search(config).run_trials
    assert outcome.repeat_of == first.number, looks
    assert outcome.values == tuple(first.values)


def test_without_counting_repeats_trials_is_a_budget_of_trainings(tmp_path: Path) -> None:
    """--no-count-repeats: every trial that counts toward --trials trained a model of
    its own; the repeats come on top, and the summary says they did not count."""
    from tests.conftest import run_cli

    config = _config(tmp_path, trials=8, count_repeats=False)
    result = run_search(config)
    study = load_existing_study("s", config.storage)
    records = [TrialRecord.of(t) for t in study.trials]
    trained = [r for r in records if r.repeat_of is None]
    repeats = [r for r in records if r.repeat_of is not None]
    assert repeats, "the table space repeats within 8 trainings"
    assert result.stopped == "trials"
    assert len(trained) == 8
    assert len({r.model_key for r in trained}) == 8  # 8 models, each trained once
    # counted, the same settings stop at 8 trials in all, fewer of them trained
    (tmp_path / "c").mkdir()
    counted = run_search(_config(tmp_path / "c", trials=8))
    assert counted.n_trials == 8
    assert sum(t.repeat_of is None for t in counted.run_trials) < 8
    # a re-run has nothing left to do, and the summary says how the repeats counted
    again = run_cli("search", *_cli_args(config), env={"COLUMNS": "300"})
    assert again.returncode == 0, again.stderr
    assert "were repeats of models already trained or pruned" in again.stdout
    assert "not counted" in again.stdout
    assert len(load_existing_study("s", config.storage).trials) == len(records)


def _cli_args(config: SearchConfig) -> list[str]:
    return [
        "--evaluator", "proxy", "--sampler", "random", "--space", "mlcn-table",
        "--trials", str(config.trials), "--epochs", "2", "--devices", "1xK80",
        "--mem", "12GB", "--no-prune", "--storage", config.storage, "--study", "s",
        "--no-count-repeats", "--seed", str(config.seed),
    ]  # fmt: skip


def _twin_study(tmp_path: Path, grace: int = 60) -> tuple[optuna.Study, optuna.Trial]:
    """A study whose trial 0 is RUNNING (another worker's, which recorded one
    heartbeat) and trains model k1; stale after ``grace`` seconds."""
    from nasmlcn.study import trial_id_of

    storage = optuna.storages.RDBStorage(
        f"sqlite:///{tmp_path / 't.db'}", heartbeat_interval=1, grace_period=grace
    )
    study = optuna.create_study(storage=storage, study_name="t")
    twin = study.ask()
    twin.set_user_attr("model_key", "k1")
    storage.record_heartbeat(trial_id_of(twin))
    return study, twin


@pytest.mark.parametrize("ends", ["complete", "pruned", "failed"])
def test_a_model_another_worker_is_training_is_waited_for(tmp_path: Path, ends: str) -> None:
    """Trial 1 proposes the model trial 0 trains elsewhere: it waits, then takes
    trial 0's result; a pruned or failed twin leaves the training to trial 1."""
    import threading
    import time

    study, twin = _twin_study(tmp_path)

    def finish() -> None:
        time.sleep(0.6)
        if ends == "complete":
            study.tell(twin, 0.8)
        else:
            study.tell(twin, state=TrialState.PRUNED if ends == "pruned" else TrialState.FAIL)

    waiter = threading.Thread(target=finish)
    tick = time.perf_counter()
    waiter.start()
    got = wait_for_twin(study, "k1", 1, poll=0.1, grace=60, max_retries=0)
    waiter.join()
    assert time.perf_counter() - tick >= 0.5  # it waited for the twin
    if ends == "complete":
        assert got is not None
        assert got.number == 0
        assert got.values == [0.8]
    else:
        assert got is None
    # no twin: nothing to wait for (a later trial is never waited for, so two
    # workers never wait on each other)
    assert wait_for_twin(study, "k2", 1, poll=0.1, grace=60, max_retries=0) is None
    assert wait_for_twin(study, "k1", 0, poll=0.1, grace=60, max_retries=0) is None


def test_a_twin_whose_worker_died_is_not_waited_for(tmp_path: Path) -> None:
    """No heartbeat for --grace seconds: the twin is failed (and queued again), and
    the waiting trial trains the model itself."""
    import time

    study, _ = _twin_study(tmp_path, grace=1)
    tick = time.perf_counter()
    assert wait_for_twin(study, "k1", 1, poll=0.2, grace=1.0, max_retries=1) is None
    assert time.perf_counter() - tick < 30
    assert study.trials[0].state == TrialState.FAIL


def test_a_trial_run_takes_the_twin_s_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wired in: a trial whose model a twin finished while it waited is a repeat of
    it, and trains nothing."""

    config = _config(tmp_path, trials=2, space="mlcn-homogeneous")
    run_search(config.with_overrides(trials=1))
    first = load_existing_study("s", config.storage).trials[0]
    monkeypatch.setattr(_trial_run, "originals", lambda study, key: (None, None))
    monkeypatch.setattr(_trial_run, "trained_original", lambda study, key: None)
    waited: list[int] = []

    def twin_done(study: optuna.Study, key: str, number: int, **how: object) -> object:
        waited.append(number)
        return first

    monkeypatch.setattr(_trial_run, "running_twin", lambda study, key, number: first)
    monkeypatch.setattr(_trial_run, "wait_for_twin", twin_done)
    (outcome,) = run_search(config).run_trials
    assert waited == [1]
    assert outcome.repeat_of == first.number
