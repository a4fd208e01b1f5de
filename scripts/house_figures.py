"""Print the code-shape figures (how big the house is, not how fast).

    .venv/bin/python scripts/house_figures.py [--trace]

- modules and subpackages directly in ``nasmlcn/search/``;
- functions in ``nasmlcn/`` over 80 lines, and with more than 8 parameters (``self`` and
  ``cls`` not counted);
- public training verbs: names in ``nasmlcn``, ``nasmlcn.training`` and
  ``nasmlcn.parallel`` ``__all__`` that are functions named ``train*`` or ``run_*``
  (and not ``run_search``/``run_workers``, the search's verbs);
- README lines; lines of ``benchmarks/`` that pyproject installs into the wheel;
- the floors of ``nasmlcn/search/`` (``scripts/import_graph.py``'s ``SEARCH_FLOORS``):
  its import circles and its import statements to a higher floor, type-only imports
  counted;
- ``getattr`` with a default on an evaluator, pruner or observer: a member its
  protocol does not declare;
- imports of private modules (``nasmlcn.x._y``) in ``tests/``;
- with ``--trace``: the files of ``nasmlcn/search/`` whose functions run while one real
  trial (1 epoch, 200 images, Fashion-MNIST) goes from ``nasmlcn search`` to its stored
  result, and their lines; and those of the trial itself, from the loop's claim to
  Optuna's tell (the files a reader opens to follow a trial), with the functions that
  run in them and those functions' lines.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, whatever the venv installed
PACKAGE = ROOT / "nasmlcn"
SEARCH_VERBS = {"run_search", "run_workers"}


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def search_entries() -> int:
    search = PACKAGE / "search"
    return sum(
        1
        for p in search.iterdir()
        if p.name != "__init__.py"
        and not p.name.startswith("__")
        and (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))
    )


def functions() -> list[tuple[str, int, int]]:
    """(qualified place, lines, parameters) of every function in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
                params = len([n for n in names if n not in ("self", "cls")])
                params += bool(args.vararg) + bool(args.kwarg)
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append((f"{path.relative_to(ROOT)}:{node.lineno} {node.name}", size, params))
    return found


def training_verbs() -> list[str]:
    verbs = set()
    for name in ("nasmlcn", "nasmlcn.training", "nasmlcn.parallel"):
        module = importlib.import_module(name)
        for public in getattr(module, "__all__", []):
            if public in SEARCH_VERBS or not public.startswith(("train", "run_")):
                continue
            if inspect.isfunction(getattr(module, public)):
                verbs.add(public)
    return sorted(verbs)


def search_floors() -> tuple[list[list[str]], list[str]]:
    """``nasmlcn.search``'s import circles and its import statements up a floor."""
    import import_graph as graph  # the sibling script (scripts/ is on sys.path when run)

    edges = graph.imports()
    up = {
        (
            e.source,
            e.line,
        ): f"{e.source}:{e.line} -> {e.target}{' (type only)' if e.type_only else ''}"
        for e in graph.imports_up(edges)
    }
    return graph.search_circles(edges), sorted(up.values())


PROTOCOL_HOLDERS = ("evaluator", "pruner", "observer")


def protocol_getattrs() -> list[str]:
    """``getattr(x, "member", default)`` in the package where ``x`` names an evaluator,
    a pruner or an observer: a member read as if its protocol might lack it."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr"):
                continue
            if len(node.args) != 3 or not isinstance(node.args[1], ast.Constant):
                continue
            holder = ast.unparse(node.args[0]).lower()
            if any(word in holder for word in PROTOCOL_HOLDERS):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.args[1].value}")
    return found


def private_test_imports() -> tuple[int, int]:
    """Import statements in ``tests/`` that name a private module of the package, and
    the (test file, private module) pairs they make: what a move of that module
    breaks (a module is named by its path up to its first private part)."""
    count = 0
    pairs: set[tuple[Path, str]] = set()
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            private = [
                n
                for n in names
                if n.startswith("nasmlcn.") and any(p.startswith("_") for p in n.split(".")[1:])
            ]
            count += bool(private)
            for name in private:
                parts = name.split(".")
                first = next(i for i, part in enumerate(parts) if i and part.startswith("_"))
                pairs.add((path, ".".join(parts[: first + 1])))
    return count, len(pairs)


def wheel_benchmark_lines() -> int:
    """Lines of ``benchmarks/`` that pyproject's package-dir installs as a package."""
    mapped = re.search(
        r'^"nasmlcn\.benchmarks" = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M
    )
    if mapped is None:
        return 0
    return sum(lines(p) for p in (ROOT / mapped.group(1)).rglob("*.py"))


def traced_trial_files() -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Files of nasmlcn/search whose functions run during a one-trial search: all of
    them, and those of the trial itself (inside ``TrialRun.__call__``, plus the loop
    that calls it); and the trial's functions with their lines."""
    from nasmlcn.cli import run

    search_dir = str(PACKAGE / "search")
    seen: set[str] = set()
    in_trial: set[str] = set()
    trial_functions: dict[str, int] = {}
    depth = 0

    def is_trial(code: Any) -> bool:
        name = code.co_filename.replace("\\", "/")
        return code.co_name == "__call__" and name.endswith("_run/trial.py")

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal depth
        code = frame.f_code
        if event == "call" and is_trial(code):
            depth += 1
            caller = frame.f_back
            if caller is not None:
                in_trial.add(caller.f_code.co_filename)
        elif event == "return" and is_trial(code):
            depth -= 1
        if (
            event == "call"
            and code.co_name != "<module>"
            and code.co_filename.startswith(search_dir)
        ):
            seen.add(code.co_filename)
            if depth > 0:
                in_trial.add(code.co_filename)
            # lambdas and comprehensions are read as part of the function around them
            if depth > 0 and not code.co_name.startswith("<"):
                place = f"{Path(code.co_filename).relative_to(ROOT)}:{code.co_firstlineno} {code.co_name}"
                trial_functions[place] = _function_lines(code)

    with tempfile.TemporaryDirectory() as tmp:
        argv = [
            "nasmlcn", "search", "--devices", "2xK80", "--mem", "12GB", "--trials", "1",
            "--epochs", "1", "--train-limit", "200", "--val-limit", "100", "-q",
            "--storage", f"sqlite:///{tmp}/s.db", "--artifacts", f"{tmp}/art", "--json",
        ]  # fmt: skip
        sys.argv = argv
        sys.setprofile(profile)
        try:
            run()
        except SystemExit:
            pass
        finally:
            sys.setprofile(None)

    def sized(files: set[str]) -> dict[str, int]:
        return {str(Path(f).relative_to(ROOT)): lines(Path(f)) for f in sorted(files)}

    trial = sized({f for f in in_trial if f.startswith(search_dir)})
    return sized(seen), trial, trial_functions


def _function_lines(code: Any) -> int:
    """The lines of the function whose code object is ``code`` (its ``def`` to its end)."""
    tree = ast.parse(Path(code.co_filename).read_text())
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        # a decorated function's code starts at its first decorator (Python 3.8+)
        decorated = getattr(node, "decorator_list", [])
        first = min([node.lineno, *(d.lineno for d in decorated)])
        if code.co_firstlineno in (first, node.lineno):
            return (node.end_lineno or node.lineno) - first + 1
    return 0


def main() -> int:
    found = functions()
    long = [f for f in found if f[1] > 80]
    wide = [f for f in found if f[2] > 8]
    print(f"modules and subpackages directly in nasmlcn/search: {search_entries()}")
    print(f"functions in nasmlcn over 80 lines: {len(long)}")
    for place, size, _ in sorted(long, key=lambda f: -f[1]):
        print(f"  {size:4d} lines  {place}")
    print(f"functions with more than 8 parameters: {len(wide)}")
    for place, _, params in sorted(wide, key=lambda f: -f[2]):
        print(f"  {params:4d} params {place}")
    verbs = training_verbs()
    print(f"public training verbs: {len(verbs)} ({', '.join(verbs)})")
    print(f"README lines: {lines(ROOT / 'README.md')}")
    print(f"lines of benchmarks/ in the wheel: {wheel_benchmark_lines()}")
    circles, up = search_floors()
    print(f"circles in nasmlcn/search (type-only imports counted): {len(circles)}")
    for circle in circles:
        print("  " + " <-> ".join(m.removeprefix("nasmlcn.search.") for m in circle))
    print(f"imports up a floor inside nasmlcn/search: {len(up)}")
    for line in up:
        print(f"  {line}")
    getattrs = protocol_getattrs()
    print(f"getattr with a default on an evaluator, pruner or observer: {len(getattrs)}")
    for line in getattrs:
        print(f"  {line}")
    statements, pairs = private_test_imports()
    print(f"private-module imports in tests: {statements} ({pairs} test file-module pairs)")
    if "--trace" in sys.argv[1:]:
        every, trial, functions_run = traced_trial_files()
        for title, files in (("a one-trial search", every), ("the trial (claim to tell)", trial)):
            print(f"nasmlcn/search files run by {title}: {len(files)}, {sum(files.values())} lines")
            for name, size in files.items():
                print(f"  {size:4d}  {name}")
        print(
            f"functions the trial runs in them: {len(functions_run)}, "
            f"{sum(functions_run.values())} lines"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
