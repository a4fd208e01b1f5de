"""NASCaps' second stage: train the selected trials again, fully, and test them.

A search ranks candidates by the validation accuracy of a short training
(NASCaps sec. 4.2: "the candidate networks that show their accuracy and hardware
efficiency in a Pareto-front are fully-trained to evaluate their actual
validation accuracy"). :func:`retrain_study` does that second stage for a study
nasmlcn wrote:

- which trials: the Pareto front (``pareto``; on a single-objective study the
  front is its best trial) or the ``top`` K feasible completed trials by the first
  objective (accuracy), K different models (a trial with the architecture and
  training settings of a better one would train the same model: skipped);
- how: each trial's stored architecture (the ``arch`` attribute,
  :class:`~nasmlcn.study._trial.TrialRecord`) with the trial's own training
  settings as the ``train`` evaluator used them (its sampled ``batch_size`` and
  ``lr``, else the search's; the search's epochs, dataset and seed), any of them
  overridden by :class:`RetrainOptions`; trained by
  :func:`~nasmlcn.training.run_training` (the one training path) on the whole
  training split (``train_limit`` None) of the same seeded train/validation split
  as the search, so the search's validation images stay unseen, and tested on the
  test set, which the search never touches;
- measured: test accuracy, parameters, training throughput (training images per
  second of the training passes) and inference throughput (images per second
  classifying test images, forward only, eval mode, no decoder, batch
  ``inference_batch_size``: :func:`nasmlcn.measure.time_inference` on the model
  loaded back from the checkpoint written, on the device it trained on);
- written: one run folder per trial under ``out_dir`` (``trial-0007/``) as
  ``nasmlcn train --out`` writes it (``checkpoint.pt``, ``arch.json``,
  ``result.json`` with a ``retrain`` section), so ``nasmlcn train --arch ...
  --resume`` and :func:`nasmlcn.training.load_model` read it.

Where the results live: :mod:`nasmlcn.study._retrained` (the study's ``nasmlcn``
attribute, one :class:`~nasmlcn.study.RetrainedModel` per trial and dataset, stored
as soon as its model is tested). Everything is checked on a read-only view of the
study before anything is trained or written: a bad request leaves the study untouched.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn.errors import SearchError
from nasmlcn.study import RetrainedModel, store_retrained

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn.specs import ArchSpec
    from nasmlcn.training import Callback, TrainConfig, TrainJob

logger = logging.getLogger(__name__)

INFERENCE_THROUGHPUT_BATCH = 100
"""Images per timed pass of the inference throughput (the training batch of the
thesis); the search's latency objective uses batch 1."""


# -- what to retrain ---------------------------------------------------------------


@dataclass(frozen=True)
class RetrainOptions:
    """What ``nasmlcn retrain`` asks for.

    Attributes:
        pareto: The Pareto front (single objective: the best trial).
        top: The ``top`` feasible completed trials by the first objective.
        epochs: Training epochs (None: the search's).
        train_limit: Training images (None: the whole training split).
        test_limit: Test images (None: the whole test set).
        dataset: Train and test on this dataset instead of the search's (the
            architecture's input and classes are fitted to it).
        data_dir: Dataset directory (None: the search's, else the default).
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        out_dir: Run folders go here, one per trial (``trial-0007``).
        resume: Continue the checkpoints already in the run folders.
        inference_batch_size: Images per timed inference pass.
        download: Allow downloading a missing dataset.
        seed: Seed of the train/validation split, the initialisation and the
            batch order (None: the search's, so the search's validation images
            stay unseen). Another seed is another split: its training set may hold
            images the search validated on (their test images stay unseen). Run
            folders are then ``trial-0007-seed-1``, so seeds share an ``out_dir``.
        allow_proxy: Retrain a study searched with the ``proxy`` evaluator (its
            accuracies are an analytic stand-in, not measured: its "best" models are
            chosen by made-up figures, so this is refused unless asked for).
    """

    pareto: bool = False
    top: int | None = None
    epochs: int | None = None
    train_limit: int | None = None
    test_limit: int | None = None
    dataset: str | None = None
    data_dir: str | None = None
    device: str = "auto"
    out_dir: str = "runs/retrain"
    resume: bool = False
    inference_batch_size: int = INFERENCE_THROUGHPUT_BATCH
    download: bool = True
    seed: int | None = None
    allow_proxy: bool = False

    def __post_init__(self) -> None:
        if self.pareto and self.top is not None:
            raise SearchError(
                "give ‹pareto› or ‹top› K, not both (‹pareto›: the Pareto front; "
                "‹top› K: the K most accurate trials)"
            )
        if not self.pareto and self.top is None:
            raise SearchError(
                "say which trials to retrain: ‹pareto› (the Pareto front) or ‹top› K "
                "(the K most accurate trials)"
            )
        for name in ("top", "epochs", "train_limit", "test_limit", "inference_batch_size"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise SearchError(f"{name} must be an integer >= 1, got {value!r}")
            if value is not None and value < 1:
                raise SearchError(f"{name} must be >= 1, got {value!r}")
        if self.seed is not None and (
            isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0
        ):
            raise SearchError(f"seed must be an integer >= 0, got {self.seed!r}")

    @property
    def selection(self) -> str:
        return "pareto" if self.pareto else f"top {self.top}"


@dataclass(frozen=True)
class RetrainTarget:
    """One trial to retrain, checked and laid out (see :func:`plan_retrain`)."""

    number: int
    arch: ArchSpec
    dataset: str
    config: TrainConfig
    data_dir: str | None
    val_limit: int | None
    run_dir: Path
    search_accuracy: float | None
    search_epochs: int | None

    @property
    def label(self) -> str:
        return f"trial {self.number}: {self.arch.describe()}"


def select_trials(study: optuna.Study, *, pareto: bool, top: int | None) -> list[FrozenTrial]:
    """The trials to retrain: the feasible Pareto front (several objectives; the
    best trial of a single-objective study), or the ``top`` feasible completed
    trials by the first objective, best first. A trial that would train the same
    model as a better one (the same architecture and training settings: samplers
    do propose a point twice) is skipped, so ``top`` K are K different models
    (:func:`selection_notes` says which were skipped).

    Raises:
        SearchError: The study has no feasible completed trial.
    """
    return _select(study, pareto, top)[0]


def selection_notes(study: optuna.Study, options: RetrainOptions) -> list[str]:
    """What the selection of ``options`` left out, in words: the trials skipped as
    repeats of a better one, and fewer models than ``top`` asked for."""
    chosen, skipped = _select(study, options.pareto, options.top)
    notes = [
        f"trial {n} skipped: the same model and training as trial {same}" for n, same in skipped
    ]
    if options.top is not None and len(chosen) < options.top:
        notes.append(
            f"{len(chosen)} of the top {options.top}: the study has {len(chosen)} different "
            "feasible completed model(s)"
        )
    return notes


def _select(
    study: optuna.Study, pareto: bool, top: int | None
) -> tuple[list[FrozenTrial], list[tuple[int, int]]]:
    """The chosen trials and the skipped ones, each with the trial it repeats."""
    from optuna.trial import TrialState

    from nasmlcn.search._results import best_trials, is_feasible, rank_key

    if pareto:
        ranked = best_trials(study, top=1)
    else:
        done = [
            t
            for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if t.values is not None and is_feasible(t)
        ]
        ranked = sorted(done, key=lambda t: rank_key(study, t))
    chosen: list[FrozenTrial] = []
    skipped: list[tuple[int, int]] = []
    seen: dict[str, int] = {}
    for trial in ranked:
        key = _model_key(trial)
        if key is not None and key in seen:
            skipped.append((trial.number, seen[key]))
            continue
        if key is not None:
            seen[key] = trial.number
        chosen.append(trial)
        if not pareto and len(chosen) == (top or 1):
            break
    if not chosen:
        raise SearchError(
            f"study {study.study_name!r} has no completed feasible trial to retrain "
            "(run or continue the search first)"
        )
    return chosen, skipped


def _model_key(trial: FrozenTrial) -> str | None:
    """What decides the model a retraining trains from ``trial`` (its architecture and
    training parameters); None when it stored no architecture."""
    import json

    from nasmlcn.study import TrialRecord

    arch = TrialRecord.of(trial).arch
    if not arch:
        return None
    training = {k: trial.params.get(k) for k in ("batch_size", "lr", "lr_policy", "batch_policy")}
    return json.dumps([arch, training], sort_keys=True)


def plan_retrain(study: optuna.Study, options: RetrainOptions) -> list[RetrainTarget]:
    """The selected trials of ``study`` as training jobs, every one checked (its
    architecture, the dataset, its run folder) before anything is trained.

    Raises:
        SearchError: No trial to retrain, or a trial stored no architecture.
        UnknownNameError: ``options.dataset`` is not a registered dataset.
        SpecError: An architecture that does not fit the dataset.
        CheckpointError: A run folder already holds a checkpoint (without
            ``resume``), or cannot be made.
    """
    from nasmlcn.data import DATASETS
    from nasmlcn.specs import arch_from_dict
    from nasmlcn.study import TrialRecord, study_info
    from nasmlcn.training import TrainConfig, arch_for_dataset, default_lr_policy, job_outputs

    info = study_info(study)
    config = info.get("config") or {}
    if config.get("evaluator") == "proxy" and not options.allow_proxy:
        raise SearchError(
            f"study {study.study_name!r} was searched with the proxy evaluator: its "
            "accuracies are an analytic stand-in, nothing was trained, so its best models "
            "were chosen by made-up figures; retrain them anyway with ‹allow_proxy›"
        )
    search_data = config.get("dataset") or "fashion-mnist"
    dataset = options.dataset or search_data
    info_dataset = DATASETS.get(dataset)  # an unknown name fails here, before any work
    other = dataset != search_data
    targets = []
    for trial in select_trials(study, pareto=options.pareto, top=options.top):
        record = TrialRecord.of(trial)
        if not record.arch:
            raise SearchError(
                f"trial {trial.number} of study {study.study_name!r} stored no architecture "
                "(not a study written by nasmlcn search?); nothing was retrained"
            )
        arch = arch_for_dataset(arch_from_dict(record.arch), info_dataset, strict=not other)
        train_config = TrainConfig(
            epochs=options.epochs or int(config.get("epochs") or 10),
            batch_size=int(trial.params.get("batch_size", config.get("batch_size", 100))),
            lr=float(trial.params.get("lr", 1e-3)),
            # the policies the trial trained with, where its space searched them
            lr_policy=str(
                trial.params.get("lr_policy")
                or default_lr_policy(str(trial.params.get("batch_policy", "fixed")))
            ),
            batch_policy=str(trial.params.get("batch_policy", "fixed")),
            # by default the search's seed: the same train/validation split
            seed=int(config.get("seed") or 0) if options.seed is None else options.seed,
            device=options.device,
        )
        curve = record.accuracy_per_epoch
        target = RetrainTarget(
            number=trial.number,
            arch=arch,
            dataset=dataset,
            config=train_config,
            data_dir=options.data_dir or config.get("data_dir"),
            val_limit=None if other else config.get("val_limit"),
            run_dir=Path(options.out_dir) / run_folder(trial.number, options.seed),
            search_accuracy=None if other or not curve else curve[-1],
            search_epochs=len(curve) or None,
        )
        job_outputs(_job(target, options))  # an occupied --out fails now
        targets.append(target)
    return targets


def run_folder(number: int, seed: int | None) -> str:
    """The run folder's name of trial ``number`` retrained with ``seed`` (None: the
    search's seed)."""
    return f"trial-{number:04d}" + ("" if seed is None else f"-seed-{seed}")


def _job(target: RetrainTarget, options: RetrainOptions) -> TrainJob:
    """The training job of ``target``."""
    from nasmlcn.training import TrainJob

    return TrainJob(
        target.arch,
        dataset=target.dataset,
        config=target.config,
        data_dir=target.data_dir,
        download=options.download,
        train_limit=options.train_limit,
        val_limit=target.val_limit,
        test_limit=options.test_limit,
        out_dir=str(target.run_dir),
        resume=options.resume,
    )


# -- running -----------------------------------------------------------------------


class RetrainObserver:
    """Hooks of a retrain run (the CLI's progress display, the dashboard's notes);
    all no-ops here. An observer that raises stops the run (models already stored
    stay stored)."""

    def on_start(self, study: optuna.Study, targets: Sequence[RetrainTarget]) -> None:
        pass

    def training_callbacks(self, target: RetrainTarget, index: int) -> Sequence[Callback]:
        """Training callbacks for the ``index``-th model (0-based)."""
        return ()

    def on_model_end(self, model: RetrainedModel) -> None:
        pass

    def on_end(self, study: optuna.Study, report: RetrainReport) -> None:
        """After the last model; ``study`` is writable (notes may be added)."""


@dataclass(frozen=True)
class RetrainReport:
    """What :func:`retrain_study` did; ``to_dict`` is what ``--json`` prints."""

    study: str
    selection: str
    dataset: str
    out_dir: str
    models: tuple[RetrainedModel, ...]
    notes: tuple[str, ...] = ()  # what the selection left out (selection_notes)
    seed: int | None = None  # --seed: the run folders are trial-NNNN-seed-S

    @property
    def run_folders(self) -> str:
        """The run folders' name pattern (``trial-NNNN``, ``trial-NNNN-seed-1``)."""
        return run_folder(0, self.seed).replace("0000", "NNNN")

    def to_dict(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "selection": self.selection,
            "dataset": self.dataset,
            "out_dir": self.out_dir,
            "models": [m.to_dict() for m in self.models],
            "notes": list(self.notes),
            "seed": self.seed,
        }


def retrain_study(
    name: str | None,
    url: str,
    options: RetrainOptions,
    *,
    observer: RetrainObserver | None = None,
) -> RetrainReport:
    """Retrains the selected trials of study ``name`` in storage ``url`` (see the
    module docstring) and stores each result on the study as soon as it is tested.

    Raises:
        StorageError: No such storage or study.
        SearchError, SpecError, CheckpointError, UnknownNameError: see
            :func:`plan_retrain`; raised before anything is trained or written.
        DatasetError, TrainingError: The data cannot be loaded, training diverged.
    """
    from nasmlcn.study import load_existing_study

    watcher = observer or RetrainObserver()
    readable = load_existing_study(name, url)
    targets = plan_retrain(readable, options)
    # a storage that cannot be written is refused now, not after the first model trained
    writable = load_existing_study(readable.study_name, url, read_only=False)
    watcher.on_start(readable, targets)
    done: list[RetrainedModel] = []
    test_images: dict[str, Any] = {}
    for index, target in enumerate(targets):
        model = _retrain_one(
            target, options, watcher.training_callbacks(target, index), test_images
        )
        store_retrained(writable, model)
        done.append(model)
        watcher.on_model_end(model)
    report = RetrainReport(
        readable.study_name,
        options.selection,
        targets[0].dataset,
        options.out_dir,
        tuple(done),
        tuple(selection_notes(readable, options)),
        options.seed,
    )
    watcher.on_end(writable, report)
    return report


def _retrain_one(
    target: RetrainTarget,
    options: RetrainOptions,
    callbacks: Sequence[Callback],
    test_images: dict[str, Any],
) -> RetrainedModel:
    """Trains, tests and times one model; writes its run folder."""
    from nasmlcn.measure import INFERENCE_PASSES, INFERENCE_WARMUP, time_inference
    from nasmlcn.training import (
        CHECKPOINT_NAME,
        load_job_splits,
        load_model,
        run_training,
        write_result,
    )

    started = time.perf_counter()
    job = _job(target, options)
    report = run_training(job, list(callbacks))
    weights = target.run_dir / CHECKPOINT_NAME
    # timed on the weights as written: what other commands load
    model, _ = load_model(weights)
    model.to(report.device)
    if target.dataset not in test_images:  # (N, C, H, W), normalised as in training
        test_images[target.dataset] = load_job_splits(job).test.first_inputs(
            options.inference_batch_size * (INFERENCE_WARMUP + INFERENCE_PASSES)
        )
    images = test_images[target.dataset]
    inference = time_inference(
        model,
        images,
        input_device=report.device,
        batch_size=options.inference_batch_size,
    )
    result = report.to_dict()
    retrained = RetrainedModel(
        number=target.number,
        dataset=target.dataset,
        lanes=target.arch.describe(),
        test_accuracy=report.test_accuracy,
        test_loss=report.test_loss,
        test_images=report.test_images,
        params=report.params,
        epochs=len(report.history),
        batch_size=target.config.batch_size,
        lr=target.config.lr,
        train_images=report.train_images,
        train_images_per_second=float(result["images_per_second"]),
        inference_images_per_second=1.0 / inference.seconds_per_image,
        inference_batch_size=inference.batch_size,
        device=report.device,
        seconds=time.perf_counter() - started,
        search_accuracy=target.search_accuracy,
        search_epochs=target.search_epochs,
        val_accuracy_per_epoch=[h.val_accuracy for h in report.history],
        weights=str(weights.resolve()),
        run_dir=str(target.run_dir.resolve()),
        retrained_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        seed=target.config.seed,
    )
    write_result(
        target.run_dir,
        {**result, "retrain": {**retrained.to_dict(), "inference": inference.to_dict()}},
    )
    logger.info("trial %d retrained: test accuracy %.4f", target.number, retrained.test_accuracy)
    return retrained
