"""Every script of ``benchmarks/`` has a quick path that runs under test, so a change
that breaks one is caught (study names with '/' were refused for a round, and
``benchmarks/search_quality.py --quick`` failed at once; ``benchmarks/workers.py``
still asserted that repeats count toward ``--trials``).

The scripts with a test module of their own run there (some slow-marked: CI runs
``pytest -m slow tests/benchmarks``); the rest run here, as a user runs them
(``python benchmarks/NAME.py ARGS``), with the smallest arguments they take.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

QUICK: dict[str, list[str]] = {
    "answer_noise": ["--quick", "--json"],
    "front_quality": ["--quick", "--json"],
    "busy_machine": ["--rounds", "1", "--seconds", "0.1", "--batch-size", "10", "--json"],
    "cost_model": ["--lanes", "6", "--rounds", "1", "--threads", "1", "--json"],
    "distinct_models": [
        "--samplers",
        "tpe",
        "--seeds",
        "0",
        "--trials",
        "4",
        "--no-cost",
        "--json",
    ],
    "forecast": ["--runs", "1", "--quick", "--json"],
    "export": ["--trials", "20", "--rounds", "1", "--no-baseline", "--json"],
    "inference_latency": ["--lanes", "mlcn1:1x1", "--json"],
    "kill_workers": [
        *("--kills", "1", "--trials", "2", "--epochs", "1", "--min-gap", "1", "--max-gap", "2"),
        "--json",
    ],
    "layer_paths": ["--model", "mlcn1:1x1", "--batch", "4", "--repeats", "1", "--warmup", "0"],
    "process_costs": ["--runs", "2", "--json"],
    "pruning": [
        *("--trials", "3", "--epochs", "2", "--train-limit", "100", "--val-limit", "50"),
        *("--flops", "0.05x"),
    ],
    "search_overhead": ["--trials", "10", "--rounds", "1", "--json"],
    "spaces": ["--trials", "20", "--pareto-trials", "10", "--json"],
    "train_throughput": ["--rounds", "1", "--models", "mlcn1:1x1", "--json"],
    "workers": ["--runs", "1", "--proxy-trials", "6", "--skip-training", "--json"],
}
"""The quick run of each script that has no test module of its own."""

RUNS_A_SCRIPT = re.compile(r"(?:run_script|load_script|run_json)\(\s*\"([a-z_]+)\"")


def _scripts() -> list[str]:
    return sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.stem.startswith("_"))


def _tested_elsewhere() -> set[str]:
    """The scripts a test module of ``tests/benchmarks`` runs."""
    names: set[str] = set()
    for path in (ROOT / "tests" / "benchmarks").glob("test_*.py"):
        if path.name != Path(__file__).name:
            names.update(RUNS_A_SCRIPT.findall(path.read_text()))
    return names


def test_every_benchmark_has_a_quick_path_under_test() -> None:
    missing = sorted(set(_scripts()) - _tested_elsewhere() - set(QUICK))
    assert missing == [], f"give these a quick run in QUICK (or a test module): {missing}"
    assert not set(QUICK) & _tested_elsewhere(), "a script with a test module runs there"
    assert set(QUICK) <= set(_scripts()), "QUICK names a script that is gone"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(QUICK))
def test_the_quick_path_runs(name: str, data_dir: Path, tmp_path: Path) -> None:
    args = QUICK[name]
    env = {**os.environ, "NASMLCN_DATA_DIR": str(data_dir)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    if "--json" in args:
        assert isinstance(json.loads(done.stdout), dict)
    else:
        assert done.stdout.strip() or done.stderr.strip()
