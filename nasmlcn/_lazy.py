"""A package face: one list of what a package exports, some of it imported only when
first used.

A package's ``__init__`` imports what it exports, once: eagerly at the top, or under
``if TYPE_CHECKING:`` for what would load torch, Optuna or plotly too early (type
checkers see those imports; at run time the module that defines each such name is
imported when the name is first asked for). It then writes::

    __getattr__, __all__ = face(__name__)

and :func:`face` reads that one list back from the module's own source: ``__all__`` is
every public name the face imports (``hidden`` names aside, e.g. an old name kept one
release), and ``__getattr__`` imports a ``TYPE_CHECKING`` name's module on first use.
A name is exported by importing it in the face; nothing else lists it
(``tests/test_import.py`` checks every name resolves, and that each face is read).
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

EXPORTED_DUNDERS = frozenset({"__version__"})
"""Names with underscores that a face exports all the same."""


def face(package: str, hidden: Iterable[str] = ()) -> tuple[Callable[[str], Any], list[str]]:
    """The module ``__getattr__`` and the ``__all__`` of package ``package`` (see the
    module docstring), from the imports of its ``__init__``'s source."""
    eager, lazy = _imports(Path(str(sys.modules[package].__file__)).read_text())
    hide = set(hidden)
    names = sorted(
        n
        for n in {*eager, *lazy}
        if n not in hide and (not n.startswith("_") or n in EXPORTED_DUNDERS)
    )

    def __getattr__(name: str) -> Any:
        where = lazy.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, original = where
        return getattr(importlib.import_module(module), original)

    return __getattr__, names


def _imports(source: str) -> tuple[set[str], dict[str, tuple[str, str]]]:
    """The names a face's source binds by ``from M import ...`` at its top (eager),
    and those under ``if TYPE_CHECKING:``, each with its module and its name there
    (lazy)."""
    eager: set[str] = set()
    lazy: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.module not in (None, "__future__"):
            eager.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for inner in node.body:
                if isinstance(inner, ast.ImportFrom) and inner.module:
                    for alias in inner.names:
                        lazy[alias.asname or alias.name] = (inner.module, alias.name)
    eager -= {"TYPE_CHECKING", "face"}
    return eager, lazy


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
