"""No correlation below three trials (two points always lie on a line)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from nasmlcn.search import epoch_correlations, final_correlations
from tests.conftest import run_cli


def test_two_trials_have_no_correlation() -> None:
    # any two distinct points give Pearson and Spearman +-1, whatever the trials
    two = [[0.2, 0.9], [0.5, 0.4]]
    for row in epoch_correlations(two) + final_correlations(two, [0.1, 0.7]):
        assert row.trials == 2
        assert math.isnan(row.pearson)
        assert math.isnan(row.spearman)
        assert row.to_dict()["pearson"] is None
    three = [[0.2, 0.3], [0.5, 0.4], [0.1, 0.6]]
    rows = epoch_correlations(three)
    assert rows[0].trials == 3
    assert math.isfinite(rows[0].pearson)
    assert abs(rows[0].pearson) < 1


def test_the_search_and_correlate_tables_show_a_dash_for_two_trials(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    common = ("--storage", db, "--study", "two")
    searched = run_cli(
        "search",
        "--evaluator",
        "proxy",
        "--devices",
        "2xK80",
        "--mem",
        "12GB",
        "--trials",
        "2",
        "--epochs",
        "2",
        "--no-prune",
        *common,
    )
    assert searched.returncode == 0, searched.stderr
    assert "1.000" not in searched.stdout
    # the correlation table: epoch 1, Pearson -, Spearman -, 2 trials
    assert re.search(r"│\s+1 │\s+- │\s+- │\s+2 │", searched.stdout), searched.stdout
    table = run_cli("correlate", *common)
    assert table.returncode == 0, table.stderr
    assert "1.000" not in table.stdout
    data = json.loads(run_cli("correlate", *common, "--json").stdout)
    assert data["trials"] == 2
    assert all(r["pearson"] is None and r["spearman"] is None for r in data["epochs"])
