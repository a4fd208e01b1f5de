"""Search spaces: fixed Optuna distributions in, a fitting MLCN out.

A space is declared in a TOML file (``search_spaces/*.toml``) whose ``kind``
picks the implementation from :data:`SPACE_KINDS`. Every space keeps the same
parameter names and distributions in every trial (Optuna's samplers learn from
them; NSGA-II crosses them over), whatever the devices: the devices only change
how parameters become a model (:meth:`SearchSpace.build`).

Besides the architecture, a file may open every model and training choice as a
dimension (absent or a single value: fixed for the whole study):

* model settings, top level: ``routing`` and ``decoder`` (a name, or a list of
  names: categorical), ``weight_sharing`` (true/false, or ``[false, true]``),
  ``lane_dropout`` (a number in [0, 1), or ``[low, high]``: uniform);
* ``[training]``: ``lr = [low, high]`` (log-uniform), ``batch_size``,
  ``lr_policy`` and ``batch_policy`` (lists: categorical; the registries'
  names, see ``nasmlcn train --help``).

Every key of the file, and of its ``[training]`` table, must be one its kind
reads (:data:`COMMON_KEYS` and the kind's :attr:`SearchSpace.keys`, declared
beside the code that reads them): a misspelled key is refused with a "did you
mean", never replaced by its default in silence.

A trial's model settings go into its spec (and the cost context its lanes are
costed in); its training settings stay the trial's parameters, which
``TrialTraining.of`` alone reads (``search/_trial/repeats.py``).
"""

from __future__ import annotations

import itertools
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nasmlcn._toml import check_keys
from nasmlcn.costs import CostContext, CostModel
from nasmlcn.errors import SearchError
from nasmlcn.hardware import DeviceSpec
from nasmlcn.planning import Bucket, FlopsLimit, make_buckets
from nasmlcn.registry import Registry
from nasmlcn.specs import DECODERS, DEFAULT_ROUTING, LaneSpec, MLCNSpec, lane_mix_ranks

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
        repairs: What was changed to make the model fit, in words.
        repaired_lanes: How many of the model's lanes come from a repair (a lane
            outside the sampled parameters, or one changed to fit).
        feasible: False when the model cannot fit (spaces without repair).
        reason: Why it is infeasible.
    """

    spec: MLCNSpec
    assignment: tuple[int, ...] | None = None
    repairs: tuple[str, ...] = ()
    repaired_lanes: int = 0
    feasible: bool = True
    reason: str = ""

    def canonical(self) -> Candidate:
        """The same model with its lanes in canonical order: grouped by kind as the
        lane mix writes them (most frequent first), equal lanes by device. Lane
        order does not change what a model computes (:func:`format_lane_mix`), so
        two trials whose lanes differ only in order train one network, spelled one
        way, and are one model to the search's repeats (``search/_trial/repeats.py``)."""
        lanes = self.spec.lanes
        ranks = lane_mix_ranks(lanes)
        assignment = self.assignment

        def key(i: int) -> tuple[int, int, int]:
            return (ranks[lanes[i]], assignment[i] if assignment else 0, i)

        order = sorted(range(len(lanes)), key=key)
        if order == list(range(len(lanes))):
            return self
        return replace(
            self,
            spec=replace(self.spec, lanes=tuple(lanes[i] for i in order)),
            assignment=tuple(assignment[i] for i in order) if assignment else assignment,
        )


class SearchSpace(ABC):
    """A search space read from a file.

    Args:
        name: Its name (the file's stem).
        data: The parsed file.
        source: Where it was read from.
    """

    kind: str = ""
    keys: tuple[str, ...] = ()
    """The top-level keys this kind reads besides :data:`COMMON_KEYS`; any other
    key of the file is refused (declared by each kind beside its reading code)."""
    placement: str = "greedy"
    """How a trial's plan places lanes with no assignment of their own: ``greedy``
    (a placer), or ``buckets`` (the space assigns every lane to a device)."""

    def __init__(self, name: str, data: Mapping[str, Any], source: str) -> None:
        self.name = name
        self.source = source
        where = f"search space file {source!r}"
        check_keys(data, (*COMMON_KEYS, *self.keys), where, SearchError)
        self.data = dict(data)
        self.description = str(data.get("description", ""))
        origin = f"space {name!r}"
        self.choices = {
            key: _model_choice(data, key, costliest, default, origin)
            for key, (costliest, default) in MODEL_CHOICES.items()
        }
        # The study-wide setting (the cost context of setup and prepare, the head's
        # memory reserve): the fixed value, or the costliest one opened, so that
        # what fits under it fits under every trial's.
        self.routing = str(self.choices["routing"][0])
        self.decoder = str(self.choices["decoder"][0])
        self.weight_sharing = bool(self.choices["weight_sharing"][0])
        self.lane_dropout = _lane_dropout(data.get("lane_dropout", 0.0), origin)
        self.training = _training_dimensions(data.get("training", {}), origin, where)

    def prepare(self, ctx: SpaceContext) -> None:  # noqa: B027 - optional hook, no-op by default
        """Called once per search, before :meth:`distributions` is read, with the
        study's devices (fixed for its whole life): a space whose choices depend on
        them (the lanes that fit, say) works them out here."""

    @abstractmethod
    def model_distributions(self) -> dict[str, BaseDistribution]:
        """The architecture parameters."""

    @abstractmethod
    def build_candidate(self, params: Mapping[str, Any], ctx: SpaceContext) -> Candidate:
        """The model of ``params`` for ``ctx``'s devices (``ctx`` already holds the
        trial's model settings; :meth:`make_spec` gives them to the spec)."""

    def build(self, params: Mapping[str, Any], ctx: SpaceContext) -> Candidate:
        """The model of ``params`` for ``ctx``'s devices, with the trial's routing,
        decoder, weight sharing (costed in) and lane dropout, its lanes in
        canonical order (:meth:`Candidate.canonical`)."""
        candidate = self.build_candidate(params, self.trial_context(params, ctx))
        fixed = self.lane_dropout if isinstance(self.lane_dropout, float) else 0.0
        dropout = float(params.get("lane_dropout", fixed))
        if dropout != candidate.spec.lane_dropout:
            candidate = replace(candidate, spec=replace(candidate.spec, lane_dropout=dropout))
        return candidate.canonical()

    def trial_context(self, params: Mapping[str, Any], ctx: SpaceContext) -> SpaceContext:
        """``ctx`` with the trial's routing, decoder and weight sharing in its cost
        context (the lanes cost what the model built from them will)."""
        settings = {key: params.get(key, choices[0]) for key, choices in self.choices.items()}
        c = ctx.cost_context
        if all(getattr(c, key) == value for key, value in settings.items()):
            return ctx
        return replace(ctx, cost_context=replace(c, **settings))

    def distributions(self) -> dict[str, BaseDistribution]:
        """Every parameter, in a fixed order: the architecture's, the opened model
        settings, then training's."""
        return {
            **self.model_distributions(),
            **self.setting_distributions(),
            **self.training_distributions(),
        }

    def setting_distributions(self) -> dict[str, BaseDistribution]:
        """The model settings the file opens (routing, decoder, weight sharing, lane
        dropout)."""
        from optuna.distributions import CategoricalDistribution, FloatDistribution

        out: dict[str, BaseDistribution] = {
            key: CategoricalDistribution(choices)
            for key, choices in self.choices.items()
            if len(choices) > 1
        }
        if isinstance(self.lane_dropout, tuple):
            out["lane_dropout"] = FloatDistribution(*self.lane_dropout)
        return out

    def training_distributions(self) -> dict[str, BaseDistribution]:
        from optuna.distributions import CategoricalDistribution, FloatDistribution

        out: dict[str, BaseDistribution] = {}
        if "lr" in self.training:
            low, high = self.training["lr"]
            out["lr"] = FloatDistribution(low, high, log=True)
        for key in ("batch_size", "lr_policy", "batch_policy"):
            if key in self.training:
                out[key] = CategoricalDistribution(self.training[key])
        return out

    def make_spec(self, lanes: Any, ctx: SpaceContext) -> MLCNSpec:
        """The MLCN of ``lanes`` with ``ctx``'s model settings (the trial's, in
        :meth:`build_candidate`)."""
        return ctx.cost_context.spec(lanes)

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


def _model_choice(
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


def _lane_dropout(value: Any, origin: str) -> float | tuple[float, float]:
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


def _training_dimensions(data: Any, origin: str, where: str) -> dict[str, Any]:
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
        else:  # lr_policy, batch_policy (check_keys refused every other key)
            out[key] = _policies(key, value, origin)
    return out


def _policies(key: str, value: Any, origin: str) -> tuple[str, ...]:
    """A list of registered lr or batch policies (a categorical dimension)."""
    from nasmlcn.training import BATCH_POLICIES, LR_POLICIES

    registry = LR_POLICIES if key == "lr_policy" else BATCH_POLICIES
    if not isinstance(value, list) or not value or len(set(map(str, value))) != len(value):
        raise SearchError(
            f"{origin}: training.{key} must list {registry.kind} names, e.g. "
            f"{json.dumps(list(registry.names())[:2])}"
        )
    for name in value:
        if not isinstance(name, str) or name not in registry:
            raise SearchError(f"{origin}: training.{key}: {registry.unknown_message(str(name))}")
    return tuple(value)


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


LANE_RANGE_KEYS = ("lane_types", "width", "depth")
"""The keys :func:`lane_ranges` reads (a kind that calls it declares them)."""


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
