"""The shape of the package, read from its source by ``scripts/import_graph.py``:
no import cycles (lazy imports included), packages use each other's public names,
Optuna's internals only through ``nasmlcn._optuna_compat``, and no torch in the
planning layer; and the house's limits on the length of modules and functions."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import ROOT

# Imports of another package's private module that are right, each with its reason
# ("source -> target"). An entry needs a reason a reviewer accepts.
ALLOWED_PRIVATE: dict[str, str] = {}

MAX_LINES = 500
# Modules over MAX_LINES lines, each with the reason its docstring states.
LONG_MODULES: dict[str, str] = {}


@pytest.fixture(scope="module")
def graph() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts/import_graph.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_graph"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def edges(graph: ModuleType) -> list[Any]:
    return graph.imports()


def test_no_import_cycles(graph: ModuleType, edges: list[Any]) -> None:
    assert graph.cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle_through_a_lazy_import(graph: ModuleType) -> None:
    """The checker itself can fail: two modules importing each other, one of them
    inside a function, are one cycle; a TYPE_CHECKING import is none."""
    edges = [
        graph.Import("nasmlcn.a._x", "nasmlcn.a._y", "nasmlcn.a._y", 1, False, False),
        graph.Import("nasmlcn.a._y", "nasmlcn.a._x", "nasmlcn.a._x", 9, True, False),
        graph.Import("nasmlcn.a._y", "nasmlcn.a._z", "nasmlcn.a._z", 2, False, False),
        graph.Import("nasmlcn.a._z", "nasmlcn.a._y", "nasmlcn.a._y", 3, False, True),
    ]
    assert graph.cycles(edges) == [["nasmlcn.a._x", "nasmlcn.a._y"]]


def test_the_search_is_laid_in_floors(graph: ModuleType, edges: list[Any]) -> None:
    """``nasmlcn.search`` has no circle and no import to a higher floor
    (``SEARCH_FLOORS``), counting the imports under ``TYPE_CHECKING`` too: a type-only
    import is a dependency a reader follows. Every module has a floor."""
    assert graph.search_circles(edges) == []
    assert [f"{e.source}:{e.line} -> {e.target}" for e in graph.imports_up(edges)] == []
    search = [m for m in graph.modules() if m.startswith("nasmlcn.search")]
    assert len(search) > 40
    assert [m for m in search if graph.search_floor(m) is None] == []


def test_the_floor_checks_can_fail(graph: ModuleType) -> None:
    """A type-only import closes a circle for the floors (not for the run-time check),
    and an import from the configuration up to the trial is an import up."""
    edges = [
        graph.Import(
            "nasmlcn.search._config", "nasmlcn.search._run.trial",
            "nasmlcn.search._run.trial", 3, False, False,
        ),
        graph.Import(
            "nasmlcn.search._run.trial", "nasmlcn.search._config",
            "nasmlcn.search._config", 5, False, True,
        ),
    ]  # fmt: skip
    assert graph.search_circles(edges) == [["nasmlcn.search._config", "nasmlcn.search._run.trial"]]
    assert graph.cycles(edges) == []
    assert [(e.source, e.line) for e in graph.imports_up(edges)] == [("nasmlcn.search._config", 3)]
    assert graph.search_floor("nasmlcn.search._run.search") > graph.search_floor(
        "nasmlcn.search._run.loop"
    )
    assert graph.search_floor("nasmlcn.search._run.trial") < graph.search_floor(
        "nasmlcn.search._prepare.warm"
    )
    assert graph.search_floor("nasmlcn.cli._search") is None


def test_packages_use_each_other_s_public_names(graph: ModuleType, edges: list[Any]) -> None:
    found = {
        f"{edge.source} -> {edge.named}": edge.line for edge in graph.private_cross_package(edges)
    }
    unexplained = sorted(set(found) - set(ALLOWED_PRIVATE))
    assert unexplained == [], "import these names from the package instead"
    stale = sorted(set(ALLOWED_PRIVATE) - set(found))
    assert stale == [], "remove these allow-list entries: the imports are gone"


def test_the_private_import_finder_sees_one(graph: ModuleType) -> None:
    edges = [
        graph.Import("nasmlcn.cli._best", "nasmlcn.search._x", "nasmlcn.search._x", 1, True, False),
        graph.Import(
            "nasmlcn.search._y", "nasmlcn.search._x", "nasmlcn.search._x", 1, False, False
        ),
        graph.Import("nasmlcn.cli._best", "nasmlcn.search._x", "nasmlcn.search", 2, False, False),
        graph.Import("nasmlcn.cli._best", "nasmlcn._io", "nasmlcn._io", 3, False, False),
    ]
    assert [(e.source, e.line) for e in graph.private_cross_package(edges)] == [
        ("nasmlcn.cli._best", 1)
    ]


def test_the_planning_layer_imports_no_torch(graph: ModuleType, edges: list[Any]) -> None:
    assert graph.torch_in_planning(edges) == []


def test_optuna_internals_only_through_the_compat_module() -> None:
    """``optuna._x`` or ``optuna.x._y`` is imported by ``nasmlcn/_optuna_compat.py``
    alone (type-only imports included)."""
    offenders = []
    for path in sorted((ROOT / "nasmlcn").rglob("*.py")):
        if path.name == "_optuna_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "optuna" and any(p.startswith("_") for p in parts[1:]):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert offenders == []


def test_no_module_is_over_500_lines_without_a_stated_reason(graph: ModuleType) -> None:
    long = {
        name: lines for name, lines in graph.largest(graph.modules(), top=1000) if lines > MAX_LINES
    }
    assert sorted(long) == sorted(LONG_MODULES)
    for name in long:
        path = graph.modules()[name]
        docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert "lines" in docstring, f"{name}: say in its docstring why it is this long"


# Package-level circles not yet broken, each with its reason (the modules, sorted,
# joined by " <-> ", as the script prints them).
KNOWN_PACKAGE_CYCLES: dict[str, str] = {}


def test_package_level_cycles_are_known(graph: ModuleType, edges: list[Any]) -> None:
    found = {" <-> ".join(c) for c in graph.cycles(edges, packages=True)}
    assert sorted(found - set(KNOWN_PACKAGE_CYCLES)) == []
    assert sorted(set(KNOWN_PACKAGE_CYCLES) - found) == [], "a circle is gone: drop its entry"


def test_a_package_level_cycle_is_a_cycle(graph: ModuleType) -> None:
    """``from nasmlcn.b import X`` runs ``nasmlcn.b``'s ``__init__``, which imports
    ``nasmlcn.b._y``; if that module imports back (here lazily), the modules form a
    circle, though ``X``'s own module ``nasmlcn.b._x`` imports nothing of ``a``."""
    edges = [
        graph.Import("nasmlcn.a._m", "nasmlcn.b._x", "nasmlcn.b", 1, False, False),
        graph.Import("nasmlcn.b", "nasmlcn.b._x", "nasmlcn.b._x", 1, False, False),
        graph.Import("nasmlcn.b", "nasmlcn.b._y", "nasmlcn.b._y", 2, False, False),
        graph.Import("nasmlcn.b._y", "nasmlcn.a._m", "nasmlcn.a._m", 7, True, False),
    ]
    assert graph.cycles(edges) == []  # module by module: no cycle
    assert graph.cycles(edges, packages=True) == [["nasmlcn.a._m", "nasmlcn.b", "nasmlcn.b._y"]]


def test_no_package_imports_the_top_level_package(graph: ModuleType, edges: list[Any]) -> None:
    """``nasmlcn/__init__`` imports the packages, so their importing ``nasmlcn`` runs
    back up; the version comes from ``nasmlcn._version``."""
    assert [f"{e.source}:{e.line}" for e in graph.arrows_up(edges)] == []
    made = [
        graph.Import("nasmlcn.search._prepare.open_study", "nasmlcn", "nasmlcn", 14, False, False)
    ]
    assert len(graph.arrows_up(made)) == 1


def test_no_benchmark_file_is_over_max_lines() -> None:
    """``benchmarks/`` is code a reader must follow too: a long benchmark is a
    package of parts (``benchmarks/_search_quality/``) that a short script calls."""
    long = {
        str(path.relative_to(ROOT)): n
        for path in sorted((ROOT / "benchmarks").rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


MAX_FUNCTION_LINES = 80
MAX_PARAMETERS = 8
# Functions with more than MAX_PARAMETERS parameters (self and cls not counted), each
# with its reason.
WIDE_FUNCTIONS: dict[str, str] = {
    "nasmlcn/planning/_plan.py plan_model": "the planner's keyword options, all defaulted",
    "nasmlcn/training/_checkpoint.py save_checkpoint": "one keyword per field of the file",
    "nasmlcn/specs/_arch.py __init__": "the architecture's fields, keyword-only",
    "nasmlcn/training/_job.py resolve_arch": "the ways a job names its model",
}


def _house_figures() -> Any:
    spec = importlib.util.spec_from_file_location(
        "house_figures", ROOT / "scripts/house_figures.py"
    )
    assert spec is not None
    assert spec.loader is not None
    figures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(figures)
    return figures


def _functions() -> list[tuple[str, int, int]]:
    """(file and name, lines, parameters) of every function in the package, as
    ``scripts/house_figures.py`` counts them."""
    return [
        (re.sub(r":\d+ ", " ", place), size, width)
        for place, size, width in _house_figures().functions()
    ]


def test_the_trace_counts_a_run_function_s_lines_decorators_included(tmp_path: Path) -> None:
    """``house_figures.py --trace`` sizes each function the trial runs from its code
    object; a decorated one (a property, a classmethod) starts at its decorator."""
    source = tmp_path / "shapes.py"
    source.write_text(
        "def keep(f):\n"
        "    return f\n"
        "\n"
        "class Box:\n"
        "    @property\n"
        "    def size(self):\n"
        "        return 1\n"
        "\n"
        "    @classmethod\n"
        "    @keep\n"
        "    def make(cls):\n"
        "        x = 1\n"
        "        return x\n"
        "\n"
        "def plain():\n"
        "    return 2\n"
    )
    namespace: dict[str, Any] = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    box = namespace["Box"]
    lines = _house_figures()._function_lines
    assert lines(box.__dict__["size"].fget.__code__) == 3
    assert lines(box.__dict__["make"].__func__.__code__) == 5
    assert lines(namespace["plain"].__code__) == 2


def test_no_function_is_over_max_lines_or_wider_than_the_known_ones() -> None:
    """The house's limits on a function (``scripts/house_figures.py`` prints them):
    at most 80 lines, and more than 8 parameters only where listed with a reason."""
    found = _functions()
    assert len(found) > 1000  # it read the package
    assert [(name, size) for name, size, _ in found if size > MAX_FUNCTION_LINES] == []
    wide = {name for name, _, width in found if width > MAX_PARAMETERS}
    assert wide == set(WIDE_FUNCTIONS)
