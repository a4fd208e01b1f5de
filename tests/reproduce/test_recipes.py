"""The recipes of ``nasmlcn reproduce`` (``studies/*.toml`` with ``[reproduce]``): every
seed result in SEED_RESULTS (the papers' figures) has one, each is valid and names an engine that exists,
and a user's mistake in one is a one-line error."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import tomllib

from nasmlcn.errors import ReproduceError, SearchError
from nasmlcn.reproduce import SCALES, all_recipes, engines_dir, find_recipe, studies_dir
from nasmlcn.search import load_search_recipe
from tests.conftest import ROOT, run_cli
from tests.reproduce._toml import recipe_file

SEED_RESULTS = {
    "thesis-table4.1": ("thesis", "Table 4.1"),
    "thesis-fig4.4": ("thesis", "Fig. 4.4"),
    "thesis-fig4.6": ("thesis", "Fig. 4.6"),
    "thesis-fig4.7": ("thesis", "Fig. 4.7"),
    "thesis-fig4.8": ("thesis", "Fig. 4.8"),
    "thesis-fig4.9": ("thesis", "Fig. 4.9"),
    "thesis-fig4.10": ("thesis", "Fig. 4.10"),
    "thesis-fig5.2": ("thesis", "Fig. 5.2"),
    "thesis-fig5.3": ("thesis", "Fig. 5.3"),
    "thesis-fig6.2": ("thesis", "Fig. 6.2"),
    "thesis-fig6.3": ("thesis", "Fig. 6.3"),
    "thesis-fig6.4": ("thesis", "Fig. 6.4"),
    "thesis-fig6.5": ("thesis", "Fig. 6.5"),
    "nascaps-table2": ("nascaps", "Table 2"),
    "nascaps-table3": ("nascaps", "Table 3"),
    "nascaps-pareto": ("nascaps", "Pareto search"),
    "fastrcaps-table1": ("fastrcaps", "Table I"),
}
"""The numbered seed results nasmlcn implements, each with its recipe."""


def _minimal(**overrides: Any) -> dict[str, Any]:
    table: dict[str, Any] = {
        "paper": "thesis",
        "result": "Fig. 5.2",
        "measures": "m",
        "setting": "s",
        "engine": "placement",
        "scales": {
            s: {"args": [], "minutes_here": 1, "minutes_gpu": 1, "differs": "d"} for s in SCALES
        },
        "compare": [{"label": "l", "ours": "a.b", "paper": 1.0, "source": "p. 1"}],
    }
    table.update(overrides)
    return {"reproduce": table}


def test_every_seed_result_has_a_recipe() -> None:
    recipes = {r.name: r for r in all_recipes()}
    for name, (paper, result) in SEED_RESULTS.items():
        assert name in recipes, name
        assert (recipes[name].paper, recipes[name].result) == (paper, result)
    assert studies_dir() == ROOT / "studies"


@pytest.mark.parametrize("name", sorted(SEED_RESULTS))
def test_a_recipe_has_three_scales_an_engine_and_the_papers_figures(name: str) -> None:
    recipe = find_recipe(name)
    assert set(recipe.scales) == set(SCALES)
    smoke, reduced, full = (recipe.scales[s] for s in SCALES)
    assert smoke.minutes_here <= 2, "smoke: minutes"
    assert reduced.minutes_here <= 60, "reduced: within an hour on a 2-core machine"
    assert full.minutes_gpu >= reduced.minutes_gpu
    if recipe.is_search:
        options, _, _ = load_search_recipe(recipe.path)  # runnable with search --config
        assert options["study"] == name
    else:
        assert (engines_dir() / f"{recipe.engine}.py").is_file()
    for entry in recipe.compare:
        assert entry.source
        assert entry.paper is not None or entry.plot_only, entry.label
    assert any(e.check is not None for e in recipe.compare), "some figure is checked"


def test_the_recipes_are_sorted_as_the_papers_are() -> None:
    names = [r.name for r in all_recipes()]
    assert names.index("thesis-table4.1") < names.index("thesis-fig4.4")
    assert names.index("thesis-fig4.9") < names.index("thesis-fig4.10")
    assert names.index("thesis-fig6.5") < names.index("nascaps-table2")
    assert names[-1] == "fastrcaps-table1"


def test_a_benchmark_recipe_is_refused_by_search_config() -> None:
    done = run_cli("search", "--config", str(ROOT / "studies" / "thesis-table4.1.toml"))
    assert done.returncode == 2
    assert "is not a search" in done.stderr
    assert "nasmlcn reproduce thesis-table4.1" in done.stderr
    assert "Traceback" not in done.stderr
    with pytest.raises(SearchError, match="not a search"):
        load_search_recipe(ROOT / "studies" / "fastrcaps-table1.toml")


def test_a_search_recipe_with_reproduce_runs_with_search_config(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path}/s.db"
    done = run_cli(
        "search", "--config", str(ROOT / "studies" / "thesis-fig6.5.toml"),
        "--evaluator", "proxy", "--trials", "2", "--storage", storage, "--json", "-q",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["completed"] == 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "has no [reproduce] table"),
        (_minimal(papr="x"), "unknown key 'papr' in [reproduce]; did you mean 'paper'"),
        (_minimal(paper="nips"), "unknown paper 'nips' (known: thesis, nascaps"),
        (_minimal(engine="../x"), 'engine must be "search" or a module name'),
        (_minimal(scales={}), "missing [reproduce.scales.smoke]"),
        (_minimal(compare=[]), "needs at least one [[reproduce.compare]]"),
        (
            _minimal(compare=[{"label": "l", "ours": "a", "source": "s"}]),
            "give the paper's value (paper = ...) or say what its plot shows",
        ),
        (
            _minimal(
                compare=[{"label": "l", "ours": "a", "paper": 1, "source": "s", "tolrance": 1}]
            ),
            "[[reproduce.compare]] #1: unknown key 'tolrance'; did you mean 'tolerance'",
        ),
        (
            _minimal(compare=[{"label": "l", "ours": "a.*", "paper": 1, "source": "s"}]),
            "must be inside max(...)",
        ),
        (
            _minimal(
                compare=[{"label": "l", "ours": "a", "paper": 1, "source": "s", "check": "near"}]
            ),
            "check must be one of close, at_least, at_most, none, got 'near'",
        ),
        (
            _minimal(
                compare=[{"label": "l", "ours": "a", "paper": 1, "source": "s", "scales": ["big"]}]
            ),
            "scales must list some of smoke, reduced, full",
        ),
    ],
)
def test_a_bad_recipe_is_a_one_line_error_naming_the_key(
    tmp_path: Path, data: dict[str, Any], message: str
) -> None:
    with pytest.raises(ReproduceError) as err:
        recipe_file(data, tmp_path / "mine.toml")
    assert message in str(err.value)
    assert "mine.toml" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_bad_scale_table_is_refused(tmp_path: Path) -> None:
    data = _minimal()
    scales = data["reproduce"]["scales"]
    scales["smoke"] = {**scales["smoke"], "minuts_here": 1}
    with pytest.raises(ReproduceError, match="unknown key 'minuts_here'"):
        recipe_file(data, tmp_path / "x.toml")
    scales["smoke"] = {"args": ["{outdir}"], "minutes_here": 1, "minutes_gpu": 1, "differs": "d"}
    with pytest.raises(ReproduceError, match=r"unknown placeholder \{outdir\}"):
        recipe_file(data, tmp_path / "x.toml")
    scales["smoke"] = {"args": [], "runs": {}, "minutes_here": 1, "minutes_gpu": 1, "differs": "d"}
    with pytest.raises(ReproduceError, match=r"args \(one run\) or runs \(several\), not both"):
        recipe_file(data, tmp_path / "x.toml")
    scales["smoke"] = {"args": [], "minutes_here": 0, "minutes_gpu": 1, "differs": "d"}
    with pytest.raises(ReproduceError, match="minutes_here must be a number of minutes > 0"):
        recipe_file(data, tmp_path / "x.toml")
    scales["smoke"] = {"args": [], "minutes_here": 1, "minutes_gpu": 1, "differs": "d"}
    assert not recipe_file(data, tmp_path / "x.toml").scales["smoke"].gpu_measured
    scales["smoke"]["gpu_measured"] = "yes"
    with pytest.raises(ReproduceError, match="gpu_measured must be true or false, got 'yes'"):
        recipe_file(data, tmp_path / "x.toml")
    scales["smoke"]["gpu_measured"] = True
    assert recipe_file(data, tmp_path / "x.toml").scales["smoke"].gpu_measured


def test_search_options_belong_to_search_recipes(tmp_path: Path) -> None:
    data = {"trials": 3, **_minimal()}
    with pytest.raises(ReproduceError, match="'trials' is a search option, but engine is"):
        recipe_file(data, tmp_path / "x.toml")


def test_an_unknown_result_suggests_the_closest(tmp_path: Path) -> None:
    with pytest.raises(ReproduceError, match=r"did you mean 'thesis-fig4\.4'"):
        find_recipe("thesis-fig4-4")


def test_nascaps_paretos_capsnet_figures_are_the_cost_models() -> None:
    """The Pareto recipe divides by CapsNet's CapsAcc energy, latency and memory for a
    28x28 image; they must be what `nasmlcn estimate` computes."""
    done = run_cli(
        "estimate", "--target", "capsacc", "--model", "capsnet", "--dataset", "fashion-mnist",
        "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    capsnet = json.loads(done.stdout)
    ours = [e.ours for e in find_recipe("nascaps-pareto").compare]
    assert any(e.endswith(f"/ {capsnet['energy_j'] * 1e3:.2f}") for e in ours), ours
    assert any(e.endswith(f"/ {capsnet['latency_s']:.7f}") for e in ours), ours
    assert any(e.endswith(f"/ {capsnet['memory_bytes'] / 2**20:.3f}") for e in ours), ours


def test_the_placement_recipes_read_both_pools() -> None:
    data = tomllib.loads((ROOT / "studies" / "thesis-fig5.3.toml").read_text())
    assert any("1xK80,1xM40,1xP100,1xV100" in e["ours"] for e in data["reproduce"]["compare"])
    assert math.isclose(find_recipe("thesis-fig5.2").compare[0].paper or 0, 2.0)
