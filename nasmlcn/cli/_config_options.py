"""A command's options made from a configuration dataclass: each field made with
``nasmlcn.search``'s ``setting`` (its help, range and default in the field's
metadata) becomes ``--field-name``, so that a field is written once.

Every option defaults to None, "not given": a recipe's value or the field's default
then holds. The range is stated in ``--help`` and checked by the dataclass, whose
error names the option (``--epochs must be an integer >= 1, got 0``).
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from nasmlcn.cli._options import one_of

F = TypeVar("F", bound=Callable[..., Any])


def option_fields(config_class: type) -> list[dataclasses.Field[Any]]:
    """The fields of ``config_class`` that are options (those with a help)."""
    return [f for f in dataclasses.fields(config_class) if "help" in f.metadata]


def help_text(item: dataclasses.Field[Any]) -> str:
    """The option's ``--help``: what it does, its range, its default."""
    meta = item.metadata
    text = meta["help"]
    if meta["choices"] is not None:
        text = text.format(choices=one_of(meta["choices"]()))
    if text.endswith(".") and not text.endswith("..."):
        text = text[:-1]  # the sentence ends after the range and the default
    if meta["range"] is not None:
        text += f" ({meta['range'].stated()})"
    shown = meta["shown_default"] or _shown(item.default)
    if shown and "[default" not in text:
        text += f" [default: {shown}]"
    return text + "."


def _shown(default: Any) -> str | None:
    if default is None or default == "" or isinstance(default, bool):
        return None
    if isinstance(default, tuple):
        return ",".join(map(str, default))
    return f"{default:g}" if isinstance(default, float) else str(default)


def _value_type(hint: Any, path: bool) -> type:
    """What the option parses: a path, a flag, a number, else text (a tuple is
    given as a comma list)."""
    kinds = [k for k in typing.get_args(hint) or (hint,) if k is not type(None)]
    if path:
        return Path
    return kinds[0] if kinds[0] in (bool, int, float) else str


def option_parameters(config_class: type) -> list[inspect.Parameter]:
    """One keyword parameter per option field, as Typer reads a command's."""
    hints = typing.get_type_hints(config_class)
    parameters = []
    for item in option_fields(config_class):
        kind = _value_type(hints[item.name], item.metadata["path"])
        flag = "--" + item.name.replace("_", "-")
        declared = f"{flag}/--no-{flag[2:]}" if kind is bool else flag
        option = typer.Option(
            None,
            declared,
            help=help_text(item),
            metavar=item.metadata["metavar"],
            show_default=False,
        )
        parameters.append(
            inspect.Parameter(
                item.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind | None
            )
        )
    return parameters


def with_config_options(config_class: type) -> Callable[[F], F]:
    """Gives a command taking ``**given`` an option per field of ``config_class``,
    before its own options; Typer then passes the fields' values in ``given``."""

    def decorate(command: F) -> F:
        own = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in inspect.signature(command, eval_str=True).parameters.values()
            if p.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        parameters = [*option_parameters(config_class), *own]
        hints = typing.get_type_hints(command)
        made: Any = command
        made.__signature__ = inspect.Signature(parameters, return_annotation=hints["return"])
        made.__annotations__ = {
            **{p.name: p.annotation for p in parameters},
            "return": hints["return"],
        }
        return command

    return decorate
