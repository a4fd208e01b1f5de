"""A training job end to end: data, model, training, test, files. The CLI's
``nasmlcn train`` is a thin wrapper over :func:`~nasmlcn.training.train`."""

from __future__ import annotations

import logging
import platform
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn.data import DatasetInfo, format_image_size, normalization_record
from nasmlcn.errors import CheckpointError, SpecError, option
from nasmlcn.specs import DEFAULT_LANES, ArchSpec, CapsNetSpec, MLCNSpec, create_arch, load_arch
from nasmlcn.training._config import EpochResult, RunOptions, TrainConfig
from nasmlcn.training._run_folder import (
    CHECKPOINT_NAME,
    check_new_run,
    check_out_dir,
    check_run_files,
)

if TYPE_CHECKING:
    import contextlib
    from collections.abc import Callable

    from torch import nn

    from nasmlcn.data import DataSplits

logger = logging.getLogger(__name__)


def arch_for_dataset(arch: ArchSpec, dataset: DatasetInfo, *, strict: bool) -> ArchSpec:
    """Fits ``arch``'s classes and input shape to ``dataset``.

    With ``strict`` (an architecture read from a file), a mismatch is an error;
    otherwise (lanes or a model name given on the command line) the dataset's
    values are taken.
    """
    if arch.num_classes == dataset.num_classes and arch.input_shape == dataset.input_shape:
        return arch
    if strict:
        c, h, w = arch.input_shape
        dc, dh, dw = dataset.input_shape
        raise SpecError(
            f"the architecture is for {c}x{h}x{w} input and {arch.num_classes} classes, but "
            f"{dataset.name} has {dc}x{dh}x{dw} and {dataset.num_classes}"
        )
    if isinstance(arch, MLCNSpec):
        return replace(arch, num_classes=dataset.num_classes, input_shape=dataset.input_shape)
    assert isinstance(arch, CapsNetSpec)
    return replace(arch, num_classes=dataset.num_classes, input_shape=dataset.input_shape)


def resolve_arch(
    dataset: DatasetInfo,
    *,
    lanes: str | None = None,
    arch: str | Path | None = None,
    model: str | None = None,
    routing: str | None = None,
    decoder: str | None = None,
    lane_dropout: float | None = None,
    weight_sharing: bool | None = None,
    vote_init: str | None = None,
) -> ArchSpec:
    """The architecture ``nasmlcn train`` trains: at most one of ``lanes`` (the
    compact syntax), ``arch`` (a JSON file, which must already fit ``dataset``) or
    ``model`` (a named architecture), else :data:`~nasmlcn.specs.DEFAULT_LANES`;
    fitted to ``dataset`` and with the ``routing``, ``decoder``, ``lane_dropout``,
    ``weight_sharing`` and ``vote_init`` given (not with ``arch``: edit the file).

    Raises:
        SpecError: More than one source, an override with ``arch``, an MLCN-only
            override on CapsNet, or an invalid architecture.
        UnknownNameError: ``model`` is not a named architecture.
    """
    given = [
        option(name)
        for name, value in (("lanes", lanes), ("arch", arch), ("model", model))
        if value is not None
    ]
    if len(given) > 1:
        raise SpecError(
            f"give only one of {', '.join(map(option, ('lanes', 'arch', 'model')))} (got {' and '.join(given)})"
        )
    overrides: dict[str, Any] = {
        k: v
        for k, v in (
            ("routing", routing),
            ("decoder", decoder),
            ("lane_dropout", lane_dropout),
            ("weight_sharing", weight_sharing),
            ("vote_init", vote_init),
        )
        if v is not None
    }
    if arch is not None:
        if overrides:
            first = option(next(iter(overrides)))
            raise SpecError(f"{first} cannot be combined with {option('arch')}; edit the file")
        return arch_for_dataset(load_arch(arch), dataset, strict=True)
    # An empty ``lanes`` is an error (parse_lanes says so), not the default model.
    if model is not None:
        base = create_arch(model)
    else:
        base = MLCNSpec.from_lanes(DEFAULT_LANES if lanes is None else lanes)
    spec = arch_for_dataset(base, dataset, strict=False)
    if not overrides:
        return spec
    mlcn_only = [k for k in ("routing", "lane_dropout", "vote_init") if k in overrides]
    if mlcn_only and not isinstance(spec, MLCNSpec):
        raise SpecError(
            f"{option('routing')}, {option('lane_dropout')} and {option('vote_init')} "
            "apply to MLCN models only"
        )
    return replace(spec, **overrides)


@dataclass(frozen=True)
class TrainJob:
    """Everything ``nasmlcn train`` needs.

    Attributes:
        arch: The architecture (already fitted to the dataset, see
            :func:`arch_for_dataset`).
        dataset: A registered dataset's name, or the path of a folder of class
            folders of images or of an ``.npz`` (see :func:`~nasmlcn.data.open_dataset`).
        config: Training configuration.
        data_dir: Where datasets live (None: the default).
        image_size: Resize a user's images to ``N`` or ``HxW`` (bilinear, stretched).
        download: Allow downloading missing data.
        val_fraction: Share of the training set held out for validation.
        train_limit: Use only the first N training images (after the seeded split).
        val_limit: Use only the first N validation images.
        test_limit: Use only the first N test images.
        out_dir: Checkpoint, arch.json and result.json go here (None: no files).
        resume: Continue from ``out_dir``'s checkpoint.
        refit: Train on the training and validation images together, tested once
            after the last epoch (nothing is held out to select an epoch on:
            ``config.epochs`` was chosen beforehand, on validation;
            :meth:`~nasmlcn.data.DataSplits.refit`).
        split_seed: Seed of the train/validation split when it is not
            ``config.seed``: ``retrain`` splits as the search did (the study's seed)
            and seeds the weights as the trial did (its training seed). None:
            ``config.seed`` seeds both.
        data: ``dataset`` opened already (:func:`~nasmlcn.data.open_dataset`, with
            ``image_size`` and ``data_dir``): what the job trains on, asked nothing
            again (``image_size`` is its resize). None: opened when needed
            (:func:`job_dataset`), and in each process the job is sent to.
    """

    arch: ArchSpec
    dataset: str = "fashion-mnist"
    config: TrainConfig = field(default_factory=TrainConfig)
    data_dir: str | None = None
    download: bool = True
    val_fraction: float = 0.1
    train_limit: int | None = None
    val_limit: int | None = None
    test_limit: int | None = None
    out_dir: str | None = None
    resume: bool = False
    refit: bool = False
    image_size: str | None = None
    split_seed: int | None = None
    data: DatasetInfo | None = field(default=None, compare=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        """What pickling sends to another process: all but ``data`` (its loader is a
        closure), which that process opens again, once (:func:`job_dataset`)."""
        return {**self.__dict__, "data": None}

    @property
    def data_seed(self) -> int:
        """The seed of the train/validation split (``split_seed``, else ``config.seed``)."""
        return self.config.seed if self.split_seed is None else self.split_seed

    def __post_init__(self) -> None:
        size = self.data.image_size if self.data is not None else format_image_size(self.image_size)
        object.__setattr__(self, "image_size", size)
        if not isinstance(self.arch, ArchSpec):
            raise SpecError(
                f"arch must be an architecture (e.g. MLCNSpec.from_lanes(...)), got {self.arch!r}"
            )
        if not isinstance(self.config, TrainConfig):
            raise SpecError(f"config must be a TrainConfig, got {self.config!r}")
        for name in ("train_limit", "val_limit", "test_limit"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise SpecError(f"{name} must be an integer >= 1 (or None: all), got {value!r}")


@dataclass(frozen=True)
class InMemoryJob:
    """A job whose data the caller holds and whose model it places: what the
    search's trials and the reproduce engines train. :func:`~nasmlcn.training.train`
    seeds, builds, places, trains (resuming) and tests it, and returns a
    :class:`~nasmlcn.training.JobRun` (the trained module included); it loads and
    writes nothing the ``options`` do not name.

    Attributes:
        arch: The architecture (fitted to the data).
        splits: Training, validation and test data.
        config: How to train; ``config.seed`` also seeds the initial weights.
        options: The checkpoint and resuming, the stop, the test and the folder
            ``arch.json`` goes to (:class:`~nasmlcn.training.RunOptions`; its
            defaults: tested, nothing written).
        place: Puts the built model where it trains and returns what to train
            (a :class:`~nasmlcn.parallel.PlacedMLCN`, a rank's share); None: the
            model itself, on ``config.device``. A module with an ``input_device``
            trains and tests there, and the checkpoint says so.
        measure: Entered around placing and training (peak memory).
        device_label: What callbacks are told the model trains on, where the
            trainer's own device would describe one rank only.
    """

    arch: ArchSpec
    splits: DataSplits
    config: TrainConfig = field(default_factory=TrainConfig)
    options: RunOptions = field(default_factory=RunOptions)
    place: Callable[[nn.Module], nn.Module] | None = None
    measure: contextlib.AbstractContextManager[Any] | None = None
    device_label: str | None = None


PROTOCOL = "test at the best-validation epoch"
"""How a run's test figure is chosen (:mod:`nasmlcn.training._selection`); every
report says so."""

FIXED_EPOCHS_PROTOCOL = "test after the last epoch (epochs fixed beforehand)"
"""The protocol of a run that selects no epoch (``RunOptions(select=False)``)."""


@dataclass(frozen=True)
class TrainReport:
    """The outcome of a job; ``to_dict`` is what ``--json`` prints.

    ``test_accuracy`` and ``test_loss`` are the selected model's: the weights after
    ``selected_epoch``, the epoch with the best validation accuracy. The last epoch's
    are beside them (the same figures when it is the selected one).
    """

    arch: ArchSpec
    dataset: str
    params: int
    history: list[EpochResult]
    test_loss: float
    test_accuracy: float
    test_images: int
    train_images: int
    device: str
    out_dir: str | None
    selected_epoch: int
    last_epoch_test_loss: float
    last_epoch_test_accuracy: float
    protocol: str = PROTOCOL
    data: DatasetInfo | None = None
    """The dataset opened (its identity and normalisation are recorded); None: the
    registered ``dataset``."""
    machine_load: dict[str, Any] | None = None
    """The most cores other processes held before or during training
    (:func:`nasmlcn.hardware.busy_record`; its speed figures are unreliable where they
    held half a core or more); None: not looked at (a parallel job)."""

    def to_dict(self) -> dict[str, Any]:
        import torch

        epochs = [h.to_dict() for h in self.history]
        seconds = [h.seconds for h in self.history]
        images = sum(self.train_images for _ in self.history)
        return {
            "arch": self.arch.to_dict(),
            "lanes": self.arch.describe(),
            "dataset": self.dataset,
            "dataset_identity": self._data().identity.to_dict(),
            # How model inputs were normalised (None: [0, 1]), as the checkpoint records.
            "normalization": normalization_record(self._data().normalization),
            "params": self.params,
            "epochs": len(self.history),
            "test_accuracy": self.test_accuracy,
            "test_loss": self.test_loss,
            "selected_epoch": self.selected_epoch,
            "last_epoch_test_accuracy": self.last_epoch_test_accuracy,
            "last_epoch_test_loss": self.last_epoch_test_loss,
            "protocol": self.protocol,
            "test_images": self.test_images,
            "train_images": self.train_images,
            "val_accuracy_per_epoch": [h.val_accuracy for h in self.history],
            "seconds_per_epoch": sum(seconds) / len(seconds) if seconds else 0.0,
            "images_per_second": images / sum(seconds) if sum(seconds) > 0 else 0.0,
            "per_epoch": epochs,
            "device": self.device,
            "out_dir": self.out_dir,
            "machine_load": self.machine_load,
            "versions": {
                "python": platform.python_version(),
                "torch": torch.__version__,
            },
        }

    def _data(self) -> DatasetInfo:
        from nasmlcn.data import open_dataset

        return self.data if self.data is not None else open_dataset(self.dataset)


def job_dataset(job: TrainJob) -> DatasetInfo:
    """The dataset ``job`` trains on, opened (a user's images read from the cache).

    Raises:
        UnknownNameError: An unknown name.
        DatasetError: Data that cannot be read.
    """
    if job.data is not None:
        return job.data
    from nasmlcn.data import open_dataset

    return open_dataset(job.dataset, image_size=job.image_size, data_dir=job.data_dir)


def job_run_options(
    job: TrainJob, out: Path | None, checkpoint: Path | None, data: DatasetInfo | None = None
) -> RunOptions:
    """How a job of one process trains and what it keeps (its :func:`job_outputs`):
    the checkpoint after every epoch, resumed where ``job.resume`` says, ``out``'s
    files, and the test at the epoch validation selects (a refit validates on
    nothing: its last epoch). ``data``: the job's dataset, opened already."""
    return RunOptions(
        checkpoint_path=checkpoint,
        resume=job.resume,
        out_dir=out,
        select=not job.refit,
        data=job_data(job, data),
    )


def job_data(job: TrainJob, data: DatasetInfo | None = None) -> dict[str, Any]:
    """What ``job`` trains and validates on, as its checkpoint records it, with the
    dataset's identity (a resume on other data, or on a user's data changed since, is
    refused: :func:`~nasmlcn.training._checkpoint.check_same_training`). ``data``: the
    job's dataset, opened already (opening a large folder walks all its files)."""
    from nasmlcn.training._checkpoint import RESUMED_DATA

    identity = (data or job_dataset(job)).identity
    given = {name: getattr(job, name) for name in RESUMED_DATA if name not in SEEN_AFTER_OPENING}
    # the content's hash is compared on resuming; the whole record says what the data is
    return {
        **given,
        "split_seed": job.data_seed,
        "dataset_sha256": identity.sha256,
        "dataset_identity": identity.to_dict(),
    }


SEEN_AFTER_OPENING = ("dataset_sha256", "split_seed")
"""Names of :data:`RESUMED_DATA` that :func:`job_data` records from more than the job's
own fields."""


def job_outputs(job: TrainJob, *, can_resume: bool = True) -> tuple[Path | None, Path | None]:
    """The output folder and checkpoint path of ``job``, checked before any work.

    A checkpoint to resume is read here, so that one of another model (or a file
    that is no checkpoint) is refused before anything in ``--out`` is written.

    Raises:
        CheckpointError: ``--out`` holds a checkpoint and ``resume`` is off (or, with
            none, a run's report or another model's architecture), or the
            checkpoint to resume is unreadable, for another model or under another
            lr schedule; ``--out`` is a file.
        SpecError: ``resume`` where the kind of job cannot resume.
    """
    out = Path(job.out_dir) if job.out_dir else None
    checkpoint = out / CHECKPOINT_NAME if out else None
    if job.resume and not can_resume:
        raise SpecError(
            f"{option('resume')} is not supported with several processes (they save the model "
            f"after the last epoch only, not the optimizer's state); start a new {option('out_dir')}"
        )
    if out is not None:
        check_out_dir(out)
    if checkpoint is not None and checkpoint.exists() and not job.resume:
        raise CheckpointError(
            f"{str(out)!r} already holds a checkpoint; pass {option('resume')} to continue it or "
            f"choose another {option('out_dir')}"
        )
    if out is not None and checkpoint is not None and not job.resume and not checkpoint.exists():
        check_new_run(out, job.arch)  # a report or architecture kept there
    if checkpoint is not None and job.resume and checkpoint.exists():
        from nasmlcn.training._batch_policy import check_same_batch_policy
        from nasmlcn.training._checkpoint import (
            check_resumable,
            check_same_arch,
            load_checkpoint,
        )

        payload = load_checkpoint(checkpoint)
        check_same_arch(checkpoint, payload["arch"], job.arch)
        check_run_files(checkpoint.parent, payload)  # a result.json of another run
        check_resumable(checkpoint, payload, job.config, job_data(job))
        check_same_batch_policy(checkpoint, payload["train_config"], job.config.batch_policy)
    return out, checkpoint


def step_batch_size(job: TrainJob) -> int:
    """The largest batch a training step of ``job`` sees (its batch policy's largest;
    ``--train-limit`` caps it)."""
    from nasmlcn.training._batch_policy import largest_batch_size

    c = job.config
    largest = largest_batch_size(c.batch_policy, c.batch_size, c.epochs)
    if job.train_limit is not None:
        return min(largest, job.train_limit)
    return largest


def load_job_splits(job: TrainJob, data: DatasetInfo | None = None) -> Any:
    """The seeded train/validation/test splits of ``job`` (a ``DataSplits``); a refit's
    trains on the training and validation images and validates on none. ``data``: the
    job's dataset, opened already."""
    from nasmlcn.data import load_splits

    splits = load_splits(
        data or job_dataset(job),
        job.data_dir,
        download=job.download,
        val_fraction=job.val_fraction,
        seed=job.data_seed,
        train_limit=job.train_limit,
        val_limit=job.val_limit,
        test_limit=job.test_limit,
    )
    return splits.refit() if job.refit else splits
