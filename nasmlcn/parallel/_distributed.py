"""Multi-process lanes: each rank owns the lanes placed on it (torch.distributed).

Every rank builds the *whole* MLCN from the same seed, keeps the lanes the
assignment gives it and the head, and drops the rest, so each kept lane starts
exactly as it would in one process. A training step on rank ``r``:

1. its lanes run on the full batch (no input is exchanged: every rank reads the
   same seeded batches);
2. one all-gather of the lane outputs, ``B x K x lanes`` floats (32 KB for 8 lanes
   at batch 100): the only communication of the step;
3. the head (class capsules, lengths, decoder, loss) runs on every rank;
4. backward: the head's gradient is complete on every rank and each rank
   backpropagates only into its own lanes (see :mod:`nasmlcn.parallel._gather`);
5. each rank's optimiser steps its lanes and its copy of the head.

Why the head is replicated rather than on one rank: with the head on rank 0, the
other ranks would idle while it runs and rank 0 would then have to scatter the
lanes' gradients back (a second collective every step). Replicated, the head
costs every rank the same time rank 0 would have spent on it alone, and the
backward pass needs no communication at all. Its gradients are identical on every
rank (same inputs, same seed for lane dropout), so they are not reduced; the head
is broadcast from rank 0 once at the start, and :meth:`DistributedMLCN.sync_head`
re-broadcasts it (call it now and then when ranks run on different hardware,
where floating-point results may differ in the last bit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from nasmlcn.errors import DistributedError
from nasmlcn.models import MLCN, CapsuleOutput
from nasmlcn.parallel._gather import CommStats, collective_failed, gather_lanes


class DistributedMLCN(nn.Module):
    """The part of an MLCN one rank trains: its own lanes and a replica of the head.

    Args:
        model: The whole MLCN, built with the same seed on every rank. Its owned
            lanes and its head are used in place (not copied).
        assignment: Lane -> rank, for every lane of ``model``.
        group: Process group (None: the default group).
        device: Where this rank computes; the owned lanes and the head move there
            before the head is broadcast (NCCL broadcasts CUDA tensors only).
            None: leave them where they are.

    Parameter names match :class:`~nasmlcn.models.MLCN`'s (``lanes.3.convs...``,
    ``capsule_head...``), so the ranks' state dicts merge into the full model's.

    Raises:
        DistributedError: The process group is not initialised, or the assignment
            names a rank outside it or does not cover every lane.
    """

    def __init__(
        self,
        model: MLCN,
        assignment: Sequence[int],
        group: Any = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if not dist.is_initialized():
            raise DistributedError("DistributedMLCN needs an initialised torch.distributed group")
        world = dist.get_world_size(group)
        rank = dist.get_rank(group)
        assignment = tuple(int(a) for a in assignment)
        if len(assignment) != len(model.lanes):
            raise DistributedError(
                f"the assignment has {len(assignment)} entries for {len(model.lanes)} lanes"
            )
        bad = [a for a in assignment if not 0 <= a < world]
        if bad:
            raise DistributedError(f"assignment names rank {bad[0]}, but the world has {world}")
        self.spec = model.spec
        self.group = group
        self.rank = rank
        self.world_size = world
        self.assignment = assignment
        self.owned = tuple(i for i, a in enumerate(assignment) if a == rank)
        # The lanes stacked by kind and rank; this rank keeps its own stacks (shared
        # with ``model``), named by global lane index, so state_dict names equal MLCN's.
        model.lanes.regroup(lambda i: assignment[i])
        self.lanes = model.lanes.subset(self.owned)
        self.capsule_head = model.capsule_head
        counts = [assignment.count(r) for r in range(world)]
        self.slots = max(counts)  # M: lanes per rank in the gathered tensor
        slot_of: list[int] = []
        seen = [0] * world
        for a in assignment:
            slot_of.append(seen[a])
            seen[a] += 1
        # Position of lane l in the flattened (W * M) gathered lanes.
        self._order: torch.Tensor
        self.register_buffer(
            "_order",
            torch.tensor([a * self.slots + s for a, s in zip(assignment, slot_of, strict=True)]),
            persistent=False,
        )
        self.comm = CommStats()
        if device is not None:
            self.to(device)
        self.broadcast_head()

    @property
    def num_classes(self) -> int:
        return int(self.spec.num_classes)

    def local_outputs(self, x: torch.Tensor) -> torch.Tensor:
        """This rank's lanes on the full batch, padded to ``(B, K, M)``.

        Each lane runs on the batch in ``world_size`` slices, one after the other,
        so its feature maps are as small as a data-parallel rank's: with several
        processes sharing one memory system, the whole batch's maps would spill
        the caches (``nasmlcn/reproduce/engines/scaling.py``, 8 lanes on 2 processes: 1.58x the
        one-process throughput on whole batches, 2.07x in slices). The result is
        the same up to the order of the floating-point sums of weight gradients.
        """
        chunks = x.tensor_split(self.world_size) if x.shape[0] >= 2 * self.world_size else (x,)
        b, pad = x.shape[0], self.slots - len(self.owned)
        if not self.owned:
            return x.new_zeros(b, self.num_classes, pad)  # (B, K, M)
        # this rank's lanes, each kind stacked: (B, K, owned) per chunk
        parts = [self.lanes(c) for c in chunks]
        outs = torch.cat(parts) if len(parts) > 1 else parts[0]  # (B, K, owned)
        if pad:
            outs = torch.cat([outs, outs.new_zeros(b, self.num_classes, pad)], dim=-1)
        return outs  # (B, K, M)

    def lane_outputs(self, x: torch.Tensor) -> torch.Tensor:
        """Every lane's output, gathered from all ranks: ``(B, K, L)`` in lane order."""
        gathered = gather_lanes(self.local_outputs(x), self.group, self.comm)  # (W, B, K, M)
        w, b, k, m = gathered.shape
        flat = gathered.permute(1, 2, 0, 3).reshape(b, k, w * m)  # (B, K, W*M)
        return flat.index_select(2, self._order)  # (B, K, L)

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None) -> CapsuleOutput:
        out: CapsuleOutput = self.capsule_head(self.lane_outputs(x), target)
        return out

    @torch.no_grad()
    def broadcast_head(self) -> None:
        """Copies rank 0's head to every rank (a collective: all ranks must call it)."""
        try:
            for p in self.capsule_head.parameters():
                dist.broadcast(p, src=_global_rank(0, self.group), group=self.group)
        except RuntimeError as err:
            raise collective_failed("the head broadcast", err, self.group) from err

    sync_head = broadcast_head

    def lane_state(self) -> dict[str, torch.Tensor]:
        """This rank's lane parameters as CPU tensors, named as in the full model."""
        return {k: v.detach().cpu() for k, v in self.state_dict().items() if k.startswith("lanes.")}

    def gather_full_state(self, model: MLCN) -> bool:
        """Loads every rank's lanes into ``model`` on rank 0 (a collective).

        ``model`` is the full MLCN this module was built from: on rank 0 its owned
        lanes and head are already current, the other lanes are filled in here.

        Returns:
            True on rank 0 (``model`` is now complete), False elsewhere.
        """
        states: list[dict[str, torch.Tensor]] | None = (
            [{} for _ in range(self.world_size)] if self.rank == 0 else None
        )
        try:
            dist.gather_object(
                self.lane_state(), states, dst=_global_rank(0, self.group), group=self.group
            )
        except RuntimeError as err:
            raise collective_failed("gathering the trained lanes", err, self.group) from err
        if states is None:
            return False
        merged = {k: v for k, v in model.state_dict().items() if not k.startswith("lanes.")}
        for part in states:
            merged.update(part)
        model.load_state_dict(merged, strict=True)
        return True


def _global_rank(group_rank: int, group: Any) -> int:
    return group_rank if group is None else dist.get_global_rank(group, group_rank)
