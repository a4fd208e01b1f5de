"""SIGTERM (a scheduler's stop: SLURM, Kubernetes) exits 143 and Ctrl-C 130, whatever
moment of a command they come at, each said in one line without a traceback: a
SIGTERM before the search's first trial exited 130 "interrupted" (during its
forecast) or killed the process without a word (during its setup)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

STOPS = pytest.mark.parametrize(
    ("sig", "status", "said"),
    [
        (signal.SIGTERM, 143, "error: terminated by SIGTERM"),
        (signal.SIGINT, 130, "error: interrupted"),
    ],
)


def _search(folder: Path, *more: str) -> tuple[str, ...]:
    """A new study's search, with the default epochs (so its first line, said before
    the setup, names them)."""
    return (
        *("search", "--study", "x", "--storage", f"sqlite:///{folder / 's.db'}"),
        *("--devices", "1xK80", "--dataset", "synthetic", "--trials", "2", "--quiet"),
        *more,
    )


def _sent_self(sig: int) -> None:
    """Sends this process ``sig``, as a scheduler or a terminal would."""
    os.kill(os.getpid(), sig)


@contextmanager
def _sigterm_as_ctrl_c() -> Iterator[None]:
    """A SIGTERM the command does not take raises ``KeyboardInterrupt`` instead of
    killing the tests."""

    def as_ctrl_c(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, as_ctrl_c)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@STOPS
def test_a_stop_during_the_search_s_setup_exits_with_its_status(
    tmp_path: Path, sig: int, status: int, said: str
) -> None:
    command = [sys.executable, "-m", "nasmlcn", *_search(tmp_path)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        first = process.stderr.readline() if process.stderr else ""  # before the setup
        assert first.startswith("new study 'x' on defaults"), first
        process.send_signal(sig)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert (process.returncode, stdout) == (status, "")
    # its last line (rich prints the first line again where the signal cut its print)
    assert stderr.splitlines()[-1] == said
    assert "Traceback" not in stderr


@STOPS
def test_a_stop_during_the_forecast_exits_with_its_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sig: int, status: int, said: str
) -> None:
    # the report's case: the search takes stops before its first trial, and Typer
    # turned its SIGTERM into Ctrl-C's bare 130
    monkeypatch.setattr("nasmlcn.search._run.loop.forecast_search", lambda *args: _sent_self(sig))
    with _sigterm_as_ctrl_c():
        done = run_cli(*_search(tmp_path, "--evaluator", "proxy", "--epochs", "1"))
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (status, "", [said])


def test_a_sigterm_stops_any_command_with_143(monkeypatch: pytest.MonkeyPatch) -> None:
    # retrain, calibrate, evaluate, ...: a SIGTERM outside a job's own handling
    import nasmlcn.hardware

    monkeypatch.setattr(
        nasmlcn.hardware, "load_catalog", lambda *a, **k: _sent_self(signal.SIGTERM)
    )
    with _sigterm_as_ctrl_c():
        done = run_cli("devices")
    assert (done.returncode, done.stdout) == (143, "")
    assert done.stderr.splitlines() == ["error: terminated by SIGTERM"]
