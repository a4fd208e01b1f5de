"""One figure, one number, in every view of ``nasmlcn best`` and ``nasmlcn search``;
and an export that has nothing to write says why.

The lane imbalance was "0.0" in one view and "0.0075" in another: the tables wrote
it as a percent with as many decimals as the column's largest value allowed (none
beside a 25% imbalance), ``--json`` as a fraction, the report as a percent with one
decimal. ``best --export`` of a study where no trial learned said "no completed
feasible trial", where the table said that none of them learned.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from nasmlcn.cli._trials_table import trials_table
from tests.conftest import ROOT, run_cli, small_search

WIDE = {"COLUMNS": "250"}


def _imbalance_cells(text: str, numbers: list[int]) -> dict[int, str]:
    """The last cell (the imbalance) of each table row of trial ``numbers``."""
    cells = {}
    for line in text.splitlines():
        words = line.split()
        if words and words[0].isdigit() and int(words[0]) in numbers:
            cells[int(words[0])] = words[-1]
    return cells


def test_the_imbalance_column_is_a_percent_with_one_decimal() -> None:
    rows = [
        {"number": n, "lane_mix": "2*mlcn1:1x1", "values": {"accuracy": 0.9}, "num_lanes": 2}
        | {"predicted": {"imbalance": fraction}}
        for n, fraction in ((1, 0.0075), (2, 0.25), (3, 0.0))
    ]
    console = Console(file=io.StringIO(), width=120)
    console.print(trials_table("t", rows, ["accuracy"]))
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    # beside 25%, 0.75% was "1" (no decimals for the column's largest value)
    assert _imbalance_cells(shown, [1, 2, 3]) == {1: "0.8", 2: "25.0", 3: "0.0"}


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A proxy study of two objectives, and the end table its search printed."""
    storage = f"sqlite:///{tmp_path_factory.mktemp('figures') / 's.db'}"
    made = run_cli(
        "search", "--evaluator", "proxy", "--trials", "20", "--objectives",
        "accuracy,latency", "--sampler", "nsga2", "--storage", storage, "--study", "f",
        env=WIDE,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return storage, made.stdout


def test_the_imbalance_is_the_same_number_in_tables_and_json(searched: tuple[str, str]) -> None:
    storage, search_table = searched
    shown = run_cli("best", "--study", "f", "--storage", storage, "--json")
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)["best"]
    numbers = [r["number"] for r in rows]
    expected = {r["number"]: f"{r['imbalance_percent']:.1f}" for r in rows}
    # the report's and the trial note's format: a percent with one decimal
    assert expected == {r["number"]: f"{r['predicted']['imbalance']:.1%}"[:-1] for r in rows}
    best_table = run_cli("best", "--study", "f", "--storage", storage, env=WIDE).stdout
    assert _imbalance_cells(best_table, numbers) == expected
    assert _imbalance_cells(search_table, numbers) == expected


def test_an_export_where_no_trial_learned_says_so(tmp_path: Path) -> None:
    space = tmp_path / "still.toml"  # a learning rate too small to learn anything
    space.write_text(
        (ROOT / "search_spaces" / "mlcn-buckets.toml").read_text()
        + "\n[training]\nlr = [1e-9, 1e-8]\n"
    )
    config = small_search(
        tmp_path, evaluator="train", trials=2, epochs=1, train_limit=20, space=str(space)
    )  # two steps of batch 10: the trials only need to finish, at chance
    args = ("best", "--storage", config.storage, "--study", "s")
    why = (
        "error: study 's' has no trial to export: none of the 2 completed trials learned "
        "(accuracy near chance; kept in the study, never on the front): train longer "
        "(--epochs) or on more images (--train-limit)"
    )
    for export in (
        ("--export", str(tmp_path / "out")),
        ("--export-arch", str(tmp_path / "a.json")),
    ):
        refused = run_cli(*args, *export)
        assert refused.returncode != 0, refused.stdout
        assert " ".join(refused.stderr.split()) == why, export
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "a.json").exists()
