"""The trial-record contract (study/_trial.py): trial and study attributes are
written and read only through ``nasmlcn.study``; outside it a study is read as a
:class:`~nasmlcn.study.StudyRecord`, never as its raw attribute; Optuna's retry mark
has one reader."""

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


RAW_STUDY_READERS = ("study_info", "frozen_info", "stored_info", "write_study_info")
"""The study attribute's raw reader and writer: ``nasmlcn.study`` alone uses them
(``StudyRecord.read`` and ``StudyRecord.write`` are everyone else's)."""


def _raw_study_reads(path: Path) -> list[str]:
    """Every import or use of a raw study reader in one module (so every key read
    on its result: ``study_info(s)["config"]``, ``frozen_info(f).get("identity")``),
    as ``line: name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            hits += [(node.lineno, a.name) for a in node.names if a.name in RAW_STUDY_READERS]
        elif isinstance(node, ast.Name) and node.id in RAW_STUDY_READERS:
            hits.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute) and node.attr in RAW_STUDY_READERS:
            hits.append((node.lineno, node.attr))
    return [f"{line}: {name}" for line, name in sorted(hits)]


def test_a_study_is_read_only_through_its_record_outside_the_study_package() -> None:
    outside = [
        f"{path.relative_to(ROOT)}:{hit}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "study"
        for hit in _raw_study_reads(path)
    ]
    assert outside == []


def test_the_check_finds_raw_study_reads(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from nasmlcn.study import study_info\n"
        "import nasmlcn.study as s\n"
        "def f(study, frozen):\n"
        "    seed = study_info(study)['config']['seed']\n"
        "    return s.frozen_info(frozen).get('identity'), seed\n"
    )
    assert _raw_study_reads(module) == ["1: study_info", "4: study_info", "5: frozen_info"]


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
