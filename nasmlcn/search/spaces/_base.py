"""Search spaces: fixed Optuna distributions in, a fitting MLCN out.

A space is declared in a TOML file (``search_spaces/*.toml``) whose ``kind``
picks the implementation from :data:`SPACE_KINDS`. Every space keeps the same
parameter names and distributions in every trial (Optuna's samplers learn from
them; NSGA-II crosses them over), whatever the devices: the devices only change
how parameters become a model (:meth:`SearchSpace.build`).
"""

from __future__ import annotations

import itertools
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nasmlcn.costs import CostContext, CostModel
from nasmlcn.errors import SearchError
from nasmlcn.hardware import DeviceSpec
from nasmlcn.planning import Bucket, FlopsLimit, make_buckets
from nasmlcn.registry import Registry
from nasmlcn.specs import DECODERS, DEFAULT_ROUTING, ROUTINGS, LaneSpec, MLCNSpec

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution


@dataclass(frozen=True)
class SpaceContext:
    """What a space needs to turn parameters into a model for these devices.

    Attributes:
        devices: Target devices.
        cost_model: Predicts lane load and memory.
        cost_context: Input shape, classes, batch size.
        flops: Per-device load limit (bucket spaces).
        reserved_memory: Per device, bytes kept back (the head, on device 0).
        rewards_cost: Whether the study rewards a cheaper model: an objective to
            minimise (latency, inference, memory, params) or a latency budget.
            An accuracy-only study does not, and bucket spaces then fill every
            bucket (the thesis's setting) instead of searching how full.
    """

    devices: tuple[DeviceSpec, ...]
    cost_model: CostModel
    cost_context: CostContext
    flops: FlopsLimit
    reserved_memory: tuple[int, ...] = ()
    rewards_cost: bool = True


@dataclass(frozen=True)
class Candidate:
    """A model built from one trial's parameters.

    Attributes:
        spec: The MLCN.
        assignment: Lane -> device, when the space places lanes itself (buckets).
        training: Training settings the space searched (``lr``, ``batch_size``).
        repairs: What was changed to make the model fit, in words.
        repaired_lanes: How many of the model's lanes come from a repair (a lane
            outside the sampled parameters, or one changed to fit).
        feasible: False when the model cannot fit (spaces without repair).
        reason: Why it is infeasible.
    """

    spec: MLCNSpec
    assignment: tuple[int, ...] | None = None
    training: Mapping[str, Any] = field(default_factory=dict)
    repairs: tuple[str, ...] = ()
    repaired_lanes: int = 0
    feasible: bool = True
    reason: str = ""


class SearchSpace(ABC):
    """A search space read from a file.

    Args:
        name: Its name (the file's stem).
        data: The parsed file.
        source: Where it was read from.
    """

    kind: str = ""
    placement: str = "greedy"
    """How a trial's plan places lanes with no assignment of their own: ``greedy``
    (a placer), or ``buckets`` (the space assigns every lane to a device)."""

    def __init__(self, name: str, data: Mapping[str, Any], source: str) -> None:
        self.name = name
        self.source = source
        self.data = dict(data)
        self.description = str(data.get("description", ""))
        origin = f"space {name!r}"
        self.routing = str(data.get("routing", DEFAULT_ROUTING))
        if self.routing not in ROUTINGS:
            raise SearchError(f"{origin}: routing must be one of {', '.join(ROUTINGS)}")
        self.decoder = str(data.get("decoder", "full"))
        if self.decoder not in DECODERS:
            raise SearchError(f"{origin}: decoder must be one of {', '.join(DECODERS)}")
        self.training = _training_dimensions(data.get("training", {}), origin)

    def prepare(self, ctx: SpaceContext) -> None:  # noqa: B027 - optional hook, no-op by default
        """Called once per search, before :meth:`distributions` is read, with the
        study's devices (fixed for its whole life): a space whose choices depend on
        them (the lanes that fit, say) works them out here."""

    @abstractmethod
    def model_distributions(self) -> dict[str, BaseDistribution]:
        """The architecture parameters."""

    @abstractmethod
    def build(self, params: Mapping[str, Any], ctx: SpaceContext) -> Candidate:
        """The model of ``params`` for ``ctx``'s devices."""

    def distributions(self) -> dict[str, BaseDistribution]:
        """Every parameter, in a fixed order: the architecture's, then training's."""
        return {**self.model_distributions(), **self.training_distributions()}

    def training_distributions(self) -> dict[str, BaseDistribution]:
        from optuna.distributions import CategoricalDistribution, FloatDistribution

        out: dict[str, BaseDistribution] = {}
        if "lr" in self.training:
            low, high = self.training["lr"]
            out["lr"] = FloatDistribution(low, high, log=True)
        if "batch_size" in self.training:
            out["batch_size"] = CategoricalDistribution(self.training["batch_size"])
        return out

    def training_values(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {k: params[k] for k in ("lr", "batch_size") if k in params}

    def make_spec(self, lanes: Any, ctx: SpaceContext) -> MLCNSpec:
        c = ctx.cost_context
        return MLCNSpec(
            tuple(lanes),
            num_classes=c.num_classes,
            input_shape=c.input_shape,
            routing_iterations=c.routing_iterations,
            routing=self.routing,
            decoder=self.decoder,
        )

    def describe(self) -> dict[str, Any]:
        """What a study stores about its space; ``content`` (the file's settings, without
        its description) is part of the study's identity (:func:`space_changes`)."""
        content = {k: v for k, v in self.data.items() if k != "description"}
        return {
            "name": self.name,
            "kind": self.kind,
            "source": self.source,
            "description": self.description,
            "params": {name: repr(d) for name, d in self.distributions().items()},
            "content": json.loads(json.dumps(content, default=str)),
        }


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


def _training_dimensions(data: Any, origin: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise SearchError(f"{origin}: [training] must be a table")
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "lr":
            if (
                not isinstance(value, list)
                or len(value) != 2
                or not all(isinstance(v, (int, float)) and v > 0 for v in value)
                or value[0] >= value[1]
            ):
                raise SearchError(f"{origin}: training.lr must be [low, high] with 0 < low < high")
            out["lr"] = (float(value[0]), float(value[1]))
        elif key == "batch_size":
            if (
                not isinstance(value, list)
                or not value
                or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
            ):
                raise SearchError(f"{origin}: training.batch_size must list batch sizes > 0")
            out["batch_size"] = tuple(value)
        else:
            raise SearchError(
                f"{origin}: unknown training dimension {key!r}; known: lr, batch_size"
            )
    return out


SPACE_KINDS: Registry[type[SearchSpace]] = Registry("search space kind")


def int_range(
    data: Mapping[str, Any], key: str, origin: str, default: tuple[int, int]
) -> tuple[int, int]:
    """A ``[low, high]`` integer range with 1 <= low <= high."""
    value = data.get(key, list(default))
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or not 1 <= value[0] <= value[1]
    ):
        raise SearchError(
            f"{origin}: {key} must be [low, high] with 1 <= low <= high, got {value!r}"
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


def lane_ranges(
    data: Mapping[str, Any], origin: str
) -> tuple[tuple[str, ...], tuple[int, int], tuple[int, int]]:
    """A space's lane types and its width and depth ranges (default 1..5 each)."""
    return (
        lane_types(data, origin),
        int_range(data, "width", origin, (1, 5)),
        int_range(data, "depth", origin, (1, 5)),
    )


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


def space_buckets(ctx: SpaceContext) -> list[Bucket]:
    """Fresh buckets of ``ctx``'s devices (thesis Algorithm 4), the head's memory kept back."""
    return make_buckets(
        ctx.devices,
        ctx.flops,
        ctx.cost_model,
        ctx.cost_context,
        reserved_memory=ctx.reserved_memory,
    )
