"""``nasmlcn studies delete`` says its counts in words that agree with them: it
printed "1 trials" (and "1 files")."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli


def test_delete_counts_one_trial_in_the_singular(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 's.db'}"
    made = run_cli(
        "search", "--evaluator", "proxy", "--trials", "1", "--storage", storage, "--study", "one",
        "-q",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    asked = run_cli("studies", "delete", "one", "--storage", storage)  # no terminal to ask on
    assert asked.returncode == 2
    assert f"error: deleting study 'one' in {storage}: 1 trial, 0 B of files in" in asked.stderr
    done = run_cli("studies", "delete", "one", "--storage", storage, "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "deleted study 'one': 1 trial, 0 files (0 B freed)"
