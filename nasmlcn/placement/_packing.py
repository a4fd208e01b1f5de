"""The decision procedure of the ``optimal`` placer: do the lanes pack into the
devices with given time and memory capacities? A depth-first search with the
pruning rules :mod:`nasmlcn.placement._optimal` describes (symmetry, memo, the
subset-sum waste bound, dominance), and the subset-sum bitsets it bounds with."""

from __future__ import annotations

import bisect
import math
import struct
import time
from collections.abc import Callable, Sequence
from typing import Any

from nasmlcn.placement._problem import PlacementProblem

PROOF_TOLERANCE = 1e-9
"""A makespan within this relative distance of the lower bound is proven optimal."""

SLACK = 1e-12
"""Relative slack on capacities: float sums of equal sets may differ in the last bits."""

BITSET_BITS = 1 << 28
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


class OutOfTime(Exception):
    """The deadline passed during a search."""


class SubsetSums:
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
            self.left = all_sums(costs[:half])
            self.right = all_sums(costs[half:])

    def at_least(self, target: float) -> float:
        """A value <= the smallest subset sum >= ``target`` (inf when none is)."""
        if target > self.total * (1 + SLACK):
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


def all_sums(values: Sequence[float]) -> list[float]:
    """Sorted distinct sums of all subsets of ``values``."""
    sums = {0.0}
    for v in values:
        sums |= {s + v for s in sums}
    return sorted(sums)


class Packer:
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
        steps = max(1 << 10, min(_FLOAT_UNITS, BITSET_BITS // (n + 1)))
        self.unit = 1.0 if integral or total == 0 else total / steps
        units = [
            int(c) if integral else math.floor(c / self.unit * (1 - SLACK)) for c in self.costs
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
        best = (self.bits[i] & ((2 << math.floor(room / self.unit * (1 + SLACK))) - 1)).bit_length()
        if self.integral:
            return best - 1
        # At most `count` lanes fit: the cheapest `count` lanes already fill the room.
        count = min(bisect.bisect_right(self.tail, room * (1 + SLACK)) - 1, len(self.costs) - i)
        return min(room, (best - 1 + count * _UNIT_ERROR) * self.unit)

    def time_capacities(self, makespan: float) -> list[float]:
        """Per device, the load allowed under ``makespan`` (inf: no limit)."""
        total = self.remaining_cost[0]
        caps: list[float] = []
        for s in self.problem.speeds:
            if self.integral:
                caps.append(math.floor(min(makespan * s * (1 + SLACK), total)))
            else:
                caps.append(min(makespan * s, total) * (1 + SLACK))
        return caps

    def capacities_below(self, makespan: float) -> list[float]:
        """Per device, the load allowed to beat ``makespan`` (by the proof tolerance)."""
        total = self.remaining_cost[0]
        caps: list[float] = []
        for s in self.problem.speeds:
            if self.integral:
                # The largest integer load strictly below makespan * s.
                caps.append(min(math.ceil(makespan * s * (1 - SLACK)) - 1, total))
            else:
                caps.append(min(makespan * s * (1 - PROOF_TOLERANCE / 2), total * (1 + SLACK)))
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
            OutOfTime: ``deadline`` passed before the answer was known.
        """
        caps = list(caps)
        self.last_capacities = caps
        return _DepthFirst(self, caps, found).run(deadline)

    def _unsort(self, place: list[int]) -> list[int]:
        assignment = [0] * len(place)
        for k, i in enumerate(self.order):
            assignment[i] = place[k]
        return assignment


class _DepthFirst:
    """One search of :meth:`Packer.solve`: the lanes placed so far, the devices'
    loads and memory, and the states that failed.

    ``caps`` is the packer's list of time capacities, lowered in place when
    ``found`` asks for a better packing (``version`` counts the lowerings).
    """

    def __init__(
        self,
        packer: Packer,
        caps: list[float],
        found: Callable[[list[int]], list[float] | None] | None,
    ) -> None:
        n, m = packer.problem.num_lanes, packer.problem.num_devices
        self.packer = packer
        self.caps = caps
        self.found = found
        self.loads: list[float] = [0] * m
        self.mems = [0] * m
        self.place = [0] * n
        self.failed: set[bytes] = set()
        self.devices = range(m)
        self.version = 0

    def children(self, i: int) -> list[Any] | None:
        """The search frame of lane i, or None when the state is pruned."""
        packer, caps, loads, mems = self.packer, self.caps, self.loads, self.mems
        memory_binds, mem_caps = packer.memory_binds, packer.capacities
        key = packer.key(i, loads, mems)
        if key in self.failed:
            return None
        left = packer.remaining_cost[i]
        min_memory = packer.min_memory[i]
        usable: float = 0
        spare = 0
        for j in self.devices:
            room = caps[j] - loads[j]
            if room < 0:
                return None  # over a capacity lowered since this device was chosen
            if memory_binds:
                free = mem_caps[j] - mems[j]
                if free < min_memory:
                    continue
                spare += free
            if usable < left:
                usable += left if room >= left else packer.usable(i, room)
        if usable < left or (memory_binds and spare < packer.remaining_memory[i]):
            self.failed.add(key)
            return None
        return self._options(i, key)

    def _options(self, i: int, key: bytes) -> list[Any]:
        """The frame of lane i: the devices it fits, tightest first (or the one it fills)."""
        packer, caps, loads, mems = self.packer, self.caps, self.loads, self.mems
        memory_binds, mem_caps, kind = packer.memory_binds, packer.capacities, packer.kind
        p, mem = packer.costs[i], packer.memory[i]
        seen = set()
        options: list[tuple[float, int]] = []
        for j in self.devices:
            room = caps[j] - loads[j] - p
            if room < 0 or (memory_binds and mems[j] + mem > mem_caps[j]):
                continue
            if room == 0 and not memory_binds:
                # Exact fit: any solution can swap lane i in for what fills this gap
                # (while this capacity holds: the frame notes the capacities' version).
                return [key, [j], 0, 0, self.version]
            signature = (kind[j], loads[j], mems[j])
            if signature not in seen:
                seen.add(signature)
                options.append((room, j))
        # Tightest fit first: it finds packings quickly when they exist.
        options.sort()
        return [key, [j for _, j in options], 0, 0, -1]

    def finish(self, i: int) -> bool:
        """Puts every lane from i on one device if one can take them all."""
        packer, caps, loads, mems = self.packer, self.caps, self.loads, self.mems
        for j in self.devices:
            if caps[j] - loads[j] >= packer.remaining_cost[i] and (
                not packer.memory_binds
                or packer.capacities[j] - mems[j] >= packer.remaining_memory[i]
            ):
                for k in range(i, len(self.place)):
                    self.place[k] = j
                return True
        return False

    def report(self) -> bool:
        """Hands a solution to ``found``; True when the search is to go on."""
        if self.found is None:
            return False
        lower = self.found(self.packer._unsort(self.place))
        if lower is None:
            return False
        self.caps[:] = lower
        self.version += 1
        return True

    def run(self, deadline: float) -> list[int] | None:
        """The search: an assignment, or None when there is none (or no better one).

        Raises:
            OutOfTime: ``deadline`` passed before the answer was known.
        """
        packer, caps, loads, mems, place = self.packer, self.caps, self.loads, self.mems, self.place
        costs, memory, failed, children = packer.costs, packer.memory, self.failed, self.children
        n = len(place)
        if n == 0 or self.finish(0):
            assignment = packer._unsort(place)
            if n == 0 or not self.report():
                return assignment
        first = children(0)
        if first is None:
            return None
        # Iterative depth-first search. A frame is [state key, devices to try, how
        # many were tried, the load before the last try, capacities' version of an
        # exact fit or -1]; loads are restored, not subtracted, so a device's load is
        # always the same float for the same lanes.
        stack: list[list[Any]] = [first]
        next_check = packer.nodes + _CHECK_EVERY
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
                if 0 <= frame[4] != self.version:
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
            frame[3] = loads[j]
            loads[j] += costs[i]
            mems[j] += memory[i]
            place[i] = j
            packer.nodes += 1
            if packer.nodes >= next_check:
                next_check = packer.nodes + _CHECK_EVERY
                if time.perf_counter() > deadline:
                    raise OutOfTime
                if len(failed) > _MEMO_LIMIT:
                    failed.clear()
            if loads[j] > caps[j]:
                continue  # the capacities were lowered after this frame was built
            if self.finish(i + 1):
                assignment = packer._unsort(place)
                if not self.report():
                    return assignment
                if i + 1 == n:
                    continue
                # Under the lowered capacities the lanes left are searched one by one.
            child = children(i + 1)
            if child is not None:
                stack.append(child)
        return None
