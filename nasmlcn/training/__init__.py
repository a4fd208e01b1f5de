"""Training: configuration, the loop, callbacks, checkpoints and whole jobs.

:func:`train` is the one verb that trains a model, wherever it runs: a
:class:`TrainJob` on one device, lanes placed on several local devices, local ranks,
``torchrun`` ranks, DDP (the models and processes of the parallel paths are
:mod:`nasmlcn.parallel`'s, which imports nothing of this package); an
:class:`InMemoryJob` for the packages that hold their data and their model's
placement themselves (the search's trials and the reproduce engines), which returns
a :class:`JobRun` with the trained module.

``TrainConfig``, ``EpochResult``, ``Callback`` and the registries of LR policies
and augmentations are pure Python; the training itself (``train``,
``evaluate``, checkpoints) and the augmentations' code import torch when first
used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn._lazy import face
from nasmlcn.training._augment import AUGMENTATIONS, Augmentation, random_shift
from nasmlcn.training._batch_policy import (
    BATCH_POLICIES,
    DEFAULT_LR_POLICY,
    BatchPolicy,
    default_lr_policy,
    epoch_batch_sizes,
    largest_batch_size,
)
from nasmlcn.training._callbacks import Callback, CallbackList, TrainingStopped, TrainStart
from nasmlcn.training._config import MAX_EPOCHS, EpochResult, RunOptions, TrainConfig
from nasmlcn.training._schedules import LR_POLICIES, LRPolicy, StepPlan

if TYPE_CHECKING:  # what the module __getattr__ below imports when first used
    from nasmlcn.training._checkpoint import (
        load_checkpoint,
        load_model,
        save_checkpoint,
        save_final,
    )
    from nasmlcn.training._cores import share_cores
    from nasmlcn.training._job import (
        FIXED_EPOCHS_PROTOCOL,
        PROTOCOL,
        InMemoryJob,
        TrainJob,
        TrainReport,
        arch_for_dataset,
        job_dataset,
        job_outputs,
        load_job_splits,
        resolve_arch,
        step_batch_size,
    )
    from nasmlcn.training._memory import check_training_memory
    from nasmlcn.training._optimizer import make_optimizer
    from nasmlcn.training._report import ParallelReport
    from nasmlcn.training._run import JobRun
    from nasmlcn.training._run_folder import (
        ARCH_NAME,
        CHECKPOINT_NAME,
        RESULT_NAME,
        check_free_run_folder,
        check_out_dir,
        check_run_files,
        write_result,
        write_run_folder,
    )
    from nasmlcn.training._selection import Selection, selected_weights
    from nasmlcn.training._step import EvalStep
    from nasmlcn.training._train import run_job as run_job  # the old name, not in __all__
    from nasmlcn.training._train import train
    from nasmlcn.training._trainer import evaluate, resolve_device

__getattr__, __all__ = face(__name__, hidden=("run_job",))
