"""Many workers on one study, for real: separate processes started at the same
instant on SQLite and on a private PostgreSQL server, workers killed with -9,
time limits."""

from __future__ import annotations

import contextlib
import datetime
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from nasmlcn.search import (
    run_search,
)
from nasmlcn.study import load_existing_study
from nasmlcn.study._claim import trial_seed
from tests._postgres import PostgresServer
from tests.search._worker_script import SlowProxy, config

ROOT = Path(__file__).resolve().parents[2]


def _start_workers(n: int, url: str, study: str, trials: int) -> list[subprocess.Popen[str]]:
    args = [
        sys.executable,
        "-m",
        "nasmlcn",
        "search",
        "--evaluator",
        "proxy",
        "--devices",
        "4xK80",
        "--mem",
        "12GB",
        "--epochs",
        "2",
        "--trials",
        str(trials),
        "--storage",
        url,
        "--study",
        study,
        "--quiet",
        "--json",
    ]
    return [
        subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for _ in range(n)
    ]


def _check_study(url: str, study_name: str, trials: int, workers: int) -> None:
    study = load_existing_study(study_name, url)
    states = [t.state for t in study.trials]
    # --trials counts models: no overshoot, nothing missing (repeats come on top)
    models = [
        t
        for t in study.trials
        if t.state in (TrialState.COMPLETE, TrialState.PRUNED) and "repeat_of" not in t.user_attrs
    ]
    assert len(models) == trials, states
    assert TrialState.RUNNING not in states
    assert TrialState.WAITING not in states
    params = [tuple(sorted(t.params.items())) for t in study.trials]
    assert len(set(params)) == len(params)  # no two workers proposed the same model
    seeds = [t.user_attrs["sampler_seed"] for t in study.trials]
    assert seeds == [trial_seed(0, t.number) for t in study.trials]
    assert len({t.user_attrs["worker"] for t in study.trials}) > 1  # they shared the work


def _started_earlier(db: Path, trial_id: int, seconds: float) -> None:
    """Moves the stored start of trial ``trial_id`` ``seconds`` back, as if it had
    been running (without a heartbeat) that long."""
    with contextlib.closing(sqlite3.connect(db)) as con, con:
        (text,) = con.execute(
            "SELECT datetime_start FROM trials WHERE trial_id = ?", (trial_id,)
        ).fetchone()
        earlier = datetime.datetime.fromisoformat(text) - datetime.timedelta(seconds=seconds)
        con.execute(
            "UPDATE trials SET datetime_start = ? WHERE trial_id = ?",
            (earlier.isoformat(sep=" "), trial_id),
        )


def _wait_all(procs: list[subprocess.Popen[str]]) -> None:
    for p in procs:
        _, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr[-2000:]


def test_four_workers_started_together_on_a_fresh_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    _wait_all(_start_workers(4, url, "s", 16))
    _check_study(url, "s", 16, 4)


def test_four_workers_on_an_empty_then_an_existing_postgresql_database(
    postgres: PostgresServer,
) -> None:
    url = postgres.create_database().url
    _wait_all(_start_workers(4, url, "pg", 12))
    _check_study(url, "pg", 12, 4)
    # the schema and the study exist now: 4 more workers continue the study
    _wait_all(_start_workers(4, url, "pg", 16))
    _check_study(url, "pg", 16, 4)


def test_one_worker_with_one_seed_is_reproducible(tmp_path: Path) -> None:
    params = []
    for name in ("a", "b"):
        c = config(f"sqlite:///{tmp_path / name}.db", "s", 4, 120)
        run_search(c)
        params.append([t.params for t in load_existing_study("s", c.storage).trials])
    assert params[0] == params[1]


def test_a_killed_worker_s_trial_is_failed_with_its_reason_and_retried(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kill.db'}"
    grace = 1.0
    # 2 s epochs: after epoch 1's line, trial 0 has 2 epochs (4 s) left to be killed in
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.search._worker_script", url, "s", "3", str(grace), "2"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert worker.stdout is not None
    assert worker.stdout.readline().startswith("trial 0 epoch 1")  # mid-trial
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    study = load_existing_study("s", url)
    assert [t.state for t in study.trials] == [TrialState.RUNNING]
    killed = study.trials[0]
    # a live worker takes new trials while the dead one's trial may still be alive,
    # then waits for it to go stale, fails it with the reason and runs the retry
    result = run_search(config(url, "s", 3, grace), evaluator=SlowProxy(0.0))
    assert result.stopped == "trials"
    study = load_existing_study("s", url)
    trials = study.trials
    failed = trials[0]
    assert failed.state == TrialState.FAIL
    assert failed.user_attrs["failure"] == "crash"
    assert "no heartbeat for over 1 s" in failed.user_attrs["fail_reason"]
    retries = [t for t in trials if t.system_attrs.get("failed_trial") == 0]
    assert len(retries) == 1
    assert retries[0].state == TrialState.COMPLETE
    assert retries[0].params == killed.params
    assert "fail_reason" not in retries[0].user_attrs
    states = [t.state for t in trials]
    assert states.count(TrialState.COMPLETE) == 3  # the crash did not count toward --trials


def test_a_trial_without_any_heartbeat_goes_stale_after_the_grace(tmp_path: Path) -> None:
    """A RUNNING trial left by a worker that died before its first heartbeat (or by
    a nasmlcn whose proxy trials had none) is failed and retried too."""
    c = config(f"sqlite:///{tmp_path / 'old.db'}", "s", 2, 1.0)
    run_search(c.with_overrides(trials=1))
    storage = optuna.storages.RDBStorage(c.storage)  # no heartbeats: a foreign worker
    study = optuna.load_study(study_name="s", storage=storage)
    orphan = study.ask()
    orphan.suggest_int("num_lanes", 2, 2)
    _started_earlier(tmp_path / "old.db", orphan._trial_id, seconds=60)  # not slept
    run_search(c)
    trials = load_existing_study("s", c.storage).trials
    assert trials[orphan.number].state == TrialState.FAIL
    assert trials[orphan.number].user_attrs["failure"] == "crash"


@pytest.mark.filterwarnings("ignore:Argument ``heartbeat_interval``")
@pytest.mark.filterwarnings("ignore:Heartbeat of storage")
def test_a_run_waiting_for_a_trial_running_elsewhere_says_so_once(tmp_path: Path) -> None:
    """A re-run whose trials left are claimed by a RUNNING trial (a worker that dies
    once the run waits for it) waited up to --grace without a word."""
    import io
    import threading

    from rich.console import Console

    from nasmlcn.cli._search_progress import SearchProgress

    c = config(f"sqlite:///{tmp_path / 'wait.db'}", "s", 2, 1.0)
    run_search(c.with_overrides(trials=1))
    storage = optuna.storages.RDBStorage(c.storage, heartbeat_interval=1)
    orphan = optuna.load_study(study_name="s", storage=storage).ask()
    orphan.suggest_int("num_lanes", 2, 2)
    dies = threading.Event()

    def alive() -> None:  # its worker beats until the run waits for it, then dies
        while not dies.is_set():
            storage.record_heartbeat(orphan._trial_id)
            dies.wait(0.1)

    class Dies(SearchProgress):
        def on_wait(self, running: tuple[int, ...], grace: float) -> None:
            dies.set()
            super().on_wait(running, grace)

    beating = threading.Thread(target=alive, daemon=True)
    beating.start()
    text = io.StringIO()
    try:
        with Dies(Console(file=text, force_terminal=False, width=300)) as progress:
            result = run_search(c, [progress])
    finally:
        dies.set()
        beating.join()
    assert result.stopped == "trials"
    waits = [line for line in text.getvalue().splitlines() if line.startswith("waiting")]
    assert waits == [
        f"waiting: the trials left are claimed by #{orphan.number}, running elsewhere; it is "
        "failed, queued again and taken here if silent for --grace 1 s (a worker that died)"
    ]
    trials = load_existing_study("s", c.storage).trials
    assert trials[orphan.number].state == TrialState.FAIL


@pytest.mark.filterwarnings("ignore:Heartbeat of storage")
def test_ctrl_c_while_waiting_leaves_another_worker_s_trial_alone(tmp_path: Path) -> None:
    """A Ctrl-C with no trial in hand failed the newest RUNNING trial without
    attributes, taken for one this run was sampling: on one SQLite file with several
    workers, that was another worker's, being sampled."""
    from nasmlcn.search import SearchObserver

    c = config(f"sqlite:///{tmp_path / 'wait.db'}", "s", 2, 1.0)
    run_search(c.with_overrides(trials=1))
    other = optuna.load_study(study_name="s", storage=c.storage).ask()
    other.suggest_int("num_lanes", 2, 2)  # sampled, no attributes written yet

    class CtrlC(SearchObserver):
        def on_wait(self, running: tuple[int, ...], grace: float) -> None:
            raise KeyboardInterrupt

    result = run_search(c.with_overrides(grace=600), [CtrlC()])
    assert result.stopped == "interrupted"
    trials = load_existing_study("s", c.storage).trials
    assert trials[other.number].state == TrialState.RUNNING


def test_workers_option_runs_a_pool_on_one_study(tmp_path: Path) -> None:
    import json

    from tests.conftest import run_cli

    url = f"sqlite:///{tmp_path / 'pool.db'}"
    # proxy trials take ~0.2 s: with 12, one worker could finish them all before the
    # other had started on a loaded machine (seen once); 30 leave the second seconds
    trials = 30
    result = run_cli(
        *("search", "--evaluator", "proxy", "--devices", "4xK80", "--mem", "12GB"),
        *("--epochs", "2", "--trials", str(trials), "--storage", url, "--study", "p"),
        *("--workers", "2", "--json", "-q"),
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [w["index"] for w in data["workers"]] == [0, 1]
    assert all(w["gpus"] is None and w["threads"] >= 1 for w in data["workers"])
    assert data["run_trials"] == trials + data["trial_counts"]["repeats"]  # repeats on top
    assert data["errors"] == []
    _check_study(url, "p", trials, 2)
    # the dashboard's notes and figures, as a one-process search writes them
    import optuna_dashboard

    from nasmlcn.dashboard import GRAPH_ID_PREFIX
    from nasmlcn.study import load_existing_study, trial_id_of

    study = load_existing_study("p", url)
    system = study._storage.get_study_system_attrs(study._study_id)
    assert optuna_dashboard.get_note(study).startswith("*Written by nasmlcn after every run;")
    ids = {k.split(":")[2] for k in system if k.startswith("dashboard:plot_data:")}
    assert GRAPH_ID_PREFIX + "accuracy_vs_latency" in ids
    # every trial's note written once (optuna-dashboard's note version 1)
    versions = [system.get(f"dashboard:{trial_id_of(t)}:note_ver") for t in study.trials]
    assert versions == [1] * len(study.trials)


def test_more_gpus_per_trial_than_the_machine_has_is_one_clear_error(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    url = f"sqlite:///{tmp_path / 'gpu.db'}"
    result = run_cli(
        *("search", "--evaluator", "proxy", "--storage", url, "--gpus-per-trial", "64"),
        env={"CUDA_VISIBLE_DEVICES": "0,1"},
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --gpus-per-trial 64: this machine has 2 GPU(s) (0,1); use fewer, or leave "
        "the option out to run on the CPU"
    ]
    assert not (tmp_path / "gpu.db").exists()  # refused before the study was made


def test_sigterm_fails_and_queues_the_running_trial_like_ctrl_c(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'term.db'}"
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.search._worker_script", url, "s", "3", "120", "2"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert worker.stdout is not None
    assert worker.stdout.readline().startswith("trial 0 epoch 1")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0  # it wrote the trial down and returned
    trials = load_existing_study("s", url).trials
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.WAITING]
    assert trials[0].user_attrs["fail_reason"] == "stopped by SIGTERM"
    assert trials[0].user_attrs["failure"] == "interrupted"


def test_the_live_display_of_a_pool_shows_every_trial_with_its_own_time(tmp_path: Path) -> None:
    import re

    from tests.conftest import run_cli

    url = f"sqlite:///{tmp_path / 'shown.db'}"
    result = run_cli(
        *("search", "--evaluator", "proxy", "--devices", "4xK80", "--mem", "12GB"),
        *("--epochs", "2", "--trials", "6", "--storage", url, "--study", "p", "--workers", "2"),
        env={"COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stderr
    # every trial gets its line (a late one may be PRUNED, depending on which finished first)
    lines = re.findall(r"^trial (\d+): (.*)$", result.stderr, flags=re.MULTILINE)
    proposals = len(load_existing_study("p", url).trials)  # 6 models, and any repeats
    assert proposals >= 6
    assert sorted(int(n) for n, _ in lines) == list(range(proposals))
    times = [re.fullmatch(r"accuracy [\d.]+ \(([\d.]+) s\).*", text) for _, text in lines]
    assert sum(t is not None for t in times) >= 5  # at least the first 5 complete (pruning needs 5)
    assert all(float(t.group(1)) < 60 for t in times if t)  # the trial's time, not since start-up
    assert all(t or text.startswith("PRUNED") for t, (_, text) in zip(times, lines, strict=True))
    assert re.search(r"2 workers \(\d+ CPU thread\(s\) each\)", result.stdout)


def test_one_killed_worker_does_not_end_the_listening_to_the_others() -> None:
    """A worker killed by -9 counted twice (a stop and an error), so with two
    workers the parent stopped listening while the other still ran: no summary, and
    'every worker failed' for a study that finished."""
    import queue

    from nasmlcn.search import SearchObserver, SearchResult
    from nasmlcn.search._run.pool import _listen

    class Process:
        def __init__(self, alive: bool, exitcode: int | None) -> None:
            self.alive, self.exitcode = alive, exitcode

        def is_alive(self) -> bool:
            return self.alive

    class Channel:
        """Empty once (the dead worker is seen), then the live worker's messages."""

        def __init__(self) -> None:
            self.messages = [None, ("trial", 1, {"number": 3}), ("done", 1, "trials")]

        def get(self, timeout: float) -> tuple[str, int, object]:
            message = self.messages.pop(0)
            if message is None:
                raise queue.Empty
            return message

    seen: list[object] = []

    class Watch(SearchObserver):
        def on_trial_end(self, trial: object) -> None:
            seen.append(trial)

    result = SearchResult.__new__(SearchResult)
    result.run_trials = []
    stops, errors = _listen(Watch(), [Process(False, -9), Process(True, None)], Channel(), result)
    assert stops == {0: "exit code -9", 1: "trials"}
    assert errors == ["worker 0 died (exit code -9)"]
    assert seen == [{"number": 3}]  # the live worker's trial was still relayed
