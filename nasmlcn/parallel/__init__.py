"""Parallel execution: lanes on several devices, on several processes, and DDP.

MLCN lanes do not exchange data until the class capsules, so they can run at the
same time on different devices (thesis sec. 4.3.5: 7.18x on 8 K80s, and model
parallelism scales better than data parallelism). Three execution paths:

- :class:`PlacedMLCN` (``_placed``): one process, each lane on the local device a
  placement gives it (``cuda:0``, ``cuda:1``, ...), the head on one device; CUDA
  lanes are launched before anything waits, each on its own stream.
- :class:`DistributedMLCN` (``_distributed``): one process per rank
  (``torch.distributed``, gloo on CPU, NCCL on GPU; started by :func:`launch` or
  by ``torchrun`` on one or many nodes); each rank computes its own lanes on the
  full batch, one differentiable all-gather (``_gather``) brings every lane to
  every rank, and the head is replicated.
- :func:`data_parallel` (``_ddp``): the data-parallel baseline, DDP of the whole
  model.

:func:`map_targets` (``_devices``, pure Python) decides which local device runs
each target device's lanes, :func:`plan_assignment` and :func:`rank_assignment`
(``_assignment``, pure Python) which rank trains which lanes. Whole training jobs,
on any of these paths, are :func:`nasmlcn.training.train`'s: this package holds the
models and the processes, and imports nothing of :mod:`nasmlcn.training`.

Importing :mod:`nasmlcn.parallel` does not import torch; its torch parts load
when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn._lazy import face
from nasmlcn.errors import DistributedError
from nasmlcn.parallel._assignment import PARALLELISMS, plan_assignment, rank_assignment
from nasmlcn.parallel._devices import is_spread, lane_devices, map_targets, parse_run_on

if TYPE_CHECKING:  # what the module __getattr__ below imports when first used
    from nasmlcn.parallel._ddp import AllReduceStats, ShardedSplit, data_parallel
    from nasmlcn.parallel._distributed import DistributedMLCN
    from nasmlcn.parallel._gather import CommStats, gather_lanes
    from nasmlcn.parallel._launch import (
        DEFAULT_TIMEOUT_S,
        RankContext,
        finish_group,
        init_from_env,
        launch,
        reports_here,
        under_torchrun,
    )
    from nasmlcn.parallel._placed import PlacedMLCN, placer

__getattr__, __all__ = face(__name__)
