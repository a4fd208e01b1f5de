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
``TrialTraining.of`` alone reads (``search/_run/repeats.py``).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nasmlcn._toml import check_keys
from nasmlcn.costs import CostContext, CostModel
from nasmlcn.errors import PlacementError, SearchError
from nasmlcn.hardware import DeviceSpec
from nasmlcn.placement import greedy_assignment
from nasmlcn.planning import Bucket, FlopsLimit, make_buckets, placement_problem
from nasmlcn.registry import Registry
from nasmlcn.search.spaces._values import (
    COMMON_KEYS,
    MODEL_CHOICES,
    lane_dropout,
    model_choice,
    training_dimensions,
)
from nasmlcn.specs import MLCNSpec, lane_mix_ranks

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
        way, and are one model to the search's repeats (``search/_run/repeats.py``)."""
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
            key: model_choice(data, key, costliest, default, origin)
            for key, (costliest, default) in MODEL_CHOICES.items()
        }
        # The study-wide setting (the cost context of setup and prepare, the head's
        # memory reserve): the fixed value, or the costliest one opened, so that
        # what fits under it fits under every trial's.
        self.routing = str(self.choices["routing"][0])
        self.decoder = str(self.choices["decoder"][0])
        self.weight_sharing = bool(self.choices["weight_sharing"][0])
        self.lane_dropout = lane_dropout(data.get("lane_dropout", 0.0), origin)
        self.training = training_dimensions(data.get("training", {}), origin, where)

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


SPACE_KINDS: Registry[type[SearchSpace]] = Registry("search space kind")


def space_buckets(ctx: SpaceContext) -> list[Bucket]:
    """Fresh buckets of ``ctx``'s devices (thesis Algorithm 4), the head's memory kept back."""
    return make_buckets(
        ctx.devices,
        ctx.flops,
        ctx.cost_model,
        ctx.cost_context,
        reserved_memory=ctx.reserved_memory,
    )


def placed(spec: MLCNSpec, ctx: SpaceContext) -> Candidate:
    """``spec`` placed greedily on the devices (thesis Algorithm 3). A model that does
    not fit is infeasible, with the reason, and placed by time alone, past the
    memory, so that its trial records by how much it overflows (the memory
    constraint) and a sampler learns to avoid it."""
    problem = placement_problem(ctx.cost_model.costs(spec.lanes, ctx.cost_context), ctx.devices)
    try:
        return Candidate(spec, tuple(greedy_assignment(problem)))
    except PlacementError as err:
        over = greedy_assignment(problem, memory_limits=False)
        return Candidate(spec, tuple(over), feasible=False, reason=err.for_cli())
