"""Recipes written as a user writes them: a mapping as a TOML file, read back by
:func:`nasmlcn.reproduce.load_recipe` (the reader every recipe goes through)."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nasmlcn.reproduce import Recipe, load_recipe

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_text(data: Mapping[str, Any]) -> str:
    """``data`` as TOML: one ``key = value`` line per top-level key, tables inline;
    a key whose value is None is left out (TOML has no null: a user omits the key)."""
    return "".join(f"{_key(k)} = {_value(v)}\n" for k, v in data.items() if v is not None)


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string, escapes and all
    if isinstance(value, Mapping):
        given = (f"{_key(k)} = {_value(v)}" for k, v in value.items() if v is not None)
        return "{" + ", ".join(given) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def recipe_file(data: Mapping[str, Any], path: Path | None = None) -> Recipe:
    """The recipe a file holding ``data`` is (written to ``path``, else to a
    temporary ``r.toml``)."""
    if path is not None:
        path.write_text(toml_text(data))
        return load_recipe(path)
    with tempfile.TemporaryDirectory() as folder:
        return recipe_file(data, Path(folder) / "r.toml")
