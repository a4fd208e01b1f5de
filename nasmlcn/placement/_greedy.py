"""``greedy``: the thesis's Algorithm 3 (longest processing time first, with speeds).

Lanes are taken from the most to the least costly; each goes to the device on
which it would *finish* earliest, ``(load_j + cost) / speed_j``, among the
devices with memory left for it. On identical devices this is Graham's LPT rule
(within 4/3 of optimal); with speeds it is the uniform-machine LPT.
"""

from __future__ import annotations

import time

from nasmlcn.placement._base import PLACERS, Placer
from nasmlcn.placement._problem import Placement, PlacementProblem


def greedy_assignment(problem: PlacementProblem, *, memory_limits: bool = True) -> list[int]:
    """The greedy assignment; raises PlacementError when a lane fits nowhere.

    ``memory_limits=False`` places by time alone, past the devices' memory (never
    raises): where a model that does not fit is recorded, with its overflow, as an
    infeasible trial.
    """
    costs, memory, speeds = problem.costs, problem.memory, problem.speeds
    m = problem.num_devices
    loads = [0.0] * m
    free = list(problem.capacities) if memory_limits else [sum(memory)] * m
    inverse = [1.0 / s for s in speeds]
    assignment = [0] * problem.num_lanes
    order = sorted(range(problem.num_lanes), key=lambda i: (-costs[i], -memory[i], i))
    devices = range(m)
    for i in order:
        c, mem = costs[i], memory[i]
        best, best_finish = -1, float("inf")
        for j in devices:
            if free[j] >= mem:
                finish = (loads[j] + c) * inverse[j]
                if finish < best_finish:
                    best, best_finish = j, finish
        if best < 0:
            raise problem.does_not_fit(i, free)
        loads[best] += c
        free[best] -= mem
        assignment[i] = best
    return assignment


@PLACERS.register("greedy")
class GreedyPlacer(Placer):
    """Longest lane first, onto the device that would finish it earliest."""

    name = "greedy"

    def place(self, problem: PlacementProblem, *, seed: int = 0) -> Placement:
        start = time.perf_counter()
        assignment = greedy_assignment(problem)
        return Placement(
            tuple(assignment),
            problem.makespan(assignment),
            self.name,
            seconds=time.perf_counter() - start,
        )
