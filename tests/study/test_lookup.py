"""A trial's repeat lookups ask the database for the trials of one model (and a
claim for the number of repeats) instead of reading every trial: the answers are
the ones a read of the whole study gives, buffered writes included."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from nasmlcn.study import finished, open_storage, set_constraint, trials_by_attr

STATES = [TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.FAIL]


def _fill(study: optuna.Study) -> None:
    """Twelve trials of three models in every state; some repeats, one whose
    ``repeat_of`` is stored as None; the last two are still running, their
    attributes possibly only in the buffer."""
    for i in range(12):
        trial = study.ask()
        trial.set_user_attr("model_key", f"k{i % 3}")
        if i % 4 == 1:
            trial.set_user_attr("repeat_of", i - 1)
        if i == 6:
            trial.set_user_attr("repeat_of", None)
        state = STATES[i % 4] if i < 10 else TrialState.RUNNING
        if state == TrialState.COMPLETE:
            study.tell(trial, 0.5)
        elif state != TrialState.RUNNING:
            study.tell(trial, state=state)


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> tuple[optuna.Study, optuna.Study]:
    path = tmp_path_factory.mktemp("lookup") / "s.db"
    stored = optuna.create_study(storage=open_storage(f"sqlite:///{path}", heartbeat=False))
    scanned = optuna.create_study()  # in memory: the lookups read every trial
    _fill(stored)
    _fill(scanned)
    return stored, scanned


@pytest.mark.parametrize("key", ["k0", "k1", "k2", "k9"])
@pytest.mark.parametrize(
    "states",
    [(TrialState.COMPLETE,), (TrialState.COMPLETE, TrialState.PRUNED), (TrialState.RUNNING,)],
)
def test_trials_of_a_model_are_those_a_scan_finds(
    studies: tuple[optuna.Study, optuna.Study], key: str, states: tuple[TrialState, ...]
) -> None:
    stored, scanned = studies
    found = [t.number for t in trials_by_attr(stored, "model_key", key, states)]
    expected = [
        t.number for t in scanned.get_trials(states=states) if t.user_attrs.get("model_key") == key
    ]
    assert found == expected
    assert found == [t.number for t in trials_by_attr(scanned, "model_key", key, states)]
    if key != "k9" and states != (TrialState.RUNNING,):
        assert found  # the test looks at something


def test_repeats_are_counted_as_a_scan_counts_them(
    studies: tuple[optuna.Study, optuna.Study],
) -> None:
    stored, scanned = studies
    states = (TrialState.COMPLETE, TrialState.PRUNED)
    expected = sum(
        t.user_attrs.get("repeat_of") is not None for t in scanned.get_trials(states=states)
    )
    assert expected > 0
    # finished() leaves the repeats out unless asked to count them: one query each
    assert finished(stored, count_repeats=True) - finished(stored) == expected
    assert finished(scanned, count_repeats=True) - finished(scanned) == expected


def test_a_buffered_constraint_is_seen_before_it_is_written(tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:///{tmp_path / 's.db'}", heartbeat=False)
    study = optuna.create_study(storage=storage)
    trial = study.ask()
    trial.set_user_attr("model_key", "k0")
    set_constraint(trial, "memory", -1.0)  # Optuna reads the trial's system attributes first
    assert len(storage._buffer) == 2  # that read wrote nothing: both writes wait
    attrs = storage.get_trial_system_attrs(trial._trial_id)
    assert attrs["constraints:memory"] == -1.0
    with pytest.warns(UserWarning, match="already set"):
        trial.set_constraint("memory", 5.0)  # Optuna keeps the first value
    study.tell(trial, 0.5)
    assert study.trials[0].system_attrs["constraints:memory"] == -1.0


RAW_STUDY_READERS = {
    "study_info": "the raw attribute; nasmlcn reads a study through StudyRecord",
    "frozen_info": "the raw attribute of a listed study; nasmlcn reads StudyRecord",
    "write_study_info": "the raw writer; nasmlcn writes through StudyRecord.write",
    "search_data": "StudyRecord.data under its earlier name",
}
"""Exported names nasmlcn itself no longer uses, kept (``tests/surface.json``) for the
scripts and tests that read a study's raw attribute."""


def test_every_name_nasmlcn_study_exports_is_used_outside_it() -> None:
    # the package face exported names nothing used (PICKS, DeletedStudy, StudyListing,
    # count_by_attr): a second way in, for a reader to follow and a layout to keep
    import re

    import nasmlcn.study

    root = Path(nasmlcn.study.__file__).parents[1]
    outside = "\n".join(
        p.read_text()
        for p in root.rglob("*.py")
        if p.parent.name != "study" or p.parents[1] != root
    )
    unused = [n for n in nasmlcn.study.__all__ if not re.search(rf"\b{n}\b", outside)]
    assert sorted(unused) == sorted(RAW_STUDY_READERS)  # a reader used again: drop it
