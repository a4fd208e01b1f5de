"""A search run without a terminal (nohup, SLURM, a pipe) shows no bars, so it prints a
line per epoch of each trial, as ``train`` does; ``--quiet`` prints none."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import run_cli

# small models (--flops 0.05x): the lines are tested, not what the models learn
SEARCH = (
    *("search", "--devices", "1xK80", "--mem", "12GB", "--flops", "0.05x"),
    *("--dataset", "synthetic"),
    *("--trials", "2", "--epochs", "2", "--train-limit", "40", "--val-limit", "20"),
    *("--no-prune", "--seed", "0"),
)
LINE = re.compile(r"^trial (\d+) epoch (\d)/2: val acc \d\.\d{4}, \d+\.\d s, \d+ img/s$", re.M)


def test_a_logged_search_prints_every_epoch_of_every_trial(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 's.db'}"
    result = run_cli(*SEARCH, "--storage", storage, "--artifacts", str(tmp_path / "a"))
    assert result.returncode == 0, result.stderr
    lines = [(int(t), int(e)) for t, e in LINE.findall(result.stderr)]
    assert lines == [(0, 1), (0, 2), (1, 1), (1, 2)], result.stderr
    # each before its trial's own line
    assert result.stderr.index("trial 0 epoch 2/2") < result.stderr.index("trial 0:")

    quiet = run_cli(
        *SEARCH,
        "--storage",
        f"sqlite:///{tmp_path / 'q.db'}",
        "--artifacts",
        str(tmp_path / "b"),
        "-q",
    )
    assert quiet.returncode == 0, quiet.stderr
    assert LINE.findall(quiet.stderr) == []


def test_workers_send_their_epochs_to_the_log(tmp_path: Path) -> None:
    """With --workers, the trials train in other processes; their epochs reach the
    parent's log all the same."""
    storage = f"sqlite:///{tmp_path / 's.db'}"
    result = run_cli(
        *SEARCH, "--workers", "2", "--storage", storage, "--artifacts", str(tmp_path / "a")
    )
    assert result.returncode == 0, result.stderr
    lines = sorted((int(t), int(e)) for t, e in LINE.findall(result.stderr))
    assert lines == [(0, 1), (0, 2), (1, 1), (1, 2)], result.stderr
