"""Optimizer state written for lanes as modules of their own, restacked.

Checkpoints before lane stacks hold Adam's state per lane tensor, in the per-lane
model's parameter order (lane 0's tensors, lane 1's, ..., then the head's). The model
now keeps one tensor per stack and parameter (:class:`~nasmlcn.models.LaneSet`), so
resuming such a checkpoint stacks each lane's moments into its stack's, in the same
layout as the stacked parameter. The model's own state needs no such step: its state
dict still names every lane's tensors.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from nasmlcn.errors import CheckpointError
from nasmlcn.models import LaneSet


def restack_optimizer_state(model: nn.Module, state: dict[str, Any]) -> dict[str, Any]:
    """``state`` (an optimizer's state dict over ``model.parameters()``) as the
    stacked model's; unchanged when it already is, or the model has no lane stacks.

    Raises:
        CheckpointError: The state fits neither the stacked nor the per-lane order.
    """
    lane_sets = [(name, m) for name, m in model.named_modules() if isinstance(m, LaneSet)]
    saved = [i for group in state["param_groups"] for i in group["params"]]
    new_order = _new_order(model, lane_sets)
    if len(lane_sets) != 1 or len(saved) == len(new_order) or len(state["param_groups"]) != 1:
        return state
    old_order = _per_lane_order(model, lane_sets[0])
    if len(saved) != len(old_order):
        raise CheckpointError(
            f"the checkpoint's optimizer holds {len(saved)} tensors; this model has "
            f"{len(new_order)} (or {len(old_order)} lane by lane)"
        )
    position = {name: saved[i] for i, name in enumerate(old_order)}
    restacked = {}
    for n, names in enumerate(new_order):
        parts = [
            state["state"][position[name]] for name in names if position[name] in state["state"]
        ]
        if len(parts) == len(names):
            restacked[n] = parts[0] if len(parts) == 1 else _stack_moments(parts)
    group = {**state["param_groups"][0], "params": list(range(len(new_order)))}
    return {"state": restacked, "param_groups": [group]}


def _stack_moments(parts: list[dict[str, Any]]) -> dict[str, Any]:
    from nasmlcn.models import stack_tensors

    out = dict(parts[0])  # "step" is every lane's
    for key, value in parts[0].items():
        if key != "step" and hasattr(value, "dim") and value.dim() > 0:
            out[key] = stack_tensors([p[key] for p in parts])
    return out


def _new_order(model: nn.Module, lane_sets: list[tuple[str, LaneSet]]) -> list[list[str]]:
    """Each parameter of ``model`` in order, as the per-lane names it holds."""
    stacked: dict[int, list[str]] = {}
    for prefix, lanes in lane_sets:
        for stack, members in lanes.groups():
            for name, p in zip(stack.names, stack.params, strict=True):
                stacked[id(p)] = [f"{prefix}.{lane}.{name}" for lane in members]
    return [stacked.get(id(p), [name]) for name, p in model.named_parameters()]


def _per_lane_order(model: nn.Module, lane_set: tuple[str, LaneSet]) -> list[str]:
    """The parameter names of the per-lane model, in its order: every lane's, lane
    by lane, then the rest (the lanes were its first module)."""
    prefix, lanes = lane_set
    names_of = {lane: stack.names for stack, members in lanes.groups() for lane in members}
    order = [f"{prefix}.{lane}.{name}" for lane in lanes.lanes for name in names_of[lane]]
    own = {id(p) for p in lanes.parameters()}
    return order + [name for name, p in model.named_parameters() if id(p) not in own]
