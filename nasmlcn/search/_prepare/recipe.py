"""A study recipe (``--config studies/NAME.toml``): the options of a search, with
``-`` or ``_`` in their names, an optional ``[sweep]`` of options over values, a
description, and ``[reproduce]`` (read by ``nasmlcn reproduce``, not here).

A recipe's sweep is one search configuration per value of one option (thesis
Fig. 6.2: average and best accuracy per setting)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from nasmlcn._toml import check_keys, read_toml
from nasmlcn.errors import SearchError
from nasmlcn.search._config.config import SearchConfig, check_schema_version
from nasmlcn.search._prepare.setup import setup_search

_FIELD_NAMES = {f.name for f in fields(SearchConfig) if f.name != "extra"}
_FLOAT_FIELDS = {
    f.name
    for f in fields(SearchConfig)
    if f.metadata.get("range") and not f.metadata["range"].integer
}
"""The fields that take any number: a recipe's ``grace = 60`` is 60.0."""


def _option_name(key: str) -> str:
    """A recipe key's option name (``train-limit`` is ``train_limit``)."""
    return key.replace("-", "_")


_RECIPE_KEYS = (*sorted(_FIELD_NAMES), "description", "schema_version", "sweep", "reproduce")
"""The top-level keys of a recipe: the options, its description, ``[sweep]`` (whose
keys are options) and ``[reproduce]`` (read by ``nasmlcn reproduce``, not here)."""


def config_from_mapping(
    data: Mapping[str, Any], origin: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Search options and the recipe's ``[sweep]`` table from a parsed recipe.

    Keys are the option names with ``-`` or ``_`` (``train-limit``).

    Raises:
        SearchError: Unknown key ("did you mean", with the known ones), at the top
            level or in ``[sweep]``, or a value of the wrong kind.
    """
    options: dict[str, Any] = {}
    sweep: dict[str, Any] = {}
    check_keys(data, _RECIPE_KEYS, origin, SearchError, fold=_option_name)
    _check_one_spelling(data, origin)
    if not isinstance(data.get("description", ""), str):
        raise SearchError(f"{origin}: description must be text, got {data['description']!r}")
    for key, value in data.items():
        name = _option_name(key)
        if name == "sweep":
            if not isinstance(value, Mapping):
                raise SearchError(f"{origin}: [sweep] must be a table of option = [values]")
            check_keys(
                value,
                sorted(_FIELD_NAMES),
                origin,
                SearchError,
                inside="[sweep]",
                fold=_option_name,
            )
            for skey, values in value.items():
                if not isinstance(values, list) or not values:
                    raise SearchError(f"{origin}: sweep.{skey} must list the values to sweep")
                sweep[_option_name(skey)] = values
            continue
        if name == "schema_version":
            check_schema_version(value, origin)
            continue
        if name in ("description", "reproduce"):
            continue
        if name in _FLOAT_FIELDS and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if name == "objectives" and isinstance(value, list):
            value = tuple(value)
        options[name] = value
    return options, sweep


def _label(value: Any) -> str:
    """A swept value as a study name takes it (a space file's path without its folders)."""
    text = str(value)
    return Path(text).stem if "/" in text or "\\" in text else text


def _check_one_spelling(data: Mapping[str, Any], origin: str) -> None:
    """Refuses an option given twice (``train_limit`` and ``train-limit``): one
    would silently win."""
    seen: dict[str, str] = {}
    for key in data:
        first = seen.setdefault(_option_name(key), key)
        if first != key:
            raise SearchError(f"{origin}: {first!r} and {key!r} are one option; keep one")


def load_search_recipe(
    path: str | os.PathLike[str],
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Reads a study recipe (TOML): its options, its sweep, and its description.

    Raises:
        SearchError: Missing, unreadable or invalid file (the message names it).
    """
    data = read_toml(path, "recipe", SearchError)
    reproduce = data.get("reproduce")
    engine = reproduce.get("engine") if isinstance(reproduce, Mapping) else "search"
    if engine != "search":
        name = Path(path).stem
        if not isinstance(engine, str) or not engine.strip():
            raise SearchError(
                f"recipe {str(path)!r} has a [reproduce] table (a seed result for 'nasmlcn "
                f'reproduce {name}\') that names no engine; give engine = "search" or a '
                "module of nasmlcn/reproduce/engines/"
            )
        raise SearchError(
            f"recipe {str(path)!r} is not a search: it reproduces a seed result with"
            f" nasmlcn/reproduce/engines/{engine}.py; run it with 'nasmlcn reproduce {name}'"
        )
    options, sweep = config_from_mapping(data, f"recipe {str(path)!r}")
    return options, sweep, str(data.get("description", ""))


def expand_sweep(
    base: SearchConfig, sweep: dict[str, list[Any]], *, check: bool = True
) -> list[SearchConfig]:
    """One config per value of the sweep's single option (no sweep: just ``base``).

    Each config's study is ``<study>-<option>-<value>`` when ``base`` names one.
    With ``check``, every config is set up once, so a bad value is refused before
    the first study is made.

    Raises:
        SearchError: The sweep names more than one option, or a value is invalid.
    """
    if not sweep:
        return [base]
    if len(sweep) > 1:
        raise SearchError(f"a recipe may sweep one option, got {', '.join(sweep)}")
    ((name, values),) = sweep.items()
    configs = [
        base.with_overrides(
            **{name: value, "study": f"{base.study}-{name}-{_label(value)}" if base.study else None}
        )
        for value in values
    ]
    if check and len(configs) > 1:
        for config in configs:
            setup_search(config)
    return configs


def load_recipe(path: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The old name of :func:`load_search_recipe` (``nasmlcn.reproduce.load_recipe``
    reads a reproduction recipe): kept one release, with a warning."""
    import warnings

    warnings.warn(
        "nasmlcn.search.load_recipe is now load_search_recipe "
        "(nasmlcn.reproduce.load_recipe reads a reproduction recipe)",
        DeprecationWarning,
        stacklevel=2,
    )
    return load_search_recipe(path)
