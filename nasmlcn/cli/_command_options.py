"""A command's options declared once, as the fields of a frozen dataclass.

Each field made with :func:`option` holds its Typer option (flags, default, help,
range), in the order ``--help`` lists them; :func:`takes` gives the command one
parameter per field, as Typer reads a command's, and calls it with the dataclass
made from the values given. So a command with many options is a function of one
argument, and the dataclass (``TrainOptions``, ...) is where the options' values
become the library's objects (a ``TrainConfig``, a ``TrainJob``). ``--help`` is
what the options say, as if they were declared on the function itself.

A field whose type ruff does not know to be immutable (a ``Path``) says
``# noqa: RUF009``: ruff takes :func:`option` for a call made once and shared,
where it makes a field.

A field may be the option of a configuration's field instead, made from that
field's metadata (``TrainOptions.epochs`` is ``TrainConfig.epochs``'s option:
:func:`nasmlcn.cli._config_options.config_option`); ``nasmlcn search`` makes all its
configuration options from ``SearchConfig``'s field metadata
(:mod:`nasmlcn.cli._config_options`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from typer.models import OptionInfo

T = TypeVar("T")
R = TypeVar("R")


def option(declared: OptionInfo, **metadata: Any) -> Any:
    """A dataclass field that is the option ``declared`` (a ``typer.Option(default,
    "--flag", help=...)``); the field's default is the option's, and a required
    option (``...``) has none. ``metadata`` is added to the field's."""
    metadata = {**metadata, "option": declared}
    if declared.default is ...:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=declared.default, metadata=metadata)


def option_parameters(options_class: type) -> list[inspect.Parameter]:
    """One keyword parameter per field of ``options_class``, typed as the field."""
    hints = typing.get_type_hints(options_class)
    return [
        inspect.Parameter(
            item.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=item.metadata["option"],
            annotation=hints[item.name],
        )
        for item in dataclasses.fields(options_class)
    ]


def takes(options_class: type[T]) -> Callable[[Callable[[T], R]], Callable[..., R]]:
    """Makes ``command(options)`` a Typer command with an option per field of
    ``options_class`` (its name, help and docstring stay the command's)."""

    def decorate(command: Callable[[T], R]) -> Callable[..., R]:
        @functools.wraps(command)
        def run(**given: Any) -> R:
            return command(options_class(**given))

        parameters = option_parameters(options_class)
        returns = typing.get_type_hints(command)["return"]
        made: Any = run
        made.__signature__ = inspect.Signature(parameters, return_annotation=returns)
        made.__annotations__ = {**{p.name: p.annotation for p in parameters}, "return": returns}
        return run

    return decorate
