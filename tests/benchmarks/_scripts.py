"""Running a script of ``benchmarks/``, or an engine of ``nasmlcn reproduce``
(``nasmlcn/reproduce/engines/``), in the test process (no torch import per run)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

ENGINES = ROOT / "nasmlcn" / "reproduce" / "engines"
ENGINES_PACKAGE = "nasmlcn.reproduce.engines"


def is_engine(name: str) -> bool:
    """``name`` is an engine module (else a script of ``benchmarks/``)."""
    return (ENGINES / f"{name}.py").is_file()


def load_script(name: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``benchmarks/<name>.py`` (or the engine ``nasmlcn.reproduce.engines.<name>``)
    as a module, reading its data from ``data_dir``."""
    monkeypatch.setenv("NASMLCN_DATA_DIR", str(data_dir))
    if is_engine(name):
        return importlib.import_module(f"{ENGINES_PACKAGE}.{name}")
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module(name)


def command(name: str) -> list[str]:
    """How a user runs it: ``python benchmarks/<name>.py`` or ``python -m
    nasmlcn.reproduce.engines.<name>``."""
    if is_engine(name):
        return [sys.executable, "-m", f"{ENGINES_PACKAGE}.{name}"]
    return [sys.executable, str(ROOT / "benchmarks" / f"{name}.py")]


def run_json(
    script: Any, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[dict[str, Any], str]:
    """``script.main(args + --json)``: its JSON object and its stderr."""
    assert script.main([*args, "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def run_script(
    name: str, args: list[str], data_dir: Path, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """The script or engine ``name`` with ``ARGS`` in a process of its own, as a user
    runs it, reading its data from ``data_dir``; it must exit 0."""
    proc = subprocess.run(
        [*command(name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "NASMLCN_DATA_DIR": str(data_dir)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def every_key(data: Any) -> set[str]:
    """Every key of every object in ``data`` (a script's JSON output)."""
    if isinstance(data, dict):
        return set(data) | {k for v in data.values() for k in every_key(v)}
    if isinstance(data, list):
        return {k for v in data for k in every_key(v)}
    return set()
