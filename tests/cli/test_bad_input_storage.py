"""At the command line: a storage that cannot be
written, a storage given as a path or as SQLite's URI form, an output folder that
cannot be made, numbers no run could reach, and ``--timeout`` inside an epoch.

Root passes every permission bit, and these tests may run as root: a file is made
read-only with ``chattr +i`` there (``chmod`` otherwise), and a folder no one can
write is ``/proc``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli

PROXY = ("--evaluator", "proxy", "--devices", "2xK80", "--mem", "12GB", "--epochs", "1")


def _refused(result: subprocess.CompletedProcess[str], expected: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert expected in lines[0], lines[0]
    return lines[0]


def _hashes(folder: Path) -> dict[str, str]:
    """Every file of ``folder`` (SQLite's -shm index and an empty -wal aside)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
        and not p.name.endswith("-shm")
        and not (p.name.endswith("-wal") and p.stat().st_size == 0)
    }


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A proxy study of 2 trials, its WAL folded into the file."""
    db = tmp_path_factory.mktemp("study") / "s.db"
    made = run_cli("search", *PROXY, "--trials", "2", "--storage", f"sqlite:///{db}", "-q")
    assert made.returncode == 0, made.stderr
    connection = sqlite3.connect(db)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()
    return db


@contextlib.contextmanager
def _read_only(path: Path) -> Iterator[None]:
    """``path`` read-only for this process's user: ``chmod a-w``, or for root (whom
    permission bits do not stop) the immutable attribute."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(path)]).returncode != 0:
        pytest.skip("running as root without chattr +i: no file root cannot write")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


@pytest.mark.parametrize("workers", [(), ("--workers", "2")], ids=["one process", "workers"])
def test_a_read_only_study_file_is_refused_in_one_line_untouched(
    study: Path, tmp_path: Path, workers: tuple[str, ...]
) -> None:
    """Item 4: was Optuna's StorageInternalError ("... e.g. exceeding max length"),
    exit 1, at the first trial."""
    before = _hashes(study.parent)
    with _read_only(study):
        result = run_cli(
            "search", *PROXY, "--trials", "4", "--storage", f"sqlite:///{study}", *workers
        )
    _refused(result, f"the database file {str(study)!r} is read-only, but this command writes")
    assert _hashes(study.parent) == before


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///file:{db}?mode=ro&uri=true", "is opened read-only (mode=ro)"),
        ("sqlite:///file:{db}?immutable=1&uri=true", "is opened read-only (immutable=1)"),
    ],
)
def test_a_read_only_uri_is_refused_in_one_line_untouched(
    study: Path, url: str, expected: str
) -> None:
    before = _hashes(study.parent)
    result = run_cli("search", *PROXY, "--trials", "4", "--storage", url.format(db=study))
    line = _refused(result, expected)
    assert "remove " in line
    assert _hashes(study.parent) == before


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("/proc/s.db", "the folder '/proc' is not writable"),  # root cannot write there
        ("{file}/s.db", "is a file, not a folder; choose another --storage"),
    ],
)
def test_a_storage_folder_that_cannot_be_written_is_refused_in_one_line(
    tmp_path: Path, where: str, expected: str
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    url = "sqlite:///" + where.format(file=a_file)
    _refused(run_cli("search", *PROXY, "--trials", "1", "--storage", url, cwd=tmp_path), expected)
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]


def test_a_typed_storage_in_a_folder_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    """``sqlite:////nonexistent/dir/x.db`` made /nonexistent/dir and searched there: a
    folder missing from a typed URL is most likely a typo. Only the default
    storage's folder (studies/) is made."""
    url = f"sqlite:///{tmp_path}/typo/dir/x.db"
    result = run_cli("search", *PROXY, "--trials", "1", "--storage", url, cwd=tmp_path)
    _refused(result, f"there is no folder '{tmp_path}/typo/dir' for the database file")
    assert list(tmp_path.iterdir()) == []
    made = run_cli("search", *PROXY, "--trials", "1", "-q", cwd=tmp_path)  # the default
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "studies" / "nasmlcn.db").is_file()


def test_a_path_given_as_storage_is_answered_with_its_url(tmp_path: Path) -> None:
    """Item 5: said only "not a valid URL"."""
    result = run_cli("search", *PROXY, "--trials", "1", "--storage", "a.db", cwd=tmp_path)
    _refused(result, "storage 'a.db' is not a URL; for the SQLite file 'a.db' write sqlite:///a.db")
    assert list(tmp_path.iterdir()) == []


def test_sqlite_s_uri_form_runs_a_search_on_the_file_it_names(tmp_path: Path) -> None:
    """Item 5: ``sqlite:///file:PATH?mode=rwc&uri=true`` is the file PATH (its lock
    file beside it), and the plain URL reads the same study back."""
    db = tmp_path / "uri" / "s.db"
    db.parent.mkdir()
    url = f"sqlite:///file:{db}?mode=rwc&uri=true"
    made = run_cli("search", *PROXY, "--trials", "2", "--study", "u", "--storage", url, "-q")
    assert made.returncode == 0, made.stderr
    assert {"s.db", "s.db.lock"} <= {p.name for p in db.parent.iterdir()}
    best = run_cli("best", "--storage", f"sqlite:///{db}", "--study", "u", "--json")
    assert best.returncode == 0, best.stderr
    assert json.loads(best.stdout)["n_trials"] == 2
    again = run_cli("search", *PROXY, "--trials", "3", "--study", "u", "--storage", url, "-q")
    assert again.returncode == 0, again.stderr
    best = run_cli("best", "--storage", f"sqlite:///{db}", "--study", "u", "--json")
    assert json.loads(best.stdout)["n_trials"] == 3  # continued, not a second study


def test_train_refuses_an_out_folder_it_cannot_create_before_training() -> None:
    """Item 7: ``/proc/nope`` passed the folder check and failed with a raw
    FileNotFoundError after training. 50 epochs of the default model would take
    minutes here; the refusal comes before the data is even loaded."""
    started = time.monotonic()
    result = run_cli(
        *("train", "--dataset", "synthetic", "--epochs", "50", "--out", "/proc/nope"),
        timeout=300,
    )
    _refused(result, "--out '/proc/nope' cannot be written (No such file or directory)")
    assert "epoch" not in result.stdout + result.stderr
    assert time.monotonic() - started < 60  # (loose: a loaded 2-core machine)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--trials", "100000000000"), "trials must be at most 1,000,000"),
        (("--trials", "1", "--epochs", "100000000"), "epochs must be at most 100,000"),
    ],
)
def test_numbers_no_run_could_reach_are_refused(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    """Item 8: --trials 100000000000 was accepted."""
    db = tmp_path / "s.db"
    result = run_cli("search", *PROXY[:-2], *args, "--storage", f"sqlite:///{db}")
    _refused(result, expected)
    assert list(tmp_path.iterdir()) == []


def test_the_search_timeout_stops_a_one_epoch_trial_mid_epoch(tmp_path: Path) -> None:
    """Item 8: a run of one-epoch trials told ``--timeout 5`` went on for 81 s (the
    trial stopped only at its epoch's end) and was recorded PRUNED, its untrained
    epochs counted as saved. Now the trial stops within a batch of the deadline, as
    Ctrl-C stops it: FAIL, queued again for a re-run, nothing counted as saved.

    One epoch is 180 batches of 10 synthetic images; at ``--flops 4x`` it takes about
    20 s on 2 threads here (at the default 1x it took 7 s, and in the test's process,
    torch already imported, it ended within the 6 s). The trial must stop in it, which
    the recorded batch number shows."""
    db = tmp_path / "s.db"
    started = time.monotonic()
    result = run_cli(
        *("search", "--dataset", "synthetic", "--devices", "1xK80", "--mem", "12GB"),
        *("--flops", "4x"),
        *("--epochs", "1", "--trials", "3", "--batch-size", "10", "--run-on", "cpu"),
        *("--timeout", "6", "--storage", f"sqlite:///{db}", "--study", "t", "--json", "-q"),
        timeout=300,
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["stopped"] == "timeout"
    assert report["run_trials"] == 1
    assert report["seconds_saved_by_pruning"] == 0
    assert report["pruned"] in (0, [])
    with contextlib.closing(sqlite3.connect(db)) as connection:
        rows = connection.execute("SELECT number, state FROM trials ORDER BY number").fetchall()
        reasons = connection.execute(
            "SELECT value_json FROM trial_user_attributes WHERE key = 'fail_reason'"
        ).fetchall()
    assert rows == [(0, "FAIL"), (1, "WAITING")]  # queued again: a re-run resumes it
    (reason,) = (json.loads(r[0]) for r in reasons)
    found = re.fullmatch(
        r"stopped by the search's --timeout 6 s \(in epoch 1, batch (\d+)\)",
        reason,
    )
    assert found, reason
    assert int(found.group(1)) < 180  # inside the epoch, not at its end
    assert elapsed < 6 + 60  # loose: a loaded 2-core machine
