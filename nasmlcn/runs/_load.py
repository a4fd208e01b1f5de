"""Loading a run folder: the trained model, its architecture and its dataset.

A run folder is what ``nasmlcn train --out DIR`` writes (``checkpoint.pt``,
``arch.json``, ``result.json``), what ``nasmlcn best --export DIR`` writes
(``arch.json`` and ``checkpoint.pt``) or what ``nasmlcn prune --keep K`` writes.
The checkpoint holds the architecture and the weights; ``arch.json`` and
``result.json``, where present, must belong to it
(:func:`~nasmlcn.training._run_folder.check_run_files`): a folder that mixes two
models is refused. The dataset is the one given
(``--dataset``), else the one ``result.json`` names, else the one the
checkpoint's ``train_config`` names; a folder that names none (``best --export``
writes no ``result.json``) needs ``--dataset``.

The split seed is the checkpoint's ``train_config`` seed, so the validation
split of a ``nasmlcn train`` run is the one it was validated on (held out from
its training images). A search trial's checkpoint carries the trial's training
seed, not the search's split seed: its validation split may overlap the images
it was trained on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from nasmlcn.data import DATASETS
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
        dataset: Registered name of the dataset it is evaluated on (None: not
            known, and not asked for).
        dataset_source: Where ``dataset`` came from: ``--dataset``, ``result.json``
            or ``checkpoint`` (None with no dataset).
        seed: Seed of the train/validation split (the run's training seed).
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

    @property
    def reconstruction_weight(self) -> float:
        """The weight of the reconstruction loss the run trained with."""
        return float(self.train_config.get("reconstruction_weight", 0.0005))


def load_run(
    path: str | Path, *, dataset: str | None = None, require_dataset: bool = True
) -> LoadedRun:
    """Reads the run folder ``path`` (see the module docstring).

    Args:
        path: A folder holding ``checkpoint.pt``.
        dataset: Evaluate on this registered dataset instead of the run's own.
        require_dataset: A run that names no dataset (and no ``dataset`` given) is
            an error; otherwise its ``dataset`` is None (exporting needs none).

    Raises:
        RunError: ``path`` is missing, a file, holds no checkpoint, its
            ``arch.json`` or ``result.json`` is unreadable or belongs to another
            model or run, or no dataset is known.
        CheckpointError: The checkpoint is unreadable, not nasmlcn's, or its
            weights do not fit its architecture.
        UnknownNameError: ``dataset`` is not registered.
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
    name, source = _dataset(folder, dataset, result, train_config, require_dataset)
    if name is not None:
        try:
            arch = arch_for_dataset(arch, DATASETS.get(name), strict=True)
        except SpecError as err:
            option = "--dataset " if source == "--dataset" else f"{source}'s dataset "
            raise SpecError(
                f"{option}{name!r} does not fit run {str(folder)!r}: {nested(err)}"
            ) from None
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
        dataset=name,
        dataset_source=source,
        seed=int(train_config.get("seed", 0)),
        epoch=epoch,
        train_config=train_config,
    )


def _dataset(
    folder: Path,
    given: str | None,
    result: dict[str, Any] | None,
    train_config: dict[str, Any],
    required: bool,
) -> tuple[str | None, str | None]:
    """The dataset's name and where it came from (``result``: the folder's
    ``result.json``, if any)."""
    if given is not None:
        return given, "--dataset"
    if result is not None:
        name = result.get("dataset")
        if isinstance(name, str):
            return name, RESULT_NAME
    data = train_config.get("data")  # the job's data, recorded since resumes are checked
    name = data.get("dataset") if isinstance(data, dict) else train_config.get("dataset")
    if isinstance(name, str):
        return name, "checkpoint"
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
        "dataset_source": run.dataset_source,
        "epochs_trained": run.epoch,
    }
