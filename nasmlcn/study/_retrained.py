"""The models ``nasmlcn retrain`` trained again, as stored on the study.

Where they live: in the study's ``nasmlcn`` user attribute
(:mod:`nasmlcn.study._identity`), under ``retrained``: ``{"version": 1, "models":
[...]}``, one entry per retraining: a trial retrained again with other settings
(epochs, batch size, learning rate, image limits, a refit) or another seed or
dataset is stored beside its earlier retrainings, never over them; only a retraining
with the very same settings, seed and data replaces its twin (the caller is told
which, :class:`Stored`). Where a trial has several, reports show the one that
answers, by :data:`ANSWER_RULE`. A study attribute, not trial attributes, because Optuna
lets nobody change a finished trial (a private write would bypass its cache);
studies can be changed at any time through Optuna's public API. Each entry is
stored as soon as its model is tested, re-reading the attribute first, so an
interrupted run keeps the models it finished and other keys of the attribute are
never lost.

:class:`RetrainedModel` is the one schema of an entry, written
(:func:`store_retrained`) and read (:func:`retrained_models`) here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn._optuna_compat import storage_of, study_id_of
from nasmlcn.study._identity import stored_info, update_study_info
from nasmlcn.study._lock import hold
from nasmlcn.study._study_record import StudyRecord, record_info, search_dataset, search_seed

if TYPE_CHECKING:
    import optuna

RETRAINED_KEY = "retrained"
"""The key of the retrained models inside the study's ``nasmlcn`` user attribute."""
RETRAINED_VERSION = 1
LAST_EPOCH = "test after the last epoch"
"""The protocol of an entry that records none (written before epochs were selected)."""


@dataclass(frozen=True)
class RetrainedModel:
    """One retrained trial, as stored on the study and printed by ``--json``.

    Attributes:
        number: The trial.
        dataset: What it was trained and tested on.
        lanes: The architecture in the compact lane syntax.
        test_accuracy: Accuracy on ``test_images`` test images of the model
            ``protocol`` names: the weights of the epoch with the best validation
            accuracy (``selected_epoch``), or of a refit.
        test_loss: Loss on them.
        test_images: Test images.
        params: Trainable parameters.
        epochs: Training epochs of the run that selected on validation (a refit
            trains ``selected_epoch``).
        batch_size: Training batch size.
        lr: Initial learning rate.
        train_images: Training images per epoch (a refit's: training and validation).
        train_images_per_second: Training images per second of the training
            passes (validation not counted).
        inference_images_per_second: Images per second classifying test images
            (forward only, batch ``inference_batch_size``).
        inference_batch_size: Images per timed inference pass.
        device: Where it trained and was timed.
        seconds: Wall time of training, testing and timing.
        search_accuracy: The trial's validation accuracy at the end of its search
            training (its first objective's value); None when unknown.
        search_epochs: Epochs the search trained it.
        val_accuracy_per_epoch: The retraining's validation accuracy per epoch.
        weights: Path of the written ``checkpoint.pt``.
        run_dir: Its run folder.
        retrained_at: When (ISO 8601, local time).
        version: Schema version of this record.
        seed: The seed of its split, initialisation and batch order (None: an
            entry written before seeds were recorded, the search's seed).
        selected_epoch: The epoch with the best validation accuracy (None: an
            entry written before epochs were selected, tested after the last).
        last_epoch_test_accuracy: Test accuracy after the last of ``epochs``.
        protocol: How the test figure was chosen (empty: an entry written before
            it was recorded, :data:`LAST_EPOCH`).
        validation_run_test_accuracy: A refit's only: the test accuracy at
            ``selected_epoch`` of the run that chose it on validation.
        data_limits: The image limits retrain was given (``train_limit``,
            ``test_limit``); empty: the whole splits.
        machine_load: The most cores other processes held while it trained and was
            timed (:func:`nasmlcn.hardware.busy_record`: its throughputs are
            unreliable where they held half a core or more); None: not recorded.
        seed_given: Whether ``seed`` was given to the retraining (``--seed`` or
            ``--seeds``: its split, initialisation and batch order all come from it,
            so it pairs with other models' retrainings of that seed); False: the
            search's seeds; None: an entry written before this was recorded (its
            run folder's name says).
    """

    number: int
    dataset: str
    lanes: str
    test_accuracy: float
    test_loss: float
    test_images: int
    params: int
    epochs: int
    batch_size: int
    lr: float
    train_images: int
    train_images_per_second: float
    inference_images_per_second: float
    inference_batch_size: int
    device: str
    seconds: float
    search_accuracy: float | None
    search_epochs: int | None
    val_accuracy_per_epoch: list[float] = field(default_factory=list)
    weights: str = ""
    run_dir: str = ""
    retrained_at: str = ""
    version: int = RETRAINED_VERSION
    seed: int | None = None
    selected_epoch: int | None = None
    last_epoch_test_accuracy: float | None = None
    protocol: str = ""
    validation_run_test_accuracy: float | None = None
    data_limits: dict[str, int] = field(default_factory=dict)
    machine_load: dict[str, Any] | None = None
    seed_given: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def recipe(self) -> tuple[Any, ...]:
        """What makes two retrainings of a trial the same run, the seed aside: the
        data, epochs, batch size, learning rate, image limits and whether it is a refit."""
        return (*self.protocol_key, self.batch_size, self.lr)

    @property
    def protocol_key(self) -> tuple[Any, ...]:
        """What makes retrainings of different trials comparable, seed by seed: the
        data, epochs, image limits and whether they are refits (each trial keeps its
        own batch size and learning rate)."""
        limits = tuple(sorted(self.data_limits.items()))
        return (self.dataset, self.epochs, limits, self.refit)

    @property
    def given_seed(self) -> int | None:
        """The seed the retraining was given (:attr:`seed_given`), else None."""
        given = self.seed_given
        if given is None and self.seed is not None:  # an older entry: its folder says
            given = Path(self.run_dir).name.removesuffix("-refit").endswith(f"-seed-{self.seed}")
        return self.seed if given else None

    @property
    def training(self) -> int:
        """How much it trained: epochs x training images per epoch (a refit's: the
        epochs it refitted); the first key of :data:`ANSWER_RULE`."""
        epochs = self.selected_epoch if self.refit and self.selected_epoch else self.epochs
        return epochs * self.train_images

    @property
    def settings_text(self) -> str:
        """``10 ep x 54,000 images, seed 0`` (with ``, refit`` and the limits given)."""
        return self.recipe_text + (f", seed {self.seed}" if self.seed is not None else "")

    @property
    def recipe_text(self) -> str:
        """``10 ep x 54,000 images`` (with ``, refit`` and the limits given): its
        settings but the seed."""
        limits = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in self.data_limits.items())
        return (
            f"{self.epochs} ep x {self.train_images:,} images"
            + (f" ({limits})" if limits else "")
            + (", refit" if self.refit else "")
        )

    @property
    def refit(self) -> bool:
        """Whether the tested model is a refit on training + validation data."""
        return self.validation_run_test_accuracy is not None

    @property
    def protocol_text(self) -> str:
        """``protocol``, or what an entry written before it was recorded did."""
        return self.protocol or LAST_EPOCH

    @property
    def tested(self) -> str:
        """Which model was tested, for a table cell: ``ep 9/10 by val.``,
        ``refit, 9 ep`` or (an older entry) ``ep 10/10, last``."""
        if self.selected_epoch is None:
            return f"ep {self.epochs}/{self.epochs}, last"
        if self.refit:
            return f"refit, {self.selected_epoch} ep"
        return f"ep {self.selected_epoch}/{self.epochs} by val."

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RetrainedModel | None:
        """The record in ``data``, or None when it is not one (a newer schema, or
        required keys missing); keys it does not know are ignored."""
        names = {f.name for f in fields(cls)}
        version = data.get("version", RETRAINED_VERSION)
        if not isinstance(version, int) or version > RETRAINED_VERSION:
            return None
        try:
            return cls(**{k: v for k, v in data.items() if k in names})
        except TypeError:
            return None


def retrained_models(info: StudyRecord | Mapping[str, Any]) -> list[RetrainedModel]:
    """Every retrained model stored on a study (its :class:`StudyRecord`, or its
    ``nasmlcn`` attribute ``info``), by trial number."""
    stored = record_info(info).get(RETRAINED_KEY)
    entries = stored.get("models") if isinstance(stored, Mapping) else None
    models = [
        m
        for m in (RetrainedModel.from_dict(e) for e in entries or () if isinstance(e, Mapping))
        if m is not None
    ]
    return sorted(models, key=lambda m: (m.number, m.dataset, _seed_order(m.seed)))


def _seed_order(seed: int | None) -> int:
    return -1 if seed is None else seed


ANSWER_RULE = (
    "of each trial's retrainings on the search's data, the one that trained most "
    "(epochs x training images), then on the most test images, then with the search's "
    "seed, then the latest"
)
"""Which retraining answers for a trial where it has several (:func:`retrained_by_trial`):
a quick check (one epoch, 100 images) never stands in for a full retraining."""


def retrained_by_trial(info: StudyRecord | Mapping[str, Any]) -> dict[int, RetrainedModel]:
    """The models retrained on the search's own dataset, by trial number (what
    ``nasmlcn best`` and the correlation compare with the search's accuracy): of a
    trial retrained several times, the one :data:`ANSWER_RULE` names."""
    dataset, seed = search_dataset(info), search_seed(info)

    def rank(m: RetrainedModel) -> tuple[int, int, bool, int]:  # lowest answers
        other_seed = m.seed not in (None, seed)
        return (-m.training, -m.test_images, other_seed, _seed_order(m.seed))

    chosen: dict[int, RetrainedModel] = {}
    # the latest first: of equal ranks it stays chosen (ISO times sort as text)
    for m in sorted(retrained_models(info), key=lambda m: m.retrained_at, reverse=True):
        if m.dataset == dataset and (m.number not in chosen or rank(m) < rank(chosen[m.number])):
            chosen[m.number] = m
    return chosen


@dataclass(frozen=True)
class Stored:
    """What :func:`store_retrained` did with a model.

    Attributes:
        replaced: The earlier retraining with the very same settings, seed and
            data that the model replaced (None: none).
        beside: The trial's other retrainings, which it now sits beside.
        answer: The trial's retraining that reports show now (:data:`ANSWER_RULE`;
            None: the model is not on the search's data, which no answer is on).
    """

    replaced: RetrainedModel | None
    beside: tuple[RetrainedModel, ...]
    answer: RetrainedModel | None


def store_retrained(study: optuna.Study, model: RetrainedModel) -> Stored:
    """Adds ``model`` to the study's retrained models beside the trial's earlier
    retrainings; only one with the same settings, seed and data (an entry without a
    seed has the search's) is replaced. The attribute is read fresh from the storage
    under its lock, so nothing another process stores (``nasmlcn retrain`` runs side
    by side) is lost."""
    storage = storage_of(study)
    with hold(storage):
        info = stored_info(storage.get_study_user_attrs(study_id_of(study))) or {}
        default = search_seed(info)

        def key(m: RetrainedModel) -> tuple[Any, ...]:
            return (m.number, default if m.seed is None else m.seed, *m.recipe)

        earlier = retrained_models(info)
        replaced = next((m for m in earlier if key(m) == key(model)), None)
        kept = [m for m in earlier if key(m) != key(model)]
        entries = sorted([*kept, model], key=lambda m: (m.number, m.dataset, _seed_order(m.seed)))
        update_study_info(
            study,
            RETRAINED_KEY,
            {"version": RETRAINED_VERSION, "models": [m.to_dict() for m in entries]},
        )
    beside = tuple(m for m in kept if m.number == model.number)
    answer = retrained_by_trial({**info, RETRAINED_KEY: {"models": [m.to_dict() for m in entries]}})
    return Stored(replaced, beside, answer.get(model.number))
