"""``random``: the thesis's baseline — every lane on a random device with room."""

from __future__ import annotations

import random
import time

from nasmlcn.placement._base import PLACERS, Placer
from nasmlcn.placement._problem import Placement, PlacementProblem

ATTEMPTS = 100


def random_assignment(problem: PlacementProblem, rng: random.Random) -> list[int]:
    """Lanes in random order, each on a uniformly random device that still has
    memory for it; retried from scratch when a lane is left without room."""
    problem.check_fits_somewhere()
    last_error = None
    for _ in range(ATTEMPTS):
        free = list(problem.capacities)
        assignment = [0] * problem.num_lanes
        order = list(range(problem.num_lanes))
        rng.shuffle(order)
        for i in order:
            room = [j for j in range(problem.num_devices) if free[j] >= problem.memory[i]]
            if not room:
                last_error = problem.does_not_fit(i, free)
                break
            j = rng.choice(room)
            free[j] -= problem.memory[i]
            assignment[i] = j
        else:
            return assignment
    assert last_error is not None
    raise last_error


@PLACERS.register("random")
class RandomPlacer(Placer):
    """Uniformly random devices (memory respected), seeded."""

    name = "random"
    randomised = True

    def place(self, problem: PlacementProblem, *, seed: int = 0) -> Placement:
        start = time.perf_counter()
        assignment = random_assignment(problem, random.Random(seed))
        return Placement(
            tuple(assignment),
            problem.makespan(assignment),
            self.name,
            seconds=time.perf_counter() - start,
        )
