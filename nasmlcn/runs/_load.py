"""Loading a run folder: the trained model, its architecture and its dataset.

A run folder is what ``nasmlcn train --out DIR`` writes (``checkpoint.pt``,
``arch.json``, ``result.json``), what ``nasmlcn best --export DIR`` writes
(``arch.json`` and ``checkpoint.pt``) or what ``nasmlcn prune --keep K`` writes.
The checkpoint holds the architecture and the weights; ``arch.json`` and
``result.json``, where present, must belong to it
(:func:`~nasmlcn.training._run_folder.check_run_files`): a folder that mixes two
models is refused. The dataset is the one given
(``--dataset``, a user's at the run's ``--image-size`` unless another is given),
else the one ``result.json`` records, else the one the checkpoint's
``train_config`` records; a folder that names none needs ``--dataset``. A user's
own data recorded by a run is found by its path, else by its content in the cache
(:func:`~nasmlcn.data.open_recorded`), and refused if it has changed since.

The split seed is the one the run's data record holds (``split_seed``), else the
checkpoint's ``train_config`` seed, so the validation split of a ``nasmlcn train``
or ``retrain`` run is the one it was validated on (held out from its training
images). A search trial's checkpoint carries the trial's training
seed, not the search's split seed: its validation split may overlap the images
it was trained on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from nasmlcn.data import (
    DataIdentity,
    DatasetInfo,
    open_dataset,
    open_recorded,
)
from nasmlcn.errors import CheckpointError, RunError, SpecError, nested, option
from nasmlcn.specs import ArchSpec
from nasmlcn.training import CHECKPOINT_NAME, RESULT_NAME, arch_for_dataset, check_run_files

WRITERS = "nasmlcn train --out, nasmlcn best --export or nasmlcn remove-lanes --keep"


@dataclass(frozen=True)
class LoadedRun:
    """A trained model read from a run folder.

    Attributes:
        path: The folder.
        arch: The architecture (fitted to ``dataset``).
        model: The model with the checkpoint's selected weights (those of the epoch
            with the best validation accuracy), on the CPU, in eval mode.
        dataset: The name or path of the dataset it is evaluated on; where none is
            required, of the one it records (a user's data is then not opened);
            None: not known.
        dataset_source: Where ``dataset`` came from: ``--dataset``, ``result.json``
            or ``checkpoint`` (None with no dataset).
        data: That dataset, opened (None where none was opened).
        recorded: The dataset the run records it was trained on (None: it records
            none), opened or not.
        seed: Seed of the train/validation split (its data record's ``split_seed``, else
            the training seed).
        epoch: Epochs the weights were trained for, the selected epoch (0: not
            trained here, e.g. a pruned model).
        train_config: The checkpoint's training configuration (may be empty).
    """

    path: Path
    arch: ArchSpec
    model: nn.Module
    dataset: str | None
    dataset_source: str | None
    seed: int
    epoch: int
    train_config: dict[str, Any]
    data: DatasetInfo | None = None
    recorded: DataIdentity | None = None

    @property
    def identity(self) -> DataIdentity | None:
        """The record of ``dataset``: what every report of the run's data reads (its
        image size, classes, source), whether the data was opened or not."""
        return self.data.identity if self.data is not None else self.recorded

    @property
    def reconstruction_weight(self) -> float:
        """The weight of the reconstruction loss the run trained with."""
        return float(self.train_config.get("reconstruction_weight", 0.0005))


def load_run(
    path: str | Path,
    *,
    dataset: str | None = None,
    require_dataset: bool = True,
    image_size: str | None = None,
    data_dir: str | Path | None = None,
) -> LoadedRun:
    """Reads the run folder ``path`` (see the module docstring).

    Args:
        path: A folder holding ``checkpoint.pt``.
        dataset: Evaluate on this dataset (a name or path) instead of the run's own.
        require_dataset: A run that names no dataset (and no ``dataset`` given) is
            an error; otherwise its ``dataset`` is None (exporting needs none).
        image_size: With a ``dataset`` path: resize its images so (default: as the
            run's were).
        data_dir: The data directory (None: ``$NASMLCN_DATA_DIR``).

    Raises:
        RunError: ``path`` is missing, a file, holds no checkpoint, its
            ``arch.json`` or ``result.json`` is unreadable or belongs to another
            model or run, or no dataset is known.
        CheckpointError: The checkpoint is unreadable, not nasmlcn's, or its
            weights do not fit its architecture.
        UnknownNameError: ``dataset`` is not registered.
        DatasetError: The dataset cannot be read, or the run's own data is gone or
            has changed since it was trained.
        SpecError: The architecture does not fit the dataset's images or classes.
    """
    from nasmlcn.models import build_model
    from nasmlcn.training import load_checkpoint, selected_weights

    folder = Path(path)
    if not folder.exists():
        raise RunError(f"run folder {str(folder)!r} does not exist")
    if not folder.is_dir():
        raise RunError(
            f"{str(folder)!r} is a file; give the run folder that holds {CHECKPOINT_NAME}"
        )
    checkpoint = folder / CHECKPOINT_NAME
    if not checkpoint.exists():
        raise RunError(
            f"{str(folder)!r} holds no {CHECKPOINT_NAME}; give a folder written by {WRITERS}"
        )
    payload = load_checkpoint(checkpoint)
    arch: ArchSpec = payload["arch"]
    result = check_run_files(folder, payload)
    train_config = payload["train_config"] if isinstance(payload["train_config"], dict) else {}
    given = None if dataset is None else (dataset, image_size)
    data, recorded, source = _data(folder, (result, train_config), given, data_dir, require_dataset)
    if data is not None:
        arch = _fitted(arch, data, source, folder)
    model = build_model(arch)
    weights, epoch = selected_weights(payload)  # the best-validation epoch's
    try:
        model.load_state_dict(weights)
    except (RuntimeError, KeyError, TypeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(
            f"the weights in {str(checkpoint)!r} do not fit its architecture "
            f"{arch.describe()} ({first})"
        ) from None
    model.eval()
    return LoadedRun(
        path=folder,
        arch=arch,
        model=model,
        dataset=data.name if data is not None else _recorded_name(recorded),
        dataset_source=source,
        seed=_split_seed(train_config),
        epoch=epoch,
        train_config=train_config,
        data=data,
        recorded=recorded,
    )


def _fitted(arch: ArchSpec, data: DatasetInfo, source: str | None, folder: Path) -> ArchSpec:
    """``arch`` checked against ``data`` (from ``source``).

    Raises:
        SpecError: Its input shape or classes are not the data's.
    """
    try:
        return arch_for_dataset(arch, data, strict=True)
    except SpecError as err:
        option = "--dataset " if source == "--dataset" else f"{source}'s dataset "
        raise SpecError(
            f"{option}{data.name!r} does not fit run {str(folder)!r}: {nested(err)}"
        ) from None


def _data(
    folder: Path,
    files: tuple[dict[str, Any] | None, dict[str, Any]],
    given: tuple[str, str | None] | None,
    data_dir: str | Path | None,
    required: bool,
) -> tuple[DatasetInfo | None, DataIdentity | None, str | None]:
    """The dataset to evaluate on (opened), the one the run records (in its
    ``files``: ``result.json`` and the checkpoint's training configuration), and
    where the dataset came from: ``given`` (``--dataset`` and ``--image-size``), else
    the recorded one's file (opened where ``required``, or a built-in; a user's data
    not required is left unopened, None)."""
    recorded, source = _recorded(folder, *files, given is None and required)
    if given is not None:
        spelled = DatasetInfo.spell(given[0])  # asked once: open_dataset is handed it
        size = given[1] or (recorded.image_size if recorded is not None else None)
        size = size if spelled.path else None
        opened = open_dataset(spelled.dataset, image_size=size, data_dir=data_dir)
        return opened, recorded, "--dataset"
    if recorded is not None and (required or not recorded.own):
        where = f"run {str(folder)!r} was trained"
        return open_recorded(recorded, data_dir=data_dir, what=where), recorded, source
    return None, recorded, source


def _recorded_name(recorded: DataIdentity | None) -> str | None:
    """The name of a recorded dataset not opened, as opening it would name it: a
    user's data by the path it was read from."""
    if recorded is None:
        return None
    return recorded.source if recorded.own and recorded.source else recorded.name


def _split_seed(train_config: dict[str, Any]) -> int:
    """The seed of the run's train/validation split: the job's data record's (a
    ``retrain`` run splits as its search did, with the study's seed), else the
    training seed, which seeded both before the two could differ."""
    data = train_config.get("data")
    if isinstance(data, dict) and isinstance(data.get("split_seed"), int):
        return int(data["split_seed"])
    return int(train_config.get("seed", 0))


def _recorded(
    folder: Path,
    result: dict[str, Any] | None,
    train_config: dict[str, Any],
    required: bool,
) -> tuple[DataIdentity | None, str | None]:
    """The dataset the run records and where (``result.json`` or ``checkpoint``);
    a run older than dataset records gives its registered name's."""
    data = train_config.get("data")  # the job's data, recorded since resumes are checked
    # best --export records the study's dataset in the train_config itself
    for where, record in (
        (RESULT_NAME, result),
        ("checkpoint", data),
        ("checkpoint", train_config),
    ):
        if isinstance(record, dict) and isinstance(record.get("dataset_identity"), dict):
            return DataIdentity.from_dict(record["dataset_identity"]), where
    name = None
    if result is not None and isinstance(result.get("dataset"), str):
        name, where = result["dataset"], RESULT_NAME
    else:
        name = data.get("dataset") if isinstance(data, dict) else train_config.get("dataset")
        where = "checkpoint"
    if isinstance(name, str):
        return open_dataset(name).identity, where
    if not required:
        return None, None
    raise RunError(
        f"run {str(folder)!r} does not say which dataset it was trained on (no "
        f"{RESULT_NAME}); give the dataset ({option('dataset')}; see 'nasmlcn data list')"
    )


def run_summary(run: LoadedRun) -> dict[str, Any]:
    """What every command that reads a run reports about it."""
    return {
        "run": str(run.path),
        "kind": run.arch.kind,
        "lanes": run.arch.describe(),
        "dataset": run.dataset,
        "image_size": run.identity.image_size if run.identity is not None else None,
        "dataset_source": run.dataset_source,
        "epochs_trained": run.epoch,
    }
