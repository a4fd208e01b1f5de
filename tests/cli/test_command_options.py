"""Commands whose options are the fields of a dataclass (``nasmlcn.cli._command_options``):
each field is one option, in the field's order and with the field's default, and the
command is called with the dataclass made from the values given."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path

import click
import pytest
import typer
import typer.main
from typer.testing import CliRunner

from nasmlcn.cli import app
from nasmlcn.cli._command_options import option, takes

COMMANDS = ("train", "retrain", "calibrate", "remove-lanes", "plan", "evaluate")
"""Commands of ``nasmlcn`` made with :func:`takes`: each is a function of one dataclass."""


def options_class(command: click.Command) -> type:
    """The dataclass the command's function takes (its one ``options`` parameter)."""
    assert command.callback is not None
    taken = typing.get_type_hints(inspect.unwrap(command.callback))["options"]
    assert dataclasses.is_dataclass(taken), taken
    return typing.cast(type, taken)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_s_options_are_its_dataclass_fields(name: str) -> None:
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    fields = dataclasses.fields(options_class(command))
    params = [p for p in command.params if p.name != "help"]
    assert [p.name for p in params] == [f.name for f in fields]
    for param, item in zip(params, fields, strict=True):
        if item.default is dataclasses.MISSING:
            assert param.required
        else:
            assert param.default == item.default, item.name


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Options:
    count: int = option(typer.Option(2, "--count", min=1, help="How many."))
    where: Path = option(typer.Option(..., "--where", help="Where."))  # noqa: RUF009


def test_the_command_gets_the_dataclass() -> None:
    got: list[_Options] = []

    @takes(_Options)
    def command(options: _Options) -> None:
        """Says what it got."""
        got.append(options)

    one = typer.Typer()
    one.command()(command)
    result = CliRunner().invoke(one, ["--where", "x"])
    assert result.exit_code == 0, result.output
    assert got == [_Options(count=2, where=Path("x"))]
    assert "Says what it got." in CliRunner().invoke(one, ["--help"]).output
    assert CliRunner().invoke(one, ["--where", "x", "--count", "0"]).exit_code == 2
