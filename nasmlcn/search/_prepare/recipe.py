"""A study recipe (``--config studies/NAME.toml``): the options of a search, with
``-`` or ``_`` in their names, an optional ``[sweep]`` of options over values, a
description, and ``[reproduce]`` (read by ``nasmlcn reproduce``, not here).

A recipe's sweep is one search configuration per value of one option (thesis
Fig. 6.2: average and best accuracy per setting).

Continuing a study by name: the configuration it was made with, read back, as the
base of a run that names it (``nasmlcn search --study NAME --trials 12``). What the
run gives again overrides it; an identity field given otherwise is then refused by the
study's identity check, which names the fields that differ.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from nasmlcn._toml import check_keys, read_toml
from nasmlcn.errors import NasmlcnError, SearchError, option
from nasmlcn.search._config import SearchConfig, check_schema_version
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


NOT_CARRIED = ("storage", "study", "mlflow", "warm_start", "warm_start_storage")
"""Stored fields a continuing run does not take from the study: where it is (given by
the run), the tracker and the warm start's source (stored with their passwords
hidden; a warm start acts only when a study is made)."""


def stored_config(study: str, storage: str) -> SearchConfig | None:
    """The configuration study ``study`` in ``storage`` was made with (its stored
    ``config``), less :data:`NOT_CARRIED`, with ``storage`` and ``study`` as given;
    None where there is no such study made by nasmlcn (a new study, or a storage that
    does not exist yet: nothing is created here).

    Raises:
        SearchError: The stored configuration is one this version cannot read (a newer
            schema, or a value no longer valid).
    """
    import optuna

    from nasmlcn.study import StudyRecord, open_storage

    try:
        opened = open_storage(storage, create=False, heartbeat=False, read_only=True)
        if study not in {s.study_name for s in opened.get_all_studies()}:
            return None
        record = StudyRecord.read(optuna.load_study(study_name=study, storage=opened))
    except NasmlcnError:  # no storage yet, or one the run itself will name the trouble of
        return None
    config = record.config
    if not config:
        return None
    # a key an older nasmlcn stored and this one no longer has is left out: the
    # study's identity check compares what matters
    known = {f.name for f in fields(SearchConfig)} | {"schema_version"}
    kept = {k: v for k, v in config.items() if k in known and k not in NOT_CARRIED}
    return SearchConfig.from_dict({**kept, "storage": storage, "study": study})


RUN_CONTROL = frozenset(
    {
        "storage",
        "study",
        "trials",
        "count_repeats",
        "timeout",
        "trial_timeout",
        "grace",
        "max_retries",
        "artifacts",
        "keep_weights",
        "run_on",
        "mlflow",
        "calibration",
        "replicate_after",
    }
)
"""Fields that say how a search runs, not what it searches: given alone with a study
name no study has (``search --study tex22 --trials 8``), they define nothing, and
the name is taken for a typo (:func:`refuse_undefined_study`)."""

NAMED_DEFAULTS = ("dataset", "devices", "epochs")
"""What a new study started on defaults names before anything else
(:func:`defaults_taken`): what it trains on, the devices it designs for, how long."""


def refuse_undefined_study(study: str, storage: str, given: set[str]) -> None:
    """Refuses a search that names a study the storage does not hold while giving
    only :data:`RUN_CONTROL` options: a mistyped name would otherwise start a default
    search (Fashion-MNIST for 8 K80s, 10 epochs). Nothing is refused where the study
    exists, or where ``given`` holds an option that defines a search.

    Raises:
        StorageError: The name is unknown ("did you mean", with the studies there).
    """
    if given - RUN_CONTROL:
        return
    from nasmlcn.errors import StorageError
    from nasmlcn.study import load_existing_study

    try:
        load_existing_study(study, storage)
    except StorageError as error:
        text = str(error)
        joint = " To" if text.endswith("?") else "; to"
        raise StorageError(
            f"{text}{joint} start a new study, give what it searches ({option('dataset')}, "
            f"{option('devices')}, {option('epochs')}, ... or {option('config')})"
        ) from error


def defaults_taken(config: SearchConfig, given: set[str]) -> list[tuple[str, str]]:
    """The :data:`NAMED_DEFAULTS` a new study takes from nasmlcn's defaults (not
    given, not in a recipe: ``config`` equals the default there), as (field, value)."""
    default = SearchConfig()
    taken = []
    for name in NAMED_DEFAULTS:
        value = getattr(config, name)
        if name not in given and value == getattr(default, name):
            taken.append((name, str(value)))
    return taken
