"""The models ``nasmlcn retrain`` trained again, as stored on the study.

Where they live: in the study's ``nasmlcn`` user attribute
(:mod:`nasmlcn.study._identity`), under ``retrained``: ``{"version": 1, "models":
[...]}``, one entry per (trial, dataset, seed) -- retraining a trial again on the
same dataset with the same seed replaces its entry. A study attribute, not trial attributes, because Optuna
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
from typing import TYPE_CHECKING, Any

from nasmlcn._optuna_compat import storage_of, study_id_of
from nasmlcn.study._identity import stored_info, update_study_info
from nasmlcn.study._lock import hold

if TYPE_CHECKING:
    import optuna

    from nasmlcn.data import DataIdentity

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

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


def retrained_models(info: Mapping[str, Any]) -> list[RetrainedModel]:
    """Every retrained model stored in a study's ``nasmlcn`` attribute ``info``
    (:func:`~nasmlcn.study._access.study_info`), by trial number."""
    stored = info.get(RETRAINED_KEY)
    entries = stored.get("models") if isinstance(stored, Mapping) else None
    models = [
        m
        for m in (RetrainedModel.from_dict(e) for e in entries or () if isinstance(e, Mapping))
        if m is not None
    ]
    return sorted(models, key=lambda m: (m.number, m.dataset, _seed_order(m.seed)))


def _seed_order(seed: int | None) -> int:
    return -1 if seed is None else seed


def search_dataset(info: Mapping[str, Any]) -> str | None:
    """The dataset the study's search trained on (None: not recorded)."""
    config = info.get("config")
    dataset = config.get("dataset") if isinstance(config, Mapping) else None
    return str(dataset) if dataset is not None else None


def search_data(info: Mapping[str, Any]) -> DataIdentity:
    """What the study's search trained on: the dataset record it stored (since user
    datasets), else the registered dataset its configuration names.

    Raises:
        DatasetError: A damaged record, or an old study's dataset that this
            nasmlcn does not know.
    """
    from nasmlcn.data import DataIdentity, open_dataset

    record = info.get("dataset")
    if isinstance(record, Mapping):
        return DataIdentity.from_dict(record)
    return open_dataset(search_dataset(info) or "fashion-mnist").identity


def search_seed(info: Mapping[str, Any]) -> int:
    """The seed the study's search ran with (0: not recorded)."""
    config = info.get("config")
    seed = config.get("seed") if isinstance(config, Mapping) else None
    return int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else 0


def retrained_by_trial(info: Mapping[str, Any]) -> dict[int, RetrainedModel]:
    """The models retrained on the search's own dataset, by trial number (what
    ``nasmlcn best`` and the correlation compare with the search's accuracy): of a
    trial retrained with several seeds, the one with the search's seed (its split
    is the search's), else the lowest seed."""
    dataset, seed = search_dataset(info), search_seed(info)

    def rank(m: RetrainedModel) -> tuple[bool, int]:  # the search's seed first, then lowest
        return (m.seed not in (None, seed), _seed_order(m.seed))

    chosen: dict[int, RetrainedModel] = {}
    for m in retrained_models(info):
        if m.dataset == dataset and (m.number not in chosen or rank(m) < rank(chosen[m.number])):
            chosen[m.number] = m
    return chosen


def store_retrained(study: optuna.Study, model: RetrainedModel) -> None:
    """Adds ``model`` to the study's retrained models, replacing an entry of the
    same trial, dataset and seed (an entry without a seed has the search's); the
    attribute is read fresh from the storage under its lock, so nothing another
    process stores (``nasmlcn retrain`` runs side by side) is lost."""
    storage = storage_of(study)
    with hold(storage):
        info = stored_info(storage.get_study_user_attrs(study_id_of(study))) or {}
        default = search_seed(info)

        def key(m: RetrainedModel) -> tuple[int, str, int]:
            return (m.number, m.dataset, default if m.seed is None else m.seed)

        kept = [m for m in retrained_models(info) if key(m) != key(model)]
        entries = sorted([*kept, model], key=lambda m: (m.number, m.dataset, _seed_order(m.seed)))
        update_study_info(
            study,
            RETRAINED_KEY,
            {"version": RETRAINED_VERSION, "models": [m.to_dict() for m in entries]},
        )
