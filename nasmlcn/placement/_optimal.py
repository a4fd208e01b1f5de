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

import bisect
import logging
import math
import struct
import time
from collections.abc import Callable, Sequence
from typing import Any

from nasmlcn.errors import PlacementError
from nasmlcn.placement._base import PLACERS, Placer
from nasmlcn.placement._greedy import greedy_assignment
from nasmlcn.placement._problem import Placement, PlacementProblem

logger = logging.getLogger(__name__)

DEFAULT_TIME_LIMIT = 10.0
"""Seconds the ``optimal`` placer searches by default."""

PROOF_TOLERANCE = 1e-9
"""A makespan within this relative distance of the lower bound is proven optimal."""

_SLACK = 1e-12
"""Relative slack on capacities: float sums of equal sets may differ in the last bits."""

_BITSET_BITS = 1 << 28
"""Bits all the search's subset-sum bitsets may hold together (32 MiB): one bitset of
the remaining lanes' sums per lane, as long as the costs' total in units."""

_MEET_IN_MIDDLE_LANES = 26
"""Up to this many lanes, next subset sums of float costs are found exactly."""

_FLOAT_UNITS = 1 << 18
"""Float costs are measured in units of total/_FLOAT_UNITS for the subset-sum bound
(finer units prune more but make every bitset operation slower; 2^18 was the
fastest on the benchmark's analytic instances), or coarser for many lanes."""

_UNIT_ERROR = 1.000001
"""Most a float lane's cost exceeds its rounded-down units by, in units (1 and rounding)."""

_CHECK_EVERY = 1024
"""Search nodes between two looks at the clock."""

_MEMO_LIMIT = 1_000_000
"""Failed states remembered per decision before the memo is cleared (bounds memory)."""

_TRIAL_SHARE = 0.3
"""Share of the time limit the lower bound's own decision may take."""

_CLEANUP_SECONDS = 0.1
"""Time kept back from the limit to free the memo (about 0.1 s per million states)."""


class _OutOfTime(Exception):
    """The deadline passed during a search."""


class _SubsetSums:
    """The loads a device can have: subset sums of the lane costs.

    Used to round a lower bound up to the next load a device can actually have.
    With integer costs the sums are a bitset (bit s set when some subset sums to
    s); with float costs they are found by meeting in the middle for up to
    :data:`_MEET_IN_MIDDLE_LANES` lanes, and not rounded beyond that.
    """

    def __init__(self, costs: Sequence[float], integral: bool) -> None:
        self.total = math.fsum(costs)
        self.bits = 0
        self.left: list[float] = []
        self.right: list[float] = []
        self.integral = integral
        if integral:
            bits = 1
            for c in costs:
                bits |= bits << int(c)
            self.bits = bits
        elif len(costs) <= _MEET_IN_MIDDLE_LANES:
            half = len(costs) // 2
            self.left = _all_sums(costs[:half])
            self.right = _all_sums(costs[half:])

    def at_least(self, target: float) -> float:
        """A value <= the smallest subset sum >= ``target`` (inf when none is)."""
        if target > self.total * (1 + _SLACK):
            return math.inf
        if target <= 0:
            return 0.0
        if self.integral:
            start = math.ceil(target)
            rest = self.bits >> start
            if not rest:
                return math.inf
            return float(start + (rest & -rest).bit_length() - 1)
        if not self.left:
            return target
        best = math.inf
        right = self.right
        for a in self.left:
            k = bisect.bisect_left(right, target - a)
            if k < len(right):
                best = min(best, a + right[k])
        return best

    def above(self, value: float) -> float:
        """A value <= the smallest subset sum > ``value`` and, when finite, >= ``value``."""
        if self.integral:
            return self.at_least(math.floor(value) + 1)
        if value >= self.total:
            return math.inf
        if not self.left:
            return value
        best = math.inf
        right = self.right
        for a in self.left:
            k = bisect.bisect_right(right, value - a)
            if k < len(right):
                best = min(best, a + right[k])
        # A sum that rounds to <= value is still > value exactly: value bounds it.
        return max(best, value)


def _all_sums(values: Sequence[float]) -> list[float]:
    """Sorted distinct sums of all subsets of ``values``."""
    sums = {0.0}
    for v in values:
        sums |= {s + v for s in sums}
    return sorted(sums)


class _Packer:
    """Decides whether the lanes fit the devices under time capacities.

    Lanes are handled in decreasing cost (then memory) order; a solve returns an
    assignment in the problem's lane order, or None when it proves there is none.
    """

    def __init__(self, problem: PlacementProblem, integral: bool) -> None:
        n, m = problem.num_lanes, problem.num_devices
        self.problem = problem
        self.integral = integral
        self.order = sorted(range(n), key=lambda i: (-problem.costs[i], -problem.memory[i], i))
        self.costs: list[float] = [
            int(problem.costs[i]) if integral else problem.costs[i] for i in self.order
        ]
        self.memory = [problem.memory[i] for i in self.order]
        # Costs in integer units for the subset-sum bitsets: exact for integer costs;
        # otherwise rounded down to units of a fraction of the total (a hair below
        # the exact quotient, so rounding never lifts a lane a unit up): k lanes then
        # cost at least their units and less than (their units + k * _UNIT_ERROR) units.
        total = math.fsum(self.costs)
        steps = max(1 << 10, min(_FLOAT_UNITS, _BITSET_BITS // (n + 1)))
        self.unit = 1.0 if integral or total == 0 else total / steps
        units = [
            int(c) if integral else math.floor(c / self.unit * (1 - _SLACK)) for c in self.costs
        ]
        # Facts about the remaining lanes, index i = lanes i..n-1 in search order.
        self.remaining_cost: list[float] = [0] * (n + 1)
        self.remaining_memory = [0] * (n + 1)
        self.min_memory = [0] * (n + 1)
        self.bits = [1] * (n + 1)
        smallest = math.inf
        for i in range(n - 1, -1, -1):
            self.remaining_cost[i] = self.remaining_cost[i + 1] + self.costs[i]
            self.remaining_memory[i] = self.remaining_memory[i + 1] + self.memory[i]
            smallest = min(smallest, self.memory[i])
            self.min_memory[i] = int(smallest)
            self.bits[i] = self.bits[i + 1] | (self.bits[i + 1] << units[i])
        # Sums of the k cheapest lanes: no more than k lanes fit in less than tail[k].
        self.tail = [0.0]
        for c in reversed(self.costs):
            self.tail.append(self.tail[-1] + c)
        self.capacities = list(problem.capacities)
        # Memory can only bind when the lanes together exceed the smallest device.
        self.memory_binds = sum(problem.memory) > min(problem.capacities)
        kinds: dict[tuple[float, int], int] = {}
        self.kind = [
            kinds.setdefault((s, c if self.memory_binds else 0), len(kinds))
            for s, c in zip(problem.speeds, problem.capacities, strict=True)
        ]
        # Memo keys are packed into bytes: cheap to hash, store and free.
        self.key: Callable[[int, list[float], list[int]], bytes]
        if self.memory_binds or 1 < len(kinds) < m:
            self._pack = struct.Struct("<i" + "idq" * m).pack
            self.key = self._key_general
        else:
            self._pack = struct.Struct(f"<i{m}d").pack
            self.key = self._key_identical if len(kinds) == 1 else self._key_distinct
        self.nodes = 0
        self.last_capacities: list[float] = []

    def _key_distinct(self, i: int, loads: list[float], mems: list[int]) -> bytes:
        return self._pack(i, *loads)

    def _key_identical(self, i: int, loads: list[float], mems: list[int]) -> bytes:
        return self._pack(i, *sorted(loads))

    def _key_general(self, i: int, loads: list[float], mems: list[int]) -> bytes:
        state = sorted(zip(self.kind, loads, mems, strict=True))
        return self._pack(i, *(v for device in state for v in device))

    def usable(self, i: int, room: float) -> float:
        """An upper bound on the cost of lanes i.. that fit in ``room``."""
        best = (
            self.bits[i] & ((2 << math.floor(room / self.unit * (1 + _SLACK))) - 1)
        ).bit_length()
        if self.integral:
            return best - 1
        # At most `count` lanes fit: the cheapest `count` lanes already fill the room.
        count = min(bisect.bisect_right(self.tail, room * (1 + _SLACK)) - 1, len(self.costs) - i)
        return min(room, (best - 1 + count * _UNIT_ERROR) * self.unit)

    def time_capacities(self, makespan: float) -> list[float]:
        """Per device, the load allowed under ``makespan`` (inf: no limit)."""
        total = self.remaining_cost[0]
        caps: list[float] = []
        for s in self.problem.speeds:
            if self.integral:
                caps.append(math.floor(min(makespan * s * (1 + _SLACK), total)))
            else:
                caps.append(min(makespan * s, total) * (1 + _SLACK))
        return caps

    def capacities_below(self, makespan: float) -> list[float]:
        """Per device, the load allowed to beat ``makespan`` (by the proof tolerance)."""
        total = self.remaining_cost[0]
        caps: list[float] = []
        for s in self.problem.speeds:
            if self.integral:
                # The largest integer load strictly below makespan * s.
                caps.append(min(math.ceil(makespan * s * (1 - _SLACK)) - 1, total))
            else:
                caps.append(min(makespan * s * (1 - PROOF_TOLERANCE / 2), total * (1 + _SLACK)))
        return caps

    def solve(
        self,
        caps: list[float],
        deadline: float,
        found: Callable[[list[int]], list[float] | None] | None = None,
    ) -> list[int] | None:
        """An assignment with every device's load within ``caps``, or None if none exists.

        With ``found``, the search goes on after each assignment (passed to ``found``)
        with the capacities ``found`` returns, which must not exceed the current ones,
        until it returns None or the search is exhausted: branch and bound, where
        states that failed under larger capacities stay failed.

        Raises:
            _OutOfTime: ``deadline`` passed before the answer was known.
        """
        n, m = self.problem.num_lanes, self.problem.num_devices
        costs, memory = self.costs, self.memory
        remaining_cost, remaining_memory = self.remaining_cost, self.remaining_memory
        min_memory, usable_in = self.min_memory, self.usable
        mem_caps, kind, key_of = self.capacities, self.kind, self.key
        memory_binds = self.memory_binds
        caps = list(caps)
        self.last_capacities = caps
        loads: list[float] = [0] * m
        mems = [0] * m
        place = [0] * n
        failed: set[bytes] = set()
        devices = range(m)
        version = 0

        def children(i: int) -> list[Any] | None:
            """The search frame of lane i, or None when the state is pruned."""
            key = key_of(i, loads, mems)
            if key in failed:
                return None
            left = remaining_cost[i]
            usable: float = 0
            spare = 0
            for j in devices:
                room = caps[j] - loads[j]
                if room < 0:
                    return None  # over a capacity lowered since this device was chosen
                if memory_binds:
                    free = mem_caps[j] - mems[j]
                    if free < min_memory[i]:
                        continue
                    spare += free
                if usable < left:
                    usable += left if room >= left else usable_in(i, room)
            if usable < left or (memory_binds and spare < remaining_memory[i]):
                failed.add(key)
                return None
            p, mem = costs[i], memory[i]
            seen = set()
            options: list[tuple[float, int]] = []
            for j in devices:
                room = caps[j] - loads[j] - p
                if room < 0 or (memory_binds and mems[j] + mem > mem_caps[j]):
                    continue
                if room == 0 and not memory_binds:
                    # Exact fit: any solution can swap lane i in for what fills this gap
                    # (while this capacity holds: the frame notes the capacities' version).
                    return [key, [j], 0, 0, version]
                signature = (kind[j], loads[j], mems[j])
                if signature not in seen:
                    seen.add(signature)
                    options.append((room, j))
            # Tightest fit first: it finds packings quickly when they exist.
            options.sort()
            return [key, [j for _, j in options], 0, 0, -1]

        def finish(i: int) -> bool:
            """Puts every lane from i on one device if one can take them all."""
            for j in devices:
                if caps[j] - loads[j] >= remaining_cost[i] and (
                    not memory_binds or mem_caps[j] - mems[j] >= remaining_memory[i]
                ):
                    for k in range(i, n):
                        place[k] = j
                    return True
            return False

        def report() -> bool:
            """Hands a solution to ``found``; True when the search is to go on."""
            nonlocal version
            if found is None:
                return False
            lower = found(self._unsort(place))
            if lower is None:
                return False
            caps[:] = lower
            version += 1
            return True

        if n == 0 or finish(0):
            assignment = self._unsort(place)
            if n == 0 or not report():
                return assignment
        first = children(0)
        if first is None:
            return None
        # Iterative depth-first search. A frame is [state key, devices to try, how
        # many were tried, the load before the last try, capacities' version of an
        # exact fit or -1]; loads are restored, not subtracted, so a device's load is
        # always the same float for the same lanes.
        stack: list[list[Any]] = [first]
        next_check = self.nodes + _CHECK_EVERY
        while stack:
            frame = stack[-1]
            i = len(stack) - 1
            options: list[int] = frame[1]
            tried: int = frame[2]
            if tried:
                j = options[tried - 1]
                loads[j] = frame[3]
                mems[j] -= memory[i]
            if tried == len(options):
                if 0 <= frame[4] != version:
                    # An exact fit under capacities lowered since: try the other devices.
                    rebuilt = children(i)
                    if rebuilt is not None:
                        stack[-1] = rebuilt
                        continue
                failed.add(frame[0])
                stack.pop()
                continue
            frame[2] = tried + 1
            j = options[tried]
            p = costs[i]
            frame[3] = loads[j]
            loads[j] += p
            mems[j] += memory[i]
            place[i] = j
            self.nodes += 1
            if self.nodes >= next_check:
                next_check = self.nodes + _CHECK_EVERY
                if time.perf_counter() > deadline:
                    raise _OutOfTime
                if len(failed) > _MEMO_LIMIT:
                    failed.clear()
            if loads[j] > caps[j]:
                continue  # the capacities were lowered after this frame was built
            if finish(i + 1):
                assignment = self._unsort(place)
                if not report():
                    return assignment
                if i + 1 == n:
                    continue
                # Under the lowered capacities the lanes left are searched one by one.
            child = children(i + 1)
            if child is not None:
                stack.append(child)
        return None

    def _unsort(self, place: list[int]) -> list[int]:
        assignment = [0] * len(place)
        for k, i in enumerate(self.order):
            assignment[i] = place[k]
        return assignment


def _integral(costs: Sequence[float]) -> bool:
    """Whether the costs are integers with bitsets of their sums small enough."""
    return (
        all(float(c).is_integer() for c in costs) and sum(costs) * (len(costs) + 1) <= _BITSET_BITS
    )


def _next_bound(caps: Sequence[float], speeds: Sequence[float], sums: _SubsetSums) -> float:
    """The lower bound proven when no assignment keeps every load within ``caps``.

    Some device j then has a load above ``caps[j]``: at least the next subset sum.
    """
    return min(sums.above(c) / s for c, s in zip(caps, speeds, strict=True))


def _round_up(bound: float, speeds: Sequence[float], sums: _SubsetSums) -> float:
    """``bound`` raised to the smallest makespan a device can actually reach above it.

    Some device j has ``load_j >= bound * speed_j``; loads are subset sums.
    """
    return min(sums.at_least(bound * s * (1 - _SLACK)) / s for s in set(speeds))


def _candidates(
    lower: float, upper: float, speeds: Sequence[float], sums: _SubsetSums
) -> list[float]:
    """Sorted makespans ``S / speed`` in ``[lower, upper)``, S a subset sum (integer costs)."""
    found: set[float] = set()
    for s in set(speeds):
        low = math.ceil(lower * s * (1 - _SLACK))
        high = math.floor(upper * s * (1 + _SLACK))
        window = (sums.bits >> low) & ((1 << max(high - low + 1, 0)) - 1)
        while window:
            value = (low + (window & -window).bit_length() - 1) / s
            if lower * (1 - _SLACK) <= value < upper * (1 - _SLACK):
                found.add(value)
            window &= window - 1
    return sorted(found)


class _Search:
    """The best placement known, a proven lower bound, and the ways to close the gap.

    Raises :class:`_OutOfTime` from any step once ``deadline`` passes; what was
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
        self.sums = _SubsetSums(problem.costs, self.integral)
        self.packer = _Packer(problem, self.integral)
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
        except _OutOfTime:
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
            raise ValueError(f"time_limit must be > 0 seconds, got {time_limit!r}")
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
        except _OutOfTime:
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
