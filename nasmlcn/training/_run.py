"""One training job: seed, build, place, train (resuming), test.

Every way nasmlcn trains a model runs :func:`run_in_memory`, under
:func:`~nasmlcn.training.train`: a :class:`~nasmlcn.training.TrainJob` on one device
(here, :func:`train_on_one_device`), lanes placed on local devices and each rank of
a multi-process job (``_parallel``), and an :class:`~nasmlcn.training.InMemoryJob`
(the search's ``train`` evaluator and the reproduce engines that hold their data).
They differ only in where the model runs (``place``), who watches (``callbacks``,
``measure``) and where the results go (``out_dir``, the checkpoint, and what each
makes of the :class:`JobRun`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from torch import nn

from nasmlcn.data import DatasetInfo, DataSplits
from nasmlcn.models import MLCN, build_model, count_parameters
from nasmlcn.specs import ArchSpec, save_arch
from nasmlcn.training._callbacks import Callback, CallbackList, TrainStart
from nasmlcn.training._config import EpochResult, TrainConfig
from nasmlcn.training._job import (
    FIXED_EPOCHS_PROTOCOL,
    PROTOCOL,
    InMemoryJob,
    TrainJob,
    TrainReport,
    arch_for_dataset,
    job_dataset,
    job_outputs,
    job_run_options,
    load_job_splits,
    step_batch_size,
)
from nasmlcn.training._run_folder import ARCH_NAME, write_result
from nasmlcn.training._selection import Selection
from nasmlcn.training._trainer import evaluate, resolve_device, train_epochs


@dataclass(frozen=True)
class JobRun:
    """What :func:`~nasmlcn.training.train` did with an
    :class:`~nasmlcn.training.InMemoryJob`.

    Attributes:
        arch: The architecture.
        model: The model as built, with every parameter (a rank of a lane-parallel
            job trains only its own lanes of it).
        module: What was trained: ``model`` itself, or what ``place`` made of it.
        params: ``model``'s trainable parameters.
        history: One result per epoch (resumed epochs included).
        test: Test loss and accuracy of the selected model (the best-validation
            epoch's weights); None when not tested.
        test_last: Test loss and accuracy after the last epoch (the same as ``test``
            when the last epoch is the selected one); None when not tested.
        train_images: Training images per epoch (the whole job's).
        test_images: Test images.
        selection: The selected epoch and, where they are not ``module``'s (which
            ends with the last epoch's weights), its weights; None when not tested.
        protocol: How the test figure was chosen (:data:`PROTOCOL` when an epoch
            was selected on validation).
    """

    arch: ArchSpec
    model: nn.Module
    module: nn.Module
    params: int
    history: list[EpochResult]
    test: tuple[float, float] | None
    test_last: tuple[float, float] | None
    train_images: int
    test_images: int
    selection: Selection | None = None
    protocol: str = PROTOCOL

    def report(self, data: DatasetInfo, device: str, out_dir: Path | None) -> TrainReport:
        """The job's report on ``data``; ``device`` says where it trained."""
        assert self.test is not None, "a report needs RunOptions(test=True)"
        assert self.test_last is not None, "a report needs RunOptions(test=True)"
        assert self.selection is not None, "a tested run selects an epoch"
        return TrainReport(
            arch=self.arch,
            dataset=data.name,
            params=self.params,
            history=self.history,
            test_loss=self.test[0],
            test_accuracy=self.test[1],
            selected_epoch=self.selection.epoch,
            last_epoch_test_loss=self.test_last[0],
            last_epoch_test_accuracy=self.test_last[1],
            protocol=self.protocol,
            test_images=self.test_images,
            train_images=self.train_images,
            device=device,
            out_dir=str(out_dir) if out_dir else None,
            data=data,
        )


class _WholeJob(CallbackList):
    """Describes the whole model to the callbacks, not the share this process
    trains (a rank's lanes), and, given a ``device``, the whole job's devices."""

    def __init__(self, callbacks: Sequence[Callback], params: int, device: str | None) -> None:
        super().__init__(callbacks)
        self.params = params
        self.device = device

    def on_train_start(self, start: TrainStart) -> None:
        super().on_train_start(
            replace(start, params=self.params, device=self.device or start.device)
        )


def run_in_memory(job: InMemoryJob, callbacks: Sequence[Callback] = ()) -> JobRun:
    """Seeds, builds ``job.arch``, places it, trains it (resuming) and tests it: what
    :func:`~nasmlcn.training.train` does with an :class:`InMemoryJob`, and each path
    of a :class:`~nasmlcn.training.TrainJob` once its data is loaded.

    Raises:
        TrainingError: The loss became NaN or infinite.
        CheckpointError: ``resume`` and the checkpoint belongs to another model.
    """
    arch, splits, config, options = job.arch, job.splits, job.config, job.options
    place, measure = job.place, job.measure
    torch.manual_seed(config.seed)
    selection = Selection() if options.test and options.select else None
    model = build_model(arch)
    if isinstance(model, MLCN):
        model.fuse_lanes = config.fuse_lanes
    params = count_parameters(model)
    if options.out_dir is not None:
        save_arch(arch, options.out_dir / ARCH_NAME)
    with measure if measure is not None else contextlib.nullcontext():
        module = model if place is None else place(model)
        placed = getattr(module, "input_device", None)
        if isinstance(placed, torch.device):
            config = replace(config, device=str(placed))
        history = train_epochs(
            module,
            arch,
            splits,
            config,
            callbacks=[_WholeJob(callbacks, params, job.device_label)],
            options=options,
            selection=selection,
        )
    tested = last = None
    if options.test:
        tested, last, selection = _test_run(module, splits, config, history, selection)
    return JobRun(
        arch,
        model,
        module,
        params,
        history,
        tested,
        last,
        len(splits.train),
        len(splits.test),
        selection,
        PROTOCOL if options.select else FIXED_EPOCHS_PROTOCOL,
    )


def _test_run(
    module: nn.Module,
    splits: DataSplits,
    config: TrainConfig,
    history: list[EpochResult],
    selection: Selection | None,
) -> tuple[tuple[float, float], tuple[float, float], Selection]:
    """Tests the selected epoch's weights and the last epoch's; both figures and the
    selection (None: the last epoch, which is then the run's model)."""
    last = tested = _test(module, splits, config)
    if selection is None:  # the last epoch is the run's model
        selection = Selection(len(history), history[-1].val_accuracy if history else 0.0)
    elif selection.state is not None:  # an earlier epoch was better on validation
        final = {k: v.detach().clone() for k, v in module.state_dict().items()}
        module.load_state_dict(selection.state)
        tested = _test(module, splits, config)
        module.load_state_dict(final)
    return tested, last, selection


def _test(module: nn.Module, splits: DataSplits, config: TrainConfig) -> tuple[float, float]:
    return evaluate(
        module,
        splits.test,
        batch_size=config.eval_batch_size,
        device=resolve_device(config.device),
        reconstruction_weight=config.reconstruction_weight,
    )


def train_on_one_device(job: TrainJob, callbacks: list[Callback] | None = None) -> TrainReport:
    """Loads the data, builds and trains the model on ``job.config.device``, tests it
    and writes the files: :func:`~nasmlcn.training.train` without parallelism."""
    from nasmlcn.hardware import busy_record, look_at_load
    from nasmlcn.training._cores import share_cores
    from nasmlcn.training._memory import check_training_memory

    data = job_dataset(job)
    arch = arch_for_dataset(job.arch, data, strict=True)
    device = str(resolve_device(job.config.device))
    out, checkpoint = job_outputs(job)
    check_training_memory(arch, step_batch_size(job), device)
    options = job_run_options(job, out, checkpoint, data)
    splits = load_job_splits(job, data)
    looked = share_cores("training", device)  # fewer threads beside other processes
    run = run_in_memory(InMemoryJob(arch, splits, job.config, options), callbacks or ())
    load = busy_record(looked, look_at_load())
    report = replace(run.report(data, device, out), machine_load=load)
    write_result(out, report.to_dict())
    return report
