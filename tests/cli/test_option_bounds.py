"""Every numeric option of ``nasmlcn search`` states its bounds, and they are the
ones the code accepts: a value at a closed bound passes, one past it is refused
with an error that names the option.

A ``SearchConfig`` field's range is written once, in its metadata: ``--help``
states it and ``SearchConfig`` checks it (so a recipe and the Python API get the
same check); the command's own options (``--workers``, ...) use Typer's ranges."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from nasmlcn.cli import app
from nasmlcn.errors import SearchError
from nasmlcn.search import SearchConfig

FIELDS = {f.name: f for f in dataclasses.fields(SearchConfig)}
CONTEXT: dict[str, dict[str, Any]] = {"halving_rate": {"pruner": "halving", "epochs": 3}}
"""What a field needs beside it to be valid at all."""
CONTEXT_FLAGS = {"halving_rate": ["--pruner", "halving", "--epochs", "3"]}


def _numeric() -> list[str]:
    """The search command's options that take a number."""
    command = typer.main.get_command(app).commands["search"]  # type: ignore[attr-defined]
    search = inspect.unwrap(command.callback)  # the function whose parameters are the options
    hints = typing.get_type_hints(search)
    return [
        name
        for name in inspect.signature(search).parameters
        if {int, float} & set(typing.get_args(hints[name]) or (hints[name],))
    ]


def _option(name: str) -> typing.Any:
    command = typer.main.get_command(app).commands["search"]  # type: ignore[attr-defined]
    (option,) = [p for p in command.params if p.name == name]
    return option


def _past_and_at(bound: Any) -> tuple[list[float], list[float]]:
    """Values just past the range's bounds, and values at (or, open, just inside) them."""
    step = 1 if bound.integer else 0.5
    past, at = [], []
    if bound.low is not None:
        past.append(bound.low if bound.low_open else bound.low - step)
        at.append(bound.low + step if bound.low_open else bound.low)
    if bound.high is not None:
        past.append(bound.high if bound.high_open else bound.high + step)
        at.append(bound.high - step if bound.high_open else bound.high)
    return past, at


def test_every_numeric_option_has_a_range() -> None:
    names = _numeric()
    assert len(names) >= 18
    unbounded = [
        n
        for n in names
        if (FIELDS[n].metadata.get("range") is None if n in FIELDS else _option(n).min is None)
    ]
    assert unbounded == []


@pytest.mark.parametrize("name", [n for n in _numeric() if n in FIELDS])
def test_a_field_s_stated_range_is_the_one_checked(name: str) -> None:
    bound = FIELDS[name].metadata["range"]
    option = _option(name)
    flag = option.opts[0]
    assert f"({bound.stated()})" in str(option.help)
    past, at = _past_and_at(bound)
    assert past
    for value in at:
        SearchConfig(**{name: value, **CONTEXT.get(name, {})})
    for value in past:
        with pytest.raises(SearchError, match=name) as refused:
            SearchConfig(**{name: value, **CONTEXT.get(name, {})})
        assert refused.value.for_cli().startswith(flag)  # the CLI names the option
        shown = str(int(value)) if bound.integer else str(value)
        result = CliRunner().invoke(app, ["search", flag, shown, *CONTEXT_FLAGS.get(name, [])])
        assert result.exit_code != 0
        assert isinstance(result.exception, SearchError)
        assert result.exception.for_cli().startswith(flag)


@pytest.mark.parametrize("name", [n for n in _numeric() if n not in FIELDS])
def test_a_command_option_s_range_is_typer_s(name: str) -> None:
    low = _option(name).min
    flag = _option(name).opts[0]
    result = CliRunner().invoke(app, ["search", flag, str(low - 1)])
    assert result.exit_code == 2, result.output  # the CLI refuses past the bound
    assert f"{low:g}" in result.output


def test_a_range_s_words() -> None:
    """The error and the help say the same range, in the words of the specs' errors."""
    bounds = {f.name: f.metadata["range"] for f in FIELDS.values() if f.metadata.get("range")}
    assert bounds["epochs"].stated() == "1 to 100,000"
    assert bounds["prune_percentile"].stated() == "> 0, < 100"
    assert bounds["prune_threshold"].stated() == "-1 to 1"
    assert bounds["timeout"].refusal("timeout", 0.0).endswith("must be a number > 0, got 0.0")
    assert bounds["seed"].refusal("seed", True).endswith("must be an integer >= 0, got True")
    too_many = bounds["trials"].refusal("trials", 2_000_000)
    assert too_many.endswith(
        "at most 1,000,000 (a million 1-second trials take 12 days), got 2,000,000"
    )
    not_a_number = bounds["prune_threshold"].refusal("prune_threshold", "x")
    assert not_a_number.endswith("must be a number in [-1, 1], got 'x'")


def test_a_number_without_an_upper_bound_refuses_infinity() -> None:
    # --timeout inf would be written into search --json as Infinity (not JSON), and
    # --grace inf failed deep inside as an OverflowError
    unbounded = [n for n, f in FIELDS.items() if (r := f.metadata.get("range")) and r.high is None]
    floats = [n for n in unbounded if not FIELDS[n].metadata["range"].integer]
    assert set(floats) == {"timeout", "trial_timeout", "grace", "latency_budget"}
    for name in floats:
        infinite: dict[str, Any] = {name: float("inf")}
        with pytest.raises(SearchError, match=f"{name} must be a finite number"):
            SearchConfig(**infinite)


@pytest.mark.parametrize("name", [n for n, f in FIELDS.items() if isinstance(f.default, bool)])
def test_a_switch_takes_only_true_or_false(name: str) -> None:
    # a recipe's prune = "false" is a non-empty string: it used to switch pruning on
    for value in ("false", 0, "no"):
        wrong: dict[str, Any] = {name: value}
        with pytest.raises(SearchError, match=f"{name} must be true or false, got {value!r}"):
            SearchConfig(**wrong)
    for switch in (True, False):
        right: dict[str, Any] = {name: switch}
        assert getattr(SearchConfig(**right), name) is switch
