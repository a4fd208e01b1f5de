"""A command's options made from a configuration dataclass: each field made with
``setting`` (:mod:`nasmlcn._setting`: its help, range and default in the field's
metadata) becomes ``--field-name``, so that a field is written once.

``nasmlcn search`` takes an option per ``SearchConfig`` field
(:func:`with_config_options`); ``nasmlcn train`` declares its options as a dataclass
(:mod:`nasmlcn.cli._command_options`) in which each training setting is the option
of a ``TrainConfig`` field (:func:`config_option`).

Every such option defaults to None, "not given": a recipe's value or the field's
default then holds. The range is stated in ``--help`` and checked by the dataclass,
whose error names the option (``--epochs must be an integer >= 1, got 0``).
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import typer
from typer.models import OptionInfo

from nasmlcn.cli._command_options import option
from nasmlcn.cli._options import local_file, one_of

F = TypeVar("F", bound=Callable[..., Any])


def option_fields(config_class: type) -> list[dataclasses.Field[Any]]:
    """The fields of ``config_class`` that are options (those with a help)."""
    return [f for f in dataclasses.fields(config_class) if "help" in f.metadata]


def help_text(item: dataclasses.Field[Any]) -> str:
    """The option's ``--help``: what it does, its range, its default."""
    meta = item.metadata
    text = meta["help"]
    if meta["choices"] is not None:
        text = text.format(**_choices(meta["choices"]()))
    if text.endswith(".") and not text.endswith("..."):
        text = text[:-1]  # the sentence ends after the range and the default
    if meta["range"] is not None:
        text += f" ({meta['range'].stated()})"
    shown = meta["shown_default"] or _shown(item.default)
    if shown and "[default" not in text:
        text += f" [default: {shown}]"
    return text + "."


def _choices(names: Any) -> dict[str, str]:
    """What ``{choices}`` and ``{described}`` in a help become."""
    described = names.items() if isinstance(names, Mapping) else ()
    return {
        "choices": one_of(names),
        "described": "; ".join(f"{name}: {text}" for name, text in described),
    }


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


def _option_info(item: dataclasses.Field[Any], hint: Any) -> tuple[OptionInfo, type]:
    """The option of field ``item`` (typed ``hint``), default None, and the type of
    value it parses."""
    kind = str if item.metadata.get("duration") else _value_type(hint, item.metadata["path"])
    flag = "--" + item.name.replace("_", "-")
    declared = f"{flag}/--no-{flag[2:]}" if kind is bool else flag
    info = typer.Option(
        None,
        declared,
        help=help_text(item),
        metavar=item.metadata["metavar"],
        show_default=False,
        parser=local_file if kind is Path else None,
    )
    return info, kind


def option_parameters(config_class: type) -> list[inspect.Parameter]:
    """One keyword parameter per option field, as Typer reads a command's."""
    hints = typing.get_type_hints(config_class)
    parameters = []
    for item in option_fields(config_class):
        info, kind = _option_info(item, hints[item.name])
        parameters.append(
            inspect.Parameter(
                item.name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=kind | None
            )
        )
    return parameters


def config_option(config_class: type, name: str) -> Any:
    """A field of a command's options dataclass (made with
    :func:`~nasmlcn.cli._command_options.option`) that is the option of
    ``config_class``'s field ``name``: flag, help, range and default from that field,
    None when not given (:func:`given_settings` leaves it out, so the field's own
    default holds). The options field is typed as the configuration's, or None."""
    (item,) = [f for f in option_fields(config_class) if f.name == name]
    info, _ = _option_info(item, typing.get_type_hints(config_class)[name])
    return option(info, setting=name)


def given_settings(options: Any) -> dict[str, Any]:
    """The values given to the :func:`config_option` fields of ``options``, by the
    configuration field each sets (those not given are left out)."""
    given = {}
    for item in dataclasses.fields(options):
        name = item.metadata.get("setting")
        value = getattr(options, item.name)
        if name is not None and value is not None:
            given[name] = value
    return given


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
