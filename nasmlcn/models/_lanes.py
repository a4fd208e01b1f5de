"""Every lane of an MLCN, stored as lane stacks and seen from outside as lanes.

An MLCN's lanes are grouped by kind into :class:`~nasmlcn.models.LaneStack`s, each
parameter one tensor with a leading lane dimension. Everything that works with
lanes still sees lanes:

- the state dict names every lane's tensors as a per-lane model did
  (``lanes.3.convs.0.weight``, views of the stacked tensors), so there is one
  checkpoint format and checkpoints written before stacking load as they are;
- :meth:`LaneSet.forward` returns each lane's ``(B, K)`` output in lane order;
- lane-parallel placement and data-parallel ranks :meth:`~LaneSet.regroup` the lanes
  so that every stack lives on one device (or rank), and take the stacks of theirs
  with :meth:`~LaneSet.subset`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, cast

import torch
from torch import nn

from nasmlcn.models._conv import channels_last
from nasmlcn.models._fused import DEFAULT_LAYER_PATH, Patches, finish, stack_tensors
from nasmlcn.models._lane import LaneKind
from nasmlcn.models._stack import LaneStack

Grouping = Callable[[int], Hashable]
"""Lane index -> what else keeps lanes of one kind apart (a device, a rank)."""


class LaneSet(nn.Module):
    """Lanes stored as stacks (see the module docstring).

    Args:
        kinds: The kind of every lane held, by lane index.
        stacks: The stacks.
        members: The lane indices of each stack, in its lane order.

    Attributes:
        fuse: Run each stack as one computation where :meth:`LaneStack.fuses`
            (False: every lane on its own, as a per-lane model would).
        fuse_as: The device type whose rule decides which stacks fuse (None: the
            input's); ``"cuda"`` counts a GPU's work on a CPU
            (``benchmarks/step_ops.py``).
        layer_path: How the stacks' later conv layers run, a name of
            :data:`nasmlcn.models._fused.LAYER_PATHS` (``grouped``: one grouped
            convolution a layer; ``bmm``: one batched matrix product). Not saved:
            checkpoints are the same either way.
    """

    def __init__(
        self,
        kinds: Mapping[int, LaneKind],
        stacks: Sequence[LaneStack],
        members: Sequence[Sequence[int]],
    ) -> None:
        super().__init__()
        self.kinds = dict(kinds)
        self.stacks = nn.ModuleList(stacks)
        self.members = tuple(tuple(m) for m in members)
        held = sorted(i for m in self.members for i in m)
        if held != sorted(self.kinds):
            raise ValueError(f"stacks hold lanes {held}, kinds given for {sorted(self.kinds)}")
        self.fuse = True
        self.fuse_as: str | None = None
        self.layer_path = DEFAULT_LAYER_PATH
        self._order_index: dict[torch.device, torch.Tensor] = {}  # see _lane_order
        self.register_state_dict_post_hook(_lanes_state)
        self.register_load_state_dict_pre_hook(_stack_state)
        self.register_load_state_dict_post_hook(_name_missing_lanes)
        self._missing: dict[str, list[str]] = {}  # a stack's key -> its lanes' missing keys

    @classmethod
    def build(
        cls, lanes: Sequence[LaneKind], vote_init: str = "scaled", group: Grouping | None = None
    ) -> LaneSet:
        """New lanes of these kinds, stacked by kind (and by ``group``) in order of
        first appearance. Each lane's initial tensors are drawn lane by lane, in lane
        order (:meth:`LaneKind.initial_tensors`), so a seed gives the same weights
        however the lanes stack."""
        kinds = dict(enumerate(lanes))
        initial = [kind.initial_tensors(vote_init) for kind in lanes]
        members = _group(kinds, group)
        stacks = []
        for m in members:
            per_lane = zip(*(initial[i] for i in m), strict=True)  # by parameter
            stacks.append(LaneStack(kinds[m[0]], [stack_tensors(ts) for ts in per_lane]))
        return cls(kinds, stacks, members)

    def __len__(self) -> int:
        return len(self.kinds)

    def groups(self) -> list[tuple[LaneStack, tuple[int, ...]]]:
        """Every stack with its lanes, in stack order."""
        stacks = cast(list[LaneStack], list(self.stacks))
        return list(zip(stacks, self.members, strict=True))

    @property
    def routing(self) -> str:
        """The model's routing (every lane's)."""
        return next(iter(self.kinds.values())).routing if self.kinds else "vector"

    @property
    def lanes(self) -> list[int]:
        """The lanes held, ascending."""
        return sorted(self.kinds)

    def lane_tensors(self) -> dict[int, list[torch.Tensor]]:
        """Every lane's own parameters (views of the stacks), by lane index."""
        out: dict[int, list[torch.Tensor]] = {}
        for stack, members in self.groups():
            per_lane = zip(*(p.detach().unbind(0) for p in stack.params), strict=True)
            out.update(zip(members, (list(ts) for ts in per_lane), strict=True))
        return out

    @torch.no_grad()
    def regroup(self, group: Grouping) -> None:
        """Restacks the lanes by kind and ``group`` (before an optimizer holds them:
        the stacks are new parameters, each on the device of its first lane)."""
        tensors = self.lane_tensors()
        members = _group(self.kinds, group)
        self.stacks = nn.ModuleList(
            LaneStack(
                self.kinds[m[0]],
                [
                    stack_tensors(ts).to(ts[0].device)
                    for ts in zip(*(tensors[i] for i in m), strict=True)
                ],
            )
            for m in members
        )
        self.members = members
        self._order_index = {}

    def subset(self, lanes: Iterable[int]) -> LaneSet:
        """A lane set of the stacks (shared, not copied) that hold exactly ``lanes``."""
        wanted = set(lanes)
        chosen = [s for s, m in enumerate(self.members) if wanted & set(m)]
        if any(not set(self.members[s]) <= wanted for s in chosen):
            raise ValueError(f"lanes {sorted(wanted)} split a stack; regroup the lanes first")
        subset = LaneSet(
            {i: self.kinds[i] for i in wanted},
            [self.stacks[s] for s in chosen],  # type: ignore[misc]
            [self.members[s] for s in chosen],
        )
        subset.fuse, subset.fuse_as = self.fuse, self.fuse_as
        subset.layer_path = self.layer_path
        return subset

    def stack_outputs(
        self, x: torch.Tensor, which: Iterable[int] | None = None, by_lane: bool = False
    ) -> list[torch.Tensor]:
        """Each stack's ``(G, B, K)`` outputs on the images ``x`` (B, C, H, W), for the
        stacks ``which`` (default all), fused where the device's rule says so
        (:meth:`_fused`), or every stack lane by lane (``by_lane``: the first layer a
        convolution of the image, as a lane alone computes it); with ``vector``
        routing not yet squashed (:meth:`class_capsules` does it)."""
        patches = Patches(channels_last(x), self.layer_path)
        device_type = self.fuse_as or x.device.type
        chosen = range(len(self.stacks)) if which is None else which
        outs = []
        for s in chosen:
            stack = cast(LaneStack, self.stacks[s])
            fused = self._fused(stack, device_type, x.shape[0])
            outs.append(stack(patches, fused and not by_lane))
        return outs

    def _fused(self, stack: LaneStack, device_type: str, batch_size: int) -> bool:
        """Whether ``stack`` runs as one computation. A lone lane has nothing to
        batch: on a CPU it runs as its own convolution of the image (oneDNN's 9x9
        convolution beats the patch product: a step of ``mlcn2:2x2`` alone 44 ->
        34 ms, one thread, batch 100; docs/results.md), elsewhere as its patch
        product; a stack of several follows the device's rule."""
        if len(stack) == 1:
            return device_type != "cpu"
        return self.fuse and stack.fuses(device_type, batch_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The class capsules ``(B, K, L)``: lane ``l``'s output is dimension ``l``."""
        return self.class_capsules(self.stack_outputs(x))

    def class_capsules(self, outs: Sequence[torch.Tensor]) -> torch.Tensor:
        """Every stack's ``(G, B, K)`` outputs (in stack order, on one device) as the
        class capsules ``(B, K, L)``, lanes in lane order (the lanes held, when a
        subset). A few ops whatever the lane count: not one per lane."""
        out = torch.cat(list(outs)) if len(outs) > 1 else outs[0]  # (L, B, K), stack order
        out = finish(self.routing, out)
        index = self._lane_order(out.device)
        if index is not None:
            out = out.index_select(0, index)  # (L, B, K), lane order
        return out.permute(1, 2, 0)  # (B, K, L)

    def _lane_order(self, device: torch.device) -> torch.Tensor | None:
        """The stack-order position of each lane, on ``device`` (None: the same
        order). Made once per device: a copy to a GPU at every step would wait for
        its queue, and cannot be captured in a CUDA graph."""
        order = [i for m in self.members for i in m]
        if order == sorted(order):
            return None
        if device not in self._order_index:
            where = {lane: pos for pos, lane in enumerate(order)}
            positions = [where[lane] for lane in sorted(order)]
            self._order_index[device] = torch.tensor(positions, device=device)
        return self._order_index[device]


def _group(kinds: Mapping[int, LaneKind], group: Grouping | None) -> tuple[tuple[int, ...], ...]:
    """Lane indices by kind (and ``group``), in order of first appearance."""
    groups: dict[tuple[LaneKind, Hashable], list[int]] = {}
    for i in sorted(kinds):
        groups.setdefault((kinds[i], None if group is None else group(i)), []).append(i)
    return tuple(tuple(m) for m in groups.values())


# The checkpoint format: three state-dict hooks. A lane set's parameters are its
# stacks' (``stacks.<s>.params.<j>``), but its state dict holds every lane's own
# tensors under the lane's own names (``<lane>.<name>``, e.g. ``lanes.3.weight`` in
# an MLCN): the names a model of one module per lane wrote, which every checkpoint
# holds. So checkpoints do not depend on how the lanes happen to be stacked (by
# device, by rank, fused or not), and the stacks' names never reach a file.
# - saving (_lanes_state): each stacked tensor is split into its lanes' entries;
# - loading (_stack_state): the lanes' entries are stacked back into the stacks';
# - reporting (_name_missing_lanes): a stack tensor that could not be made is
#   reported missing under its lanes' names, the names the checkpoint lacks.


def _stack_key(prefix: str, s: int, j: int) -> str:
    """The state-dict key torch gives parameter ``j`` of stack ``s``."""
    return f"{prefix}stacks.{s}.params.{j}"


def _lanes_state(module: nn.Module, state: dict[str, Any], prefix: str, _meta: Any) -> None:
    """State-dict post-hook: each stacked tensor becomes its lanes' own entries, named
    as a per-lane model names them (``lanes.3.weight``), in lane order."""
    assert isinstance(module, LaneSet)
    by_lane: dict[int, dict[str, torch.Tensor]] = {}
    for s, (stack, members) in enumerate(module.groups()):
        for j, name in enumerate(stack.names):
            for lane, tensor in zip(members, state.pop(_stack_key(prefix, s, j)), strict=True):
                by_lane.setdefault(lane, {})[name] = tensor
    for lane in sorted(by_lane):
        state.update({f"{prefix}{lane}.{name}": t for name, t in by_lane[lane].items()})


def _stack_state(module: nn.Module, state: dict[str, Any], prefix: str, *_: Any) -> None:
    """Load-state-dict pre-hook: the lanes' own entries are stacked into the stacks'
    tensors (entries missing for a lane stay missing, and are reported as such)."""
    assert isinstance(module, LaneSet)
    module._missing = {}
    for s, (stack, members) in enumerate(module.groups()):
        for j, name in enumerate(stack.names):
            keys = [f"{prefix}{lane}.{name}" for lane in members]
            missing = [k for k in keys if k not in state]
            if missing:
                module._missing[_stack_key(prefix, s, j)] = missing
            else:
                state[_stack_key(prefix, s, j)] = torch.stack([state.pop(k) for k in keys])


def _name_missing_lanes(module: nn.Module, incompatible: Any) -> None:
    """Load-state-dict post-hook: a missing stack tensor is reported as the lanes'
    own missing entries (``lanes.2.weight``), the names a checkpoint holds."""
    assert isinstance(module, LaneSet)
    missing: list[str] = incompatible.missing_keys
    for key, lanes in module._missing.items():
        if key in missing:
            missing[missing.index(key) : missing.index(key) + 1] = lanes
    module._missing = {}


def per_lane_tensors(
    model: nn.Module, of: Callable[[nn.Parameter], torch.Tensor | None] = lambda p: p
) -> dict[str, torch.Tensor]:
    """Every parameter of ``model`` (or what ``of`` makes of it, e.g. its gradient),
    named as its state dict names it: a stacked tensor becomes its lanes' own views
    (``lanes.3.weight``). Parameters for which ``of`` gives None are left out."""
    lane_sets = {
        f"{name}." if name else "": m for name, m in model.named_modules() if isinstance(m, LaneSet)
    }
    stacked_ids = {id(p) for m in lane_sets.values() for p in m.parameters()}
    out = {
        name: t
        for name, p in model.named_parameters()
        if id(p) not in stacked_ids and (t := of(p)) is not None
    }
    for prefix, lane_set in lane_sets.items():
        for stack, members in lane_set.groups():
            for name, p in zip(stack.names, stack.params, strict=True):
                if (t := of(p)) is not None:
                    out.update(
                        {f"{prefix}{lane}.{name}": v for lane, v in zip(members, t, strict=True)}
                    )
    return out
