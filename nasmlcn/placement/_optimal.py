"""``optimal``: exact placement on uniform machines with memory (Q||Cmax with capacities).

The optimal makespan is ``S / speed_j`` for some device j and some subset sum S of
the lane costs: a *candidate* value. The search keeps a proven lower bound and
the best placement known (greedy's, to start) and asks a decision procedure
whether the lanes pack into the devices with time capacities ``C * speed_j`` and
their memory capacities:

* packed: the packing is the new best placement (its makespan is at most C);
* proven impossible: every placement puts more than ``C * speed_j`` on some device
  j, hence at least the next subset sum above it, so the smallest
  ``next_sum_j / speed_j`` is a proven lower bound.

The first lower bound (divisible load; k largest lanes on the k fastest devices) is
rounded up the same way, to a load some device can actually have: on the thesis's
instances this rounded bound is usually the optimum itself. With integer costs
(the thesis's ``width^2 * depth``) candidates are few, and C bisects them, lowest
first: tight capacities prune hardest. With float costs candidates are dense: C is
the lower bound once, then a branch and bound lowers the capacities below each
placement it finds; exhausting it proves the last one optimal. At the time limit
the best placement is returned with the proven lower bound (their gap).

The decision procedure is a depth-first search that places lanes from the most
to the least costly, pruned by:

* symmetry: devices of the same speed and memory with the same load and memory
  used are interchangeable, only one of them is tried;
* memo: a (lane, device loads) state that failed once fails again (also under
  lower capacities), which removes the permutations of lanes of equal cost;
* a waste bound: the remaining lanes must fit into what the devices can still
  *use*, the largest subset sum of the remaining costs within each residual
  capacity (subset sums as bitsets: exact for integer costs, in rounded units
  with a bounded error for float costs); the same for memory, by total;
* dominance: a lane that fills a residual capacity exactly goes there, and the
  remaining lanes all go to one device when it can take them all.

When greedy finds no placement within memory, the search looks for one first;
when none exists, greedy's :class:`~nasmlcn.errors.PlacementError` is raised
(the lane, and the largest free memory left). Float sums are compared with a
relative slack of 1e-12; a makespan within :data:`PROOF_TOLERANCE` of the lower
bound counts as proven optimal.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence

from nasmlcn.errors import PlacementError, option
from nasmlcn.placement._base import PLACERS, Placer
from nasmlcn.placement._greedy import greedy_assignment
from nasmlcn.placement._packing import (
    BITSET_BITS,
    PROOF_TOLERANCE,
    SLACK,
    OutOfTime,
    Packer,
    SubsetSums,
)
from nasmlcn.placement._problem import Placement, PlacementProblem

logger = logging.getLogger(__name__)

DEFAULT_TIME_LIMIT = 10.0
"""Seconds the ``optimal`` placer searches by default."""

_TRIAL_SHARE = 0.3
"""Share of the time limit the lower bound's own decision may take."""

_CLEANUP_SECONDS = 0.1
"""Time kept back from the limit to free the memo (about 0.1 s per million states)."""


def _integral(costs: Sequence[float]) -> bool:
    """Whether the costs are integers with bitsets of their sums small enough."""
    return (
        all(float(c).is_integer() for c in costs) and sum(costs) * (len(costs) + 1) <= BITSET_BITS
    )


def _next_bound(caps: Sequence[float], speeds: Sequence[float], sums: SubsetSums) -> float:
    """The lower bound proven when no assignment keeps every load within ``caps``.

    Some device j then has a load above ``caps[j]``: at least the next subset sum.
    """
    return min(sums.above(c) / s for c, s in zip(caps, speeds, strict=True))


def _round_up(bound: float, speeds: Sequence[float], sums: SubsetSums) -> float:
    """``bound`` raised to the smallest makespan a device can actually reach above it.

    Some device j has ``load_j >= bound * speed_j``; loads are subset sums.
    """
    return min(sums.at_least(bound * s * (1 - SLACK)) / s for s in set(speeds))


def _candidates(
    lower: float, upper: float, speeds: Sequence[float], sums: SubsetSums
) -> list[float]:
    """Sorted makespans ``S / speed`` in ``[lower, upper)``, S a subset sum (integer costs)."""
    found: set[float] = set()
    for s in set(speeds):
        low = math.ceil(lower * s * (1 - SLACK))
        high = math.floor(upper * s * (1 + SLACK))
        window = (sums.bits >> low) & ((1 << max(high - low + 1, 0)) - 1)
        while window:
            value = (low + (window & -window).bit_length() - 1) / s
            if lower * (1 - SLACK) <= value < upper * (1 - SLACK):
                found.add(value)
            window &= window - 1
    return sorted(found)


class _Search:
    """The best placement known, a proven lower bound, and the ways to close the gap.

    Raises :class:`OutOfTime` from any step once ``deadline`` passes; what was
    found and proven so far stays in ``best``, ``upper`` and ``lower``.
    """

    def __init__(self, problem: PlacementProblem, deadline: float) -> None:
        self.problem = problem
        self.deadline = deadline
        self.error: PlacementError | None = None
        self.best: list[int] | None = None
        self.upper = math.inf
        try:
            self.best = greedy_assignment(problem)
            self.upper = problem.makespan(self.best)
        except PlacementError as exc:
            # Greedy can miss a placement that exists when memory is tight.
            self.error = exc
        self.integral = _integral(problem.costs)
        self.sums = SubsetSums(problem.costs, self.integral)
        self.packer = Packer(problem, self.integral)
        self.lower = min(_round_up(problem.lower_bound(), problem.speeds, self.sums), self.upper)

    def proven(self) -> bool:
        return self.upper <= self.lower * (1 + PROOF_TOLERANCE)

    def keep(self, assignment: list[int]) -> list[float] | None:
        """Keeps a better placement; the capacities that would beat it, or None if proven."""
        self.best, self.upper = assignment, self.problem.makespan(assignment)
        logger.debug("optimal placement: makespan %.9g", self.upper)
        return None if self.proven() else self.packer.capacities_below(self.upper)

    def decide(self, makespan: float, deadline: float) -> None:
        """Packs within ``makespan``: a better placement, or a higher lower bound."""
        caps = self.packer.time_capacities(makespan)
        found = self.packer.solve(caps, deadline)
        if found is None:
            self.lower = max(self.lower, _next_bound(caps, self.problem.speeds, self.sums))
            logger.debug("optimal placement: lower bound %.9g", self.lower)
        else:
            self.keep(found)

    def find_any(self) -> None:
        """A first placement within memory, when greedy found none.

        Raises:
            PlacementError: None exists (greedy's error: its lane and free memory).
        """
        found = self.packer.solve(self.packer.time_capacities(math.inf), self.deadline)
        if found is None:
            assert self.error is not None
            raise self.error
        self.keep(found)

    def bisect(self) -> None:
        """Integer costs: bisects the few candidate makespans, lowest first (a perfect
        packing at the lower bound is common, and tight capacities prune hardest)."""
        first = True
        while not self.proven():
            candidates = _candidates(self.lower, self.upper, self.problem.speeds, self.sums)
            if not candidates:
                self.lower = self.upper  # the optimum is a candidate and none is lower
                return
            self.decide(candidates[0 if first else (len(candidates) - 1) // 2], self.deadline)
            first = False

    def branch_and_bound(self, trial_seconds: float) -> None:
        """Float costs, whose candidates are dense: the lower bound once (on at most
        ``trial_seconds``), then branch and bound below the best makespan; exhausting
        it proves the best."""
        if self.proven():
            return
        try:
            self.decide(self.lower, min(self.deadline, time.perf_counter() + trial_seconds))
        except OutOfTime:
            logger.debug("optimal placement: lower bound %.9g undecided", self.lower)
        if self.proven():
            return
        caps = self.packer.capacities_below(self.upper)
        if self.packer.solve(caps, self.deadline, self.keep) is None:
            last = self.packer.last_capacities
            self.lower = max(self.lower, _next_bound(last, self.problem.speeds, self.sums))


@PLACERS.register("optimal")
class OptimalPlacer(Placer):
    """Exact search from greedy's placement, within a time limit.

    Args:
        time_limit: Seconds to search (None: :data:`DEFAULT_TIME_LIMIT`); when they
            run out, the best placement found is returned with a proven lower bound.
    """

    name = "optimal"

    def __init__(self, time_limit: float | None = DEFAULT_TIME_LIMIT) -> None:
        limit = DEFAULT_TIME_LIMIT if time_limit is None else float(time_limit)
        if not limit > 0:
            raise PlacementError(
                f"{option('time_limit')} must be more than 0 seconds, got {time_limit!r}"
            )
        super().__init__(limit)
        self.limit = limit

    def place(self, problem: PlacementProblem, *, seed: int = 0) -> Placement:
        start = time.perf_counter()
        problem.check_fits_somewhere()
        # Leave time to free the search's memo before the limit.
        search = _Search(problem, start + self.limit - min(_CLEANUP_SECONDS, 0.1 * self.limit))
        try:
            if search.best is None:
                search.find_any()
            if search.integral:
                search.bisect()
            else:
                search.branch_and_bound(_TRIAL_SHARE * self.limit)
        except OutOfTime:
            if search.best is None:
                logger.warning("optimal placement: no placement found within %.3g s", self.limit)
                assert search.error is not None
                raise search.error from None
        assert search.best is not None
        proven = search.proven()
        # Proven: the bound meets the makespan up to the tolerance (or a last bit of rounding).
        lower = search.upper if proven else min(search.lower, search.upper)
        return Placement(
            tuple(search.best),
            search.upper,
            self.name,
            lower_bound=lower,
            optimal=proven,
            seconds=time.perf_counter() - start,
        )
