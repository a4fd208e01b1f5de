"""Every numeric option of ``nasmlcn search`` states its bounds, and they are the
ones the code accepts: a value at a closed bound passes, one past it is refused (by
the CLI's range, or by ``SearchConfig``, whose error names the option)."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from nasmlcn.cli._app import app
from nasmlcn.cli._search import search
from nasmlcn.errors import SearchError
from nasmlcn.search import SearchConfig

# options whose bound is open or two-sided: stated in their help, checked by the library
STATED: dict[str, tuple[str, float, list[float]]] = {
    "timeout": ("(> 0)", 0.0, [1e-3]),
    "trial_timeout": ("(> 0)", 0.0, [1e-3]),
    "latency_budget": ("(> 0)", 0.0, [1e-3]),
    "prune_threshold": ("(-1 to 1)", 1.01, [-1.0, 1.0]),
    "prune_percentile": ("(> 0, < 100)", 100.0, [0.5, 99.5]),
    "halving_rate": ("(R >= 2)", 1, [2, 5]),
    "warm_start_top": ("(>= 1)", 0, [1]),
}
"""Field: the range its help states, a value past it, values at or inside it."""
FIELDS = set(SearchConfig.__dataclass_fields__)
CONTEXT: dict[str, dict[str, Any]] = {"halving_rate": {"pruner": "halving", "epochs": 3}}
"""What a field needs beside it to be valid at all."""


def _numeric() -> list[str]:
    """The search command's options that take a number."""
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


def test_every_numeric_option_states_its_bounds() -> None:
    names = _numeric()
    assert len(names) >= 15
    assert [n for n in names if _option(n).min is None and n not in STATED] == []


@pytest.mark.parametrize("name", _numeric())
def test_the_help_s_bound_is_the_code_s(name: str) -> None:
    option = _option(name)
    flag = option.opts[0]
    if name in STATED:
        text, past, inside = STATED[name]
        assert text in str(option.help)
        context = CONTEXT.get(name, {})
        for value in inside:
            SearchConfig(**{name: value, **context})
        with pytest.raises(SearchError, match=name) as refused:
            SearchConfig(**{name: past, **context})
        assert refused.value.for_cli().startswith(flag)  # the CLI names the option
        return
    low = option.min
    result = CliRunner().invoke(app, ["search", flag, str(low - 1)])
    assert result.exit_code == 2, result.output  # the CLI refuses past the bound
    assert f"{low:g}" in result.output
    if name in FIELDS:
        # ... and the code takes the bound itself
        SearchConfig(**{name: low, **CONTEXT.get(name, {})})
