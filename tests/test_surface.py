"""What a user sees stays as it is unless a change means it to: every command's help
and options, the ``--json`` shapes of the commands that need no training, and every
public package's exported names are compared with ``tests/surface.json``
(``python scripts/surface.py --write`` records a wanted change)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests._cli import run_cli

ROOT = Path(__file__).resolve().parent.parent


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("surface", ROOT / "scripts" / "surface.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


surface = _script()
RECORDED: dict[str, Any] = json.loads((ROOT / "tests" / "surface.json").read_text())


def _differences(old: Any, new: Any, where: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out = [f"{where}/{k}: gone" for k in sorted(set(old) - set(new))]
        out += [f"{where}/{k}: new" for k in sorted(set(new) - set(old))]
        for k in sorted(set(old) & set(new)):
            out += _differences(old[k], new[k], f"{where}/{k}")
        return out
    return [] if old == new else [f"{where}: {old!r} -> {new!r}"]


@pytest.mark.parametrize("part", ["cli", "python"])
def test_commands_and_public_names_are_as_recorded(part: str) -> None:
    found = surface.surface(with_json=False)[part]
    changed = _differences(RECORDED[part], found)
    assert not changed, "\n".join(changed[:30])


def test_json_shapes_are_as_recorded() -> None:
    changed = _differences(RECORDED["json"], surface.json_outputs(run_cli))
    assert not changed, "\n".join(changed[:30])


def test_the_comparison_sees_a_change() -> None:
    changed = json.loads(json.dumps(RECORDED))
    changed["cli"]["commands"]["search"]["params"][0]["help"] += " (changed)"
    del changed["python"]["nasmlcn.search"][next(iter(RECORDED["python"]["nasmlcn.search"]))]
    changed["json"]["best"]["study"] = "number"
    found = _differences(RECORDED, changed)
    assert len(found) == 3, found
    assert surface.shape({"a": [1, 2.5], "b": [{"x": 1}, {"x": None, "y": "s"}]}) == {
        "a": ["number"],
        "b": [{"x": {"one_of": ['"null"', '"number"']}, "y": "str"}],
    }
