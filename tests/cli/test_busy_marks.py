"""Figures measured while other processes held the cores are marked where they are
stored and shown (``best``, the forecast): a user's timings on a busy machine were
wrong 16-100x with tight spreads, and nothing said so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from nasmlcn.study import TrialRecord, load_existing_study
from tests._busy import spinning_elsewhere
from tests.conftest import run_cli, small_search


@pytest.fixture
def busy_machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A process of another session spinning on a core, and the look on (the test
    run turns it off: tests/conftest.py), in a process that has not warned yet."""
    from nasmlcn.training import _cores

    monkeypatch.delenv("NASMLCN_IGNORE_LOAD", raising=False)
    monkeypatch.setattr(_cores, "_said", set())
    monkeypatch.setattr(_cores, "_lowered_from", [])
    with spinning_elsewhere():
        yield


def test_a_trial_trained_beside_a_busy_process_is_marked_in_the_study_and_in_best(
    busy_machine: None, tmp_path: Path
) -> None:
    config = small_search(tmp_path, trials=1, seed=10, objectives=("accuracy", "latency"))
    [trial] = load_existing_study("s", config.storage).trials
    load = TrialRecord.of(trial).training["extra"]["machine_load"]
    assert load["others_busy_cores"] >= 0.5, load
    inference = TrialRecord.of(trial).training["extra"]["measured_inference"]
    assert inference["machine_load"]["others_busy_cores"] >= 0.5
    shown = run_cli("best", "--storage", config.storage, env={"COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert "* unreliable: measured while other processes held up to" in shown.stdout
    assert "(trials #0)" in shown.stdout
    row = json.loads(run_cli("best", "--storage", config.storage, "--json").stdout)["best"][0]
    assert row["measured"]["machine_load"]["others_busy_cores"] >= 0.5


def test_the_forecast_says_it_was_timed_on_a_busy_machine(
    busy_machine: None, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    args = ("--storage", url, "--study", "f", "--devices", "1xK80", "--dataset", "synthetic")
    small = ("--flops", "0.05x", "--epochs", "1", "--train-limit", "40", "--trials", "1")
    done = run_cli("search", *args, *small, "--run-on", "cpu", "--json")
    assert done.returncode == 0, done.stderr
    forecast = json.loads(done.stdout)["forecast"]
    assert forecast["machine_load"]["others_busy_cores"] >= 0.5
    [line] = [x for x in done.stderr.splitlines() if x.startswith("predicted:")]
    assert "unreliable: timed while other processes held" in line
    warnings = [x for x in done.stderr.splitlines() if "other processes held" in x]
    assert len(warnings) == 2, "the forecast line and one warning, not one per timing"
