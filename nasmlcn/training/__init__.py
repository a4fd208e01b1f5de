"""Training: configuration, the loop, callbacks, checkpoints and whole jobs.

``TrainConfig``, ``EpochResult``, ``Callback`` and the registries of LR policies
and augmentations are pure Python; the loop itself (``train``, ``evaluate``,
``run_training``, checkpoints) and the augmentations' code import torch when
first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nasmlcn.training._augment import AUGMENTATIONS, Augmentation, random_shift
from nasmlcn.training._batch_policy import (
    BATCH_POLICIES,
    BatchPolicy,
    default_lr_policy,
    epoch_batch_sizes,
)
from nasmlcn.training._callbacks import Callback, CallbackList, TrainingStopped, TrainStart
from nasmlcn.training._config import EpochResult, TrainConfig
from nasmlcn.training._schedules import LR_POLICIES, LRPolicy, StepPlan

if TYPE_CHECKING:  # what the module __getattr__ below imports when first used
    from nasmlcn.training._checkpoint import load_checkpoint, load_model, save_checkpoint
    from nasmlcn.training._job import (
        TrainJob,
        TrainReport,
        arch_for_dataset,
        load_job_splits,
        run_training,
    )
    from nasmlcn.training._memory import check_training_memory
    from nasmlcn.training._trainer import evaluate, resolve_device, train

__all__ = [
    "AUGMENTATIONS",
    "BATCH_POLICIES",
    "LR_POLICIES",
    "Augmentation",
    "BatchPolicy",
    "Callback",
    "CallbackList",
    "EpochResult",
    "LRPolicy",
    "StepPlan",
    "TrainConfig",
    "TrainJob",
    "TrainReport",
    "TrainStart",
    "TrainingStopped",
    "arch_for_dataset",
    "check_training_memory",
    "default_lr_policy",
    "epoch_batch_sizes",
    "evaluate",
    "load_checkpoint",
    "load_job_splits",
    "load_model",
    "random_shift",
    "resolve_device",
    "run_training",
    "save_checkpoint",
    "train",
]

_LAZY = {
    "TrainJob": "_job",
    "TrainReport": "_job",
    "arch_for_dataset": "_job",
    "check_training_memory": "_memory",
    "load_job_splits": "_job",
    "run_training": "_job",
    "train": "_trainer",
    "evaluate": "_trainer",
    "resolve_device": "_trainer",
    "load_checkpoint": "_checkpoint",
    "load_model": "_checkpoint",
    "save_checkpoint": "_checkpoint",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nasmlcn.training' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"nasmlcn.training.{module}"), name)
