"""The trial-record contract (study/_trial.py): trial and study attributes are
written and read only through ``nasmlcn.study``; Optuna's retry mark has one reader."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "nasmlcn"


def _raw_access(path: Path) -> list[str]:
    """``x.set_user_attr(...)``, ``x.user_attrs[...]``, ``x.user_attrs.get(...)``, any
    use of ``x.user_attrs`` in one module, as ``line: .name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{node.lineno}: .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ("set_user_attr", "user_attrs")
    ]


def test_attributes_are_written_and_read_only_through_the_study_package() -> None:
    outside = [
        f"{path.relative_to(ROOT)}:{hit}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "study"
        for hit in _raw_access(path)
    ]
    assert outside == []


def test_the_check_finds_raw_access(tmp_path: Path) -> None:
    """It would fail on what it forbids (a check that cannot fail proves nothing)."""
    module = tmp_path / "m.py"
    module.write_text(
        "def f(trial, study):\n"
        "    trial.set_user_attr('a', 1)\n"
        "    x = trial.user_attrs['a']\n"
        "    return study.user_attrs.get('nasmlcn')\n"
    )
    assert _raw_access(module) == ["2: .set_user_attr", "3: .user_attrs", "4: .user_attrs"]


def test_the_retry_mark_has_one_reader() -> None:
    """Optuna's ``failed_trial`` / ``retry_history`` (and its reader
    ``retried_trial_number``) are read in study/_trial.py alone."""
    marks = ("retried_trial_number", '"retry_history"', '"failed_trial"')
    readers = sorted(
        str(path.relative_to(ROOT))
        for path in PACKAGE.rglob("*.py")
        if any(mark in path.read_text(encoding="utf-8") for mark in marks)
    )
    assert readers == ["nasmlcn/study/_trial.py"]
