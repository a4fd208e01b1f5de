"""Our figures beside the paper's: each check, and a result's verdict line."""

from __future__ import annotations

from typing import Any

import pytest

from nasmlcn.errors import ReproduceError
from nasmlcn.reproduce import Recipe, compare, verdict
from tests.reproduce._toml import recipe_file

SCALE = {"args": [], "minutes_here": 1, "minutes_gpu": 1, "differs": "3 epochs, not 20"}


def _recipe(*entries: dict[str, Any]) -> Recipe:
    data = {
        "reproduce": {
            "paper": "thesis",
            "result": "Table 4.1",
            "measures": "m",
            "setting": "s",
            "engine": "thesis_table",
            "scales": {"smoke": SCALE, "reduced": SCALE, "full": SCALE},
            "compare": [{"label": "x", "source": "Table 4.1", **e} for e in entries],
        }
    }
    return recipe_file(data)


def _verdict(recipe: Recipe, data: Any, scale: str = "reduced") -> tuple[str, str]:
    v = verdict(compare(recipe, data, scale), recipe.scale(scale), scale)
    return v.kind, v.line


def test_a_figure_within_its_tolerance_reproduces_the_paper() -> None:
    recipe = _recipe({"ours": "acc", "factor": 100, "unit": "%", "paper": 91.30, "tolerance": 1.0})
    (row,) = compare(recipe, {"acc": 0.9050}, "reduced")
    assert row.ours == pytest.approx(90.50)
    assert row.gap == pytest.approx(-0.80)
    assert row.passed is True
    assert _verdict(recipe, {"acc": 0.9050}) == ("reproduced", "reproduced: 1 of 1 figures agree")


def test_a_near_miss_is_within_its_gap_and_a_far_one_is_not_reproduced_with_why() -> None:
    recipe = _recipe({"ours": "acc", "unit": "%", "paper": 91.30, "tolerance": 1.0})
    kind, line = _verdict(recipe, {"acc": 89.0})
    assert kind == "within"
    assert line.startswith("within 2.30 pt: 0 of 1 figures agree; x 89.00 % vs 91.30 % (-2.30 pt)")
    kind, line = _verdict(recipe, {"acc": 80.0})
    assert kind == "not reproduced"
    assert "x 80.00 % vs 91.30 % (-11.30 pt)" in line
    assert line.endswith("why: 3 epochs, not 20")


def test_claims_check_their_direction() -> None:
    recipe = _recipe(
        {"ours": "a", "unit": "x", "bound": 1.0, "check": "at_least", "plot_only": "faster"},
        {"ours": "b", "unit": "x", "bound": 1.05, "check": "at_most", "plot_only": "near"},
    )
    assert _verdict(recipe, {"a": 1.2, "b": 1.01})[0] == "reproduced"
    kind, line = _verdict(recipe, {"a": 0.9, "b": 1.01})
    assert kind == "not reproduced"  # a claim's miss is never "within"
    assert "x 0.90x, the paper's claim needs >= 1.00x" in line
    assert _verdict(recipe, {"a": 1.2, "b": 1.2})[0] == "not reproduced"


def test_unchecked_figures_are_shown_and_a_plot_only_result_says_so() -> None:
    recipe = _recipe(
        {"ours": "s", "unit": "s", "paper": 220, "check": "none"},
        {"ours": "a", "unit": "%", "plot_only": "Fig. 4.4 plots it"},
    )
    rows = compare(recipe, {"s": 4.6, "a": 88.0}, "reduced")
    assert [r.passed for r in rows] == [None, None]
    assert [r.ours for r in rows] == [4.6, 88.0]
    assert _verdict(recipe, {"s": 4.6, "a": 88.0})[0] == "no paper number"


def test_a_figure_missing_from_the_output_is_a_miss_with_the_reason() -> None:
    recipe = _recipe({"ours": "rows.acc", "paper": 1.0, "tolerance": 0.5})
    (row,) = compare(recipe, {"rows": {"loss": 1}}, "reduced")
    assert row.ours is None
    assert "no 'rows.acc'" in row.error
    kind, line = _verdict(recipe, {"rows": {"loss": 1}})
    assert kind == "not reproduced"
    assert "no figure" in line


def test_a_smoke_run_gets_no_verdict() -> None:
    recipe = _recipe({"ours": "acc", "paper": 91.3, "tolerance": 1.0})
    kind, line = _verdict(recipe, {"acc": 12.0}, "smoke")
    assert kind == "smoke"
    assert "1 of 1 figures read" in line


def test_a_figure_measured_only_at_full_scale_is_left_out_below_it() -> None:
    recipe = _recipe(
        {"ours": "e1", "paper": 0.83, "tolerance": 0.1},
        {"ours": "e10", "paper": 0.99, "tolerance": 0.1, "scales": ["full"]},
    )
    assert [r.label for r in compare(recipe, {"e1": 0.8}, "reduced")] == ["x"]
    assert len(compare(recipe, {"e1": 0.8, "e10": 0.99}, "full")) == 2
    assert _verdict(recipe, {"e1": 0.8}) == ("reproduced", "reproduced: 1 of 1 figures agree")


def _difference(**extra: Any) -> Recipe:
    return _recipe(
        {
            "ours": "b.mean - a.mean",
            "factor": 100,
            "unit": "pt",
            "bound": 0,
            "check": "at_least",
            "plot_only": "more memory, better models",
            "samples": ["b.values", "a.values"],
            **extra,
        }
    )


def _study(values: list[float]) -> dict[str, Any]:
    return {"values": values, "mean": sum(values) / len(values)}


def test_a_difference_of_averages_is_judged_by_its_welch_interval() -> None:
    """The thesis's "more memory, better models" over 4 random models each: a
    difference whose interval holds the bound is a tie, not a miss (nor a pass)."""
    recipe = _difference()
    spread = {"a": _study([0.741, 0.746, 0.731, 0.710]), "b": _study([0.733, 0.699, 0.726, 0.687])}
    (row,) = compare(recipe, spread, "reduced")
    assert row.ours == pytest.approx(-2.075)
    assert row.low == pytest.approx(-5.4568, abs=1e-3)  # scipy's Welch t-test interval
    assert row.high == pytest.approx(1.3068, abs=1e-3)
    assert row.tie is True
    assert row.passed is False
    kind, line = _verdict(recipe, spread)
    assert kind == "tie"
    assert "(95 % interval -5.46 to 1.31 pt)" in line
    assert "neither shows nor refutes" in line

    apart = {"a": _study([0.70, 0.71, 0.70, 0.71]), "b": _study([0.75, 0.76, 0.75, 0.76])}
    assert _verdict(recipe, apart)[0] == "reproduced"  # the interval is above 0
    assert _verdict(recipe, {"a": apart["b"], "b": apart["a"]})[0] == "not reproduced"


def test_samples_are_checked_in_the_recipe() -> None:
    with pytest.raises(ReproduceError, match="samples must be two paths"):
        _difference(samples=["b.values"])
    with pytest.raises(ReproduceError, match='samples need check = "at_least" or "at_most"'):
        _difference(check="close", paper=1.0, bound=None)


def test_too_few_samples_fall_back_to_the_figure_and_say_so() -> None:
    recipe = _difference()
    one = {"a": _study([0.70]), "b": _study([0.75])}
    (row,) = compare(recipe, one, "reduced")
    assert row.low is None
    assert row.passed is True  # 5 points >= 0, without an interval
    assert "no interval: need at least 2 values" in row.error


def test_a_difference_of_the_best_models_gets_a_bootstrap_interval() -> None:
    """Best of 4 random models against best of 4: far too few to call a 1.3-point
    gap; ``statistic = "max"`` makes it a tie instead of a miss."""
    recipe = _difference(ours="b.best - a.best", statistic="max")
    values = {"a": [0.741, 0.746, 0.731, 0.710], "b": [0.733, 0.699, 0.726, 0.687]}
    spread = {k: {"values": v, "best": max(v)} for k, v in values.items()}
    (row,) = compare(recipe, spread, "reduced")
    assert row.ours == pytest.approx(-1.3)
    assert row.low is not None
    assert row.high is not None
    assert row.low < -1.3 < row.high
    assert row.tie is True
    assert _verdict(recipe, spread)[0] == "tie"
    with pytest.raises(ReproduceError, match="statistic must be one of mean, max"):
        _difference(statistic="median")
    with pytest.raises(ReproduceError, match="statistic needs samples"):
        _difference(samples=None, statistic="max")
