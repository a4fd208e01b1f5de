"""Trial and study notes, saved figures, and what optuna-dashboard reads back."""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path

import optuna
import optuna_dashboard
import pytest

from nasmlcn.dashboard import GRAPH_ID_PREFIX, refresh_study, write_study_figures, write_trial_note
from nasmlcn.dashboard._live import open_dashboard_storage, prepare_studies
from nasmlcn.study import load_existing_study, trial_id_of
from tests.conftest import copy_sqlite
from tests.dashboard.conftest import Made


def _copy(made: Made, folder: Path) -> Made:
    """A private copy of a session study (the tests here write into it)."""
    path = copy_sqlite(made.path, folder / "copy.db")
    return Made(f"sqlite:///{path}", made.name, path)


STUDY_NOTE_MARK = "*Written by nasmlcn after every run; delete this line to keep your edits.*"
"""The first line of the study notes nasmlcn writes (a user's own note is left alone)."""


def _note(study: optuna.Study, number: int) -> str:
    trial = study.trials[number]
    return optuna_dashboard.get_note(optuna.trial.Trial(study, trial._trial_id))


def _note_version(system: dict[str, object], trial_id: int | None) -> object:
    """The version optuna-dashboard stores beside a note (of the study when
    ``trial_id`` is None); 0 where there is none."""
    key = "dashboard:note_ver" if trial_id is None else f"dashboard:{trial_id}:note_ver"
    return system.get(key, 0)


def test_trial_note_reads_back_through_optuna_dashboard(pareto_study: Made, tmp_path: Path) -> None:
    made = _copy(pareto_study, tmp_path)
    study = made.load(read_only=False)
    study.get_trials(deepcopy=False)  # the runner's cache is warm when it writes notes
    for trial in study.trials:
        write_trial_note(study, trial.number)
    fresh = made.load()
    note = _note(fresh, 5)
    trial = fresh.trials[5]
    assert note.startswith("### Trial 5: complete")
    assert f"**accuracy** {trial.values[0]:.4g}" in note
    assert "#### Architecture" in note
    assert trial.user_attrs["lane_mix"] in note
    assert "#### Placement (buckets" in note
    assert "| K80:0 |" in note
    assert "predicted lanes' training step (makespan)" in note
    assert "predicted inference" in note
    measured = [line for line in note.splitlines() if line.startswith("measured:")]
    assert all("inference" not in line for line in measured)  # the proxy measured none
    assert "#### Validation accuracy per epoch" in note
    curve = trial.user_attrs["training"]["val_accuracy_per_epoch"]
    assert " | ".join(f"{a:.4f}" for a in curve) in note
    feasible = all(v <= 0 for k, v in trial.system_attrs.items() if k.startswith("constraints:"))
    assert ("**infeasible**" not in note) == feasible
    assert len(note) < 2045  # one chunk: notes stay cheap for samplers that read them all


def test_study_figures_and_notes_for_the_dashboard(pareto_study: Made, tmp_path: Path) -> None:
    made = _copy(pareto_study, tmp_path)
    study = made.load(read_only=False)
    write_study_figures(study)
    system = study._storage.get_study_system_attrs(study._study_id)
    ids = {k.split(":")[2] for k in system if k.startswith("dashboard:plot_data:")}
    assert {GRAPH_ID_PREFIX + n for n in ("pareto_front", "hypervolume_history")} <= ids
    assert {GRAPH_ID_PREFIX + n for n in ("placement", "accuracy_vs_latency")} <= ids
    assert GRAPH_ID_PREFIX + "epoch_correlation" in ids
    body = optuna_dashboard.get_note(study)
    assert _note_version(system, None) == 1
    assert body.startswith(STUDY_NOTE_MARK)
    assert "Pareto front" in body
    # every trial lacking a note got one
    assert all(_note_version(system, trial_id_of(t)) == 1 for t in study.trials)
    # figures are valid plotly JSON, sized for the dashboard's 450-pixel cells
    prefix = f"dashboard:plot_data:{GRAPH_ID_PREFIX}pareto_front:"
    chunks = sorted(
        (k for k in system if k.startswith(prefix)), key=lambda k: int(k.rsplit(":", 1)[1])
    )
    figure = json.loads("".join(system[k] for k in chunks))
    assert figure["data"]
    assert figure["layout"]["height"] <= 450

    # a second run replaces the figures, leaves the notes, and keeps a user's study note
    optuna_dashboard.save_note(study, "my own note")
    refresh_study(study, notes="missing")
    system = study._storage.get_study_system_attrs(study._study_id)
    assert optuna_dashboard.get_note(study) == "my own note"
    assert all(_note_version(system, trial_id_of(t)) == 1 for t in study.trials)
    refresh_study(study, notes="all")
    system = study._storage.get_study_system_attrs(study._study_id)
    assert all(_note_version(system, trial_id_of(t)) == 2 for t in study.trials)


def test_the_dashboard_storage_shows_constraints(pareto_study: Made, tmp_path: Path) -> None:
    made = _copy(pareto_study, tmp_path)
    with sqlite3.connect(made.path) as db:  # as if written before nasmlcn saved figures
        db.execute("DELETE FROM study_system_attributes WHERE key LIKE 'dashboard:%'")
    storage = open_dashboard_storage(made.url)
    # a study without nasmlcn's figures gets them (and notes) before the dashboard serves it
    assert prepare_studies(storage) == [made.name]
    assert prepare_studies(storage) == []
    system = storage.get_study_system_attrs(storage.get_study_id_from_name(made.name))
    assert sum(k.endswith(":note_ver") for k in system) == len(pareto_study.load().trials) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = optuna.load_study(study_name=made.name, storage=storage)
    for trial in study.get_trials(deepcopy=False):
        named = [v for k, v in sorted(trial.system_attrs.items()) if k.startswith("constraints:")]
        assert trial.system_attrs["constraints"] == named
    # the cached trials the runner would see are left untouched
    plain = load_existing_study(made.name, made.url)
    assert all("constraints" not in t.system_attrs for t in plain.trials)


@pytest.mark.parametrize("url", ["sqlite:///{tmp}/missing.db", "nosuchdriver://x"])
def test_the_dashboard_storage_errors_are_clear(url: str, tmp_path: Path) -> None:
    from nasmlcn.errors import StorageError

    with pytest.raises(StorageError, match="storage"):
        open_dashboard_storage(url.format(tmp=tmp_path))
