"""The search measures its own noise: once ``--replicate-after`` models have
completed, the best so far trains once more with another seed (a replicate), once
per study, workers included; it changes no trial, counts toward nothing, and the
summary, ``--json`` and the live display carry the estimate."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from optuna.trial import FrozenTrial, TrialState

from nasmlcn.search import SearchConfig, run_search
from nasmlcn.study import (
    TrialRecord,
    claim_replicate,
    load_existing_study,
    release_replicate,
    replicates,
    study_info,
)
from tests.conftest import ROOT, run_cli, small_search
from tests.search._replicate_script import NoisyProxy, Replicating, config


def _models(trials: list[FrozenTrial]) -> list[FrozenTrial]:
    """The completed models as the replicate counts them: COMPLETE, feasible, no
    repeat, in trial order."""
    return [
        t
        for t in trials
        if t.state == TrialState.COMPLETE
        and TrialRecord.of(t).feasible
        and TrialRecord.of(t).repeat_of is None
    ]


def _seen(trials: list[FrozenTrial]) -> list[tuple[object, ...]]:
    """What a trial is, the figures it measured included."""
    return [
        (
            t.number,
            t.state,
            t.params,
            t.values,
            t.user_attrs.get("training", {}).get("val_accuracy_per_epoch"),
            t.user_attrs.get("training", {}).get("training_seed"),
            t.user_attrs.get("repeat_of"),
        )
        for t in trials
    ]


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> tuple[SearchConfig, SearchConfig]:
    """The same small training search with replicates after 3 models, and without."""
    on = small_search(tmp_path_factory.mktemp("on"), trials=5, replicate_after=3)
    off = small_search(tmp_path_factory.mktemp("off"), trials=5, replicate_after=0)
    return on, off


def test_a_training_search_replicates_the_best_model_so_far_once(
    searched: tuple[SearchConfig, SearchConfig],
) -> None:
    on, _ = searched
    study = load_existing_study("s", on.storage)
    [made] = replicates(study_info(study))
    first = _models(study.trials)[:3]  # the models there were when it became due
    best = max(first, key=lambda t: (t.values[0], -t.number))
    assert made.number == best.number
    assert made.accuracy == best.values[0]  # the search's figure, as the trial keeps it
    assert made.seed == best.user_attrs["training"]["training_seed"]
    assert made.replicate_seed != made.seed
    assert (made.epochs, made.evaluator) == (2, "train")
    assert 0.0 <= made.replicate_accuracy <= 1.0
    assert study_info(study)["replicates"]["claim"] is None


def test_the_replicate_changes_no_trial_no_count_and_no_answer(
    searched: tuple[SearchConfig, SearchConfig],
) -> None:
    from nasmlcn.search import best_trials

    on, off = searched
    with_it, without = load_existing_study("s", on.storage), load_existing_study("s", off.storage)
    assert replicates(study_info(with_it))
    assert "replicates" not in study_info(without)  # replicate_after=0: none
    assert _seen(with_it.trials) == _seen(without.trials)
    assert [t.number for t in best_trials(with_it)] == [t.number for t in best_trials(without)]


def test_search_json_the_summary_and_the_display_carry_the_noise(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    args = (
        *("search", "--devices", "1xK80", "--mem", "12GB", "--flops", "0.05x"),
        *("--dataset", "synthetic", "--epochs", "2", "--batch-size", "10"),
        *("--train-limit", "300", "--val-limit", "50", "--sampler", "random", "--seed", "3"),
        *("--storage", url, "--study", "s", "--run-on", "cpu", "--trials", "3"),
        *("--replicate-after", "3"),
    )
    result = run_cli(*args, "--json", env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    noise = json.loads(result.stdout)["noise"]
    [made] = noise["replicates"]
    assert noise["pairs"] == 1
    assert noise["sd"] == pytest.approx(abs(made["accuracy"] - made["replicate_accuracy"]) / 2**0.5)
    assert noise["margin"] == pytest.approx(1.96 * math.sqrt(2) * noise["sd"])
    # due after the last of 3 models: the replicated one is the answer's best
    assert noise["best"] == made["number"] == noise["within"][0]
    line = (
        f"replicate: trial {made['number']} trained again with another seed: "
        f"{made['replicate_accuracy']:.4f} (its search run {made['accuracy']:.4f}); "
        f"noise: sd {noise['sd']:.3f} from 1 pair"
    )
    assert line in result.stderr.splitlines()
    again = run_cli(*args, env={"COLUMNS": "200"})  # nothing to run: the summary only
    assert again.returncode == 0, again.stderr
    assert f"noise of one run: sd {noise['sd']:.3f} of the accuracy, from 1 replicate" in (
        again.stdout
    )
    assert "replicate:" not in again.stderr  # once per study


def test_only_a_measured_evaluator_replicates_and_0_turns_it_off(tmp_path: Path) -> None:
    proxy = run_search(config(f"sqlite:///{tmp_path / 'p.db'}", "s", 4, 2))
    assert proxy.noise is None
    assert "replicates" not in study_info(load_existing_study("s", proxy.storage))
    off = run_search(config(f"sqlite:///{tmp_path / 'o.db'}", "s", 4, 0), evaluator=NoisyProxy())
    assert off.noise is None
    assert "replicates" not in study_info(load_existing_study("s", off.storage))
    evaluator = NoisyProxy()
    on = run_search(config(f"sqlite:///{tmp_path / 'm.db'}", "s", 4, 2), evaluator=evaluator)
    assert on.noise is not None
    assert len(on.noise["replicates"]) == 1
    assert len(evaluator.requests) == len(on.run_trials) + 1  # one evaluation more
    assert on.trial_counts["models"] == 4  # and no trial more


@pytest.mark.parametrize(
    ("stop", "stopped"),
    [(signal.SIGINT, "interrupted"), (signal.SIGTERM, "terminated")],
    ids=["ctrl-c", "sigterm"],
)
def test_a_stop_during_the_replicate_stops_the_search_and_lets_the_claim_go(
    tmp_path: Path, stop: int, stopped: str
) -> None:
    settings = config(f"sqlite:///{tmp_path / 's.db'}", "s", 4, 2)
    evaluator = NoisyProxy(stop=stop)
    result = run_search(settings, [Replicating(evaluator)], evaluator=evaluator)
    assert result.stopped == stopped
    study = load_existing_study("s", settings.storage)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2  # nothing to retry
    assert study_info(study)["replicates"] == {"version": 1, "claim": None, "models": []}
    # the next run makes it, after its first trial
    evaluator = NoisyProxy()
    again = run_search(settings, [told := Replicating(evaluator)], evaluator=evaluator)
    assert again.stopped == "trials"
    [(made, noise)] = told.ended
    assert made.number in (0, 1, 2)
    assert noise.pairs == 1
    assert [r.number for r in replicates(study_info(study))] == [made.number]


def test_a_failed_replicate_is_let_go_and_the_search_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = config(f"sqlite:///{tmp_path / 's.db'}", "s", 4, 2)
    evaluator = NoisyProxy(fail=True)
    result = run_search(settings, [Replicating(evaluator)], evaluator=evaluator)
    assert (result.stopped, result.trial_counts["models"], result.noise) == ("trials", 4, None)
    study = load_existing_study("s", settings.storage)
    assert study_info(study)["replicates"] == {"version": 1, "claim": None, "models": []}
    assert "the replicate of trial" in caplog.text
    assert "failed: out of memory: CUDA out of memory" in caplog.text


def test_another_worker_s_live_claim_is_left_alone_a_stale_one_taken_over(
    tmp_path: Path,
) -> None:
    settings = config(f"sqlite:///{tmp_path / 's.db'}", "s", 2, 0)
    run_search(settings, evaluator=NoisyProxy())
    study = load_existing_study("s", settings.storage, read_only=False)
    assert claim_replicate(study, 0, "elsewhere:1", stale_after_s=3600.0)
    run_search(settings.with_overrides(trials=3, replicate_after=2), evaluator=NoisyProxy())
    assert replicates(study_info(study)) == []
    assert study_info(study)["replicates"]["claim"]["worker"] == "elsewhere:1"
    release_replicate(study, "elsewhere:1")
    assert claim_replicate(study, 0, "elsewhere:1", stale_after_s=0.0)  # and it died
    run_search(settings.with_overrides(trials=4, replicate_after=2), evaluator=NoisyProxy())
    assert len(replicates(study_info(study))) == 1
    assert study_info(study)["replicates"]["claim"] is None


def test_two_workers_on_one_study_make_one_replicate(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'w.db'}"
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.search._replicate_script", url, "s", "10", "2"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for _ in range(2)
    ]
    started = []
    for worker in workers:
        out, _ = worker.communicate(timeout=120)
        assert worker.returncode == 0
        started.append(int(out.split()[-1]))  # "done N": the replicates it trained
    assert sorted(started) == [0, 1]
    study = load_existing_study("s", url)
    assert len(replicates(study_info(study))) == 1
    assert study_info(study)["replicates"]["claim"] is None
    counted = (TrialState.COMPLETE, TrialState.PRUNED)
    models = [t for t in study.trials if t.state in counted and "repeat_of" not in t.user_attrs]
    assert len(models) == 10  # --trials, as without a replicate


def _row(number: int, accuracy: float, step: float | None) -> dict[str, object]:
    return {"number": number, "values": {"accuracy": accuracy}, "predicted": {"step_time": step}}


def test_the_listed_models_within_noise_and_the_cheapest_of_them() -> None:
    from nasmlcn.search._results.summary import noise_summary
    from nasmlcn.study import Replicate

    pair = Replicate(3, 0.81, 0.79, 5, 6, 2, "train", 1.0, "here:1")  # sd 0.02 / sqrt(2)
    info = {"replicates": {"version": 1, "models": [pair.to_dict()]}}
    rows = [_row(2, 0.78, 1.0), _row(7, 0.80, 2.0), _row(4, 0.765, 0.8), _row(9, 0.76, 0.5)]
    summary = noise_summary(info, rows, ["accuracy"])
    assert summary is not None
    assert summary["margin"] == pytest.approx(0.0392)  # 1.96 * 0.02: #9 is 0.04 below
    assert (summary["best"], summary["within"], summary["listed"]) == (7, [7, 2, 4], 4)
    assert (summary["cheapest"], summary["cheapest_step_ratio"]) == (4, pytest.approx(0.4))
    assert summary["replicates"] == [pair.to_dict()]
    # the best is the cheapest; a step time unknown: no cheapest; no accuracy: no best
    cases: list[tuple[list[dict[str, object]], list[str], str, object]] = [
        ([_row(7, 0.8, 0.1), _row(2, 0.79, 1.0)], ["accuracy"], "cheapest", 7),
        ([_row(7, 0.8, 1.0), _row(2, 0.79, None)], ["accuracy"], "cheapest", None),
        (rows, ["latency_s"], "within", []),
    ]
    for listed, names, key, expected in cases:
        found = noise_summary(info, listed, names)
        assert found is not None
        assert found[key] == expected
    assert noise_summary({}, rows, ["accuracy"]) is None
