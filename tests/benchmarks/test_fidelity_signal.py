"""``benchmarks/fidelity_signal.py``: real trainings of default-space architectures
at two fidelities, and the signal and rank figures derived from them."""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

import pytest

from nasmlcn.stats import spearman
from tests.benchmarks._scripts import load_script, run_json

# runs the benchmark script: with the other quick paths in CI (pytest -m slow
# tests/benchmarks), not in the default run
pytestmark = pytest.mark.slow


def test_quick_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("fidelity_signal", tmp_path, monkeypatch)
    args = ["--archs", "3", "--seeds", "2", "--fidelity", "1x100", "--fidelity", "1x200"]
    args += ["--val", "100", "--devices", "2xcpu", "--flops", "0.1x", "--dataset", "synthetic"]
    data, _ = run_json(script, capsys, *args)
    assert len(data["archs"]) == 3
    assert [r["fidelity"] for r in data["fidelities"]] == ["1x100", "1x200"]
    for row in data["fidelities"]:
        acc = data["accuracy"][row["fidelity"]]
        assert [len(a) for a in acc] == [2, 2, 2]  # arch x seed
        means = [statistics.fmean(a) for a in acc]
        within = math.sqrt(statistics.fmean(statistics.variance(a) for a in acc))
        assert row["between_sd"] == pytest.approx(statistics.stdev(means))
        assert row["within_sd"] == pytest.approx(within)
        assert row["ratio"] == pytest.approx(statistics.stdev(means) / within)
    low, high = (data["accuracy"][f] for f in ("1x100", "1x200"))
    want = spearman([statistics.fmean(a) for a in low], [statistics.fmean(a) for a in high])
    assert data["fidelities"][0]["spearman"]["1x200"] == pytest.approx(want)


def test_a_bad_fidelity_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = load_script("fidelity_signal", tmp_path, monkeypatch)
    assert script.parse_fidelity("3x2000") == (3, 2000)
    for bad in ("3", "0x2000", "2x10", "ax2"):
        with pytest.raises(argparse.ArgumentTypeError, match="fidelity"):
            script.parse_fidelity(bad)
