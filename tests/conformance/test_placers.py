"""Conformance of every registered placer (``nasmlcn.placement.PLACERS``).

The contract (``nasmlcn/placement/_base.py`` and ``_problem.py``): ``place`` assigns
every lane to exactly one device within the devices' memory, reports the
makespan of that assignment and its own name; a lower bound it reports is a
proven one (never above the optimum, found here by brute force), and a
placement it calls optimal is; when a lane fits nowhere it raises
:class:`PlacementError` naming the lane; only a ``randomised`` placer's result
depends on the seed, and a seed reproduces it.
"""

from __future__ import annotations

import math
import random

import pytest

from nasmlcn.costs import get_cost_model
from nasmlcn.errors import PlacementError
from nasmlcn.hardware import parse_devices
from nasmlcn.placement import PLACERS, Placement, PlacementProblem, Placer, get_placer
from nasmlcn.planning import placement_problem
from nasmlcn.specs import MLCNSpec
from tests.placement.test_placement import SPEEDS, brute_force

NAMES = list(PLACERS)


def _random_problem(seed: int) -> PlacementProblem:
    """A small instance, memory binding on about half of them."""
    rng = random.Random(seed)
    lanes, devices = rng.randint(3, 7), rng.randint(1, 3)
    need = [rng.randint(1, 6) for _ in range(lanes)]
    slack = rng.choice((1.2, 1.6, 10.0))
    share = sum(need) / devices
    return PlacementProblem(
        costs=tuple(rng.choice((float(rng.randint(1, 40)), rng.uniform(0.01, 1))) for _ in need),
        memory=tuple(need),
        speeds=tuple(rng.choice(SPEEDS) for _ in range(devices)),
        capacities=tuple(max(6, round(share * slack)) for _ in range(devices)),
    )


def _model_problem(lanes: str, devices: str) -> PlacementProblem:
    spec = MLCNSpec.from_lanes(lanes)
    return placement_problem(get_cost_model().model_cost(spec), parse_devices(devices))


PROBLEMS = [_random_problem(seed) for seed in range(12)]
PROBLEMS += [
    # memory decides: the fast device cannot take both small lanes
    PlacementProblem((10.0, 1.0, 1.0), (1, 5, 5), (6.0, 1.0), (6, 6)),
    # every lane fits some device, but no placement holds them all
    PlacementProblem((1.0, 2.0, 3.0), (6, 6, 6), (1.0, 3.1), (10, 10)),
    _model_problem("mlcn1:3x2,2*mlcn2:4x1,mlcn1:1x1,mlcn2:2x3", "1xK80,1xM40,1xP100,1xV100"),
    _model_problem("8*mlcn2:1x1", "2xK80"),
]


OPTIMA = [brute_force(p) for p in PROBLEMS]


@pytest.fixture(params=NAMES)
def placer(request: pytest.FixtureRequest) -> Placer:
    return get_placer(request.param, time_limit=5.0)


def test_entry_is_a_placer_named_as_registered(placer: Placer) -> None:
    assert isinstance(placer, Placer)
    assert PLACERS.get(placer.name) is type(placer)
    assert isinstance(placer.randomised, bool)


@pytest.mark.parametrize("index", range(len(PROBLEMS)))
def test_every_lane_is_placed_once_within_memory(placer: Placer, index: int) -> None:
    problem, optimum = PROBLEMS[index], OPTIMA[index]
    if math.isinf(optimum):
        with pytest.raises(PlacementError):
            placer.place(problem)
        return
    placement = placer.place(problem, seed=index)
    assert isinstance(placement, Placement)
    assert placement.strategy == placer.name
    assert len(placement.assignment) == problem.num_lanes
    assert all(0 <= j < problem.num_devices for j in placement.assignment)
    assert sorted(i for j in range(problem.num_devices) for i in placement.lanes_on(j)) == list(
        range(problem.num_lanes)
    )
    problem.check(placement.assignment)  # memory: raises ValueError when over a capacity
    assert placement.makespan == pytest.approx(problem.makespan(placement.assignment), rel=1e-12)
    assert placement.makespan >= optimum * (1 - 1e-9)
    if placement.lower_bound is not None:
        assert placement.lower_bound <= optimum * (1 + 1e-9)
    if placement.optimal:
        assert placement.makespan == pytest.approx(optimum, rel=1e-9)


def test_a_lane_that_fits_nowhere_is_named(placer: Placer) -> None:
    problem = PlacementProblem(
        costs=(1.0, 2.0, 3.0),
        memory=(1, 50, 1),
        speeds=(1.0, 6.0),
        capacities=(10, 20),
        lane_names=("small", "huge", "tiny"),
    )
    with pytest.raises(PlacementError, match="huge"):
        placer.place(problem)


def test_the_seed_matters_only_to_randomised_placers(placer: Placer) -> None:
    problem = _model_problem("2*mlcn1:2x2,3*mlcn2:1x1,mlcn2:3x1,mlcn1:1x3", "4xK80")
    by_seed = {seed: placer.place(problem, seed=seed).assignment for seed in range(8)}
    assert placer.place(problem, seed=3).assignment == by_seed[3]
    distinct = len(set(by_seed.values()))
    if placer.randomised:
        assert distinct > 1
    else:
        assert distinct == 1
