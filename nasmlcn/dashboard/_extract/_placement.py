"""Where a trial's lanes run: its placement on the target devices, grouped by
the kind of lane, as the placement figure and the trial notes show it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from nasmlcn.dashboard._extract._trials import TrialRow


class LaneGroup(NamedTuple):
    """The lanes of one kind (``mlcn1:1x2``) on one device."""

    kind: str
    n_lanes: int
    time: float
    """Their predicted time on the device (sum of lane costs / device speed)."""


class DevicePlacement(NamedTuple):
    name: str
    speed: float
    lanes: tuple[int, ...]
    groups: tuple[LaneGroup, ...]
    time: float
    memory_bytes: float
    memory_limit_bytes: float | None


class Placement(NamedTuple):
    """Where a trial's lanes run: one entry per target device."""

    number: int
    label: str
    strategy: str
    time_unit: str
    imbalance: float | None
    devices: tuple[DevicePlacement, ...]


def lane_kind(lane: Mapping[str, Any]) -> str:
    """``{"type": "mlcn1", "width": 1, "depth": 2}`` -> ``mlcn1:1x2`` (lane syntax)."""
    return f"{lane.get('type', '?')}:{lane.get('width', '?')}x{lane.get('depth', '?')}"


def group_lanes(kinds: Sequence[str]) -> str:
    """``["a", "b", "a"]`` -> ``2*a,b`` (most frequent first, like ``lane_mix``)."""
    counts = Counter(kinds)
    return ",".join(
        k if n == 1 else f"{n}*{k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])
    )


def placement(row: TrialRow) -> Placement | None:
    """Where ``row``'s lanes run (None when it has no plan, e.g. a failed sample)."""
    plan = row.attrs.get("plan") or {}
    devices = plan.get("devices") or []
    if not devices:
        return None
    arch_lanes = (row.attrs.get("arch") or {}).get("lanes") or []
    kinds = [lane_kind(lane) for lane in arch_lanes]
    costs = list(plan.get("lane_costs") or [])
    out = []
    for device in devices:
        speed = float(device.get("speed") or 1.0)
        lanes = tuple(int(i) for i in device.get("lanes") or ())
        time: dict[str, float] = {}
        count: Counter[str] = Counter()
        for i in lanes:
            kind = kinds[i] if i < len(kinds) else f"lane {i}"
            count[kind] += 1
            time[kind] = time.get(kind, 0.0) + (costs[i] / speed if i < len(costs) else 0.0)
        groups = tuple(
            LaneGroup(k, n, time[k]) for k, n in sorted(count.items(), key=lambda kv: -time[kv[0]])
        )
        limit = device.get("memory_limit_bytes")
        out.append(
            DevicePlacement(
                str(device.get("name", "?")),
                speed,
                lanes,
                groups,
                float(device.get("time") or sum(g.time for g in groups)),
                float(device.get("memory_bytes") or 0.0),
                float(limit) if isinstance(limit, (int, float)) else None,
            )
        )
    return Placement(
        row.number, row.label, str(plan.get("strategy", "?")), row.time_unit, row.imbalance,
        tuple(out),
    )  # fmt: skip
