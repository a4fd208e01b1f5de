"""A trial that learned nothing stays in the study but off the front.

A real search of three trials whose learning rate is searched from 1e-9 to 1e-2: the
trials trained at a learning rate near zero stay at chance accuracy, and they are
the cheapest, so without the ``learning`` constraint they sit on the accuracy-vs-
latency Pareto front (as the trial at 0.098 on Fashion-MNIST did).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nasmlcn.search import SearchConfig, best_trials
from nasmlcn.search.objectives import chance_accuracy, learning_constraint, learning_threshold
from nasmlcn.study import LEARNING_CONSTRAINT, TrialRecord, load_existing_study
from tests.conftest import ROOT, lr_space, run_cli, small_search


def test_the_threshold_is_chance_plus_a_tenth_of_the_way_to_perfect() -> None:
    assert chance_accuracy(10) == pytest.approx(0.1)
    assert learning_threshold(10) == pytest.approx(0.19)
    assert learning_threshold(2) == pytest.approx(0.55)
    assert learning_constraint(0.098, 10) > 0  # the trial of the report
    assert learning_constraint(0.19, 10) <= 1e-12
    assert learning_constraint(0.7, 10) < 0
    with pytest.raises(ValueError, match="num_classes must be >= 2"):
        chance_accuracy(1)


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> SearchConfig:
    folder = tmp_path_factory.mktemp("learning")
    space = lr_space(folder)
    return small_search(
        folder,
        evaluator="train",
        trials=3,  # seed 0: one learns (0.36), two stay near chance, cheaper than it
        objectives=("accuracy", "latency"),
        space=str(space),
        seed=0,
    )


def _dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] >= b[0] and a[1] <= b[1] and a != b


def test_trials_at_chance_are_kept_but_are_not_on_the_front(searched: SearchConfig) -> None:
    study = load_existing_study("s", searched.storage)
    records = [TrialRecord.of(t) for t in study.trials]
    assert [r.state for r in records] == ["COMPLETE"] * 3
    idle = [r for r in records if not r.learned]
    learned = [r for r in records if r.learned]
    assert idle
    assert learned
    for r in idle:  # trained at a learning rate near zero: chance accuracy
        assert r.values is not None
        assert r.values[0] < learning_threshold(10)
        assert r.constraints[LEARNING_CONSTRAINT] > 0
        assert not r.feasible
    for r in learned:
        assert r.values is not None
        assert r.values[0] >= learning_threshold(10)
    front = {t.number for t in best_trials(study)}
    assert front
    assert front <= {r.number for r in learned}
    assert {t.number for t in study.best_trials} == front  # Optuna's own front agrees
    # without the constraint, a trial at chance would be on the front: it is cheaper
    values = {r.number: r.values for r in records if r.values is not None}
    unconstrained = {
        n for n, v in values.items() if not any(_dominates(o, v) for o in values.values())
    }
    assert unconstrained & {r.number for r in idle}


def test_best_leaves_them_out(searched: SearchConfig) -> None:
    study = load_existing_study("s", searched.storage)
    idle = {t.number for t in study.trials if not TrialRecord.of(t).learned}
    best = run_cli("best", "--storage", searched.storage, "--study", "s", "--json")
    assert best.returncode == 0, best.stderr
    shown = {row["number"] for row in json.loads(best.stdout)["best"]}
    assert shown
    assert not shown & idle


def test_the_search_result_lists_them(searched: SearchConfig) -> None:
    from nasmlcn.search import run_search

    result = run_search(searched)  # the study is complete: nothing more runs
    assert result.run_trials == []
    study = load_existing_study("s", searched.storage)
    idle = [t for t in study.trials if not TrialRecord.of(t).learned]
    assert result.to_dict()["not_learning"] == [
        {"number": t.number, "accuracy": t.values[0]} for t in idle
    ]


def test_best_says_why_no_trial_is_listed_when_none_learned(tmp_path: Path) -> None:
    space = tmp_path / "still.toml"  # a learning rate too small to learn anything
    space.write_text(
        (ROOT / "search_spaces" / "mlcn-buckets.toml").read_text()
        + "\n[training]\nlr = [1e-9, 1e-8]\n"
    )
    config = small_search(
        tmp_path, evaluator="train", trials=2, epochs=1, train_limit=20, space=str(space)
    )  # two steps of batch 10: the trials only need to finish, at chance
    best = run_cli("best", "--storage", config.storage, "--study", "s", "--json")
    assert best.returncode == 0, best.stderr
    printed = json.loads(best.stdout)
    assert printed["best"] == []
    assert [t["number"] for t in printed["not_learning"]] == [0, 1]
    text = run_cli("best", "--storage", config.storage, "--study", "s")
    assert "none of the 2 completed trials learned (accuracy near chance" in text.stdout
