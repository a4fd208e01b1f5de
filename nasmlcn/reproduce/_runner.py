"""Running one seed result at one scale into its folder, resumably.

The folder is ``OUT/NAME/SCALE/``:

- ``engine.json``: the engine's ``--json`` output (written when it succeeded);
- ``engine.log``: what the engine printed on stderr (progress, warnings);
- ``run.json``: the command, the machine, when it started and finished, how long
  it took, and its state (``running``, ``failed`` or ``done``);
- the engine's own files (its ``--results``/``--out`` state, a search's
  ``study.db``): a second run hands them back to the engine, which continues where
  the first stopped (a search reaches its trial count; a benchmark with a results
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
from nasmlcn.reproduce._catalog import engine_script
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


def machine() -> dict[str, Any]:
    """This machine, as reports name it: OS, CPU model and cores, and any CUDA GPU
    (read with ``nvidia-smi``, so that torch need not load)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
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
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "system": f"{platform.system()} {platform.machine()}",
        "cpu": cpu,
        "cores": cores,
        "gpus": gpus,
        "python": platform.python_version(),
    }


def describe_machine(info: dict[str, Any]) -> str:
    """``2 cores of AMD EPYC ...; no GPU`` (``info`` as :func:`machine` returns it)."""
    gpus = ", ".join(info.get("gpus") or []) or "no GPU"
    return f"{info.get('cores')} cores of {info.get('cpu')} ({info.get('system')}); {gpus}"


def engine_command(recipe: Recipe, scale: str, folder: Path, python: str) -> list[str]:
    """The command that runs the engine of ``recipe`` at ``scale`` into ``folder``."""
    args = recipe.scale(scale).engine_args(folder)
    if recipe.is_search:
        storage = f"sqlite:///{(folder / STUDY_FILE).resolve()}"
        return [
            python,
            "-m",
            "nasmlcn",
            "search",
            "--config",
            str(recipe.path),
            "--storage",
            storage,
            *args,
        ]
    return [python, str(engine_script(recipe)), *args, "--json"]


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
    finished run with the same command) and returns its output.

    Raises:
        ReproduceError: The engine failed (the message ends with its last lines of
            stderr; the whole log is in ``engine.log``) or printed no JSON.
    """
    folder = run_folder(out, recipe, scale)
    folder.mkdir(parents=True, exist_ok=True)
    command = engine_command(recipe, scale, folder, python or sys.executable)
    shown = [Path(c).name if i < 2 and not recipe.is_search else c for i, c in enumerate(command)]
    previous = _read(folder / RUN_FILE)
    output = _read(folder / ENGINE_FILE)
    if (
        not force
        and previous is not None
        and previous.get("state") == "done"
        and previous.get("command") == command
        and output is not None
    ):
        return RunOutcome(folder, output, previous, ran=False)
    record: dict[str, Any] = {
        "name": recipe.name,
        "scale": scale,
        "command": command,
        "shown": " ".join(shown),
        "machine": machine(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "state": "running",
        "runs": int((previous or {}).get("runs", 0)) + 1,
        "earlier_seconds": float((previous or {}).get("seconds", 0.0))
        + float((previous or {}).get("earlier_seconds", 0.0)),
    }
    write_json_atomic(folder / RUN_FILE, record)
    (folder / ENGINE_FILE).unlink(missing_ok=True)
    partial = folder / (ENGINE_FILE + ".partial")
    start = time.perf_counter()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(partial, "w", encoding="utf-8") as stdout, open(
        folder / LOG_FILE, "a", encoding="utf-8"
    ) as log:
        log.write(f"# {record['started']}: {' '.join(command)}\n")
        process = subprocess.Popen(
            command, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            _stream(process, log, echo)
            code = process.wait()
        except BaseException:
            process.kill()
            process.wait()
            record.update(state="stopped", seconds=time.perf_counter() - start)
            write_json_atomic(folder / RUN_FILE, record)
            raise
    record["seconds"] = time.perf_counter() - start
    if code != 0:
        record["state"] = "failed"
        write_json_atomic(folder / RUN_FILE, record)
        raise ReproduceError(
            f"{recipe.name} ({scale}): the engine exited with {code};"
            f" its log is {folder / LOG_FILE}; last lines:\n{_tail(folder / LOG_FILE)}"
        )
    if recipe.is_search:
        from nasmlcn.reproduce._search_summary import summarize_storage

        data: dict[str, Any] | None = summarize_storage(
            f"sqlite:///{(folder / STUDY_FILE).resolve()}"
        )
    else:
        data = _read(partial)
    partial.unlink(missing_ok=True)
    if data is None:
        record["state"] = "failed"
        write_json_atomic(folder / RUN_FILE, record)
        raise ReproduceError(
            f"{recipe.name} ({scale}): the engine printed no JSON object on stdout;"
            f" see {folder / LOG_FILE}"
        )
    write_json_atomic(folder / ENGINE_FILE, data)
    record.update(
        state="done", finished=datetime.now(timezone.utc).isoformat(timespec="seconds")
    )
    write_json_atomic(folder / RUN_FILE, record)
    return RunOutcome(folder, data, record, ran=True)
