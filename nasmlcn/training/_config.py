"""Training configuration and per-epoch results (pure Python)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, overload

from nasmlcn._defaults import LEARNING_RATE
from nasmlcn._setting import SEED_RANGE, Range, check_ranges, setting
from nasmlcn.errors import SpecError, option
from nasmlcn.training._augment import AUGMENTATIONS
from nasmlcn.training._batch_policy import BATCH_POLICIES, DEFAULT_LR_POLICY, default_lr_policy
from nasmlcn.training._schedules import LR_POLICIES

MAX_EPOCHS = 100_000
"""The most epochs a training run may be given: more is no run's plan but a typo, and
the batch sizes and learning rates of every epoch are laid out before the first."""


def _lr_policies() -> dict[str, str]:
    return {name: LR_POLICIES.get(name).description for name in LR_POLICIES}


def _batch_policies() -> dict[str, str]:
    return {name: BATCH_POLICIES.get(name).description for name in BATCH_POLICIES}


def _augmentations() -> dict[str, str]:
    return {name: AUGMENTATIONS.get(name).description for name in AUGMENTATIONS}


def _lr_policy_default() -> str:
    """``lr_policy``'s default as ``--help`` says it: the usual one, and each batch
    policy's own (``one-cycle; with --batch-policy warmadabatch: phase-restarts``)."""
    own = [(name, BATCH_POLICIES.get(name).lr_policy) for name in BATCH_POLICIES]
    return "; ".join(
        [DEFAULT_LR_POLICY, *(f"with --batch-policy {b}: {lr}" for b, lr in own if lr)]
    )


class _OwnPolicy(str):
    """The value ``lr_policy`` holds when it was not given: the batch policy's own
    name, a ``str`` equal to it (saved, printed and compared as the name).
    ``dataclasses.replace`` hands it back to ``__init__``, which then takes the new
    batch policy's own, as if it had not been given."""

    __slots__ = ()


class _BatchPolicyOwn:
    """The ``lr_policy`` field: ``__init__`` takes a name or None (the default: not
    given), and ``TrainConfig.__post_init__`` puts the batch policy's own
    (:func:`~nasmlcn.training.default_lr_policy`) in place of None, so that the field
    always reads as a registered name (a ``str``, to the type checker too).

    The value lives in the instance's ``__dict__``, as a plain field's does: ``repr``,
    ``asdict``, pickles and saved configs see the name.
    """

    name = "lr_policy"

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return "<the batch policy's own>"

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _BatchPolicyOwn: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> str: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> str | _BatchPolicyOwn:
        if obj is None:
            return self
        value: str = obj.__dict__[self.name]
        return value

    def __set__(self, obj: object, value: str | None) -> None:
        given: object = value  # the dataclass passes the default itself when not given
        not_given = given is self or isinstance(value, _OwnPolicy)  # the latter: replace()
        obj.__dict__[self.name] = None if not_given else value


@dataclass(frozen=True)
class TrainConfig:
    """How a model is trained.

    Each field's default, help and range are written once, in its ``setting(...)``
    below (``nasmlcn train`` makes its options from them); ``batch_size``, ``lr`` and
    ``lr_decay`` default to the thesis's values. What one line of help cannot say:

    - ``lr_policy`` not given (None) is the batch policy's own
      (:func:`~nasmlcn.training.default_lr_policy`): ``phase-restarts`` for
      ``warmadabatch`` (FasTrCaps), else ``one-cycle``, which beat the thesis's
      ``exponential`` on Fashion-MNIST (measured figures: docs/results.md). The field
      then holds that name, still as not given: ``dataclasses.replace`` with another
      ``batch_policy`` takes that one's own (a given name is kept). A one-cycle or
      phase-restarts schedule is laid out over the run: a run can be resumed but
      not extended.
    - ``fuse_lanes``: :mod:`nasmlcn.models._fused`; ``cuda_graphs``:
      :mod:`nasmlcn.training._step` (ignored off a GPU).
    """

    epochs: int = setting(
        10,
        "Training epochs",
        range=Range(1, MAX_EPOCHS, integer=True, why="the thesis trains 10 to 100"),
    )
    batch_size: int = setting(100, "Training batch size", range=Range(1, integer=True))
    lr: float = setting(
        LEARNING_RATE,
        "Initial Adam learning rate",
        range=Range(0.0, low_open=True, finite=True),
    )
    lr_policy: _BatchPolicyOwn = setting(  # noqa: RUF009 (a field, made once per class)
        _BatchPolicyOwn(),
        "{described} (a one-cycle or phase-restarts run resumes but cannot be extended)",
        choices=_lr_policies,
        shown_default=_lr_policy_default(),
    )
    lr_decay: float = setting(
        0.9,
        "Per-epoch factor of the exponential lr policy",
        range=Range(0.0, low_open=True, finite=True),
    )
    reconstruction_weight: float = setting(
        0.0005,
        "Weight of the summed squared reconstruction error (Sabour et al.)",
        range=Range(0.0, finite=True),
    )
    seed: int = setting(
        0,
        "Seed for the split, initialisation, shuffling and lane dropout",
        range=SEED_RANGE,
    )
    device: str = setting("cpu", "Where it trains: cpu, cuda, cuda:N or auto")
    eval_batch_size: int = setting(
        500, "Batch size of the validation and test passes", range=Range(1, integer=True)
    )
    augment: str = setting(
        "none", "Training-batch augmentation: {described}", choices=_augmentations
    )
    batch_policy: str = setting(
        "fixed", "Batch size per epoch: {described}", choices=_batch_policies
    )
    fuse_lanes: bool = setting(
        True,
        "Run lanes of one kind as one computation (the same model and checkpoints); "
        "--no-fuse-lanes runs them one after another, for comparison",
        shown_default="on",
    )
    cuda_graphs: bool = setting(
        True,
        "On a GPU, replay each training and evaluation step from a CUDA graph (captured "
        "after 2 eager steps of each batch size); --no-cuda-graphs runs eagerly",
        shown_default="on",
    )

    def __post_init__(self) -> None:
        for name in ("fuse_lanes", "cuda_graphs"):
            if not isinstance(getattr(self, name), bool):
                raise SpecError(
                    f"{option(name)} must be true or false, got {getattr(self, name)!r}"
                )
        check_ranges(self, SpecError)  # every number within the range its field declares
        if self.batch_policy not in BATCH_POLICIES:
            raise SpecError(
                f"{option('batch_policy')}: {BATCH_POLICIES.unknown_message(self.batch_policy)}"
            )
        if self.__dict__["lr_policy"] is None:  # not given: the batch policy's own
            self.__dict__["lr_policy"] = _OwnPolicy(default_lr_policy(self.batch_policy))
        if self.lr_policy not in LR_POLICIES:
            raise SpecError(f"{option('lr_policy')}: {LR_POLICIES.unknown_message(self.lr_policy)}")
        if self.augment not in AUGMENTATIONS:
            raise SpecError(
                f"{option('augment')}: unknown augmentation {self.augment!r}; "
                f"choose one of: {', '.join(AUGMENTATIONS.names())}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EpochResult:
    """What one epoch produced; the per-epoch callback receives it.

    Attributes:
        epoch: 1-based epoch number.
        train_loss: Mean training loss over the epoch.
        train_accuracy: Training accuracy over the epoch (lane dropout active).
        val_loss: Validation loss.
        val_accuracy: Validation accuracy in [0, 1].
        seconds: Wall time of the training pass (without validation).
        eval_seconds: Wall time of the validation pass.
        images_per_second: Training images per second.
        lr: Learning rate at the start of the epoch.
        batch_size: The epoch's training batch size (its batch policy's; 0 in
            results saved before batch policies).
    """

    epoch: int
    train_loss: float
    train_accuracy: float
    val_loss: float
    val_accuracy: float
    seconds: float
    eval_seconds: float
    images_per_second: float
    lr: float
    batch_size: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RunOptions:
    """What a training run keeps, resumes from, tests and writes, beside how it trains.

    :func:`~nasmlcn.training._trainer.train_epochs` reads the checkpoint fields and
    ``should_stop``; :func:`~nasmlcn.training.train` also ``test``, ``select``
    and ``out_dir``.

    Attributes:
        checkpoint_path: Written atomically after every epoch when given.
        resume: Continue from ``checkpoint_path`` if it exists; its architecture
            must be the run's.
        run_id: The id every checkpoint of the run carries (a resumed checkpoint's
            own id wins; None and no resumed id: a new one).
        should_stop: Asked after every training and validation batch; a reason it
            returns stops training at once with
            :class:`~nasmlcn.training.TrainingStopped` (the last epoch's checkpoint
            is the one kept), as Ctrl-C would.
        test: Select the best-validation epoch's weights and evaluate them, and the
            last epoch's, on the test split (:mod:`~nasmlcn.training._selection`).
        select: With ``test``, False tests the last epoch only and reports it as the
            selected one: for a run whose epochs were chosen beforehand (a refit on
            training + validation data, with nothing held out to select on).
        out_dir: ``arch.json`` is written here once the model is built.
        data: What the run trains and validates on (a :class:`TrainJob`'s dataset,
            split and limits), kept in its checkpoint: a resume on other data is
            refused. None: not recorded (the caller holds the data).
    """

    checkpoint_path: str | os.PathLike[str] | None = None
    resume: bool = False
    run_id: str | None = None
    should_stop: Callable[[], str | None] | None = None
    test: bool = True
    select: bool = True
    out_dir: Path | None = None
    data: Mapping[str, Any] | None = None
