"""The shape of the ``nasmlcn`` package, read from its source: import cycles, private
imports across packages, the largest modules and torch in the planning layer.

    python scripts/import_graph.py            # the figures, one per line
    python scripts/import_graph.py --list     # ... and every private cross-package import
    python scripts/import_graph.py --json

Every import counts, the lazy ones inside functions included; imports under
``if TYPE_CHECKING:`` count for the private-import figure (they still couple the
packages) but not for cycles or torch (they never run). ``from package import name``
is followed to the submodule that defines ``name`` when the package re-exports it, so
a cycle is reported between the modules that really depend on each other.

A *package* is a first-level subpackage of ``nasmlcn`` (``nasmlcn.search`` with
``nasmlcn.search.spaces`` inside it); the top-level modules (``nasmlcn._toml``, ...)
belong to ``nasmlcn`` itself and every package may use them. A *private
cross-package import* is an import, from one package, of a module of another package
whose dotted name has a part starting with ``_``. ``tests/test_imports.py`` checks
these figures against an allow-list with a reason for each entry.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "nasmlcn"

# Packages that must import without torch (the planning layer: tests/test_imports.py).
PLANNING = (
    "nasmlcn.specs",
    "nasmlcn.hardware",
    "nasmlcn.costs",
    "nasmlcn.placement",
    "nasmlcn.planning",
    "nasmlcn.search",
    "nasmlcn.study",
    "nasmlcn.reproduce",
)
# Inside the planning layer but programs of their own: the engines of `nasmlcn
# reproduce` train and time models, each run as `python -m` in a process of its own
# (nasmlcn.reproduce never imports them, which the check below still holds it to).
NOT_PLANNING = ("nasmlcn.reproduce.engines",)
# Third-party modules that pull torch in when imported.
TORCH = ("torch", "torchvision")


@dataclass(frozen=True)
class Import:
    """One ``import`` statement's reference from ``source`` to ``target``."""

    source: str
    target: str  # the module that defines what is imported (followed through re-exports)
    named: str  # the module the statement names (or the submodule it imports)
    line: int
    lazy: bool  # inside a function
    type_only: bool  # under ``if TYPE_CHECKING:``


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, packages by their ``__init__.py``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _statements(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Every import statement with (lazy, type_only)."""

    def walk(node: ast.AST, lazy: bool, type_only: bool) -> Iterator:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, lazy, type_only
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, True, type_only)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for sub in child.body:
                    yield from walk(ast.Module(body=[sub], type_ignores=[]), lazy, True)
                for sub in child.orelse:
                    yield from walk(ast.Module(body=[sub], type_ignores=[]), lazy, type_only)
            else:
                yield from walk(child, lazy, type_only)

    yield from walk(tree, False, False)


@functools.cache
def _reexports_of(path: Path) -> dict[str, str]:
    table: dict[str, str] = {}
    for node, _, _ in _statements(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                table[alias.asname or alias.name] = node.module
    return table


def _reexports(name: str, found: dict[str, Path]) -> dict[str, str]:
    """For a package: exported name -> the module it is imported from."""
    path = found.get(name)
    if path is None or path.name != "__init__.py":
        return {}
    return _reexports_of(path)


def _resolve(module: str, name: str | None, found: dict[str, Path]) -> str:
    """The module ``from module import name`` really depends on."""
    if name is not None and f"{module}.{name}" in found:
        return f"{module}.{name}"
    seen: set[str] = set()
    while name is not None and module not in seen:
        seen.add(module)
        source = _reexports(module, found).get(name)
        if source is None or source == module:
            break
        module = source
    return module


def imports(found: dict[str, Path] | None = None) -> list[Import]:
    """Every import, inside ``nasmlcn`` or of torch, of every module."""
    found = modules() if found is None else found
    out = []
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node, lazy, type_only in _statements(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                pairs = [(alias.name, None) for alias in node.names]
            else:
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                pairs = [(target, alias.name) for alias in node.names]
            for target, imported in pairs:
                top = target.split(".")[0]
                if top == "nasmlcn":
                    resolved = _resolve(target, imported, found)
                    submodule = f"{target}.{imported}"
                    named = submodule if submodule in found else target
                elif top in TORCH:
                    resolved = named = top
                else:
                    continue
                out.append(Import(name, resolved, named, node.lineno, lazy, type_only))
    return out


def package_of(module: str) -> str:
    """``nasmlcn.search._run.loop`` -> ``nasmlcn.search``; top-level modules -> ``nasmlcn``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "nasmlcn"
    if len(parts) == 2 and (ROOT / parts[1]).is_dir():
        return module
    return ".".join(parts[:2]) if (ROOT / parts[1]).is_dir() else "nasmlcn"


def is_private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")[1:])


def private_cross_package(found_imports: list[Import]) -> list[Import]:
    """Import statements that name another package's private module (one per
    statement and module, however many names it imports)."""
    seen: dict[tuple[str, int, str], Import] = {}
    for edge in found_imports:
        if (
            edge.named.startswith("nasmlcn")
            and package_of(edge.named) != "nasmlcn"
            and package_of(edge.source) != package_of(edge.named)
            and is_private(edge.named)
        ):
            seen.setdefault((edge.source, edge.line, edge.named), edge)
    return list(seen.values())


def cycles(
    found_imports: list[Import], packages: bool = False, *, type_only: bool = False
) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted.

    ``packages``: follow each import to the module it names, not to the one that
    defines the name: ``from nasmlcn.search import X`` runs ``nasmlcn.search``'s
    ``__init__``, which imports every module of the package, so a module that a
    package imports and that imports the package back closes a circle even when
    ``X``'s own module never imports it.

    ``type_only``: count the imports under ``if TYPE_CHECKING:`` too (they never run,
    but a reader follows them: the floor plan of ``nasmlcn.search`` counts them)."""
    graph: dict[str, set[str]] = {}
    for edge in found_imports:
        target = edge.named if packages else edge.target
        if (edge.type_only and not type_only) or not target.startswith("nasmlcn"):
            continue
        if edge.source == target:
            continue
        graph.setdefault(edge.source, set()).add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


SEARCH = "nasmlcn.search"
SEARCH_FLOORS: tuple[tuple[str, ...], ...] = (
    ("spaces",),  # the search spaces (public)
    ("_config",),  # what a search is: SearchConfig, its fields' settings, the run's limits
    ("samplers", "evaluators", "pruners", "objectives"),  # the plug-in families
    ("_prepare.setup", "_results.summary"),  # a checked search; the study's answer
    ("_run.observer",),  # what a run tells its caller, and who listens
    ("_run.trial", "_run.repeats", "_run.pruning", "_run.replicate"),  # one trial
    ("_prepare",),  # from a configuration to an open study (warm start's trials included)
    ("_run.loop",),  # the run: propose, run a trial, tell the observers
    ("_run.pool", "_run.shares", "_results"),  # many processes on one study; after it
    ("_run", ""),  # run_search; the package's face
)
"""The floors of ``nasmlcn.search``, bottom first: a module's floor is the one whose
entry is the longest prefix of its name (inside ``nasmlcn.search``); every import,
type-only ones included, goes to the same floor or a lower one (``tests/test_imports.py``)."""


def search_floor(module: str) -> int | None:
    """The floor of a module of ``nasmlcn.search`` (None: not one of its modules)."""
    if module != SEARCH and not module.startswith(SEARCH + "."):
        return None
    inner = module[len(SEARCH) + 1 :]
    best, floor = -1, None
    for level, prefixes in enumerate(SEARCH_FLOORS):
        for prefix in prefixes:
            under = inner == prefix or inner.startswith(prefix + ".") or prefix == ""
            if under and len(prefix) > best:
                best, floor = len(prefix), level
    return floor


def imports_up(found_imports: list[Import]) -> list[Import]:
    """Imports inside ``nasmlcn.search`` (type-only ones included) from a module to one
    on a higher floor (:data:`SEARCH_FLOORS`)."""
    up = []
    for edge in found_imports:
        here, there = search_floor(edge.source), search_floor(edge.target)
        if here is not None and there is not None and there > here:
            up.append(edge)
    return up


def search_circles(found_imports: list[Import]) -> list[list[str]]:
    """Import circles inside ``nasmlcn.search``, type-only imports counted."""
    inner = [
        e for e in found_imports if e.source.startswith(SEARCH) and e.target.startswith(SEARCH)
    ]
    return cycles(inner, type_only=True)


def arrows_up(found_imports: list[Import]) -> list[Import]:
    """Imports of the top-level package ``nasmlcn`` from inside one of its packages:
    an arrow back up, since ``nasmlcn/__init__`` imports the packages."""
    return [
        e
        for e in found_imports
        if e.named == "nasmlcn" and not e.type_only and package_of(e.source) != "nasmlcn"
    ]


def torch_in_planning(found_imports: list[Import]) -> list[Import]:
    """Imports that run torch from a planning-layer module, directly or through the
    modules it imports at import time (lazy imports inside functions excluded)."""
    eager: dict[str, set[str]] = {}
    for edge in found_imports:
        if not edge.lazy and not edge.type_only:
            eager.setdefault(edge.source, set()).add(edge.target)
    offenders = []
    for edge in found_imports:
        if edge.lazy or edge.type_only or not edge.source.startswith(PLANNING):
            continue
        if edge.source.startswith(NOT_PLANNING):
            continue
        todo, seen = [edge.target], set()
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            if current in TORCH:
                offenders.append(edge)
                break
            todo.extend(eager.get(current, ()))
    return offenders


def largest(found: dict[str, Path], top: int = 5) -> list[tuple[str, int]]:
    sizes = [(name, len(path.read_text().splitlines())) for name, path in found.items()]
    return sorted(sizes, key=lambda pair: -pair[1])[:top]


def report() -> dict:
    found = modules()
    edges = imports(found)
    private = private_cross_package(edges)
    components = cycles(edges)
    circles = cycles(edges, packages=True)
    up = arrows_up(edges)
    readme = ROOT.parent / "README.md"
    return {
        "modules": len(found),
        "cycles": components,
        "modules_in_cycles": sum(len(c) for c in components),
        "package_cycles": circles,
        "modules_in_package_cycles": sum(len(c) for c in circles),
        "arrows_up": [f"{e.source}:{e.line} -> {e.named}" for e in up],
        "private_cross_package_imports": len(private),
        "private_imports": [f"{e.source}:{e.line} -> {e.named}" for e in private],
        "largest_modules": largest(found),
        "torch_in_planning": [
            f"{e.source}:{e.line} -> {e.target}" for e in torch_in_planning(edges)
        ],
        "readme_lines": len(readme.read_text().splitlines()) if readme.exists() else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list every private import")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures = report()
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"modules: {figures['modules']}")
    print(f"import cycles: {len(figures['cycles'])} across {figures['modules_in_cycles']} modules")
    for component in figures["cycles"]:
        print(f"  {' <-> '.join(component)}")
    circles = figures["package_cycles"]
    print(
        f"package-level cycles: {len(circles)} across {figures['modules_in_package_cycles']} "
        f"modules; arrows up to nasmlcn: {len(figures['arrows_up'])}"
    )
    for component in circles:
        print(f"  {' <-> '.join(component)}")
    for line in figures["arrows_up"]:
        print(f"  up: {line}")
    print(f"private cross-package imports: {figures['private_cross_package_imports']}")
    if args.list:
        for line in figures["private_imports"]:
            print(f"  {line}")
    print("largest modules: " + ", ".join(f"{n} {c}" for n, c in figures["largest_modules"]))
    print(f"torch imported by the planning layer: {len(figures['torch_in_planning'])}")
    for line in figures["torch_in_planning"]:
        print(f"  {line}")
    print(f"README.md lines: {figures['readme_lines']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
