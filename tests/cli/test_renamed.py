"""One word per concept across commands: the renamed options and command keep their
old spelling for one release, hidden from ``--help``, with one warning line."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer.main

from nasmlcn.cli import app
from nasmlcn.cli._renamed import respell
from tests.conftest import run_cli

RENAMED = [
    ("train", "--timeout", "--rank-timeout", "rank_timeout", "120"),
    ("train", "--device", "--run-on", "run_on", "cpu"),
    ("retrain", "--device", "--run-on", "run_on", "cpu"),
    ("evaluate", "--device", "--run-on", "run_on", "cpu"),
    ("remove-lanes", "--device", "--run-on", "run_on", "cpu"),
    ("calibrate", "--device", "--run-on", "run_on", "all"),
]
"""(command, old option, new option, parameter, a value)."""

COMMANDS = [
    "search",
    "best",
    "correlate",
    "retrain",
    "export",
    "dashboard",
    "train",
    "models",
    "devices",
    "plan",
    "estimate",
    "calibrate",
    "evaluate",
    "export-model",
    "remove-lanes",
    "reproduce",
    "data",
    "studies",
]
"""``nasmlcn --help``'s commands, in its order."""

REQUIRED = {"retrain": [], "evaluate": ["--run", "r"], "remove-lanes": ["--run", "r"]}


def _warning(old: str, new: str) -> str:
    return f"warning: {old} is now {new} (the old spelling goes in the next release)"


def _option(name: str) -> re.Pattern[str]:
    """``name`` as a whole option (``--device`` but not ``--devices``)."""
    return re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")


def _command(name: str) -> Any:
    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


def test_help_lists_the_commands_in_their_order_and_not_prune() -> None:
    result = run_cli("--help", env={"COLUMNS": "200"})
    assert result.returncode == 0
    listed = re.findall(r"^  ([a-z-]+)\s", result.stdout.split("Commands:")[1], re.M)
    assert listed == COMMANDS


@pytest.mark.parametrize(("command", "old", "new", "parameter", "value"), RENAMED)
def test_an_old_option_is_hidden_from_help(
    command: str, old: str, new: str, parameter: str, value: str
) -> None:
    result = run_cli(command, "--help", env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert _option(new).search(result.stdout)
    assert not _option(old).search(result.stdout), result.stdout
    declared = {o for p in _command(command).params for o in getattr(p, "opts", ())}
    assert new in declared
    assert old not in declared


@pytest.mark.parametrize(("command", "old", "new", "parameter", "value"), RENAMED)
@pytest.mark.parametrize("form", ["apart", "equals"])
def test_an_old_option_sets_the_new_one_and_warns_once(
    command: str,
    old: str,
    new: str,
    parameter: str,
    value: str,
    form: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    given = [old, value] if form == "apart" else [f"{old}={value}"]
    args = [*given, *REQUIRED.get(command, ["--lanes", "20"] if command == "calibrate" else [])]
    context = _command(command).make_context(command, args)
    assert context.params[parameter] == type(context.params[parameter])(value)
    assert capsys.readouterr().err.splitlines() == [_warning(old, new)]


def test_the_old_rank_timeout_is_checked_as_the_new_one() -> None:
    result = run_cli("train", "--timeout", "0.5")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0] == _warning("--timeout", "--rank-timeout")
    assert len(lines) == 2, result.stderr
    assert lines[1].startswith("error: Invalid value for '--rank-timeout'")


def test_search_keeps_timeout_and_run_on() -> None:
    declared = {o for p in _command("search").params for o in getattr(p, "opts", ())}
    assert {"--timeout", "--run-on", "--devices", "--prune", "--pruner"} <= declared
    assert "--rank-timeout" not in declared


def test_prune_runs_remove_lanes_hidden_with_a_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    old = _command("prune")
    assert old.hidden
    assert [p.opts for p in old.params] == [p.opts for p in _command("remove-lanes").params]
    context = old.make_context("prune", ["--run", "r", "--device", "cpu"])
    assert context.params["run_on"] == "cpu"
    assert capsys.readouterr().err.splitlines() == [
        _warning("nasmlcn prune", "nasmlcn remove-lanes"),
        _warning("--device", "--run-on"),
    ]


def test_prune_with_bad_input_is_the_warning_and_one_error(tmp_path: Any) -> None:
    result = run_cli("prune", "--run", str(tmp_path / "none"))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        _warning("nasmlcn prune", "nasmlcn remove-lanes"),
        f"error: run folder '{tmp_path / 'none'}' does not exist",
    ]
    assert "Traceback" not in result.stderr


def test_respell_leaves_what_follows_a_double_dash_and_warns_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    renamed = {"--timeout": "--rank-timeout"}
    args = ["--timeout", "5", "--timeouts", "--timeout=6", "--", "--timeout"]
    assert respell(args, renamed) == [
        "--rank-timeout",
        "5",
        "--timeouts",
        "--rank-timeout=6",
        "--",
        "--timeout",
    ]
    assert capsys.readouterr().err.splitlines() == [_warning("--timeout", "--rank-timeout")]
