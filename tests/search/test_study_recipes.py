"""The recipes of ``studies/`` load and hold together: the search-vs-hand pair
(``search-vs-hand.toml`` and ``table41-hand.toml``) compares at the hand models'
predicted latency, on the same devices, trained the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomllib

from nasmlcn.errors import SearchError
from nasmlcn.planning import plan_model
from nasmlcn.search import SearchConfig, load_search_recipe, setup_search
from nasmlcn.specs import MLCNSpec, create_arch
from tests.conftest import ROOT

STUDIES = ROOT / "studies"
HAND_MODELS = ("mlcn2-2x4", "mlcn2-8x4")


def _config(name: str) -> SearchConfig:
    options, _, _ = load_search_recipe(STUDIES / name)
    return SearchConfig(storage="sqlite:///:memory:", **options)


def _is_search(path: Path) -> bool:
    reproduce = tomllib.loads(Path(path).read_text()).get("reproduce", {})
    return bool(reproduce.get("engine", "search") == "search")


@pytest.mark.parametrize("path", sorted(STUDIES.glob("*.toml")), ids=lambda p: p.name)
def test_every_recipe_loads_and_checks(path: Path) -> None:
    """A search recipe loads and sets up; a seed result measured by a benchmark is
    refused by ``search --config`` (nasmlcn reproduce runs it)."""
    if not _is_search(path):
        with pytest.raises(SearchError, match=f"nasmlcn reproduce {path.stem}"):
            load_search_recipe(path)
        return
    options, _, description = load_search_recipe(path)
    assert description
    setup_search(SearchConfig(storage="sqlite:///:memory:", **options))


def test_the_search_is_held_to_the_hand_models_predicted_latency() -> None:
    search, hand = _config("search-vs-hand.toml"), _config("table41-hand.toml")
    same: dict[str, Any] = {
        k: (getattr(search, k), getattr(hand, k))
        for k in ("devices", "mem", "dataset", "epochs", "train_limit", "val_limit", "seed")
    }
    assert all(a == b for a, b in same.values()), same
    assert search.batch_size == hand.batch_size
    devices = setup_search(search).devices
    specs = [create_arch(m) for m in HAND_MODELS]
    assert all(isinstance(spec, MLCNSpec) for spec in specs)
    latencies = [plan_model(spec, devices).makespan for spec in specs]  # type: ignore[arg-type]
    # both place one mlcn2:4x1 lane per K80
    assert latencies[0] == pytest.approx(latencies[1])
    assert search.latency_budget is not None
    assert min(latencies) <= search.latency_budget <= min(latencies) * 1.001
    # the hand models are in the hand study's space, and nothing else is trained there
    space = setup_search(hand).space
    assert set(HAND_MODELS) <= set(space.models)  # type: ignore[attr-defined]
    assert hand.trials == len(HAND_MODELS)


def test_the_old_name_reads_the_recipe_and_warns() -> None:
    import nasmlcn.search

    path = STUDIES / "search-vs-hand.toml"
    with pytest.warns(DeprecationWarning, match="load_search_recipe"):
        old = nasmlcn.search.load_recipe(path)
    assert old == load_search_recipe(path)
