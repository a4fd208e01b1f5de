"""Running one seed result at one scale into its folder, resumably.

The folder is ``OUT/NAME/SCALE/``:

- ``engine.json``: the engine's ``--json`` output (written when it succeeded);
- ``engine.log``: what the engine printed on stderr (progress, warnings);
- ``run.json``: the command, the machine, when it started and finished, how long
  it took, and its state (``running``, ``failed`` or ``done``);
- the engine's own files (its ``--results``/``--out`` state, a search's
  ``study.db``): a second run hands them back to the engine, which continues where
  the first stopped (a search reaches its trial count; an engine with a results
  file skips what it stored).

A finished run whose command is unchanged is not run again (``force`` reruns it,
continuing from the engine's own state all the same).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from nasmlcn._io import write_text_atomic
from nasmlcn.errors import ReproduceError
from nasmlcn.reproduce._catalog import ENGINES_PACKAGE, engine_module
from nasmlcn.reproduce._recipe import Recipe

RUN_FILE = "run.json"
ENGINE_FILE = "engine.json"
LOG_FILE = "engine.log"
STUDY_FILE = "study.db"


@dataclass(frozen=True)
class RunOutcome:
    """What :func:`run_result` did: the folder, the engine output and whether the
    engine ran this time (``False``: a finished run was reused)."""

    folder: Path
    output: dict[str, Any]
    record: dict[str, Any]
    ran: bool


def run_folder(out: Path, recipe: Recipe, scale: str) -> Path:
    return out / recipe.name / scale


def run_state(out: Path, recipe: Recipe, scale: str) -> str | None:
    """How ``recipe``'s run at ``scale`` in ``out`` stands: ``done``, ``running``
    (or killed while it ran), ``failed`` or ``stopped``; None where none started."""
    record = _read(run_folder(out, recipe, scale) / RUN_FILE)
    state = record.get("state") if record is not None else None
    return state if isinstance(state, str) else None


def machine() -> dict[str, Any]:
    """This machine, as reports name it: OS, CPU model and cores, and any CUDA GPU
    (read with ``nvidia-smi``, so that torch need not load)."""
    from nasmlcn.hardware import cpu_model, usable_cores

    gpus: list[str] = []
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        if done.returncode == 0:
            gpus = [g.strip() for g in done.stdout.splitlines() if g.strip()]
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "system": f"{platform.system()} {platform.machine()}",
        "cpu": cpu_model(),
        "cores": usable_cores(),
        "gpus": gpus,
        "python": platform.python_version(),
    }


def describe_machine(info: dict[str, Any]) -> str:
    """``2 cores of AMD EPYC ...; no GPU`` (``info`` as :func:`machine` returns it)."""
    gpus = ", ".join(info.get("gpus") or []) or "no GPU"
    return f"{info.get('cores')} cores of {info.get('cpu')} ({info.get('system')}); {gpus}"


def engine_commands(recipe: Recipe, scale: str, folder: Path, python: str) -> dict[str, list[str]]:
    """The commands that run the engine of ``recipe`` at ``scale`` into ``folder``, by
    run name (one run named ``""`` unless the scale lists several)."""
    runs = recipe.scale(scale).engine_runs(folder)
    if recipe.is_search:
        storage = f"sqlite:///{(folder / STUDY_FILE).resolve()}"
        search = [python, "-m", "nasmlcn", "search", "--config", str(recipe.path)]
        return {k: [*search, "--storage", storage, *args] for k, args in runs.items()}
    module = engine_module(recipe)
    return {k: [python, "-m", module, *args, "--json"] for k, args in runs.items()}


def _as_module(command: list[str]) -> list[str]:
    """A command stored before the engines were modules (``python PATH/NAME.py ARGS``,
    the script in a folder called ``benchmarks``) as it is written now (``python -m
    nasmlcn.reproduce.engines.NAME ARGS``), so that a run finished then is kept."""
    if (
        len(command) > 1
        and command[1].endswith(".py")
        and Path(command[1]).parent.name == "benchmarks"
    ):
        return [command[0], "-m", f"{ENGINES_PACKAGE}.{Path(command[1]).stem}", *command[2:]]
    return command


def _stored_commands(stored: Any) -> dict[str, list[str]]:
    """The commands of an earlier ``run.json`` (``commands`` or ``finished_runs``)."""
    if not isinstance(stored, dict):
        return {}
    return {k: _as_module(list(c)) for k, c in stored.items() if isinstance(c, list)}


def _output_file(key: str) -> str:
    return f"engine-{key}.json" if key else ENGINE_FILE


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _stream(process: subprocess.Popen[str], log: TextIO, echo: TextIO | None) -> None:
    assert process.stderr is not None
    for line in process.stderr:
        log.write(line)
        log.flush()
        if echo is not None:
            echo.write(line)
            echo.flush()


def _run_engine(command: list[str], folder: Path, output: Path, echo: TextIO | None) -> int:
    """Runs ``command`` with stdout to ``output`` and stderr to the log (and ``echo``)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with (
        open(output, "w", encoding="utf-8") as stdout,
        open(folder / LOG_FILE, "a", encoding="utf-8") as log,
    ):
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        log.write(f"# {stamp}: {' '.join(command)}\n")
        process = subprocess.Popen(
            command, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            _stream(process, log, echo)
            return process.wait()
        except BaseException:
            process.kill()
            process.wait()
            output.unlink(missing_ok=True)
            raise


def _new_record(
    recipe: Recipe,
    scale: str,
    commands: dict[str, list[str]],
    previous: dict[str, Any],
    finished: dict[str, list[str]],
    force: bool,
) -> dict[str, Any]:
    """The ``run.json`` of a run that starts now (state ``running``)."""
    return {
        "name": recipe.name,
        "scale": scale,
        "commands": commands,
        "shown": "; ".join(_shown(c, recipe) for c in commands.values()),
        "machine": machine(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "state": "running",
        "runs": int(previous.get("runs", 0)) + 1,
        # a run that stopped or failed is continued: its time counts
        "earlier_seconds": 0.0
        if force or previous.get("state") == "done"
        else float(previous.get("seconds", 0.0)) + float(previous.get("earlier_seconds", 0.0)),
        "finished_runs": finished,
    }


def _engine_output(
    recipe: Recipe, scale: str, folder: Path, key: str, command: list[str], echo: TextIO | None
) -> dict[str, Any]:
    """Runs the engine run ``key`` and returns its output (not yet stored)."""
    partial = (folder / _output_file(key)).with_suffix(".partial")
    if echo is not None and key:
        echo.write(f"-- {recipe.name} ({scale}), run {key}\n")
    code = _run_engine(command, folder, partial, echo)
    if code != 0:
        partial.unlink(missing_ok=True)
        raise ReproduceError(
            f"{recipe.name} ({scale}{', run ' + key if key else ''}): the engine exited"
            f" with {code}; its log is {folder / LOG_FILE}; last lines:\n"
            f"{_tail(folder / LOG_FILE)}"
        )
    try:
        data = _result_of(recipe, folder, partial)
    finally:
        partial.unlink(missing_ok=True)
    if data is None:
        raise ReproduceError(
            f"{recipe.name} ({scale}): the engine printed no JSON object on stdout;"
            f" see {folder / LOG_FILE}"
        )
    return data


def _run_commands(
    recipe: Recipe,
    scale: str,
    folder: Path,
    commands: dict[str, list[str]],
    record: dict[str, Any],
    echo: TextIO | None,
    start: float,
) -> dict[str, Any]:
    """Every engine run's output by run name, reusing those stored for the same command;
    ``record`` (``run.json``) is updated after each run."""
    finished = record["finished_runs"]
    outputs: dict[str, Any] = {}
    for key, command in commands.items():
        target = folder / _output_file(key)
        stored = _read(target) if finished.get(key) == command else None
        if stored is not None:
            outputs[key] = stored
            continue
        data = _engine_output(recipe, scale, folder, key, command, echo)
        write_json_atomic(target, data)
        outputs[key] = data
        finished[key] = command
        record["seconds"] = time.perf_counter() - start
        write_json_atomic(folder / RUN_FILE, record)
    return outputs


def run_result(
    recipe: Recipe,
    scale: str,
    out: Path,
    *,
    force: bool = False,
    python: str | None = None,
    echo: TextIO | None = sys.stderr,
) -> RunOutcome:
    """Runs ``recipe``'s engine at ``scale`` into ``OUT/NAME/SCALE`` (or reuses a
    finished run with the same commands) and returns its output.

    Raises:
        ReproduceError: The engine failed (the message ends with its last lines of
            stderr; the whole log is in ``engine.log``) or printed no JSON.
    """
    folder = run_folder(out.resolve(), recipe, scale)  # the engine's {out}: any cwd
    folder.mkdir(parents=True, exist_ok=True)
    commands = engine_commands(recipe, scale, folder, python or sys.executable)
    previous = _read(folder / RUN_FILE) or {}
    output = _read(folder / ENGINE_FILE)
    if (
        not force
        and previous.get("state") == "done"
        and _stored_commands(previous.get("commands")) == commands
        and output is not None
    ):
        return RunOutcome(folder, output, previous, ran=False)
    finished = {} if force else _stored_commands(previous.get("finished_runs"))
    record = _new_record(recipe, scale, commands, previous, finished, force)
    write_json_atomic(folder / RUN_FILE, record)
    (folder / ENGINE_FILE).unlink(missing_ok=True)
    start = time.perf_counter()
    try:
        outputs = _run_commands(recipe, scale, folder, commands, record, echo, start)
    except BaseException as err:
        record.update(
            state="failed" if isinstance(err, ReproduceError) else "stopped",
            seconds=time.perf_counter() - start,
        )
        write_json_atomic(folder / RUN_FILE, record)
        raise
    data = outputs[""] if list(outputs) == [""] else {"runs": outputs}
    write_json_atomic(folder / ENGINE_FILE, data)
    record.update(
        state="done",
        seconds=time.perf_counter() - start,
        finished=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    write_json_atomic(folder / RUN_FILE, record)
    return RunOutcome(folder, data, record, ran=True)


def _shown(command: list[str], recipe: Recipe) -> str:
    """A command as reports show it: the engine's file name, not its module path."""
    if recipe.is_search:
        return " ".join(["nasmlcn", *command[3:]])
    return " ".join(["python", f"{recipe.engine}.py", *command[3:]])


def _result_of(recipe: Recipe, folder: Path, partial: Path) -> dict[str, Any] | None:
    if recipe.is_search:
        from nasmlcn.reproduce._search_summary import summarize_storage

        return summarize_storage(f"sqlite:///{(folder / STUDY_FILE).resolve()}")
    return _read(partial)
