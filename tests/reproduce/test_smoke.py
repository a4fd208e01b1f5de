"""Every recipe runs at smoke scale with its real engine, and every figure it
compares is read from the engine's output (the four heaviest with ``-m slow``, every
engine in the default run); the whole list, end to end through the CLI, in the slow
test."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from nasmlcn.reproduce import all_recipes, find_recipe, reproduce
from tests.conftest import run_cli, run_cli_subprocess

NAMES = [r.name for r in all_recipes()]

HEAVY = {
    "thesis-fig4.8": "thesis-fig4.7",
    "thesis-fig4.10": "thesis-fig4.7",
    "thesis-fig4.4": "thesis-fig4.5",
    "thesis-fig4.9": "thesis-fig4.5",
}
"""The recipes whose smoke run takes 15 to 35 s here (two engine runs of several
processes, or ten trainings): the slow test below runs them, and in the default run
the recipe named beside each (the same engine, 7 to 18 s) stands for them, so that
every engine runs in the default tests."""


def test_every_engine_runs_in_the_default_tests() -> None:
    recipes = {r.name: r for r in all_recipes()}
    engines = {r.engine for r in recipes.values() if r.name not in HEAVY}
    assert engines == {r.engine for r in recipes.values()}
    for heavy, stand_in in HEAVY.items():
        assert recipes[heavy].engine == recipes[stand_in].engine
        assert stand_in not in HEAVY


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n for n in NAMES]
)
def test_every_recipe_runs_at_smoke_scale(
    name: str, tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NASMLCN_DATA_DIR", str(data_dir))
    report = reproduce(find_recipe(name), "smoke", tmp_path, echo=None)
    missing = [f"{r.label}: {r.error}" for r in report.rows if r.ours is None]
    assert not missing, missing
    assert report.verdict.kind == "smoke"
    assert len(report.rows) == sum("smoke" in e.scales for e in find_recipe(name).compare)
    for file in ("report.html", "report.csv", "summary.json", "engine.json", "run.json"):
        assert (report.folder / file).stat().st_size > 0, file
    assert (tmp_path / "index.html").is_file()
    # it measures nothing: no figure passes or fails, on the page or in the csv
    assert all(r.passed is None for r in report.rows)
    page = (report.folder / "report.html").read_text()
    assert "✔" not in page
    assert "✘" not in page
    with (report.folder / "report.csv").open() as f:
        assert {row["passed"] for row in csv.DictReader(f)} <= {""}


def test_the_list_names_every_result_with_its_times() -> None:
    done = run_cli("reproduce", "--list", "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)["results"]
    assert [r["name"] for r in listed] == NAMES
    for r in listed:
        assert r["paper"]
        assert r["result"]
        assert r["measures"]
        for scale in ("smoke", "reduced", "full"):
            assert r["scales"][scale]["minutes_here"] > 0
            assert r["scales"][scale]["minutes_gpu"] > 0
    table = run_cli("reproduce", "--list", env={"COLUMNS": "100"})
    assert table.returncode == 0
    for name in NAMES:  # a terminal's width wraps what it measures, never the name
        assert name in table.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["thesis-tabel4.1"], "unknown result 'thesis-tabel4.1'; did you mean 'thesis-table4.1'"),
        (
            ["thesis-table4.1", "--scale", "huge"],
            "unknown --scale 'huge' (scales: smoke, reduced, full)",
        ),
        ([], "name a result to run"),
    ],
)
def test_bad_input_is_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    """A bad name, scale or no name: one line, exit 2, no output folder made."""
    done = run_cli("reproduce", *args, "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bogus-name", "--list"], "unknown result 'bogus-name'"),
        (["--list", "--scale", "bogus"], "unknown --scale 'bogus' (scales: smoke, reduced, full)"),
    ],
)
def test_list_refuses_a_bad_name_or_scale_in_one_line(args: list[str], message: str) -> None:
    """--list checks a name and a scale it is given as a run does, never ignores them."""
    done = run_cli("reproduce", *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""


def test_list_with_a_known_name_lists_it_and_with_all_lists_all() -> None:
    for name, listed in ((NAMES[0], [NAMES[0]]), ("all", NAMES)):
        done = run_cli("reproduce", name, "--list", "--scale", "smoke", "--json")
        assert done.returncode == 0, done.stderr
        assert [r["name"] for r in json.loads(done.stdout)["results"]] == listed


def test_list_shows_how_each_run_in_out_stands(tmp_path: Path) -> None:
    """--list took --out and --force and ignored both."""
    out = tmp_path / "out"
    ran = run_cli("reproduce", "nascaps-table3", "--scale", "smoke", "--out", str(out))
    assert ran.returncode == 0, ran.stderr
    done = run_cli("reproduce", "nascaps-table3", "--list", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert listed["out"] == str(out)
    (entry,) = listed["results"]
    assert {s: v["in_out"] for s, v in entry["scales"].items()} == {
        "smoke": "done",
        "reduced": None,
        "full": None,
    }
    table = run_cli("reproduce", "nascaps-table3", "--list", "--out", str(out))
    assert "done in --out" in table.stdout
    forced = run_cli("reproduce", "--list", "--force", "--out", str(tmp_path / "none"))
    assert forced.returncode == 2
    assert forced.stderr.strip() == "error: --list runs nothing: leave --force out, or --list"
    assert not (tmp_path / "none").exists()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_whole_smoke_run_of_every_recipe_and_its_continuation(
    tmp_path: Path, data_dir: Path
) -> None:
    out = tmp_path / "out"
    env = {"NASMLCN_DATA_DIR": str(data_dir)}
    args = ["reproduce", "all", "--scale", "smoke", "--out", str(out), "--json"]
    done = run_cli_subprocess(*args, env=env, timeout=1700)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)["results"]
    assert [r["name"] for r in results] == NAMES
    index = (out / "index.html").read_text()
    for name in NAMES:
        assert f'href="{name}/smoke/report.html"' in index
        run = json.loads((out / name / "smoke" / "run.json").read_text())
        assert run["state"] == "done"
    # A second run finds every result finished: no engine runs again.
    again = run_cli_subprocess(*args, env=env, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    for name in NAMES:
        run = json.loads((out / name / "smoke" / "run.json").read_text())
        assert run["runs"] == 1, name


def test_an_unwritable_out_folder_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = run_cli("reproduce", "nascaps-table3", "--scale", "smoke", "--out", str(blocker / "o"))
    assert done.returncode == 2
    assert f"--out '{blocker / 'o'}': cannot write there" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
