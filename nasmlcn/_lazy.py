"""Lazy exports: a package names what it exports, and the module that defines each
name is imported when the name is first used (so importing the package stays cheap,
and torch is loaded only by the code that needs it).

A package writes ``__getattr__ = lazy_exports(__name__, _LAZY)`` with ``_LAZY`` mapping
each lazy name to its submodule, and imports the same names under ``if TYPE_CHECKING:``
so type checkers see them (``tests/test_import.py`` checks the two agree).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``package.table[name]``
    when ``name`` is first asked for."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
