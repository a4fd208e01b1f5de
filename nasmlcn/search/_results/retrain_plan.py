"""What ``nasmlcn retrain`` trains: the chosen trials of a study as training jobs,
each checked before anything is trained (:func:`plan_retrain`), and their refits;
:mod:`nasmlcn.search._results.retrain` runs them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn._text import counted
from nasmlcn.errors import SearchError
from nasmlcn.search._run.repeats import TrialTraining
from nasmlcn.study import TIE_MARGIN

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn.data import DatasetInfo
    from nasmlcn.specs import ArchSpec
    from nasmlcn.study import TrialRecord
    from nasmlcn.training import TrainConfig, TrainJob

INFERENCE_THROUGHPUT_BATCH = 100
"""Images per timed pass of the inference throughput (the training batch of the
thesis); the search's latency objective uses batch 1."""


@dataclass(frozen=True)
class RetrainOptions:
    """What ``nasmlcn retrain`` asks for.

    Attributes:
        pareto: The Pareto front (single objective: the best trial).
        top: The ``top`` feasible completed trials by the first objective.
        epochs: Training epochs (None: the search's).
        train_limit: Training images (None: the whole training split).
        test_limit: Test images (None: the whole test set).
        dataset: Train and test on this dataset (a name or a path) instead of the
            search's (the architecture's input and classes are fitted to it).
        image_size: With a ``dataset`` path: resize its images to ``N`` or ``HxW``
            (None: the search's resize where it had one).
        data_dir: Dataset directory (None: the search's, else the default).
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        out_dir: Run folders go here, one per trial (``trial-0007``).
        resume: Continue the checkpoints already in the run folders.
        inference_batch_size: Images per timed inference pass.
        download: Allow downloading a missing dataset.
        seed: Seed of the train/validation split, the initialisation and the
            batch order (None: the search's: its split with the study's seed, so the
            search's validation images stay unseen, and each trial's weights and
            batch order with the training seed the trial trained with, so the same
            settings reach the trial's figure). Another seed is another split: its training set may hold
            images the search validated on (their test images stay unseen). Run
            folders are then ``trial-0007-seed-1``, so seeds share an ``out_dir``.
        allow_proxy: Retrain a study searched with the ``proxy`` evaluator (its
            accuracies are an analytic stand-in, not measured: its "best" models are
            chosen by made-up figures, so this is refused unless asked for).
        refit: After each run, train a fresh model on the training and validation
            images for the epochs that run selected on validation, and report its
            test accuracy (twice the training time).
        seeds: Train every selected model once with each of these seeds (paired:
            the same seeds for every model), seed after seed, each as ``seed`` would;
            the report then gives each model's mean with its interval and which are
            tied with the best (:mod:`nasmlcn.study._ties`). With ``refit``, each
            seed's refit is its figure. Empty: one run (``seed``).
        tie_margin: The equivalence margin of the ties (accuracy; see
            :data:`~nasmlcn.study.TIE_MARGIN`).
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
    refit: bool = False
    image_size: str | None = None
    seeds: tuple[int, ...] = ()
    tie_margin: float = TIE_MARGIN

    def __post_init__(self) -> None:
        from nasmlcn.data import format_image_size

        object.__setattr__(self, "image_size", format_image_size(self.image_size))
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
        self._check_seeds()

    def _check_seeds(self) -> None:
        """``seeds``: distinct integers >= 0, not beside ``seed``; a margin > 0."""
        seeds = self.seeds
        if seeds and self.seed is not None:
            raise SearchError(
                f"give ‹seed› {self.seed} or ‹seeds› {','.join(map(str, seeds))}, not both "
                "(‹seeds›: every model once with each seed)"
            )
        bad = [s for s in seeds if isinstance(s, bool) or not isinstance(s, int) or s < 0]
        if bad:
            raise SearchError(f"seeds must be integers >= 0, got {bad[0]!r}")
        repeated = sorted({s for s in seeds if seeds.count(s) > 1})
        if repeated:
            raise SearchError(
                f"seed {repeated[0]} is given twice in ‹seeds› {','.join(map(str, seeds))}: "
                "each seed trains each model once"
            )
        margin = self.tie_margin
        if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 < margin < 1:
            raise SearchError(
                f"tie_margin must be an accuracy difference between 0 and 1 (e.g. 0.005), "
                f"got {margin!r}"
            )

    def runs(self) -> list[RetrainOptions]:
        """One set of options per run: each of ``seeds`` as ``seed``, else these."""
        return [replace(self, seed=s, seeds=()) for s in self.seeds] or [self]

    @property
    def selection(self) -> str:
        return "pareto" if self.pareto else f"top {self.top}"


def parse_seeds(text: str) -> tuple[int, ...]:
    """``--seeds``: a count ``N`` (the seeds 1 to N) or a list (``11,12,13``).

    Raises:
        SearchError: A count below 1, or an item that is not an integer >= 0.
    """
    items = [item.strip() for item in str(text).split(",")]
    for item in items:
        if not item.isdigit():
            raise SearchError(
                f"‹seeds› {text!r}: {item!r} is not a seed; give a count N (the seeds 1 to N) "
                "or a list of integers >= 0 (11,12,13)"
            )
    if len(items) == 1:
        count = int(items[0])
        if count < 1:
            raise SearchError(
                f"‹seeds› {text!r}: give a count >= 1 (the seeds 1 to N) or a list of seeds "
                "(11,12,13)"
            )
        return tuple(range(1, count + 1))
    return tuple(int(item) for item in items)


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
    refit: bool = False  # the refit of the run with the same number (see refit_target)
    image_size: str | None = None
    split_seed: int | None = None  # the search's split, where config.seed is the trial's
    # ``dataset`` opened once (retrain_data): its jobs train and test on it, asking nothing
    data: DatasetInfo | None = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        return f"trial {self.number}: {self.arch.describe()}"


REFIT_SUFFIX = "-refit"
"""Of a refit's run folder: ``trial-0007-refit`` beside ``trial-0007``."""


def refit_target(target: RetrainTarget, epochs: int) -> RetrainTarget:
    """The refit of ``target``: a fresh model, the same seed and settings, trained
    ``epochs`` epochs on training and validation data, in its own run folder."""
    return replace(
        target,
        config=replace(target.config, epochs=epochs),
        run_dir=target.run_dir.with_name(target.run_dir.name + REFIT_SUFFIX),
        refit=True,
    )


def refit_protocol(epochs: int) -> str:
    """The protocol of a refit of ``epochs`` epochs."""
    return (
        f"refit on training + validation for {counted(epochs, 'epoch')} (chosen on "
        "validation), tested once"
    )


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


def selection_notes(
    study: optuna.Study, options: RetrainOptions, data: tuple[DatasetInfo, bool] | None = None
) -> list[str]:
    """What the selection of ``options`` left out, in words: the trials skipped as
    repeats of a better one, and fewer models than ``top`` asked for; and other data
    than the search's, where ``options.dataset`` gives it (``data``: what
    :func:`retrain_data` returned, else it is asked)."""
    chosen, skipped = _select(study, options.pareto, options.top)
    notes = [
        f"trial {n} skipped: the same model and training as trial {same}" for n, same in skipped
    ]
    info_dataset, other = data or retrain_data(study, options)
    if other:
        from nasmlcn.study import StudyRecord

        notes.append(
            f"trained and tested on {info_dataset.identity.describe()}, not the search's "
            f"{StudyRecord.read(study).data.describe()}: the search's accuracies do not compare"
        )
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

    from nasmlcn.search._results.summary import best_trials, is_feasible, rank_key

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


def plan_retrain(
    study: optuna.Study, options: RetrainOptions, data: tuple[DatasetInfo, bool] | None = None
) -> list[RetrainTarget]:
    """The selected trials of ``study`` as training jobs, every one checked (its
    architecture, the dataset, its run folder) before anything is trained; ``data``:
    what :func:`retrain_data` returned for a study :func:`check_retrainable` passed
    (else both are asked here), so that a run of several seeds opens its data once.

    Raises:
        SearchError: No trial to retrain, or a trial stored no architecture.
        UnknownNameError: ``options.dataset`` is not a registered dataset.
        DatasetError: The search's own data is gone (no cached copy) or has changed
            since (then ``options.dataset`` retrains on it as it is), or
            ``options.dataset`` cannot be read.
        SpecError: An architecture that does not fit the dataset.
        CheckpointError: A run folder already holds a checkpoint (without
            ``resume``), or cannot be made.
    """
    from nasmlcn.specs import arch_from_dict
    from nasmlcn.study import StudyRecord, TrialRecord
    from nasmlcn.training import TrainConfig, arch_for_dataset, job_outputs

    searched = StudyRecord.read(study)
    config = searched.config
    if data is None:
        check_retrainable(study, options)
        data = retrain_data(study, options)  # fails here, before any work
    info_dataset, other = data
    dataset = info_dataset.name
    targets = []
    for trial in select_trials(study, pareto=options.pareto, top=options.top):
        record = TrialRecord.of(trial)
        if not record.arch:
            raise SearchError(
                f"trial {trial.number} of study {study.study_name!r} stored no architecture "
                "(not a study written by nasmlcn search?); nothing was retrained"
            )
        arch = arch_for_dataset(arch_from_dict(record.arch), info_dataset, strict=not other)
        # the settings the trial trained with, where its space searched them
        training = TrialTraining.of(trial.params, int(config.get("batch_size", 100)))
        train_config = TrainConfig(
            epochs=options.epochs or int(config.get("epochs") or 10),
            batch_size=training.batch_size,
            lr=training.lr,
            lr_policy=training.lr_policy,  # None: the batch policy's own
            batch_policy=training.batch_policy,
            # by default the trial's own seeds: the search's train/validation split
            # and the weights and batch order the trial trained with
            seed=trial_seed(record, config) if options.seed is None else options.seed,
            device=options.device,
        )
        curve = record.accuracy_per_epoch
        target = RetrainTarget(
            number=trial.number,
            arch=arch,
            dataset=dataset,
            config=train_config,
            data_dir=options.data_dir or config.get("data_dir"),
            image_size=info_dataset.identity.image_size,
            val_limit=None if other else config.get("val_limit"),
            run_dir=Path(options.out_dir) / run_folder(trial.number, options.seed),
            search_accuracy=None if other or not curve else curve[-1],
            search_epochs=len(curve) or None,
            split_seed=searched.search_seed if options.seed is None else None,
            data=info_dataset,
        )
        job_outputs(target_job(target, options))  # an occupied --out fails now
        if options.refit and not options.resume:
            # (resumed, its folder is checked by its training, once its epochs are known)
            job_outputs(target_job(refit_target(target, train_config.epochs), options))
        targets.append(target)
    return targets


def check_retrainable(study: optuna.Study, options: RetrainOptions) -> None:
    """A study searched with the proxy evaluator is retrained only with ``allow_proxy``.

    Raises:
        SearchError: It was, and ``allow_proxy`` is not given.
    """
    from nasmlcn.study import StudyRecord

    if StudyRecord.read(study).evaluator == "proxy" and not options.allow_proxy:
        raise SearchError(
            f"study {study.study_name!r} was searched with the proxy evaluator: its "
            "accuracies are an analytic stand-in, nothing was trained, so its best models "
            "were chosen by made-up figures; retrain them anyway with ‹allow_proxy›"
        )


def retrain_data(study: optuna.Study, options: RetrainOptions) -> tuple[DatasetInfo, bool]:
    """The dataset the retraining trains and tests on, and whether it is other data
    than the search's: ``options.dataset`` where given (the search's own resize
    where none is given for the same path), else the search's, found where it was
    read or by its content in the cache.

    Raises:
        DatasetError: The search's data is gone or changed; other data unreadable.
    """
    from nasmlcn.data import DatasetInfo, open_dataset, open_recorded
    from nasmlcn.study import StudyRecord

    record = StudyRecord.read(study)
    searched = record.data
    data_dir = options.data_dir or record.config.get("data_dir")
    if options.dataset is None:
        what = f"study {study.study_name!r} searched on it"
        return open_recorded(searched, data_dir=data_dir, what=what), False
    spelled = DatasetInfo.spell(options.dataset)  # asked once: open_dataset is handed it
    size = options.image_size
    if size is None and spelled.path:
        size = searched.image_size
    given = open_dataset(spelled.dataset, image_size=size, data_dir=data_dir)
    return given, not given.identity.same_data(searched)


def trial_seed(record: TrialRecord, config: Mapping[str, Any]) -> int:
    """What seeded the trial's training: the training seed it stored (from the study's
    seed and its model: ``EvalRequest.training_seed``); a trial stored before it was
    kept, the study's seed."""
    stored = record.training.get("training_seed")
    if isinstance(stored, int) and not isinstance(stored, bool):
        return stored
    return int(config.get("seed") or 0)


def run_folder(number: int, seed: int | None) -> str:
    """The run folder's name of trial ``number`` retrained with ``seed`` (None: the
    search's seed)."""
    return f"trial-{number:04d}" + ("" if seed is None else f"-seed-{seed}")


def target_job(target: RetrainTarget, options: RetrainOptions) -> TrainJob:
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
        refit=target.refit,
        image_size=target.image_size,
        split_seed=target.split_seed,
        data=target.data,
    )
