"""A process that ends skips the interpreter's exit collection (``nasmlcn._exit``):
the command line does it when it ends the process, never when a caller goes on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

_PROBE = """
import gc, json, sys
sys.argv = ["nasmlcn", "models", "--json"]
from nasmlcn.cli import main, run
code = {call}()
print(json.dumps({{"code": code, "frozen": gc.get_freeze_count()}}), file=sys.stderr)
"""


def _probe(call: str) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(call=call)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)  # the command's own output is whole
    return dict(json.loads(done.stderr.strip().splitlines()[-1]))


def test_the_command_line_freezes_what_is_alive_before_the_process_ends() -> None:
    probed = _probe("run")
    assert probed["code"] == 0
    assert probed["frozen"] > 1000  # every object the command left alive


def test_main_freezes_nothing_for_a_caller_that_goes_on() -> None:
    assert _probe("main") == {"code": 0, "frozen": 0}


def test_both_entry_points_of_the_command_run_it() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'nasmlcn = "nasmlcn.cli:run"' in pyproject
    assert "raise SystemExit(run())" in Path(ROOT / "nasmlcn" / "__main__.py").read_text()


@pytest.mark.slow
def test_the_benchmark_measures_both_costs_against_their_baselines() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "process_costs.py"), "--runs", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["exit"]["runs"] == result["export"]["runs"] == 2
    assert result["exit"]["frozen_seconds"] < result["exit"]["plain_seconds"]
    assert result["export"]["kept_seconds"] < result["export"]["oneshot_seconds"]


def test_every_benchmark_script_ends_through_exit_with() -> None:
    folders = (ROOT / "benchmarks", ROOT / "nasmlcn" / "reproduce" / "engines")
    found = [p for folder in folders for p in folder.glob("*.py")]
    scripts = [p for p in found if "\ndef main(" in p.read_text()]
    assert len(scripts) > 20
    for script in scripts:
        entry = script.read_text().split('if __name__ == "__main__":')[-1]
        assert "exit_with(" in entry, script.name
