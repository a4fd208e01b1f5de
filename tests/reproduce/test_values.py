"""The ``ours`` expressions: paths into an engine's JSON, arithmetic, functions."""

from __future__ import annotations

import math
from typing import Any

import pytest

from nasmlcn.errors import ReproduceError
from nasmlcn.reproduce import evaluate

DATA: dict[str, Any] = {
    "rows": [
        {"row": "capsnet", "acc": 0.9, "seconds": 4.0},
        {"row": "mlcn2-8x4", "acc": 0.92, "seconds": 1.0},
    ],
    "scenarios": [
        {"lanes": 24, "devices": "4xK80", "ratio": 1.6},
        {"lanes": 24, "devices": "1xK80,1xM40", "ratio": 3.6},
    ],
    "variants": [{"variant": "8*mlcn2:4x1 batch_size=100", "acc": 0.8}],
    "studies": {"fig-6.2-flops-1x": {"best": 0.5, "curve": [0.1, 0.4, 0.5]}, "b": {"best": 0.7}},
    "bad": float("nan"),
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("rows.0.acc", 0.9),
        ("rows.-1.acc", 0.92),
        ("rows[row=mlcn2-8x4].acc", 0.92),
        ("scenarios[lanes=24&devices=1xK80,1xM40].ratio", 3.6),
        ("variants[variant=8*mlcn2:4x1 batch_size=100].acc", 0.8),
        ('studies."fig-6.2-flops-1x".curve.1', 0.4),
        ("max(studies.*.best)", 0.7),
        ('mean(studies.*.best, studies."fig-6.2-flops-1x".curve.0)', (0.5 + 0.7 + 0.1) / 3),
        ("rows[row=capsnet].seconds / rows[row=mlcn2-8x4].seconds", 4.0),
        ("rows.0.seconds - rows.1.seconds * 2", 2.0),
        ("(rows.0.seconds - rows.1.seconds) * 2", 6.0),
        ("(max(rows.*.acc) / 0.5 - 1) * 100", 84.0),
    ],
)
def test_expressions_read_and_compute(expression: str, expected: float) -> None:
    assert math.isclose(evaluate(expression, DATA), expected)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("rows.*.acc", "must be inside max"),
        ("median(rows.*.acc)", "unknown function 'median'"),
        ("rows.0.acc -", "ends too early"),
        ("(rows.0.acc", "ends too early"),
        ("rows[row].acc", "expected [key=value]"),
        ("rows[row=capsnet.acc", "unclosed ["),
        ("rows.0.nope", "no 'rows.0.nope' (keys there: row, acc, seconds)"),
        ("rows[row=vgg].acc", "no item of rows has row=vgg"),
        ("rows.5.acc", "rows has 2 items, no item 5"),
        ("rows.0.row", "not a number"),
        ("bad", "not a number"),
        ("rows.0.acc / 0", "division by zero"),
    ],
)
def test_bad_expressions_and_missing_figures_are_clear_errors(
    expression: str, message: str
) -> None:
    with pytest.raises(ReproduceError, match=None) as err:
        evaluate(expression, DATA)
    assert message in str(err.value)
