"""What a user sees of nasmlcn, written down so a change to it is seen: every command's
and group's help, options (names, kind, default, help) and arguments, and every public
package's exported names with what each is (class, function, module, value).

    python scripts/surface.py            # print it (JSON)
    python scripts/surface.py --write    # write tests/surface.json (after a wanted change)

``tests/test_surface.py`` compares the code with ``tests/surface.json``: a refactoring
that changes nothing a user sees leaves it equal.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import pkgutil
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer.main

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "tests" / "surface.json"


def _default(param: Any) -> Any:
    value = param.default
    if callable(value):
        return "<callable>"
    if isinstance(value, Path):
        return str(value).replace(str(Path.home()), "~")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return _plain(value)


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _type(param: Any) -> str:
    descriptor = getattr(param, "type_descriptor", None)  # typer's own click
    if descriptor is not None:
        annotation = descriptor.annotation
        return getattr(annotation, "__name__", None) or repr(annotation)
    return str(getattr(getattr(param, "type", None), "name", ""))


def _param(param: Any) -> dict[str, Any]:
    option = hasattr(param, "is_flag")
    entry: dict[str, Any] = {
        "name": param.name,
        "kind": "option" if option else "argument",
        "opts": sorted([*param.opts, *param.secondary_opts]),
        "type": _type(param),
        "required": param.required,
        "default": _default(param),
        "multiple": param.multiple,
    }
    if option:
        entry["help"] = param.help or ""
        entry["flag"] = param.is_flag
        entry["hidden"] = param.hidden
    return entry


def _command(command: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "help": (command.help or "").strip(),
        "short_help": command.short_help or "",
        "hidden": command.hidden,
        "params": [_param(p) for p in command.params],
    }
    if hasattr(command, "commands"):
        entry["commands"] = {name: _command(c) for name, c in sorted(command.commands.items())}
    return entry


def _what(value: Any) -> str:
    if inspect.isclass(value):
        return "class"
    if inspect.ismodule(value):
        return "module"
    if callable(value):
        return "function"
    return type(value).__name__


def faces() -> dict[str, dict[str, str]]:
    """Each public package of nasmlcn (no underscore in its dotted name): its exported names."""
    import nasmlcn

    names = ["nasmlcn"] + [
        m.name
        for m in pkgutil.walk_packages(nasmlcn.__path__, "nasmlcn.")
        if m.ispkg and not any(part.startswith("_") for part in m.name.split("."))
    ]
    result: dict[str, dict[str, str]] = {}
    for name in sorted(names):
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        if exported is None:  # a plug-in family's face: what it imports by name
            exported = [
                n
                for n, v in vars(module).items()
                if not n.startswith("_") and not inspect.ismodule(v)
            ]
        result[name] = {n: _what(getattr(module, n)) for n in sorted(exported)}
    return result


JSON_COMMANDS: tuple[str, ...] = (
    "search --evaluator proxy --trials 4 --storage sqlite:///s.db --study s",
    "best --storage sqlite:///s.db --study s",
    "studies --storage sqlite:///s.db",
    "correlate --storage sqlite:///s.db --study s",
    "export --storage sqlite:///s.db --study s --out exported --format html",
    "models",
    "devices",
    "plan --devices 2xK80 --lanes 2*mlcn2:4x1",
    "estimate",
    "data list",
)
"""Commands whose ``--json`` shape is compared, one after the other in one folder: those
that need no training (the search is the proxy's, a second or so)."""


def shape(value: Any) -> Any:
    """The keys and kinds of a JSON value, not its figures: a list's items merged."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        merged: Any = None
        for item in value:
            merged = _merge(merged, shape(item))
        return [merged] if value else []
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else type(value).__name__


def _merge(a: Any, b: Any) -> Any:
    """One shape for two items of a list: keys merged, differing kinds as ``one_of``."""
    if a is None or a == b:
        return b
    if isinstance(a, dict) and isinstance(b, dict) and "one_of" not in a and "one_of" not in b:
        return {k: _merge(a.get(k), b.get(k)) for k in sorted({*a, *b})}
    kinds: set[str] = set()
    for x in (a, b):
        if isinstance(x, dict) and "one_of" in x:
            kinds.update(x["one_of"])
        else:
            kinds.add(json.dumps(x, sort_keys=True))
    return {"one_of": sorted(kinds)}


def _in_a_process(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "nasmlcn", *args]
    return subprocess.run(argv, cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True)


def json_outputs(
    run: Callable[..., subprocess.CompletedProcess[str]] = _in_a_process,
) -> dict[str, Any]:
    """Each of :data:`JSON_COMMANDS` run with ``--json`` (``run(*args, env=, cwd=)``:
    a fresh process by default; the test runs them in its own): its shape."""
    env = {"NASMLCN_IGNORE_LOAD": "1", "COLUMNS": "100", "PYTHONPATH": str(ROOT)}
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for command in JSON_COMMANDS:
            done = run(*shlex.split(command), "--json", env=env, cwd=Path(folder))
            if done.returncode:
                raise SystemExit(f"{command} --json failed ({done.returncode}): {done.stderr}")
            result[command.split(" --")[0]] = shape(json.loads(done.stdout))
    return result


def surface(*, with_json: bool = True) -> dict[str, Any]:
    from nasmlcn.cli import app

    found = {"cli": _command(typer.main.get_command(app)), "python": faces()}
    if with_json:
        found["json"] = json_outputs()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write {SNAPSHOT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    text = json.dumps(surface(), indent=1, sort_keys=True) + "\n"
    if args.write:
        SNAPSHOT.write_text(text)
        print(f"wrote {SNAPSHOT.relative_to(ROOT)}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
