"""Where the recipes and their engines are: the repository's ``studies/`` folder,
which pyproject.toml installs as ``nasmlcn.studies`` (a wheel carries it; an
editable install maps the package to the folder itself), and the engines package,
``nasmlcn.reproduce.engines``. Found through the import system, never through the
repository layout."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from nasmlcn._toml import read_toml
from nasmlcn.errors import ReproduceError
from nasmlcn.registry import did_you_mean
from nasmlcn.reproduce._papers import PAPERS
from nasmlcn.reproduce._recipe import SEARCH_ENGINE, Recipe, recipe_from_mapping

STUDIES_PACKAGE = "nasmlcn.studies"
ENGINES_PACKAGE = "nasmlcn.reproduce.engines"
SHARED_MODULE = "common"
"""The module of the engines package that is no engine (what they share)."""


def _package_dir(package: str, folder: str) -> Path:
    """The folder of ``package``."""
    try:
        spec = importlib.util.find_spec(package)
    except ModuleNotFoundError:
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        # A checkout on PYTHONPATH that was never installed: the folder itself.
        return Path(__file__).resolve().parents[2] / folder
    return Path(locations[0])


def studies_dir() -> Path:
    """The folder of the recipes (``studies/``)."""
    return _package_dir(STUDIES_PACKAGE, "studies")


def engines_dir() -> Path:
    """The folder of the engines (``nasmlcn/reproduce/engines/``)."""
    return Path(__file__).resolve().parent / "engines"


def engine_module(recipe: Recipe) -> str:
    """The module that measures ``recipe`` (``nasmlcn.reproduce.engines.thesis_table``
    for ``engine = "thesis_table"``), run as ``python -m MODULE``.

    Raises:
        ReproduceError: The recipe is a search, or its engine does not exist.
    """
    if recipe.engine == SEARCH_ENGINE:
        raise ReproduceError(f"{recipe.name} is a search: it has no engine module")
    known = sorted(p.stem for p in engines_dir().glob("[a-z]*.py") if p.stem != SHARED_MODULE)
    if recipe.engine not in known:
        raise ReproduceError(
            f"recipe {str(recipe.path)!r}: no engine {recipe.engine!r} in {ENGINES_PACKAGE}"
            f" (known: {', '.join(known)})"
        )
    return f"{ENGINES_PACKAGE}.{recipe.engine}"


def _order(recipe: Recipe) -> tuple[int, list[int], str]:
    """Paper, then the numbers of its table or figure (Table 4.1 before Fig. 4.4);
    a result without a number last."""
    numbers = [int(n) for n in re.findall(r"\d+", recipe.result)] or [10**6]
    return (list(PAPERS).index(recipe.paper), numbers, recipe.result)


def all_recipes() -> list[Recipe]:
    """Every seed result in ``studies/`` (files with a ``[reproduce]`` table), in the
    papers' order.

    Raises:
        ReproduceError: A recipe is invalid (the message names its file and key).
    """
    found = []
    for path in sorted(studies_dir().glob("*.toml")):
        data = read_toml(path, "recipe", ReproduceError)
        if "reproduce" in data:
            found.append(recipe_from_mapping(data, path))
    return sorted(found, key=_order)


def find_recipe(name: str) -> Recipe:
    """The seed result called ``name`` (a file name in ``studies/`` without .toml).

    Raises:
        ReproduceError: No such result ("did you mean", with the known names).
    """
    recipes = {r.name: r for r in all_recipes()}
    if name in recipes:
        return recipes[name]
    hint = did_you_mean(name, recipes, otherwise="")
    raise ReproduceError(
        f"unknown result {name!r}{'; ' + hint if hint else ''}"
        f" (see 'nasmlcn reproduce --list'; known: {', '.join(recipes)})"
    )
