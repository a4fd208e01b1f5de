"""Running a result into its folder: real engines, kept results, continuing a run
that stopped, and an engine's failure as a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nasmlcn.errors import ReproduceError
from nasmlcn.reproduce import Recipe, load_recipe, run_result

PLACEMENT = """
[reproduce]
paper = "thesis"
result = "Fig. 5.2"
measures = "m"
setting = "s"
engine = "placement"

[reproduce.scales.smoke]
minutes_here = 1
minutes_gpu = 1
differs = "d"
{smoke}

[reproduce.scales.reduced]
args = []
minutes_here = 1
minutes_gpu = 1
differs = "d"

[reproduce.scales.full]
args = []
minutes_here = 1
minutes_gpu = 1
differs = "d"

[[reproduce.compare]]
label = "random / greedy, 24 lanes"
ours = "scenarios[lanes=24&devices=4xK80].random_over_greedy_mean"
paper = 2.0
source = "ch. 7"
"""


def _recipe(tmp_path: Path, smoke: str, name: str = "mine") -> Recipe:
    path = tmp_path / f"{name}.toml"
    path.write_text(PLACEMENT.replace("{smoke}", smoke))
    return load_recipe(path)


def _commands_logged(folder: Path) -> list[str]:
    return [
        line for line in (folder / "engine.log").read_text().splitlines() if line.startswith("# ")
    ]


def test_a_finished_run_is_kept_and_force_runs_it_again(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, 'args = ["--instances", "1", "--time-limit", "1"]')
    out = tmp_path / "out"
    first = run_result(recipe, "smoke", out, echo=None)
    assert first.ran
    assert first.folder == out / "mine" / "smoke"
    assert first.output["instances"] == 1
    record = json.loads((first.folder / "run.json").read_text())
    assert record["state"] == "done"
    assert record["machine"]["cores"] >= 1
    assert record["shown"] == "python placement.py --instances 1 --time-limit 1 --json"
    again = run_result(recipe, "smoke", out, echo=None)
    assert not again.ran
    assert again.output == first.output
    assert len(_commands_logged(first.folder)) == 1
    forced = run_result(recipe, "smoke", out, force=True, echo=None)
    assert forced.ran
    assert len(_commands_logged(first.folder)) == 2
    # Changed arguments: the run is no longer the recipe's, so it runs again.
    changed = _recipe(tmp_path, 'args = ["--instances", "2", "--time-limit", "1"]')
    assert run_result(changed, "smoke", out, echo=None).output["instances"] == 2


def test_a_failing_engine_is_one_error_with_its_log_and_no_output(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, 'args = ["--instancs", "1"]')
    out = tmp_path / "out"
    with pytest.raises(ReproduceError) as err:
        run_result(recipe, "smoke", out, echo=None)
    message = str(err.value)
    assert "mine (smoke): the engine exited with 2" in message
    assert "unrecognized arguments: --instancs" in message
    folder = out / "mine" / "smoke"
    assert json.loads((folder / "run.json").read_text())["state"] == "failed"
    assert not (folder / "engine.json").exists()
    assert not list(folder.glob("*.partial"))


def test_several_runs_continue_where_they_stopped(tmp_path: Path) -> None:
    """A scale of several runs: one fails; after the fix only that one runs again."""
    broken = '[reproduce.scales.smoke.runs]\nsmall = ["--instances", "1"]\nbig = ["--nope"]'
    out = tmp_path / "out"
    with pytest.raises(ReproduceError, match="run big"):
        run_result(_recipe(tmp_path, broken), "smoke", out, echo=None)
    folder = out / "mine" / "smoke"
    small = folder / "engine-small.json"
    assert small.is_file()
    before = small.stat().st_mtime_ns
    fixed = (
        '[reproduce.scales.smoke.runs]\nsmall = ["--instances", "1"]\nbig = ["--instances", "2"]'
    )
    done = run_result(_recipe(tmp_path, fixed), "smoke", out, echo=None)
    assert set(done.output["runs"]) == {"small", "big"}
    assert done.output["runs"]["big"]["instances"] == 2
    assert small.stat().st_mtime_ns == before
    logged = _commands_logged(folder)
    assert sum("--instances 1" in line for line in logged) == 1, logged


def test_a_run_finished_when_the_engines_were_scripts_is_kept(tmp_path: Path) -> None:
    """A ``run.json`` written before the engines became modules (``python
    PATH/placement.py ARGS``, in a folder called ``benchmarks``) names the same run:
    it is not run again."""
    recipe = _recipe(tmp_path, 'args = ["--instances", "1", "--time-limit", "1"]')
    out = tmp_path / "out"
    first = run_result(recipe, "smoke", out, echo=None)
    python, dash_m, module, *args = first.record["commands"][""]
    assert (dash_m, module) == ("-m", "nasmlcn.reproduce.engines.placement")
    legacy = [python, str(Path("/old/checkout", "benchmarks", "placement.py")), *args]
    record = json.loads((first.folder / "run.json").read_text())
    record["commands"] = {"": legacy}
    record["finished_runs"] = {"": legacy}
    (first.folder / "run.json").write_text(json.dumps(record))
    again = run_result(recipe, "smoke", out, echo=None)
    assert not again.ran
    assert again.output == first.output


def test_an_unknown_engine_names_the_engines(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(PLACEMENT.replace("{smoke}", "args = []").replace('"placement"', '"common"'))
    with pytest.raises(ReproduceError) as err:
        run_result(load_recipe(path), "smoke", tmp_path / "out", echo=None)
    message = str(err.value)
    assert "no engine 'common' in nasmlcn.reproduce.engines" in message
    known = message.split("(known: ")[1].rstrip(")").split(", ")
    engines = "capsacc_table3 fastrcaps_policies lane_pruning lane_variants placement scaling"
    assert known == [*engines.split(), "thesis_table"]
