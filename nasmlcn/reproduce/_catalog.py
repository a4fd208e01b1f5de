"""Where the recipes and their engines are: the repository's ``studies/`` and
``benchmarks/`` folders, which pyproject.toml installs as ``nasmlcn.studies`` and
``nasmlcn.benchmarks`` (a wheel carries them; an editable install maps the packages
to the folders themselves). Found through the import system, never through the
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
BENCHMARKS_PACKAGE = "nasmlcn.benchmarks"


def _package_dir(package: str, folder: str) -> Path:
    """The folder of ``package`` (``nasmlcn.benchmarks`` has no ``__init__.py``: a
    namespace package, whose ``importlib.resources`` root is not a plain path)."""
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


def benchmarks_dir() -> Path:
    """The folder of the engines (``benchmarks/``)."""
    return _package_dir(BENCHMARKS_PACKAGE, "benchmarks")


def engine_script(recipe: Recipe) -> Path:
    """The benchmark script that measures ``recipe``.

    Raises:
        ReproduceError: The recipe is a search, or its script does not exist.
    """
    if recipe.engine == SEARCH_ENGINE:
        raise ReproduceError(f"{recipe.name} is a search: it has no benchmark script")
    path = benchmarks_dir() / f"{recipe.engine}.py"
    if not path.is_file():
        known = sorted(p.stem for p in benchmarks_dir().glob("[a-z]*.py"))
        raise ReproduceError(
            f"recipe {str(recipe.path)!r}: no engine {recipe.engine!r} in benchmarks/"
            f" (known: {', '.join(known)})"
        )
    return path


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
