"""The planning layer and the CLI import without torch."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "nasmlcn",
        "nasmlcn.specs",
        "nasmlcn.data",
        "nasmlcn.training",
        "nasmlcn.cli",
        "nasmlcn.hardware",
        "nasmlcn.costs",
        "nasmlcn.placement",
        "nasmlcn.planning",
        "nasmlcn.reproduce",
    ],
)
def test_import_does_not_load_torch(module: str) -> None:
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "module", ["nasmlcn.cli._progress", "nasmlcn.cli._calibrate", "nasmlcn.cli", "nasmlcn.search"]
)
def test_displays_the_cli_and_the_search_config_do_not_load_optuna(module: str) -> None:
    """The CLI builds ``search``'s options from ``SearchConfig`` on every command, so
    importing the search package loads its configuration only (the rest lazily)."""
    code = f"import sys, {module}; print('optuna' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_version_matches_metadata() -> None:
    from importlib.metadata import version

    import nasmlcn

    assert version("nasmlcn") == nasmlcn.__version__


@pytest.mark.parametrize(
    "package",
    [
        "nasmlcn",
        "nasmlcn.data",
        "nasmlcn.training",
        "nasmlcn.parallel",
        "nasmlcn.runs",
        "nasmlcn.search",
    ],
)
def test_lazy_exports_match_what_type_checkers_see(package: str) -> None:
    """Each name the module ``__getattr__`` imports on first use is imported under
    ``if TYPE_CHECKING:`` from the same module, so mypy sees its real type."""
    import ast
    import importlib
    import inspect

    module = importlib.import_module(package)
    tree = ast.parse(inspect.getsource(module))
    seen = {
        alias.name: node.module
        for block in tree.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    lazy = {name: f"{package}.{sub}" for name, sub in module._LAZY.items()}
    assert seen == lazy
    for name in module.__all__:
        getattr(module, name)  # AttributeError if an exported name does not resolve
