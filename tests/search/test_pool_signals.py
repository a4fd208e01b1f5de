"""Ctrl-C and SIGTERM reach a ``--workers`` pool whenever they come: while the
workers start (no traceback, no "every worker failed"), and when they are sent to
the parent alone (``kill -INT PID``), which must stop the workers too."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from nasmlcn._signals import SIGNAL_ECHO_S, lost_stops, raising, stops_held, stops_raised

ROOT = Path(__file__).resolve().parents[2]


STOPS = pytest.mark.parametrize(
    ("sig", "status", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "stopped by SIGTERM")],
)
"""Ctrl-C and SIGTERM: the exit status and the words of the run's last line."""


def _search(tmp_path: Path, trials: int, *more: str) -> subprocess.Popen[str]:
    args = [
        *(sys.executable, "-m", "nasmlcn", "search", "--evaluator", "proxy"),
        *("--devices", "2xK80", "--mem", "12GB", "--trials", str(trials)),
        *("--storage", f"sqlite:///{tmp_path / 's.db'}"),
        *("--artifacts", str(tmp_path / "art"), "--quiet"),
        *(more or ("--workers", "2", "--study", "s")),
    ]
    return subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,  # its own process group, as a terminal's job is
    )


def _finish(search: subprocess.Popen[str]) -> tuple[str, str]:
    """Its stdout and stderr once it ends; a search still running after two minutes
    (and its workers) is killed, and the test fails."""
    try:
        return search.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(search.pid, signal.SIGKILL)
        search.communicate()
        raise


def _workers_of(pid: int) -> list[int]:
    """The spawned worker processes of ``pid`` (not the resource tracker)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    found = []
    for child in children:
        with open(f"/proc/{child}/cmdline", "rb") as f:
            if b"spawn_main" in f.read():
                found.append(int(child))
    return found


def _ignores(pid: int, sig: int) -> bool:
    """Whether process ``pid`` ignores ``sig`` now."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def _completed(path: Path, state: str = "COMPLETE") -> int:
    """The trials in ``state`` in the SQLite file ``path`` (0 before its tables
    exist), read without writing: Optuna's own open would create the tables, racing
    the search that creates them."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            found = db.execute("SELECT count(*) FROM trials WHERE state = ?", (state,))
            return int(found.fetchone()[0])
    except sqlite3.Error:  # no file or no tables yet
        return 0


def _running(path: Path) -> int:
    return _completed(path, "RUNNING")


def _wait_for(check: object, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@STOPS
def test_a_stop_while_the_workers_start_stops_the_run_cleanly(
    tmp_path: Path, sig: signal.Signals, status: int, said: str
) -> None:
    """A terminal's Ctrl-C reaches the whole process group: a worker still starting
    (importing) died of it with a traceback, and the run ended 'every worker failed'
    (exit 2)."""
    search = _search(tmp_path, 100_000)
    # both started, and the parent takes signals again: it ignores them for the
    # instant of each start, so that the workers inherit that (StopRelay.starting)
    _wait_for(lambda: len(_workers_of(search.pid)) == 2 and not _ignores(search.pid, signal.SIGINT))
    os.killpg(search.pid, sig)  # the workers are still importing
    out, err = _finish(search)
    assert search.returncode == status, err
    assert "Traceback" not in err
    assert "every worker failed" not in out + err
    assert f"{said}: no trial was running; re-run the same command to continue" in out
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 's.db'}")
    assert not [t for t in study.trials if t.state == TrialState.RUNNING]


@STOPS
def test_a_signal_to_the_parent_alone_stops_its_workers(
    tmp_path: Path, sig: signal.Signals, status: int, said: str
) -> None:
    """``kill -INT PID`` reaches the parent only: it used to wait, interrupted, while
    its workers ran the whole study. A SIGTERM exits 143, not Ctrl-C's 130."""
    search = _search(tmp_path, 100_000)
    url = f"sqlite:///{tmp_path / 's.db'}"

    _wait_for(lambda: _completed(tmp_path / "s.db") >= 2)
    search.send_signal(sig)
    out, err = _finish(search)
    assert search.returncode == status, err
    assert "Traceback" not in err
    assert f"{said}: " in out
    trials = optuna.load_study(study_name="s", storage=url).trials
    assert len(trials) < 1000  # stopped, far from its 100,000 trials
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    interrupted = [t for t in trials if t.user_attrs.get("failure") == "interrupted"]
    assert all(t.state == TrialState.FAIL for t in interrupted)


def test_workers_stop_when_their_parent_is_killed(tmp_path: Path) -> None:
    """``kill -9`` of the parent left its workers running the study to its --trials,
    unseen (orphans of killed test drivers ran for an hour)."""
    # trials of 300 epochs (about 0.7 s): the kill comes while both run one
    long_trials = ("--epochs", "300", "--no-prune")
    search = _search(tmp_path, 100_000, "--workers", "2", "--study", "s", *long_trials)
    url = f"sqlite:///{tmp_path / 's.db'}"

    _wait_for(lambda: _completed(tmp_path / "s.db") >= 2 and _running(tmp_path / "s.db") == 2)
    workers = _workers_of(search.pid)
    assert len(workers) == 2
    # a parent that stops reading first (here 2 s of SIGSTOP, as a loaded machine may)
    # leaves the pipe of their epochs full: they waited at their exit to write it, for ever
    search.send_signal(signal.SIGSTOP)
    time.sleep(2)
    search.kill()
    search.wait()  # not communicate(): the workers hold its pipes open

    def gone(pid: int) -> bool:
        try:  # a zombie (ended, not yet reaped by init) counts as gone
            return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"
        except FileNotFoundError:
            return True

    try:
        _wait_for(lambda: all(gone(pid) for pid in workers), 60)
    finally:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        search.communicate()
    trials = optuna.load_study(study_name="s", storage=url).trials
    assert len(trials) < 1000
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    # the trials they were running say why (it read "stopped by SIGTERM", which no one sent)
    stopped = [t.user_attrs["fail_reason"] for t in trials if t.state == TrialState.FAIL]
    assert stopped
    assert set(stopped) == {"stopped: the search's process that started this worker ended"}


def test_a_ctrl_c_lost_in_a_weakref_callback_is_raised_again() -> None:
    """A Ctrl-C whose KeyboardInterrupt Python raised inside a weakref callback
    (SQLAlchemy's, when the garbage collector ran) was swallowed: the search ran on
    and a sweep's Ctrl-C test waited out its timeout. The search's block notes it,
    and its check raises it again."""
    import weakref

    class Thing:
        pass

    def callback(ref: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # lands here: the next bytecode runs it
        _ = ref

    with stops_raised(), lost_stops() as check:
        thing = Thing()
        ref = weakref.ref(thing, callback)
        del thing  # the callback runs, its KeyboardInterrupt is swallowed
        assert ref() is None
        with pytest.raises(KeyboardInterrupt):
            check()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_signal_echo_is_ignored_and_a_later_one_raises() -> None:

    handler = raising(KeyboardInterrupt)
    raised = 0
    for _ in range(2):  # the terminal's Ctrl-C, then its parent's relay of it
        try:
            handler(signal.SIGINT, None)
        except KeyboardInterrupt:
            raised += 1
    assert raised == 1
    time.sleep(SIGNAL_ECHO_S + 0.05)
    try:
        handler(signal.SIGINT, None)  # a second Ctrl-C, later
    except KeyboardInterrupt:
        raised += 1
    assert raised == 2


_RELAY_SCRIPT = """
import multiprocessing, os, signal, sys, time
from nasmlcn.search._run.pool import StopRelay, take_stop_signals

def child(stop, out):
    out.put(("ignored", signal.getsignal(signal.SIGINT) == signal.SIG_IGN))
    try:
        take_stop_signals(stop)
        time.sleep(60)
        out.put(("slept", None))
    except KeyboardInterrupt:
        out.put(("interrupted", None))

if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    with StopRelay() as relay:
        process = context.Process(target=child, args=(relay.stop, out))
        with relay.starting(process):
            process.start()
        os.kill(os.getpid(), signal.SIGINT)  # noted and passed on, never raised here
        print(out.get(timeout=60), out.get(timeout=60), relay.interrupted, relay.stop.value)
        process.join(60)
"""


def test_the_relay_notes_a_signal_for_a_worker_still_starting_and_passes_it_on(
    tmp_path: Path,
) -> None:
    script = tmp_path / "relay.py"  # spawn imports the child's function from a file
    script.write_text(_RELAY_SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == "('ignored', True) ('interrupted', None) True 2"


def test_a_stop_while_a_trial_is_claimed_acts_once_the_claim_is_whole() -> None:
    """Ctrl-C between Optuna's ask and the end of sampling left a RUNNING trial
    that the loop did not have in hand, so nothing stopped it."""

    done = []
    with pytest.raises(KeyboardInterrupt), stops_held():
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # its echo
        time.sleep(0.05)
        done.append("claimed")
    assert done == ["claimed"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_ends_a_sweep_not_only_its_study(tmp_path: Path) -> None:
    """A recipe's [sweep] runs one study per value: Ctrl-C stopped the running
    study, and the next one started."""
    recipe = tmp_path / "sweep.toml"
    recipe.write_text('[sweep]\nflops = ["1x", "2x", "4x"]\n')
    search = _search(tmp_path, 100_000, "--config", str(recipe))
    search_db = f"sqlite:///{tmp_path / 's.db'}"

    def first_has_trials() -> bool:
        try:
            summaries = optuna.get_all_study_summaries(search_db)
        except Exception:  # not made yet
            return False
        return any(s.n_trials >= 2 for s in summaries)

    _wait_for(first_has_trials)
    os.killpg(search.pid, signal.SIGINT)
    _, err = _finish(search)
    assert search.returncode == 130, err
    assert len(optuna.get_all_study_summaries(search_db)) == 1  # no other study started
