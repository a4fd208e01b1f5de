"""MLflow's file store read while another worker writes it: the search of runs
that meets a half-written file looks again, and a trial's first attempt does not
search at all (only a retry can have a run already), unless its start failed after
making its run: its end then finds that run."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.tracking._tracked import tracked_search
from tests.tracking.test_mlflow import _client, _config, _runs


def test_a_run_another_worker_is_writing_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    uri = str(tmp_path / "mlruns")
    config = _config(tmp_path, uri, trials=2, prune=False)
    tracked_search(config)  # the experiment, with a study already in it
    client = _client(uri)
    experiment = client.get_experiment_by_name("nasmlcn")
    assert experiment is not None
    other = client.create_run(experiment.experiment_id)
    # another worker has made a metric's file and not yet written its line
    half = tmp_path / "mlruns" / experiment.experiment_id / other.info.run_id / "metrics" / "m"
    half.parent.mkdir(parents=True, exist_ok=True)
    half.write_text("")

    searches: list[tuple[str, str | None]] = []  # (filter, the error it met)
    original = MlflowClient.search_runs

    def spy(self: MlflowClient, *args: Any, **kw: Any) -> Any:
        if not searches:  # the other worker writes its line a moment later
            threading.Timer(0.3, half.write_text, ["1700000000000 0.5 0\n"]).start()
        try:
            found = original(self, *args, **kw)
        except ValueError as err:
            searches.append((kw["filter_string"], str(err)))
            raise
        searches.append((kw["filter_string"], None))
        return found

    monkeypatch.setattr(MlflowClient, "search_runs", spy)
    tracked_search(replace(config, study="t"))
    monkeypatch.undo()

    assert "malformed" in str(searches[0][1])  # the first look met the half-written file
    assert searches[-1][1] is None  # and a later one read it whole
    # only the study's parent run was searched for: the trials were first attempts
    assert all("`nasmlcn.kind` = 'study'" in query for query, _ in searches)
    parents = {r.info.run_id: r for r in _client(uri).search_runs([experiment.experiment_id])}
    (parent,) = [
        r
        for r in parents.values()
        if r.data.tags.get("nasmlcn.study") == "t" and r.data.tags.get("nasmlcn.kind") == "study"
    ]
    children = [
        r for r in parents.values() if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id
    ]
    assert len(children) == 2
    assert all("device_pool" in r.data.params for r in children)


def test_a_trial_whose_start_failed_ends_in_the_run_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    uri = str(tmp_path / "mlruns")
    config = _config(tmp_path, uri, trials=2, prune=False)
    original = MlflowClient.log_batch
    failed: list[str] = []

    def flaky(self: MlflowClient, run_id: str, **kw: Any) -> Any:
        # the first trial's run is made, then logging its parameters fails once
        if not failed and any(p.key == "lane_mix" for p in kw.get("params", ())):
            failed.append(run_id)
            raise RuntimeError("the store hiccuped")
        return original(self, run_id, **kw)

    monkeypatch.setattr(MlflowClient, "log_batch", flaky)
    tracked_search(config)
    monkeypatch.undo()
    _, children = _runs(uri)
    assert len(children) == 2  # not a second run for the trial whose start failed
    (run,) = [r for r in children if r.info.run_id == failed[0]]
    assert run.data.tags["state"] == "COMPLETE"
    assert "accuracy" in run.data.metrics
