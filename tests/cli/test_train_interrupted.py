"""An interrupted ``nasmlcn train`` (Ctrl-C, SIGINT) exits 130 and says on stderr, in
one line, what it kept in its folder and how to continue it; stdout stays empty, so
a ``--json`` reader sees no partial JSON."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import run_cli

TRAIN = (
    "train", "--lanes", "mlcn1:1x1", "--dataset", "synthetic", "--epochs", "1000",
    "--train-limit", "10", "--val-limit", "10", "--test-limit", "10", "--batch-size", "10",
    "--run-on", "cpu", "--json", "--quiet",
)  # fmt: skip
"""A run far longer than the test: it is interrupted after its first checkpoint."""


def _kept_line(out: Path) -> str:
    from nasmlcn.training import load_checkpoint

    epoch = load_checkpoint(out / "checkpoint.pt")["epoch"]
    assert epoch >= 1
    return (
        f"interrupted: the checkpoint after epoch {epoch} is kept in {out}; run the same "
        "command with --resume to continue it"
    )


def _as_ctrl_c(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # a SIGTERM the command did not take never kills the tests


@contextmanager
def _sigint_once(checkpoint: Path, sig: int = signal.SIGINT) -> Iterator[None]:
    """Sends this process ``sig`` (Ctrl-C) once ``checkpoint`` is written."""
    done = threading.Event()

    def interrupt() -> None:
        deadline = time.monotonic() + 60
        while not checkpoint.exists() and not done.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not done.is_set():
            os.kill(os.getpid(), sig)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    before = signal.signal(signal.SIGTERM, _as_ctrl_c)
    thread = threading.Thread(target=interrupt, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, before)


def test_an_interrupted_train_says_which_checkpoint_it_kept_and_how_to_resume(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    with _sigint_once(out / "checkpoint.pt"):
        done = run_cli(*TRAIN, "--out", str(out))
    assert done.returncode == 130
    assert done.stdout == ""
    assert done.stderr.splitlines() == [_kept_line(out)]


def test_a_sigterm_d_train_says_so_and_exits_143(tmp_path: Path) -> None:
    """A scheduler's SIGTERM killed train without a word; it now stops as Ctrl-C
    does, with the exit status of a SIGTERM."""
    out = tmp_path / "run"
    with _sigint_once(out / "checkpoint.pt", signal.SIGTERM):
        done = run_cli(*TRAIN, "--out", str(out))
    assert done.returncode == 143
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        _kept_line(out).replace("interrupted", "stopped by SIGTERM", 1)
    ]


@pytest.mark.parametrize(
    ("processes", "said"),
    [
        ("1", "interrupted before an epoch ended: nothing was kept in {out}"),
        # several processes write theirs after the last epoch only: a run stopped after
        # 43 epochs said "before an epoch ended"
        (
            "2",
            "interrupted: nothing was kept in {out}; several processes write the "
            "checkpoint after the last epoch only",
        ),
    ],
)
def test_an_interrupted_train_without_a_checkpoint_says_nothing_was_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, processes: str, said: str
) -> None:
    import nasmlcn.training

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(nasmlcn.training, "train", interrupted)
    out = tmp_path / "run"
    done = run_cli(*TRAIN, "--out", str(out), "--processes", processes)
    assert done.returncode == 130
    assert done.stdout == ""
    assert done.stderr.splitlines() == [said.format(out=out)]


@pytest.mark.slow
def test_an_interrupted_train_process_exits_130_with_one_line(tmp_path: Path) -> None:
    """The same as a separate process (about 5 s here, most of it torch's imports)."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "nasmlcn", *TRAIN, "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (out / "checkpoint.pt").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130
    assert stdout == ""
    assert stderr.splitlines() == [_kept_line(out)]


def test_any_other_interrupted_command_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Typer turns Ctrl-C into a bare exit 130: the CLI's own line was never printed
    import nasmlcn.hardware

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(nasmlcn.hardware, "load_catalog", interrupted)
    done = run_cli("devices")
    assert done.returncode == 130
    assert done.stdout == ""
    assert done.stderr.splitlines() == ["error: interrupted"]
