"""Reading a search space file's values, each checked with a one-line error that
names the space and the key: the model settings it may open (:data:`MODEL_CHOICES`),
``lane_dropout``, the ``[training]`` dimensions, integer ranges, lane types and lane
ranges; and :func:`space_changes`, how a study's stored space differs from the file
now. :class:`~nasmlcn.search.spaces.SearchSpace` and each kind read their files with
these; a trial reads none of it."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from nasmlcn._toml import check_keys
from nasmlcn.errors import SearchError
from nasmlcn.specs import DECODERS, DEFAULT_ROUTING, LaneSpec


def space_changes(stored: Any, current: Mapping[str, Any]) -> list[str]:
    """How the space a study was made with (``stored``, its :meth:`SearchSpace.describe`)
    differs from ``current``, one entry per changed setting (``width max 4 (now 8)``).

    A study made before ``content`` was stored is compared by what it has: the
    kind and the parameters' distributions.
    """
    if not isinstance(stored, Mapping):
        return []
    if "content" in stored:
        before = {"kind": stored.get("kind"), **_flatten(stored["content"])}
        after = {"kind": current.get("kind"), **_flatten(current["content"])}
    else:
        before = {"kind": stored.get("kind"), **_flatten(stored.get("params", {}), "params.")}
        after = {"kind": current.get("kind"), **_flatten(current.get("params", {}), "params.")}
    changes = []
    for key in sorted(before.keys() | after.keys(), key=lambda k: (k != "kind", k)):
        old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
        if old != new:
            changes.append(_describe_change(key, old, new))
    return changes


_ABSENT = object()


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"training": {"lr": [...]}}`` -> ``{"training.lr": [...]}``."""
    if not isinstance(data, Mapping):
        return {prefix.rstrip("."): data} if prefix else {}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _describe_change(key: str, old: Any, new: Any) -> str:
    def show(value: Any) -> str:
        if value is _ABSENT:
            return "absent"
        if isinstance(value, str) and key.startswith("params."):
            return value  # a distribution's repr
        return repr(value)

    ranges = all(isinstance(v, list) and len(v) == 2 for v in (old, new))
    if ranges and old[0] == new[0]:
        return f"{key} max {show(old[1])} (now {show(new[1])})"
    if ranges and old[1] == new[1]:
        return f"{key} min {show(old[0])} (now {show(new[0])})"
    return f"{key} {show(old)} (now {show(new)})"


MODEL_CHOICES: dict[str, tuple[tuple[Any, ...], Any]] = {
    "routing": (("classwise", "vector"), DEFAULT_ROUTING),
    "decoder": (DECODERS, "full"),
    "weight_sharing": ((False, True), False),
}
"""Categorical model settings a space file may open: the values, costliest first
(the analytic cost model's order: ``classwise`` routing computes and keeps more;
the full decoder reads more; unshared transforms are more weights), and the
default."""

TRAINING_DIMENSIONS = ("lr", "batch_size", "lr_policy", "batch_policy")
"""The keys a ``[training]`` table may open (its only keys)."""

COMMON_KEYS = (
    "kind",
    "description",
    *MODEL_CHOICES,
    "lane_dropout",
    "training",
)
"""The top-level keys every space file may hold (read by :class:`SearchSpace`);
each kind adds its own (:attr:`SearchSpace.keys`)."""


def model_choice(
    data: Mapping[str, Any], key: str, costliest: Sequence[Any], default: Any, origin: str
) -> tuple[Any, ...]:
    """A model setting's values, costliest first: one (fixed) or several (a
    categorical dimension); a list with one value fixes it too."""
    value = data.get(key, default)
    values = value if isinstance(value, list) else [value]

    def known(v: Any) -> bool:  # exact types: TOML's true is not 1
        return any(type(v) is type(c) and v == c for c in costliest)

    if not values or not all(known(v) for v in values) or len(set(values)) != len(values):
        names = ", ".join(json.dumps(c) for c in costliest)
        raise SearchError(
            f"{origin}: {key} must be one of {names}, or a list of them (a searched "
            f"dimension); got {value!r}"
        )
    return tuple(c for c in costliest if any(type(v) is type(c) and v == c for v in values))


def lane_dropout(value: Any, origin: str) -> float | tuple[float, float]:
    """Fixed lane dropout in [0, 1), or a searched ``[low, high]`` range in it."""

    def fraction(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1

    if isinstance(value, list):
        if len(value) == 2 and all(fraction(v) for v in value) and value[0] < value[1]:
            return float(value[0]), float(value[1])
    elif fraction(value):
        return float(value)
    raise SearchError(
        f"{origin}: lane_dropout must be a number in [0, 1) or a range [low, high] "
        f"with 0 <= low < high < 1; got {value!r}"
    )


def training_dimensions(data: Any, origin: str, where: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise SearchError(f"{origin}: [training] must be a table")
    check_keys(data, TRAINING_DIMENSIONS, where, SearchError, inside="[training]")
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "lr":
            if (
                not isinstance(value, list)
                or len(value) != 2
                or not all(isinstance(v, (int, float)) and v > 0 for v in value)
                or value[0] >= value[1]
            ):
                raise SearchError(
                    f"{origin}: training.lr must be [low, high] with 0 < low < high, got {value!r}"
                )
            out["lr"] = (float(value[0]), float(value[1]))
        elif key == "batch_size":
            if (
                not isinstance(value, list)
                or not value
                or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
                or len(set(value)) != len(value)
            ):
                raise SearchError(
                    f"{origin}: training.batch_size must list different batch sizes > 0, "
                    f"got {value!r}"
                )
            out["batch_size"] = tuple(value)
        else:  # lr_policy, batch_policy (check_keys refused every other key)
            out[key] = _policies(key, value, origin)
    return out


def _policies(key: str, value: Any, origin: str) -> tuple[str, ...]:
    """A list of registered lr or batch policies (a categorical dimension)."""
    from nasmlcn.training import BATCH_POLICIES, LR_POLICIES

    registry = LR_POLICIES if key == "lr_policy" else BATCH_POLICIES
    if not isinstance(value, list) or not value or len(set(map(str, value))) != len(value):
        raise SearchError(
            f"{origin}: training.{key} must list different {registry.kind} names, e.g. "
            f"{json.dumps(list(registry.names())[:2])}, got {value!r}"
        )
    for name in value:
        if not isinstance(name, str) or name not in registry:
            raise SearchError(f"{origin}: training.{key}: {registry.unknown_message(str(name))}")
    return tuple(value)


def int_range(
    data: Mapping[str, Any],
    key: str,
    origin: str,
    default: tuple[int, int],
    most: int | None = None,
) -> tuple[int, int]:
    """A ``[low, high]`` integer range with 1 <= low <= high (<= ``most``)."""
    value = data.get(key, list(default))
    top = "high" if most is None else f"high <= {most}"
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or not 1 <= value[0] <= value[1]
        or (most is not None and value[1] > most)
    ):
        raise SearchError(
            f"{origin}: {key} must be [low, high] with 1 <= low <= {top}, got {value!r}"
        )
    return int(value[0]), int(value[1])


def positive_int(data: Mapping[str, Any], key: str, origin: str, default: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SearchError(f"{origin}: {key} must be an integer >= 1, got {value!r}")
    return value


def lane_types(data: Mapping[str, Any], origin: str) -> tuple[str, ...]:
    from nasmlcn.specs import LANE_TYPES

    value = data.get("lane_types", ["mlcn1", "mlcn2"])
    if not isinstance(value, list) or not value:
        raise SearchError(f'{origin}: lane_types must list lane types, e.g. ["mlcn1", "mlcn2"]')
    for t in value:
        if t not in LANE_TYPES:
            raise SearchError(f"{origin}: {LANE_TYPES.unknown_message(str(t))}")
    return tuple(value)


LANE_RANGE_KEYS = ("lane_types", "width", "depth")
"""The keys :func:`lane_ranges` reads (a kind that calls it declares them)."""


def lane_ranges(
    data: Mapping[str, Any], origin: str
) -> tuple[tuple[str, ...], tuple[int, int], tuple[int, int]]:
    """A space's lane types and its width and depth ranges (default 1..5 each),
    spanning at most :data:`MAX_RANGE_LANES` lanes."""
    from nasmlcn.specs import MAX_DEPTH, MAX_WIDTH

    types = lane_types(data, origin)
    width = int_range(data, "width", origin, (1, 5), MAX_WIDTH)
    depth = int_range(data, "depth", origin, (1, 5), MAX_DEPTH)
    spanned = len(types) * (width[1] - width[0] + 1) * (depth[1] - depth[0] + 1)
    if spanned > MAX_RANGE_LANES:
        raise SearchError(
            f"{origin}: width {list(width)} x depth {list(depth)} x {len(types)} lane "
            f"type(s) span {spanned:,} lanes; at most {MAX_RANGE_LANES:,} (every one is "
            "costed when the study starts): narrow a range"
        )
    return types, width, depth


MAX_RANGE_LANES = 10_000
"""The most lanes a space's ranges may span (20,000 took 12 s to cost on 2 cores)."""


def lanes_in_ranges(
    types: tuple[str, ...], width: tuple[int, int], depth: tuple[int, int]
) -> tuple[LaneSpec, ...]:
    """Every lane of the given types, width range and depth range, in a fixed order."""
    return tuple(
        LaneSpec(t, w, d)
        for t, w, d in itertools.product(
            types, range(width[0], width[1] + 1), range(depth[0], depth[1] + 1)
        )
    )
