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


FACES = (
    "nasmlcn",
    "nasmlcn.data",
    "nasmlcn.training",
    "nasmlcn.parallel",
    "nasmlcn.runs",
    "nasmlcn.search",
    "nasmlcn.study",
)
"""The package faces that export names lazily (:func:`nasmlcn._lazy.face`)."""


@pytest.mark.parametrize("package", FACES)
def test_a_face_lists_each_export_once_and_every_one_resolves(package: str) -> None:
    """A face lists an export once, as an import (under ``if TYPE_CHECKING:`` for
    the lazy ones, so mypy sees their real types); its ``__all__`` is read from those
    imports, and every name resolves, the lazy ones from the module they name."""
    import ast
    import importlib
    import inspect

    module = importlib.import_module(package)
    source = inspect.getsource(module)
    tree = ast.parse(source)
    assigned = [
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    ]
    assert "__all__" not in assigned, "a second list of exports"
    assert "_LAZY" not in assigned, "a second list of exports"
    assert "face(__name__" in source
    lazy = {
        alias.asname or alias.name: (node.module, alias.name)
        for block in tree.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert lazy, "a face with nothing lazy needs no face()"
    for name in module.__all__:
        value = getattr(module, name)  # AttributeError if an exported name does not resolve
        if name in lazy:
            where, original = lazy[name]
            assert value is getattr(importlib.import_module(str(where)), original)


def test_a_face_reads_its_imports_hidden_names_aside() -> None:
    from nasmlcn._lazy import _imports

    eager, lazy = _imports(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "from p._a import A, b as _b\n"
        "from p._v import V as __version__\n"
        "if TYPE_CHECKING:\n"
        "    from p._c import C, d as e\n"
    )
    assert eager == {"A", "_b", "__version__"}
    assert lazy == {"C": ("p._c", "C"), "e": ("p._c", "d")}
