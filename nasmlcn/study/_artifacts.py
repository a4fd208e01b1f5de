"""A trained trial's checkpoints and weights, kept as Optuna artifacts.

The train evaluator writes a checkpoint after every epoch (model, optimizer,
schedule, history: ``nasmlcn.training``'s format); the runner copies it into the
study's artifact store and records where on the trial (user attribute
``checkpoint``: artifact id and epoch). When the trial's worker dies, the retried
copy of the trial carries that attribute, downloads the checkpoint and goes on
from the epoch after it, with the same per-epoch seeds: its result is the one an
uninterrupted run gives.

A finished trial (COMPLETE or PRUNED) keeps a copy of its final checkpoint as its
weights, without the optimizer's and lr schedule's state once it ran all its epochs
(:func:`nasmlcn.training.save_final`: nothing trains it on), recorded as
:func:`optuna.artifacts.upload_artifact` records a file (so optuna-dashboard lists
it on the trial) and named by the user attribute ``weights``; its working
checkpoint goes once it is told. ``--keep-weights`` may keep only the Pareto front
or the best K.
``nasmlcn best --export DIR`` writes a trial's ``arch.json`` and weights.

The store is Optuna's :class:`~optuna.artifacts.FileSystemArtifactStore` under
``--artifacts DIR`` (default: ``artifacts/`` beside a SQLite study file, else
``studies/artifacts``); give every worker of a many-machine study a shared folder.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Container, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn._optuna_compat import (
    forget_trial_artifact,
    record_trial_artifact,
    storage_of,
    trial_id_of,
)
from nasmlcn.errors import SearchError
from nasmlcn.study._storage import sqlite_path
from nasmlcn.study._trial import TrialRecord, write_checkpoint, write_weights

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn._optuna_compat import ArtifactStore
    from nasmlcn.data import DataIdentity

logger = logging.getLogger(__name__)

DEFAULT_ARTIFACTS = "studies/artifacts"
KEEP_POLICIES = ("all", "pareto", "best:K")


def artifacts_dir(storage_url: str, given: str | None) -> Path:
    """``--artifacts``, else ``artifacts/`` beside a SQLite file, else the default."""
    if given:
        return Path(given)
    path = sqlite_path(storage_url)
    return path.parent / "artifacts" if path is not None else Path(DEFAULT_ARTIFACTS)


def open_store(folder: Path) -> ArtifactStore:
    """Optuna's artifact store of the trials' weights in ``folder``, made if missing.

    Raises:
        SearchError: ``folder`` cannot be created.
    """
    from optuna.artifacts import FileSystemArtifactStore

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise SearchError(
            f"‹artifacts›: cannot create {str(folder)!r}: {err.strerror or err}"
        ) from None
    return FileSystemArtifactStore(str(folder))


def parse_keep(policy: str) -> tuple[str, int]:
    """``all`` | ``pareto`` | ``best:K`` -> (kind, K).

    Raises:
        SearchError: Anything else (naming what is accepted).
    """
    text = policy.strip().lower()
    if text in ("all", "pareto"):
        return text, 0
    if text.startswith("best:"):
        count = text[5:]
        if count.isdigit() and int(count) >= 1:
            return "best", int(count)
    raise SearchError(
        f"‹keep_weights› {policy!r}: use all, pareto or best:K with K >= 1 (e.g. best:5)"
    )


class TrialFiles:
    """One running trial's checkpoint file and its copies in the store.

    Args:
        store: The artifact store.
        trial: The running trial.
        workdir: A local folder for the checkpoint file.
    """

    def __init__(self, store: ArtifactStore, trial: optuna.Trial, workdir: Path) -> None:
        self.store = store
        self.trial = trial
        self.path = workdir / f"trial-{trial.number}.pt"
        previous = trial.user_attrs.get("checkpoint")
        self._current: str | None = previous.get("artifact_id") if previous else None
        self.resumed_epoch = 0
        if previous:
            self.resumed_epoch = self._download(previous)

    def _download(self, previous: dict[str, Any]) -> int:
        from optuna.artifacts.exceptions import ArtifactNotFound

        try:
            with self.store.open_reader(previous["artifact_id"]) as reader:
                self.path.write_bytes(reader.read())
        except (ArtifactNotFound, OSError):
            logger.warning(
                "trial %d: the checkpoint of its failed run is gone; it starts over",
                self.trial.number,
            )
            self._current = None
            return 0
        return int(previous.get("epoch", 0))

    def saved(self, epoch: int) -> None:
        """Copies the checkpoint of ``epoch`` into the store (called after every epoch)."""
        if not self.path.is_file():
            return
        # a bare UUID, as Optuna names artifacts: optuna-dashboard serves only those
        artifact_id = str(uuid.uuid4())
        with self.path.open("rb") as body:
            self.store.write(artifact_id, body)
        try:
            write_checkpoint(self.trial, artifact_id, epoch)
            storage = self.trial.storage
            if hasattr(storage, "flush"):
                storage.flush()  # recorded before the older copy goes
        except BaseException:  # not recorded (the trial was finished elsewhere...)
            self._drop(artifact_id)
            raise
        self._drop(self._current)
        self._current = artifact_id

    def keep(self) -> str | None:
        """Keeps the final checkpoint as the trial's weights (before it is told); the
        artifact id, or None when nothing was trained.

        The weights are a copy without the optimizer's and the lr schedule's state
        where the trial ran all its epochs (:func:`nasmlcn.training.save_final`):
        nothing trains it on, and that state was two thirds of the file. The working
        checkpoint stays in the store until :meth:`close`, after the trial is told: a
        worker that dies in between leaves its retry all it needs to resume."""
        if not self.path.is_file():
            return None
        artifact_id = str(uuid.uuid4())  # a bare UUID, as Optuna names artifacts
        self._store_final(artifact_id)
        try:
            # listed under the working file's name, as upload_artifact would list it
            record_trial_artifact(self.trial, artifact_id, self.path.name)
            write_weights(self.trial, artifact_id, self.path.name)
        except BaseException:  # not recorded (the trial was finished elsewhere...)
            self._drop(artifact_id)
            raise
        return artifact_id

    def _store_final(self, artifact_id: str) -> None:
        """Writes the final checkpoint into the store as ``artifact_id``, as
        :func:`~nasmlcn.training.save_final` keeps it; a file that is not a nasmlcn
        checkpoint (another evaluator's) as it was written."""
        from nasmlcn.errors import CheckpointError
        from nasmlcn.training import save_final

        final = self.path.with_name(f"{self.path.stem}.final.pt")
        try:
            try:
                save_final(self.path, final)
            except CheckpointError as err:
                logger.warning(
                    "trial %d: its weights are kept as written: %s", self.trial.number, err
                )
                final = self.path
            with final.open("rb") as body:
                self.store.write(artifact_id, body)
        finally:
            if final != self.path:
                with contextlib.suppress(OSError):
                    final.unlink()

    def close(self) -> None:
        """Drops the working checkpoint, once the trial is told (its weights, if kept,
        are a copy of it)."""
        self._drop(self._current)
        self._current = None
        self.release()

    def release(self) -> None:
        """Removes the local file only: the stored checkpoint stays for the trial's
        retry (another worker failed and queued the trial while this one trained it)."""
        with contextlib.suppress(OSError):
            self.path.unlink()

    def _drop(self, artifact_id: str | None) -> None:
        if artifact_id is None:
            return
        with contextlib.suppress(Exception):
            self.store.remove(artifact_id)


def discard_weights(
    study: optuna.Study,
    store: ArtifactStore,
    kept: Container[int],
    trials: Sequence[FrozenTrial] | None = None,
) -> list[int]:
    """Deletes the stored weights of the finished trials not in ``kept`` (trial
    numbers); the numbers of the trials whose weights went. Call it holding the
    storage's lock.

    ``trials`` is the snapshot of the study that ``kept`` was chosen from (default: the
    study's trials now): a trial that finished after it is left alone. Another worker
    tells its trials without this lock, and a trial it finished between the choice
    and a second read would have lost its weights, the best trial's among them."""
    if trials is None:
        trials = study.get_trials(deepcopy=False)
    removed = []
    for trial in trials:
        record = TrialRecord.of(trial)
        if record.state not in ("COMPLETE", "PRUNED"):
            continue
        if record.weights is None or trial.number in kept or not record.weights_kept:
            continue
        artifact_id = record.weights["artifact_id"]
        with contextlib.suppress(Exception):
            store.remove(artifact_id)
        forget_trial_artifact(storage_of(study), trial_id_of(trial), artifact_id)
        removed.append(trial.number)
    return removed


def has_weights(trial: Any) -> bool:
    """Whether ``trial`` still has its weights (``--keep-weights`` may remove them)."""
    return TrialRecord.of(trial).weights_kept


def _why_no_weights(record: TrialRecord) -> str:
    """Why a trial kept no weights, in words a user can act on."""
    if record.weights is not None:
        return "they were removed (‹keep_weights›)"
    if record.training.get("evaluator") == "proxy":
        return "the study was searched with the proxy evaluator, which trains nothing"
    if record.repeat_of is not None:
        return f"it took trial {record.repeat_of}'s result (the same model): export that trial"
    if record.state == "PRUNED":
        return "it was pruned, and a pruned trial keeps no weights"
    if record.state in ("FAIL", "RUNNING", "WAITING"):
        return f"it is {record.state.lower().replace('fail', 'failed')}, with no finished training"
    return "it kept none (trained by a version that kept no weights, or not by the train evaluator)"


def export_trial(
    trial: Any, store: ArtifactStore, out_dir: Path, *, dataset: DataIdentity | None = None
) -> dict[str, Path]:
    """Writes ``arch.json`` and ``checkpoint.pt`` (the trial's weights: the file
    ``nasmlcn train --arch OUT/arch.json --out OUT --resume`` continues and tests)
    into ``out_dir``, together
    (:func:`~nasmlcn.training._run_folder.write_run_folder`); the paths written.
    ``dataset``, the study's, is recorded in the checkpoint's training configuration
    (its name or path, resize and identity), so that ``evaluate``, ``export-model``,
    ``remove-lanes`` and ``retrain`` take the folder as it is.

    Raises:
        SearchError: The trial has no architecture or no weights (never trained,
            trained before weights were kept, or removed by ``--keep-weights``).
        CheckpointError: ``out_dir`` is a file, cannot be written or already
            holds a model.
    """
    from optuna.artifacts.exceptions import ArtifactNotFound

    from nasmlcn.specs import arch_from_dict, save_arch

    record = TrialRecord.of(trial)
    if not record.arch:
        raise SearchError(f"trial {trial.number} has no architecture to export")
    weights = record.weights
    if weights is None or not record.weights_kept:
        raise SearchError(
            f"trial {trial.number} has no weights to export: {_why_no_weights(record)}; "
            "‹export_arch› FILE writes its architecture alone, to train with nasmlcn train"
        )
    try:
        with store.open_reader(weights["artifact_id"]) as reader:
            body = reader.read()
    except (ArtifactNotFound, OSError):
        raise SearchError(
            f"trial {trial.number}: its weights {weights['artifact_id']!r} are not in the "
            "artifact store; give the folder they were saved to with ‹artifacts›"
        ) from None
    from nasmlcn.training import ARCH_NAME, CHECKPOINT_NAME, write_run_folder

    def write(folder: Path) -> None:
        (folder / CHECKPOINT_NAME).write_bytes(
            body if dataset is None else _with_dataset(body, dataset)
        )
        save_arch(arch_from_dict(record.arch), folder / ARCH_NAME)

    # both files at once, and never into a folder that holds another model
    write_run_folder(out_dir, write, option="--export")
    return {"arch": out_dir / ARCH_NAME, "weights": out_dir / CHECKPOINT_NAME}


def _with_dataset(body: bytes, dataset: DataIdentity) -> bytes:
    """The checkpoint ``body`` with ``dataset`` in its training configuration (a
    trial's checkpoint, written by the trainer, names only the normalisation)."""
    import io
    import json

    import torch

    payload = torch.load(io.BytesIO(body), map_location="cpu", weights_only=True)
    config = json.loads(payload.get("train_config") or "{}")
    recorded = {
        "dataset": dataset.source or dataset.name,
        "image_size": dataset.image_size,
        "dataset_identity": dataset.to_dict(),
    }
    payload["train_config"] = json.dumps({**config, **recorded})
    out = io.BytesIO()
    torch.save(payload, out)
    return out.getvalue()
