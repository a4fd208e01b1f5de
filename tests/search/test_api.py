"""The Python API as a caller meets it: ``run_search`` writes only what it is told
to (no ``./studies``), reports progress only to a callback it is given, lets no
Optuna log line through, and the ``SearchConfig`` docstring names every
objective."""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path

import optuna
import pytest

from nasmlcn.errors import SearchError
from nasmlcn.search import (
    OBJECTIVES,
    ProgressObserver,
    SearchConfig,
    TrialProgress,
    run_search,
)


def _config(storage: Path, **kw: object) -> SearchConfig:
    base: dict[str, object] = {
        "devices": "2xK80",
        "mem": "12GB",
        "evaluator": "proxy",
        "sampler": "random",
        "epochs": 2,
        "trials": 3,
        "storage": f"sqlite:///{storage}",
        "study": "api",
        "seed": 1,
    }
    base.update(kw)
    return SearchConfig(**base)  # type: ignore[arg-type]


def test_run_search_creates_nothing_the_caller_did_not_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("NASMLCN_STORAGE", raising=False)
    # no storage named: refused, and no ./studies/nasmlcn.db appears
    with pytest.raises(SearchError, match=r"SearchConfig.storage is not set"):
        run_search(SearchConfig(evaluator="proxy", trials=1))
    assert list(cwd.iterdir()) == []
    # a storage named elsewhere: the study is there, the working directory stays empty
    storage = tmp_path / "elsewhere" / "s.db"
    storage.parent.mkdir()
    result = run_search(_config(storage))
    assert result.completed == 3
    assert storage.is_file()
    assert list(cwd.iterdir()) == []


def test_a_progress_callback_hears_of_every_trial(tmp_path: Path) -> None:
    heard: list[TrialProgress] = []
    result = run_search(
        _config(tmp_path / "s.db", trials=4), observers=[ProgressObserver(heard.append)]
    )
    assert [p.outcome.number for p in heard] == [t.number for t in result.run_trials]
    assert [p.done for p in heard] == [1, 2, 3, 4]
    assert {p.target for p in heard} == {4}
    assert [p.outcome.state for p in heard] == [t.state for t in result.run_trials]
    # continuing the study: done counts the study's trials, not this call's
    more: list[TrialProgress] = []
    run_search(_config(tmp_path / "s.db", trials=5), observers=[ProgressObserver(more.append)])
    assert [(p.done, p.target) for p in more] == [(5, 5)]


def test_a_pool_s_progress_callback_hears_of_every_worker_s_trial(tmp_path: Path) -> None:
    heard: list[TrialProgress] = []
    result = run_search(
        _config(tmp_path / "s.db", trials=4), [ProgressObserver(heard.append)], workers=2
    )
    assert result.errors == []
    assert sorted(p.outcome.number for p in heard) == [0, 1, 2, 3]
    # done is the study's count when the parent relays the trial: other workers'
    # trials may have finished since, so it only never goes back, and ends at 4
    done = [p.done for p in heard]
    assert done == sorted(done)
    assert all(d >= i for i, d in enumerate(done, start=1))
    assert done[-1] == 4


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_no_optuna_log_line_gets_through_and_the_caller_s_verbosity_comes_back(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    records = _Records()
    optuna_logger = logging.getLogger("optuna")
    optuna_logger.addHandler(records)
    before = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.INFO)  # as a caller may have it
    try:
        # control: at INFO, Optuna itself says it made a study
        optuna.create_study(storage=f"sqlite:///{tmp_path / 'control.db'}")
        assert any("A new study created in RDB" in line for line in records.lines)
        records.lines.clear()
        capfd.readouterr()
        run_search(_config(tmp_path / "s.db", trials=2))
        assert optuna.logging.get_verbosity() == optuna.logging.INFO  # restored
    finally:
        optuna.logging.set_verbosity(before)
        optuna_logger.removeHandler(records)
    assert records.lines == []
    out, err = capfd.readouterr()
    assert out == ""
    assert err == ""


def test_the_objectives_option_s_help_names_every_objective() -> None:
    (objectives,) = [f for f in dataclasses.fields(SearchConfig) if f.name == "objectives"]
    for name in OBJECTIVES.names():
        assert name in objectives.metadata["help"], name


def test_the_library_reads_no_storage_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$NASMLCN_STORAGE`` is the CLI's; a library call names its storage itself."""
    monkeypatch.setenv("NASMLCN_STORAGE", f"sqlite:///{tmp_path / 'env.db'}")
    with pytest.raises(SearchError):
        run_search(SearchConfig(evaluator="proxy", trials=1))
    assert not (tmp_path / "env.db").exists()
    assert os.environ["NASMLCN_STORAGE"]  # untouched


def test_the_library_s_warnings_reach_no_stderr_unless_logging_is_configured() -> None:
    """A warning of nasmlcn's (e.g. a crashed trial queued again) goes through
    logging: silent in a program that configured none, shown where one did."""
    import subprocess
    import sys

    code = (
        "import logging, nasmlcn\n"
        "from nasmlcn.study import _recovery\n"
        "logging.getLogger(_recovery.__name__).warning('trial 0 failed: queued again')\n"
        "{configure}"
        "logging.getLogger(_recovery.__name__).warning('second')\n"
    )
    silent = subprocess.run(
        [sys.executable, "-c", code.format(configure="")], capture_output=True, text=True
    )
    assert silent.returncode == 0, silent.stderr
    assert silent.stderr == ""
    shown = subprocess.run(
        [sys.executable, "-c", code.format(configure="logging.basicConfig()\n")],
        capture_output=True,
        text=True,
    )
    assert shown.stderr == "WARNING:nasmlcn.study._recovery:second\n"
