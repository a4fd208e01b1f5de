"""``benchmarks/search_vs_hand.py``: the goal and the best-so-far curve (pure), and
the whole ``--quick`` path (slow): both searches, retraining both sides with two
seeds, the report, and a second run that continues without training again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import optuna
import pytest

from nasmlcn.stats import paired_interval
from tests.benchmarks._scripts import load_script, run_script


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    return load_script("search_vs_hand", tmp_path, monkeypatch)


def _row(
    side: str, lanes: str, accs: list[float], latency: float = 1e-3, val: float | None = None
) -> dict[str, Any]:
    return {
        "side": side,
        "lanes": lanes,
        "latency_s": latency,
        "test_accuracy": {str(s): a for s, a in enumerate(accs)},
        "mean_test_accuracy": sum(accs) / len(accs),
        "mean_val_accuracy": sum(accs) / len(accs) if val is None else val,
        "seeds_done": len(accs),
    }


def test_the_goal_compares_the_best_of_each_side_paired_by_seed(script: Any) -> None:
    rows = [
        _row("hand", "2*mlcn2:4x1", [0.880, 0.884]),
        _row("hand", "8*mlcn2:4x1", [0.890, 0.893]),
        _row("search", "a", [0.899, 0.897]),
        _row("search", "b", [0.870, 0.905]),
        _row("search", "c", [0.95]),  # one seed only: not compared
    ]
    goal = script.goal(rows, [0, 1])
    assert (goal["searched"], goal["hand"]) == ("a", "8*mlcn2:4x1")
    assert goal["difference"] == pytest.approx(0.0065)
    iv = paired_interval([0.899, 0.897], [0.890, 0.893])
    assert goal["interval"] == {
        "low": pytest.approx(iv.low),
        "high": pytest.approx(iv.high),
        "pairs": 2,
        "verdict": iv.verdict,
    }
    assert goal["met"] is True
    slower = [*rows[:2], _row("search", "a", [0.899, 0.897], latency=1.1e-3)]
    assert script.goal(slower, [0, 1])["met"] is False  # past the hand model's latency
    assert script.goal(rows[:2], [0, 1]) == {"complete": False}
    # validation picks each side's model, not the test set: "b" validated best
    by_val = [*rows[:2], _row("search", "a", [0.899, 0.897], val=0.80), rows[3]]
    assert script.goal(by_val, [0, 1])["searched"] == "b"


def test_best_so_far_keeps_the_best_feasible_value_in_trial_order(script: Any) -> None:
    from optuna.distributions import FloatDistribution

    def trial(number: int, value: float, feasible: bool = True) -> optuna.trial.FrozenTrial:
        t = optuna.trial.create_trial(
            value=value,
            params={"x": 0.0},
            distributions={"x": FloatDistribution(0, 1)},
            system_attrs={"constraints:latency": 0.0 if feasible else 1.0},
        )
        t.number = number
        return t

    trials = [trial(2, 0.5), trial(0, 0.3), trial(1, 0.9, feasible=False), trial(3, 0.4)]
    assert script.best_so_far(trials) == [0.3, 0.3, 0.5, 0.5]


@pytest.mark.slow
def test_quick_run_and_its_continuation(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"

    def run() -> dict[str, Any]:
        proc = run_script("search_vs_hand", ["--quick", "--json", "--out", str(out)], data_dir)
        return dict(json.loads(proc.stdout))

    first = run()
    rows = first["models"]
    assert {r["side"] for r in rows} == {"hand", "search"}
    assert {r["name"] for r in rows if r["side"] == "hand"} <= {"mlcn2-2x4", "mlcn2-8x4"}
    assert len([r for r in rows if r["side"] == "search"]) == 2  # --quick retrains the top 2
    for r in rows:
        assert r["seeds_done"] == 2, r
        assert r["latency_s"] <= first["latency_budget_s"] * (1 + 1e-9)
        accs = list(r["test_accuracy"].values())
        assert r["mean_test_accuracy"] == pytest.approx(sum(accs) / 2)
    assert len(first["best_so_far"]) == first["search_trials"]
    assert first["compute"]["retrain"]["wall_seconds"] > 0
    assert {Path(p).name for p in first["plots"]} >= {"search_vs_hand.html"}
    runs = out / "runs" / "search-vs-hand"
    assert sorted(p.name for p in runs.iterdir())[0].endswith("-seed-0")
    again = run()  # continues: nothing is trained again, the same figures
    assert again["compute"]["retrain"]["wall_seconds"] == 0
    assert again["models"] == rows
    assert json.loads((out / "report.json").read_text())["goal"] == again["goal"]
