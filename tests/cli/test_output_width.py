"""Off a terminal (a pipe, a log, CI) tables are not wrapped at 80
columns, which broke lane mixes mid-word; a ``COLUMNS`` the user set is honoured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

LANES = "10*mlcn1:1x1,2*mlcn1:3x3,4*mlcn2:2x2,3*mlcn2:1x3"


def test_a_piped_plan_keeps_every_row_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    result = run_cli("plan", "--lanes", LANES, "--devices", "2xK80")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(len(line) > 80 for line in lines)  # not cut at rich's default of 80
    # each device's lanes, the compact syntax, stand unbroken in one table row
    rows = [line for line in lines if line.startswith("│ K80:")]
    assert len(rows) == 2, result.stdout
    for row in rows:
        lanes = row.split("│")[3].strip().split(" [")[0]
        assert lanes.count(",") >= 2
        assert all(part.count(":") == 1 for part in lanes.split(","))
    assert f"{LANES} on 2 devices" in result.stdout  # the title, on one line


def test_a_piped_search_shows_each_lane_mix_on_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    args = [
        "search",
        "--evaluator",
        "proxy",
        "--devices",
        "4xK80",
        "--mem",
        "12GB",
        "--flops",
        "4x",
        "--trials",
        "3",
        "--epochs",
        "1",
        "--storage",
        f"sqlite:///{tmp_path / 's.db'}",
        "--study",
        "wide",
    ]
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    data = json.loads(run_cli(*args, "--json").stdout)  # the same study, read back
    mixes = [b["lane_mix"] for b in data["best"]]
    assert mixes
    assert any(len(m) > 20 for m in mixes)  # long enough that 80 columns folded it
    for mix in mixes:
        assert mix in result.stdout, (mix, result.stdout)


def test_columns_set_by_the_user_is_honoured() -> None:
    result = run_cli("plan", "--lanes", LANES, "--devices", "2xK80", env={"COLUMNS": "60"})
    assert result.returncode == 0, result.stderr
    widths = [len(line) for line in result.stdout.splitlines()]
    assert max(widths) <= 60
    assert max(widths) >= 50  # it used the room it was given


def test_a_piped_log_record_is_one_plain_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off a terminal a log record is ``LEVEL    message``, not rich's columns padded to
    the unwrapped console's 10,000 columns (which filled a log with spaces)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    storage = f"sqlite:///{tmp_path / 's.db'}"
    result = run_cli(
        "--verbose", "search", "--evaluator", "proxy", "--trials", "1", "--storage", storage
    )
    assert result.returncode == 0, result.stderr
    records = [line for line in result.stderr.splitlines() if line.startswith("INFO ")]
    assert records, result.stderr
    assert all(line == line.rstrip() and len(line) < 300 for line in result.stderr.splitlines())
