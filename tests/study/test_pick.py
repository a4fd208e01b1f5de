"""Choosing from a study's answer: limits by objective name and the front's knee
(``nasmlcn best --max latency=5ms --pick knee``). Before, ``best --export`` always
took the most accurate model (a 69-lane, 1,413 MiB one) and nothing helped to choose."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest

from nasmlcn.errors import SearchError
from nasmlcn.search import SearchConfig, run_search
from nasmlcn.specs import load_arch
from nasmlcn.study import (
    TrialRecord,
    answer_within,
    knee,
    load_existing_study,
    metric_names,
    parse_limits,
    pick,
)
from tests.conftest import run_cli

NAMES = ("accuracy", "latency_s", "memory_MiB")
DIRECTIONS = ("maximize", "minimize", "minimize")


def _trial(number: int, values: tuple[float, ...]) -> optuna.trial.FrozenTrial:
    trial = optuna.trial.create_trial(values=list(values), params={}, distributions={})
    trial.number = number
    return trial


def test_the_knee_is_nearest_the_ideal_with_each_objective_scaled() -> None:
    # accuracy 0.90 / 0.85 / 0.60 scale to 0, 1/6, 1; latency 10 / 3 / 1 ms to 1, 2/9, 0
    front = [_trial(0, (0.90, 0.010)), _trial(1, (0.85, 0.003)), _trial(2, (0.60, 0.001))]
    assert knee(front, DIRECTIONS[:2]) is front[1]
    # the scaling, not the raw numbers, decides: latency in seconds is tiny beside accuracy
    assert knee(front[::-1], DIRECTIONS[:2]) is front[1]
    assert knee([], DIRECTIONS[:2]) is None
    assert pick(front, DIRECTIONS[:2], "best") is front[0]
    with pytest.raises(SearchError) as err:
        pick(front, DIRECTIONS[:2], "kneee")
    assert err.value.for_cli() == "--pick 'kneee': choose one of: best, knee"


def test_a_limit_makes_the_answer_of_the_trials_left() -> None:
    trials = [
        _trial(0, (0.95, 0.020, 900.0)),  # over the latency limit
        _trial(1, (0.90, 0.004, 950.0)),  # dominated by 0 only in accuracy and memory
        _trial(2, (0.80, 0.004, 400.0)),
        _trial(3, (0.70, 0.002, 3000.0)),  # over the memory limit
    ]
    limits = parse_limits("latency=5ms,memory=2GiB", NAMES, upper=True)
    assert [(x.metric, x.bound) for x in limits] == [("latency_s", 0.005), ("memory_MiB", 2048.0)]
    answer = answer_within(trials, DIRECTIONS, NAMES, limits, top=None)
    assert [t.number for t in answer] == [1, 2]
    least = parse_limits("accuracy=0.85", NAMES, upper=False)
    assert [t.number for t in answer_within(trials, DIRECTIONS, NAMES, least, top=None)] == [0, 1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("latency=5", "--max 'latency=5': give latency as a time, e.g. 5ms"),
        ("memory=2", "--max 'memory=2': give memory as a size, e.g. 2GiB or 512MiB"),
        ("speed=3ms", "--max 'speed' is no objective of this study; its objectives: accuracy"),
        ("latency<5ms", "--max 'latency<5ms': give NAME=VALUE"),
    ],
)
def test_a_bad_limit_is_one_line_naming_it(text: str, message: str) -> None:
    with pytest.raises(SearchError) as err:
        parse_limits(text, NAMES, upper=True)
    assert err.value.for_cli().startswith(message)  # as the command line says it


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> str:
    storage = f"sqlite:///{tmp_path_factory.mktemp('pick') / 's.db'}"
    config = SearchConfig(
        evaluator="proxy",
        objectives=("accuracy", "latency", "memory"),
        sampler="nsga2",
        trials=30,
        storage=storage,
        study="mo",
    )
    run_search(config)
    return storage


def test_best_picks_the_knee_under_limits_in_the_table_json_and_export(
    study: str, tmp_path: Path
) -> None:
    loaded = load_existing_study("mo", study)
    names = metric_names(loaded)
    front = answer_within(loaded.get_trials(), loaded.directions, names, [], top=None)
    limited = answer_within(
        loaded.get_trials(),
        loaded.directions,
        names,
        parse_limits("latency=30ms", names, upper=True),
    )
    expected = knee(limited, loaded.directions)
    assert expected is not None
    assert expected is not front[0], "this study's knee is not its most accurate trial"
    arch = tmp_path / "knee.json"
    args = ("best", "--study", "mo", "--storage", study, "--pick", "knee", "--max", "latency=30ms")
    shown = run_cli(*args, "--json", "--export-arch", str(arch))
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["picked"] == expected.number
    assert data["limits"] == [{"metric": "latency_s", "max": 0.03}]
    assert [r["number"] for r in data["best"] if r["picked"]] == [expected.number]
    assert all(r["values"]["latency_s"] <= 0.03 for r in data["best"])
    assert load_arch(arch).to_dict() == TrialRecord.of(expected).arch
    table = run_cli(*args)
    assert table.returncode == 0, table.stderr
    assert f"picked: trial {expected.number} (the knee" in " ".join(table.stdout.split())
    assert f"{expected.number} *" in table.stdout
    none = run_cli("best", "--study", "mo", "--storage", study, "--max", "latency=1us")
    assert none.returncode == 0, none.stderr
    assert "no completed feasible trial meets --max latency=1us; loosen" in none.stdout


def test_the_report_marks_the_knee(study: str, tmp_path: Path) -> None:
    loaded = load_existing_study("mo", study)
    names = metric_names(loaded)
    front = answer_within(loaded.get_trials(), loaded.directions, names, [], top=None)
    marked = knee(front, loaded.directions)
    assert marked is not None
    done = run_cli(
        *("export", "--study", "mo", "--storage", study),
        "--format",
        "html",
        "--out",
        str(tmp_path / "r"),
    )
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "r" / "report.html").read_text()
    assert f"<td>{marked.number} <b>knee</b></td>" in html or (
        f"{marked.number} (x" in html and "<b>knee</b>" in html
    )
    assert html.count("<b>knee</b>") == 1
    assert f"The knee, trial {marked.number} (marked)" in html
