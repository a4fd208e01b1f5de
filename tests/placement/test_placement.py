"""Placers: validity and memory for every strategy, greedy = Algorithm 3, optimal = brute force."""

from __future__ import annotations

import itertools
import math
import random
import re
import statistics
from types import SimpleNamespace

import pytest

from nasmlcn.errors import PlacementError
from nasmlcn.placement import PLACERS, Placement, PlacementProblem, _optimal, _packing, get_placer

SPEEDS = (1.0, 3.1, 4.2, 6.0)  # K80, M40, P100, V100 (thesis sec. 5.1)


def random_problem(
    rng: random.Random, lanes: int, devices: int, *, integral: bool, memory: str
) -> PlacementProblem:
    """A random instance; ``memory`` is ``loose`` (never binds), ``tight`` or ``mixed``."""
    if integral:
        costs = [float(rng.randint(1, 5) ** 2 * rng.randint(1, 5)) for _ in range(lanes)]
    else:
        costs = [rng.uniform(0.01, 1.0) for _ in range(lanes)]
    speeds = [rng.choice(SPEEDS) for _ in range(devices)]
    if memory == "loose":
        need = [1] * lanes
        capacities = [lanes] * devices
    else:
        need = [rng.randint(1, 6) for _ in range(lanes)]
        # Tight: about the lanes' total spread over the devices, so placements are scarce.
        share = sum(need) / devices
        spread = 1.1 if memory == "tight" else 1.6
        capacities = [max(6, round(share * rng.uniform(0.8, spread))) for _ in range(devices)]
    return PlacementProblem(tuple(costs), tuple(need), tuple(speeds), tuple(capacities))


def brute_force(problem: PlacementProblem) -> float:
    """The optimal makespan by enumeration (inf when nothing fits)."""
    best = math.inf
    for assignment in itertools.product(range(problem.num_devices), repeat=problem.num_lanes):
        used = problem.memory_used(assignment)
        if all(u <= c for u, c in zip(used, problem.capacities, strict=True)):
            best = min(best, problem.makespan(assignment))
    return best


def small_problems(count: int, seed: int) -> list[PlacementProblem]:
    rng = random.Random(seed)
    return [
        random_problem(
            rng,
            rng.randint(4, 8),
            rng.randint(2, 3),
            integral=k % 2 == 0,
            memory=("loose", "tight", "mixed")[k % 3],
        )
        for k in range(count)
    ]


def check_placement(problem: PlacementProblem, placement: Placement, strategy: str) -> None:
    problem.check(placement.assignment)  # every lane on a device, memory respected
    assert placement.strategy == strategy
    assert placement.makespan == pytest.approx(problem.makespan(placement.assignment), rel=1e-12)
    if placement.lower_bound is not None:
        assert placement.lower_bound <= placement.makespan * (1 + 1e-12)
    assert placement.seconds >= 0


def test_the_builtin_placers_are_registered() -> None:
    assert {"greedy", "random", "optimal"} <= set(PLACERS.names())
    assert (
        get_placer("optimal", time_limit=2)
        .place(PlacementProblem((1.0,), (1,), (1.0,), (1,)))
        .optimal
    )
    with pytest.raises(ValueError, match="time_limit"):
        get_placer("optimal", time_limit=0)


@pytest.mark.parametrize("name", PLACERS.names())
def test_every_placer_returns_a_valid_assignment_within_memory(name: str) -> None:
    placer = get_placer(name)
    rng = random.Random(7)
    placed = 0
    for k in range(60):
        problem = random_problem(
            rng,
            rng.randint(1, 12),
            rng.randint(1, 4),
            integral=k % 2 == 0,
            memory=("loose", "tight", "mixed")[k % 3],
        )
        try:
            placement = placer.place(problem, seed=k)
        except PlacementError:
            # Only tight memory may defeat a placer; optimal only when nothing fits.
            assert sum(problem.memory) > min(problem.capacities)
            if name == "optimal" and problem.num_lanes <= 8:
                assert brute_force(problem) == math.inf
            continue
        check_placement(problem, placement, name)
        placed += 1
    assert placed >= 30


def test_optimal_matches_brute_force_on_small_instances() -> None:
    optimal = get_placer("optimal", time_limit=5)
    proven = infeasible = 0
    for problem in small_problems(80, seed=3):
        best = brute_force(problem)
        if best == math.inf:
            with pytest.raises(PlacementError):
                optimal.place(problem)
            infeasible += 1
            continue
        placement = optimal.place(problem)
        check_placement(problem, placement, "optimal")
        assert placement.makespan == pytest.approx(best, rel=1e-9), problem
        assert placement.lower_bound is not None
        assert placement.lower_bound <= best * (1 + 1e-12), problem
        assert placement.optimal, problem
        assert placement.gap == pytest.approx(0.0, abs=1e-9)
        proven += 1
    assert proven >= 50, (proven, infeasible)
    assert infeasible >= 3, (proven, infeasible)


def test_optimal_finds_a_placement_that_greedy_misses() -> None:
    # Memory 6 5 4 5 on two devices of 10: only {6, 4} + {5, 5} fits, and greedy
    # (by cost) puts the first two lanes apart, then the 4 next to the 5.
    problem = PlacementProblem((4.0, 3.0, 2.9, 1.0), (6, 5, 4, 5), (1.0, 1.0), (10, 10))
    with pytest.raises(PlacementError, match="lane 3"):
        get_placer("greedy").place(problem)
    placement = get_placer("optimal").place(problem)
    check_placement(problem, placement, "optimal")
    assert placement.makespan == pytest.approx(6.9)
    assert placement.optimal


def test_optimal_is_no_worse_than_greedy_which_beats_random() -> None:
    greedy, optimal, randomly = get_placer("greedy"), get_placer("optimal"), get_placer("random")
    rng = random.Random(11)
    for k in range(20):
        problem = random_problem(rng, 8, 3, integral=k % 2 == 0, memory="loose")
        best = optimal.place(problem).makespan
        g = greedy.place(problem).makespan
        r = statistics.fmean(randomly.place(problem, seed=s).makespan for s in range(20))
        assert best <= g * (1 + 1e-12) <= r, problem


def test_optimal_proves_thesis_sized_instances() -> None:
    # 24 lanes of width^2 * depth on 4 identical and on 4 mixed devices (thesis Fig. 5.2).
    rng = random.Random(24)
    for speeds in ((1.0,) * 4, SPEEDS):
        costs = tuple(float(rng.randint(1, 5) ** 2 * rng.randint(1, 5)) for _ in range(24))
        problem = PlacementProblem(costs, (1,) * 24, speeds, (24,) * 4)
        placement = get_placer("optimal", time_limit=10).place(problem)
        assert placement.optimal
        assert placement.lower_bound == pytest.approx(placement.makespan)
        assert get_placer("greedy").place(problem).makespan <= 1.05 * placement.makespan


@pytest.mark.parametrize("name", PLACERS.names())
def test_no_placement_names_the_lane_and_the_largest_free_memory(name: str) -> None:
    placer = get_placer(name, time_limit=2)
    names = ("mlcn1:5x5", "mlcn2:1x1", "mlcn1:2x3")
    # A lane larger than every device.
    too_big = PlacementProblem(
        (1.0, 2.0, 3.0), (2048, 4096, 1024), (1.0, 2.0), (3000, 3000), lane_names=names
    )
    with pytest.raises(PlacementError, match=r"mlcn2:1x1 \(lane 1\) needs 4 KiB") as info:
        placer.place(too_big)
    assert "largest free memory left is" in str(info.value)
    # Every lane fits alone, but not all together: 3 x 6 KiB on 2 x 10 KiB.
    crowded = PlacementProblem(
        (1.0, 2.0, 3.0), (6144,) * 3, (1.0, 2.0), (10240, 10240), lane_names=names
    )
    with pytest.raises(PlacementError) as info:
        placer.place(crowded)
    message = str(info.value)
    assert re.search(r"mlcn\d:\dx\d \(lane \d\) needs 6 KiB", message), message
    assert "largest free memory left is 4 KiB" in message


def test_greedy_follows_algorithm_3() -> None:
    # Costs 3 5 2 7 4 on speeds 1 and 2, longest first, each to the earliest finish:
    #   7 -> dev1 (3.5 < 7); 5 -> dev0 (5 < 6); 4 -> dev1 (5.5 < 9);
    #   3 -> dev1 (7 < 8);   2 -> dev0 (7 < 8).  Loads 7 and 14: makespan 7.
    problem = PlacementProblem((3.0, 5.0, 2.0, 7.0, 4.0), (0,) * 5, (1.0, 2.0), (1, 1))
    placement = get_placer("greedy").place(problem)
    assert placement.assignment == (1, 0, 0, 1, 1)
    assert placement.makespan == 7.0
    # Memory-aware: the fast device holds one lane only, so the next goes to the slow one.
    problem = PlacementProblem((4.0, 3.0, 1.0), (5, 5, 5), (1.0, 4.0), (10, 5))
    assert get_placer("greedy").place(problem).assignment == (1, 0, 0)


def test_optimal_honours_its_time_limit() -> None:
    # 40 float lanes on four mixed devices: far beyond what is proven in half a second.
    rng = random.Random(5)
    costs = tuple(rng.uniform(0.01, 1.0) for _ in range(40))
    problem = PlacementProblem(costs, (1,) * 40, SPEEDS, (100,) * 4)
    placement = get_placer("optimal", time_limit=0.5).place(problem)
    check_placement(problem, placement, "optimal")
    # Stopped by the limit, not by a proof (10 s do not prove this one either): the
    # best placement found comes back with the gap to the proven lower bound.
    assert not placement.optimal
    assert placement.lower_bound is not None
    assert placement.lower_bound < placement.makespan
    assert placement.makespan <= get_placer("greedy").place(problem).makespan


def test_optimal_stops_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same search on a clock that advances 10 ms per reading: it must give up
    once the limit has passed on that clock, however fast the machine is."""
    rng = random.Random(5)
    costs = tuple(rng.uniform(0.01, 1.0) for _ in range(40))
    problem = PlacementProblem(costs, (1,) * 40, SPEEDS, (100,) * 4)
    readings = 0

    def perf_counter() -> float:
        nonlocal readings
        readings += 1
        assert readings < 1000, "the search read the clock far past its limit"
        return readings * 0.01

    clock = SimpleNamespace(perf_counter=perf_counter)
    monkeypatch.setattr(_optimal, "time", clock)
    monkeypatch.setattr(_packing, "time", clock)  # the decision procedure reads it too
    placement = get_placer("optimal", time_limit=0.5).place(problem)
    check_placement(problem, placement, "optimal")
    assert not placement.optimal
    assert 0.4 <= placement.seconds <= 0.6  # the limit, on the fake clock
