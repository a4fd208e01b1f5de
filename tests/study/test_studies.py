"""``nasmlcn studies``: a storage's studies with their trials, size on disk and last
change, and ``studies delete NAME`` with its trials' files. There was no command to
list or delete studies, and artifact folders have UUID names."""

from __future__ import annotations

import json
import time
from pathlib import Path

import optuna
import pytest

from nasmlcn.errors import StorageError
from nasmlcn.study import delete_study, list_studies, open_storage
from tests.conftest import run_cli, small_search


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two trained studies in one storage, their weights in one artifact folder."""
    folder = tmp_path_factory.mktemp("studies")
    # seed 10 with two objectives: the trials learn, so they keep their weights (the
    # default --keep-weights best:5 keeps the front)
    two = {"objectives": ("accuracy", "latency"), "seed": 10}
    small_search(folder, trials=2, study="a", **two)
    small_search(folder, trials=1, study="b", **two)
    return f"sqlite:///{folder / 's.db'}"


def test_studies_lists_trials_size_and_last_change(storage: str) -> None:
    listed = {s.name: s for s in list_studies(storage)}
    assert sorted(listed) == ["a", "b"]
    assert listed["a"].trials == {"COMPLETE": 2}
    assert listed["b"].total == 1
    for s in listed.values():
        assert s.files, f"study {s.name}'s trials kept their weights"
        assert s.artifact_bytes == sum(p.stat().st_size for p in s.files) > 0
        assert s.last_change is not None
    shown = run_cli("studies", "--storage", storage, "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert [(s["name"], s["trials"]) for s in data["studies"]] == [("a", 2), ("b", 1)]
    table = run_cli("studies", "--storage", storage)
    assert "2 studies in sqlite:///" in table.stdout


def test_delete_asks_removes_the_study_and_only_its_files(storage: str, tmp_path: Path) -> None:
    before = {s.name: s for s in list_studies(storage)}
    asked = run_cli("studies", "delete", "b", "--storage", storage)
    assert asked.returncode == 2
    assert "needs --yes (no terminal to ask on)" in asked.stderr
    assert sorted(s.name for s in list_studies(storage)) == ["a", "b"]
    done = run_cli("studies", "delete", "b", "--storage", storage, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "name": "b",
        "trials": 1,
        "files": len(before["b"].files),
        "freed_bytes": before["b"].artifact_bytes,
    }
    assert not any(p.exists() for p in before["b"].files)
    assert all(p.exists() for p in before["a"].files)
    assert [s.name for s in list_studies(storage)] == ["a"]
    missing = run_cli("studies", "delete", "b", "--storage", storage, "--yes")
    assert missing.returncode == 2
    assert "no study 'b'" in missing.stderr or "'b'" in missing.stderr


def test_a_study_with_a_live_trial_is_not_deleted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    storage = open_storage(url, heartbeat=True, grace=60)
    study = optuna.create_study(study_name="live", storage=storage)
    trial = study.ask()  # RUNNING, and its worker beats
    storage.record_heartbeat(trial._trial_id)
    with pytest.raises(StorageError, match=r"has running trials with a fresh heartbeat \(#0\)"):
        delete_study(url, "live")
    assert [s.name for s in list_studies(url)] == ["live"]
    # a worker that died: no heartbeat within the grace (1 s, the least; the storage
    # keeps whole seconds), and it goes
    time.sleep(2.5)
    assert delete_study(url, "live", grace=1.0).trials == 1
    assert list_studies(url) == []


def test_by_default_only_the_trials_that_can_still_be_chosen_keep_weights(tmp_path: Path) -> None:
    # every trial kept its weights by default (28-40 MB each: 370 MB for 12 tiny trials)
    from nasmlcn.search import SearchConfig, best_trials
    from nasmlcn.study import TrialRecord, load_existing_study

    assert SearchConfig().keep_weights == "best:5"
    # seed 10: of its 6 trials, 2 stay at chance, so they cannot be chosen
    config = small_search(tmp_path, trials=6, seed=10)
    study = load_existing_study("s", config.storage)
    kept = {t.number for t in study.trials if TrialRecord.of(t).weights_kept}
    assert kept == {t.number for t in best_trials(study, top=5)}
    assert len(kept) < 6


def test_the_group_s_storage_reaches_delete(tmp_path: Path) -> None:
    # `studies --storage OTHER delete s1 --yes` deleted s1 from the default storage:
    # the group's callback returned before its options reached the subcommand
    default, other = (f"sqlite:///{tmp_path / n}" for n in ("default.db", "other.db"))
    for url in (default, other):
        optuna.create_study(study_name="s1", storage=url)
    env = {"NASMLCN_STORAGE": default}
    done = run_cli("studies", "--storage", other, "delete", "s1", "--yes", env=env)
    assert done.returncode == 0, done.stderr
    assert [s.name for s in list_studies(default)] == ["s1"]
    assert list_studies(other) == []
    listed = run_cli("studies", "--storage", default, "--json", "delete", "s1", "--yes")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["name"] == "s1", "the group's --json reaches delete"
    optuna.create_study(study_name="s1", storage=other)
    both = run_cli("studies", "--storage", other, "delete", "s1", "--storage", default, "--yes")
    assert both.returncode == 2
    assert both.stderr.count("\n") == 1
    assert "two storages given" in both.stderr
    assert [s.name for s in list_studies(other)] == ["s1"]
