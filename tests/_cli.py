"""Running the ``nasmlcn`` command from a test: in this process (:func:`run_cli`, the
default: no interpreter start and no torch import per call) or in a fresh one
(:func:`run_cli_subprocess`, for what needs a real process).

:func:`run_cli` calls :func:`nasmlcn.cli.main` as ``python -m nasmlcn`` would, and
puts back everything the command may change in the process, so a test sees what a
user sees and the next test sees nothing of it:

- stdout and stderr apart, captured at the file descriptors (child processes and
  C code included), never a terminal, as through a pipe;
- ``env`` over ``os.environ`` and ``cwd`` for the call; the whole environment and the
  working folder come back afterwards;
- the CLI's rich consoles built afresh for the call (as at import in a fresh
  process: width from ``COLUMNS``, colour from ``NO_COLOR``/``TERM``), the old ones
  back afterwards;
- Python's default warning filters, warnings shown on stderr (pytest would record
  them instead), the test's filters back afterwards;
- logging (root handlers, levels of every logger), Optuna's verbosity, the SIGINT
  and SIGTERM handlers, ``sys.argv``, torch's thread count and the random states of
  torch, numpy and :mod:`random`;
- the storage passwords :func:`nasmlcn._storage_url.scrub` hides: none at the start
  of a call, as in a fresh process, and the test's own afterwards.

An exception that escapes :func:`~nasmlcn.cli.main` is written to stderr with its
traceback and gives exit code 1, as the interpreter would. ``timeout`` holds for
:func:`run_cli_subprocess` only (pytest-timeout bounds a test run in process).
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import io
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from nasmlcn import _storage_url
from nasmlcn.cli import _console

ENCODING = "utf-8"
"""What the command writes and the test reads (the machines run a UTF-8 locale)."""

_DEFAULT_FILTERS: tuple[tuple[str, type[Warning], str], ...] = (
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", ResourceWarning, ""),
)
"""The warning filters of a fresh ``python`` started without ``-W``."""


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Runs ``nasmlcn ARGS`` in this process, as ``python -m nasmlcn ARGS`` would run
    (module docstring); ``returncode``, ``stdout`` and ``stderr`` as from
    :func:`run_cli_subprocess`."""
    del timeout  # a subprocess's limit; in process pytest-timeout bounds the test
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("run_cli swaps fds 1 and 2: main thread only (or run_cli_subprocess)")
    import nasmlcn
    from nasmlcn.cli import main

    command = [sys.executable, "-m", "nasmlcn", *args]
    with _restored_state(), _environment(env, cwd), _captured() as (out, err), _collected():
        sys.argv = [str(Path(nasmlcn.__file__).with_name("__main__.py")), *args]  # as -m sets it
        _fresh_consoles()
        try:
            code = _exit_code(main(list(args)))
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except Exception:
            traceback.print_exc()
            code = 1
    return subprocess.CompletedProcess(command, code, out.getvalue(), err.getvalue())


def run_cli_subprocess(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m nasmlcn ARGS`` in a fresh process: for what needs one (the
    module entry point itself, signals, a process that must not share this one's
    state)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "nasmlcn", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
    )


def _exit_code(value: object) -> int:
    """The exit status ``raise SystemExit(value)`` gives (a message goes to stderr)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


_frozen = False  # the test's heap is frozen (heap_frozen)


@contextlib.contextmanager
def heap_frozen(frozen: bool) -> Iterator[None]:
    """Inside, the heap alive on entry is frozen (:func:`gc.freeze`: left out of
    every collection) or, ``frozen=False``, thawed; on leaving it is as it was."""
    global _frozen
    before = _frozen
    _freeze(frozen)
    try:
        yield
    finally:
        _freeze(before)


def _freeze(frozen: bool) -> None:
    global _frozen
    if frozen:
        gc.freeze()
    else:
        gc.unfreeze()
    _frozen = frozen


@contextlib.contextmanager
def _collected() -> Iterator[None]:
    """The garbage the block leaves is collected at its end, as a process's exit
    frees it (SQLAlchemy's pools sit in reference cycles: their SQLite connections,
    closed, checkpoint and remove the ``-wal`` file). The objects made before the
    block are frozen meanwhile, so the collection looks at the block's own objects
    only (a whole collection took 0.3 s a command here). A heap frozen already
    (:func:`heap_frozen`: each test's) stays frozen after it."""
    thaw = not _frozen
    gc.freeze()
    try:
        yield
        gc.collect()
    finally:
        if thaw:
            gc.unfreeze()


class _Captured:
    """What one stream received; :meth:`getvalue` after the capture has ended."""

    def __init__(self) -> None:
        self.text = ""

    def getvalue(self) -> str:
        return self.text


@contextlib.contextmanager
def _captured() -> Iterator[tuple[_Captured, _Captured]]:
    """fds 1 and 2, and ``sys.stdout``/``sys.stderr`` writing to them, go to two
    temporary files for the block; their text lands in the two results."""
    out, err = _Captured(), _Captured()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved_streams = sys.stdout, sys.stderr
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        saved_fds = os.dup(1), os.dup(2)
        try:
            os.dup2(out_file.fileno(), 1)
            os.dup2(err_file.fileno(), 2)
            sys.stdout, sys.stderr = _text_stream(1), _text_stream(2)
            yield out, err
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            sys.stdout, sys.stderr = saved_streams
            for fd, saved in zip((1, 2), saved_fds, strict=True):
                os.dup2(saved, fd)
                os.close(saved)
            for captured, file in ((out, out_file), (err, err_file)):
                file.seek(0)
                captured.text = file.read().decode(ENCODING, errors="replace")


def _text_stream(fd: int) -> TextIO:
    """A text stream on ``fd`` that writes through at once, so its text and that of
    child processes on the same fd keep their order."""
    raw = io.FileIO(fd, "w", closefd=False)
    return io.TextIOWrapper(raw, encoding=ENCODING, line_buffering=True, write_through=True)


@contextlib.contextmanager
def _environment(env: dict[str, str] | None, cwd: Path | None) -> Iterator[None]:
    """``env`` over ``os.environ`` and ``cwd`` as the working folder for the block."""
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    try:
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def _fresh_consoles() -> None:
    """Gives the CLI's consoles the state that importing ``nasmlcn.cli._console`` in a
    fresh process gives them now (streams, ``COLUMNS``, colour variables): the module
    runs again under a private name, and its consoles' state replaces the shared
    objects' (the command modules hold those objects)."""
    spec = importlib.util.spec_from_file_location("_nasmlcn_fresh_console", _console.__file__)
    assert spec is not None
    assert spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    for name in ("out", "err"):
        shared = getattr(_console, name)
        shared.__dict__.clear()
        shared.__dict__.update(getattr(fresh, name).__dict__)


@contextlib.contextmanager
def _restored_state() -> Iterator[None]:
    """Everything the CLI may change in the process comes back after the block (the
    module docstring lists it); the block starts with default warning filters and
    no storage password remembered."""
    import numpy as np
    import optuna
    import torch

    consoles = {name: dict(getattr(_console, name).__dict__) for name in ("out", "err")}
    loggers = _logger_states()
    root = logging.getLogger()
    root_handlers, root_level = list(root.handlers), root.level
    verbosity = optuna.logging.get_verbosity()
    on_signal = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    argv = list(sys.argv)
    threads = torch.get_num_threads()
    rng = torch.random.get_rng_state(), np.random.get_state(), random.getstate()
    with _storage_url._lock:
        secrets = set(_storage_url._secrets)
        _storage_url._secrets.clear()
        _storage_url._pattern = None
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category, module in _DEFAULT_FILTERS:
                warnings.filterwarnings(action, category=category, module=module, append=True)  # type: ignore[arg-type]
            warnings.showwarning = _show_warning
            with _streams_of_handlers_follow():
                yield
    finally:
        with _storage_url._lock:
            _storage_url._secrets.clear()
            _storage_url._secrets.update(secrets)
            _storage_url._pattern = None
        torch.random.set_rng_state(rng[0])
        np.random.set_state(rng[1])
        random.setstate(rng[2])
        torch.set_num_threads(threads)
        sys.argv = argv
        for sig, previous in on_signal.items():
            if previous is not None:
                signal.signal(sig, previous)
        optuna.logging.set_verbosity(verbosity)
        for handler in root.handlers:
            if handler not in root_handlers:
                root.removeHandler(handler)
                handler.close()
        root.handlers[:] = root_handlers
        root.setLevel(root_level)
        for logger, (level, propagate, disabled, own) in loggers.items():
            logger.setLevel(level)
            logger.propagate, logger.disabled = propagate, disabled
            logger.handlers[:] = own
        for name, state in consoles.items():
            shared = getattr(_console, name)
            shared.__dict__.clear()
            shared.__dict__.update(state)


def _logger_states() -> dict[logging.Logger, tuple[int, bool, bool, list[logging.Handler]]]:
    """Level, propagation, disabled flag and handlers of every named logger."""
    return {
        logger: (logger.level, logger.propagate, logger.disabled, list(logger.handlers))
        for logger in logging.root.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    }


@contextlib.contextmanager
def _streams_of_handlers_follow() -> Iterator[None]:
    """Logging handlers that write to the process's stdout or stderr (Optuna's, made
    once per process) write to the captured ones for the block, as they would in a
    fresh process."""
    before = {
        id(sys.stdout): "stdout",
        id(sys.stderr): "stderr",
        id(sys.__stdout__): "stdout",
        id(sys.__stderr__): "stderr",
    }
    moved: list[tuple[logging.StreamHandler[Any], Any]] = []
    for logger in [logging.getLogger(), *_logger_states()]:
        for handler in logger.handlers:
            if type(handler) is logging.StreamHandler and id(handler.stream) in before:
                moved.append((handler, handler.stream))
    try:
        for handler, stream in moved:
            handler.stream = _CurrentStream(before[id(stream)])
        yield
    finally:
        for handler, stream in moved:
            handler.stream = stream


class _CurrentStream:
    """Writes to whatever ``sys.stdout``/``sys.stderr`` is at the time of writing."""

    def __init__(self, name: str) -> None:
        self.name = name

    def write(self, text: str) -> int:
        stream: TextIO = getattr(sys, self.name)
        return stream.write(text)

    def flush(self) -> None:
        getattr(sys, self.name).flush()


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Python's own display of a warning: on stderr, as the CLI's user sees it."""
    text = warnings.formatwarning(message, category, filename, lineno, line)
    with contextlib.suppress(OSError):
        (file or sys.stderr).write(text)
