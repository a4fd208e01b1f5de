"""Running a script of ``benchmarks/`` in the test process (no torch import per run)."""

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


def load_script(name: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``benchmarks/<name>.py`` as a module, reading its data from ``data_dir``."""
    monkeypatch.setenv("NASMLCN_DATA_DIR", str(data_dir))
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module(name)


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
    """``python benchmarks/<name>.py ARGS`` in a process of its own, as a user runs it,
    reading its data from ``data_dir``; it must exit 0."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "NASMLCN_DATA_DIR": str(data_dir)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc
