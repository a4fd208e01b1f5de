"""Choosing from a study's answer: limits by objective name and the front's knee
(``nasmlcn best --max latency=5ms --pick knee``). Before, ``best --export`` always
took the most accurate model (a 69-lane, 1,413 MiB one) and nothing helped to choose."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from optuna.trial import FrozenTrial

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
    assert err.value.for_cli() == "--pick 'kneee': choose one of: best, knee, lean"


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
        ("latency=5", "--max 'latency=5' has no unit; give a unit: 5ms or 5s"),
        ("latency=5parsecs", "--max 'latency=5parsecs': give latency as a time, e.g. 5ms"),
        ("memory=2", "--max 'memory=2': give memory as a size, e.g. 2GiB or 512MiB"),
        ("accuracy=90", "--max 'accuracy=90': give accuracy as a fraction, e.g. 0.9 or 90%"),
        ("imbalance=5", "--max 'imbalance=5': give imbalance as a percent, e.g. 5%"),
        ("measured_inference=4", "--max 'measured_inference=4' has no unit; give a unit"),
        ("latency<5ms", "--max 'latency<5ms': give NAME=VALUE"),
    ],
)
def test_a_bad_limit_is_one_line_naming_it(text: str, message: str) -> None:
    with pytest.raises(SearchError) as err:
        parse_limits(text, NAMES, upper=True)
    assert err.value.for_cli().startswith(message)  # as the command line says it


def _measured(number: int, values: tuple[float, ...], **figures: float) -> FrozenTrial:
    """A completed trial with ``values`` and the figures ``best`` shows beside them:
    predicted ``memory`` (MiB), ``params``, ``imbalance`` (a fraction) and a
    measured inference latency ``measured`` (seconds), each where given."""
    predicted = {"peak_memory_bytes": figures["memory"] * 2**20, "params": figures["params"]}
    predicted["imbalance"] = figures["imbalance"]
    training = (
        {"measured_inference_latency_s": figures["measured"]} if "measured" in figures else {}
    )
    trial = optuna.trial.create_trial(
        values=list(values),
        params={},
        distributions={},
        user_attrs={"predicted": predicted, "training": training},
    )
    trial.number = number
    return trial


def test_a_limit_may_name_any_figure_best_shows_not_only_an_objective() -> None:
    # best shows memory, params, imbalance and the measured inference latency beside
    # the objectives accuracy and latency: --max memory=2GiB was refused as "no objective"
    names, directions = NAMES[:2], DIRECTIONS[:2]
    trials = [
        _measured(0, (0.95, 0.020), memory=3000, params=4e6, imbalance=0.01, measured=0.050),
        _measured(1, (0.90, 0.004), memory=900, params=9e5, imbalance=0.30, measured=0.010),
        _measured(2, (0.80, 0.003), memory=400, params=3e5, imbalance=0.02, measured=0.008),
        _measured(3, (0.70, 0.002), memory=500, params=2e5, imbalance=0.02),  # not measured
    ]

    def kept(most: str) -> list[int]:
        limits = parse_limits(most, names, upper=True)
        return [t.number for t in answer_within(trials, directions, names, limits, top=None)]

    assert kept("memory=2GiB") == [1, 2, 3]  # 0 is out; the front of the rest
    assert kept("memory=2GB") == [1, 2, 3]  # 1,907 MiB: 900 MiB is within it
    assert kept("memory=800MB") == [2, 3]  # 763 MiB: 900 MiB is not
    assert kept("memory=1000000KB") == [1, 2, 3]  # 954 MiB
    assert kept("params=1M") == [1, 2, 3]
    assert kept("params=500k") == [2, 3]
    assert kept("imbalance=5%") == [0, 2, 3]
    # measured where trained: a trial that measured nothing does not meet a limit on it
    assert kept("measured_inference=20ms") == [1, 2]
    assert kept("measured_inference_latency_s=9ms") == [2]
    # a limit on a figure filters; the answer is still by the study's objectives
    least = parse_limits("accuracy=85%", names, upper=False)
    assert [t.number for t in answer_within(trials, directions, names, least, top=None)] == [0, 1]
    (limit,) = parse_limits("measured_inference=20ms", names, upper=True)
    assert (limit.metric, limit.bound, limit.what) == (
        "measured_inference_latency_s",
        pytest.approx(0.02),
        "measured where trained",
    )
    assert parse_limits("latency=5ms", names, upper=True)[0].what == "predicted lanes' step"


def test_an_unknown_figure_says_did_you_mean_with_the_names_taken() -> None:
    with pytest.raises(SearchError) as err:
        parse_limits("latncy=5ms", NAMES, upper=True)
    assert err.value.for_cli() == (
        "--max 'latncy' is no figure of best's table; did you mean 'latency'? names taken: "
        "accuracy, latency, step, inference, memory, params, energy, lanes, imbalance, "
        "measured_inference"
    )
    with pytest.raises(SearchError, match="names taken: accuracy, latency, step, inference"):
        parse_limits("speed=3ms", NAMES, upper=False)


def test_a_limit_on_a_figure_no_trial_has_says_why() -> None:
    # a proxy study measured nothing: "no trial meets measured_inference=20ms" would
    # send the user loosening a limit that cannot be met
    trials = [_measured(0, (0.9, 0.004), memory=900, params=9e5, imbalance=0.1)]
    for text, why in [
        ("measured_inference=20ms", "only --evaluator train measures it"),
        ("energy=90mJ", "it is predicted only as an objective: --objectives ...,energy"),
    ]:
        limits = parse_limits(text, NAMES[:2], upper=True)
        with pytest.raises(SearchError) as err:
            answer_within(trials, DIRECTIONS[:2], NAMES[:2], limits)
        said = err.value.for_cli()
        assert said.startswith(f"--max {text!r}: none of the 1 completed feasible trials has ")
        assert f"this figure ({why}" in said


def test_a_study_that_predicts_in_another_unit_takes_its_times_in_it() -> None:
    # the thesis cost model predicts in w2d: 5ms would have been read as 0.005 w2d
    with pytest.raises(SearchError) as err:
        parse_limits("latency=5ms", NAMES, upper=True, time_unit="w2d")
    assert err.value.for_cli() == (
        "--max 'latency=5ms': this study predicts times in w2d (its cost model's unit); "
        "give latency in it, e.g. latency=2w2d"
    )
    assert parse_limits("latency=12w2d", NAMES, upper=True, time_unit="w2d")[0].bound == 12.0
    # a time measured where the trial trained is in seconds whatever the cost model
    measured = parse_limits("measured_inference=5ms", NAMES, upper=True, time_unit="w2d")
    assert measured[0].bound == pytest.approx(0.005)


def test_a_bare_time_is_refused_alike_by_best_max_and_the_latency_budget() -> None:
    # --latency-budget 5 was 5 seconds while best --max latency=5 was refused
    with pytest.raises(SearchError) as budget:
        SearchConfig(latency_budget="5")  # type: ignore[arg-type]  # the CLI gives text
    with pytest.raises(SearchError) as limit:
        parse_limits("latency=5", NAMES, upper=True)
    rule = "has no unit; give a unit: 5ms or 5s (us, ms, s, min)"
    assert budget.value.for_cli() == f"--latency-budget '5' {rule}"
    assert limit.value.for_cli() == f"--max 'latency=5' {rule}"
    assert SearchConfig(latency_budget="5ms").latency_budget == pytest.approx(0.005)  # type: ignore[arg-type]
    # a number is seconds, as a study stores it and a recipe writes it: still read
    stored = SearchConfig(latency_budget=0.0016884).to_dict()
    assert SearchConfig.from_dict(stored).latency_budget == 0.0016884


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
    assert (
        "no completed feasible trial meets --max latency=1us (predicted lanes' step); loosen"
        in none.stdout
    )


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


def test_best_limits_a_figure_it_shows_beside_the_objectives(study: str) -> None:
    # objectives accuracy, latency and memory; best shows the predicted inference
    # latency too, and --max inference=... was refused as no objective of the study
    loaded = load_existing_study("mo", study)
    names = metric_names(loaded)
    front = answer_within(loaded.get_trials(), loaded.directions, names, [], top=None)
    inference = sorted(TrialRecord.of(t).predicted["inference_latency_s"] for t in front)
    bound = inference[len(inference) // 2]  # keeps about half of the front
    text = f"inference={bound * 1e3:.6g}ms"
    args = ("best", "--study", "mo", "--storage", study, "--max", text)
    shown = run_cli(*args, "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    kept = [r["predicted"]["inference_latency_s"] for r in data["best"]]
    assert kept
    assert all(v <= bound * (1 + 1e-5) for v in kept)
    assert len(kept) < len(front)
    assert data["limits"] == [{"metric": "inference_latency_s", "max": pytest.approx(bound)}]
    table = run_cli(*args, "--pick", "knee")
    assert table.returncode == 0, table.stderr
    said = " ".join(table.stdout.split())
    assert f"among the trials that meet --max {text} (predicted, one image)" in said
    helped = " ".join(run_cli("best", "--help", env={"COLUMNS": "200"}).stdout.split())
    for name in ("accuracy", "latency (predicted lanes' step)", "inference (predicted",
                 "memory (predicted)", "params", "energy", "lanes", "imbalance",
                 "measured_inference (measured where trained)"):  # fmt: skip
        assert name in helped, name
