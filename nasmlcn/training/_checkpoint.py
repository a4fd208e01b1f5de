"""Checkpoints: ``state_dict`` plus the architecture JSON, loaded with
``weights_only=True`` (no pickled code runs on load).

Every checkpoint carries a ``run_id``: made when a run starts, kept by every
epoch's checkpoint and by a resumed run, and copied into the ``result.json``
beside it, so a reader can tell that the files of a run folder belong together
(:func:`nasmlcn.training._run_folder.check_run_files`). Checkpoints written
before it have none (``None``), and are compared by architecture only."""

from __future__ import annotations

import json
import os
import uuid
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from nasmlcn._io import atomic_path
from nasmlcn.errors import CheckpointError, SpecError, nested, option
from nasmlcn.specs import ArchSpec, arch_from_json, arch_to_json

if TYPE_CHECKING:
    from nasmlcn.training._config import TrainConfig

CHECKPOINT_VERSION = 1
_REQUIRED = ("version", "arch", "model", "epoch")

RESUME_STATE = ("optimizer", "scheduler")
"""What a checkpoint holds only to train on: the optimizer's state (Adam's two
moments, twice the model's parameters) and the lr schedule's. Nothing else is
resume-only: every epoch's randomness is drawn from the run's seed and the epoch,
and the history and ``selected`` weights are what a reader of the run reports."""


def save_checkpoint(
    path: str | os.PathLike[str],
    *,
    arch: ArchSpec,
    model: nn.Module,
    epoch: int,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any = None,
    history: list[dict[str, Any]] | None = None,
    train_config: dict[str, Any] | None = None,
    run_id: str | None = None,
    selected: Mapping[str, Any] | None = None,
) -> Path:
    """Writes a checkpoint atomically: a crash mid-write leaves the old one intact.

    ``run_id`` names the run the weights belong to (None: a new one,
    :func:`new_run_id`); a run's every checkpoint passes its own. ``selected``: the
    best-validation epoch's weights where they are not ``model``'s
    (:meth:`~nasmlcn.training._selection.Selection.to_checkpoint`).
    """
    p = Path(path)
    payload: dict[str, Any] = {
        "version": CHECKPOINT_VERSION,
        "run_id": run_id or new_run_id(),
        "arch": arch_to_json(arch, indent=None),
        "model": model.state_dict(),
        "epoch": epoch,
        "history": json.dumps(history or []),
        "train_config": json.dumps(train_config or {}),
    }
    if optimizer is not None:
        payload["optimizer"] = optimizer.state_dict()
    if scheduler is not None:
        payload["scheduler"] = scheduler.state_dict()
    if selected is not None:
        payload["selected"] = dict(selected)
    with atomic_path(p) as tmp:
        torch.save(payload, tmp)
    return p


def save_final(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> bool:
    """Writes the checkpoint at ``source`` to ``target`` (atomically) as a run keeps
    it once it trains no more: without :data:`RESUME_STATE` where the run trained all
    the epochs it was laid out for; whether that state was left out.

    Such a run is never trained on: resuming it tests it again and trains nothing,
    and a longer run is a fresh one (:func:`check_resumable` refuses to go on without
    the state). A search keeps every finished trial's weights this way, where the
    optimizer's state made up two thirds of the file. A run with epochs left (a
    pruned trial: ``nasmlcn best --export`` prints the ``train --resume`` that trains
    them) keeps the state.

    Raises:
        CheckpointError: ``source`` is missing, unreadable or not a nasmlcn checkpoint.
    """
    # memory-mapped: the optimizer's tensors, left out, are never read
    payload = _stored(Path(source), "cpu", mmap=True)
    planned = json.loads(payload.get("train_config") or "{}").get("epochs")
    done = isinstance(planned, int) and int(payload["epoch"]) >= planned
    if done:
        payload = {k: v for k, v in payload.items() if k not in RESUME_STATE}
    with atomic_path(Path(target)) as tmp:
        torch.save(payload, tmp)
    return done


def load_checkpoint(path: str | os.PathLike[str], map_location: str = "cpu") -> dict[str, Any]:
    """Reads a checkpoint; ``arch`` comes back as a spec, history/config as objects.

    Raises:
        CheckpointError: Missing, unreadable, or not a nasmlcn checkpoint.
    """
    p = Path(path)
    payload = _stored(p, map_location)
    try:
        payload["arch"] = arch_from_json(payload["arch"])
    except SpecError as err:
        raise CheckpointError(
            f"checkpoint {str(p)!r} holds an invalid architecture: {nested(err)}"
        ) from None
    if not isinstance(payload.get("run_id"), (str, type(None))):
        raise CheckpointError(f"{str(p)!r} is not a nasmlcn checkpoint; it was not loaded")
    payload["run_id"] = payload.get("run_id")
    payload["history"] = json.loads(payload.get("history", "[]"))
    payload["train_config"] = json.loads(payload.get("train_config", "{}"))
    return payload


def _stored(p: Path, map_location: str, mmap: bool = False) -> dict[str, Any]:
    """The checkpoint at ``p`` as it is stored (architecture, history and
    configuration as JSON text); ``mmap``: its tensors memory-mapped, read from the
    file only where used.

    Raises:
        CheckpointError: Missing, unreadable, or not a nasmlcn checkpoint.
    """
    if not p.is_file():
        raise CheckpointError(f"checkpoint {str(p)!r} does not exist")
    try:
        with warnings.catch_warnings():
            # torch warns about the pickle protocol of files it is about to refuse.
            warnings.simplefilter("ignore")
            payload = torch.load(p, map_location=map_location, weights_only=True, mmap=mmap)
    except OSError as err:
        raise CheckpointError(f"cannot read checkpoint {str(p)!r}: {err.strerror or err}") from None
    except Exception as err:
        if _truncated(err):
            raise CheckpointError(
                f"checkpoint {str(p)!r} is truncated or damaged (its zip archive is "
                f"incomplete); it was not loaded: copy it again, or train anew into another "
                f"{option('out_dir')}"
            ) from None
        # weights_only refuses anything but tensors and plain data (torch's message
        # suggests weights_only=False, which would run the file's code: never).
        raise CheckpointError(
            f"{str(p)!r} is not a nasmlcn checkpoint (not a torch file of tensors and plain "
            "data); it was not loaded"
        ) from None
    if not isinstance(payload, dict) or any(k not in payload for k in _REQUIRED):
        raise CheckpointError(f"{str(p)!r} is not a nasmlcn checkpoint; it was not loaded")
    if payload["version"] > CHECKPOINT_VERSION:
        raise CheckpointError(
            f"checkpoint {str(p)!r} has version {payload['version']}, newer than this nasmlcn reads"
        )
    return payload


def _truncated(err: Exception) -> bool:
    """Whether torch's error says the file ends early (a cut copy or an interrupted
    write of another program: nasmlcn's own writes are atomic)."""
    text = str(err)
    return isinstance(err, EOFError) or "central directory" in text or "zip archive" in text


def new_run_id() -> str:
    """A fresh run id (random: two runs of the same model differ)."""
    return uuid.uuid4().hex


def checkpoint_run_id(path: str | os.PathLike[str]) -> str | None:
    """The ``run_id`` of the checkpoint at ``path`` (None: none recorded), read
    without loading its tensors (memory-mapped).

    Raises:
        CheckpointError: Missing, unreadable, or not a nasmlcn checkpoint.
    """
    p = Path(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            payload = torch.load(p, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # an old or foreign file: the full load says what is wrong
        return load_checkpoint(p)["run_id"]
    if not isinstance(payload, dict) or any(k not in payload for k in _REQUIRED):
        raise CheckpointError(f"{str(p)!r} is not a nasmlcn checkpoint; it was not loaded")
    run_id = payload.get("run_id")
    return run_id if isinstance(run_id, str) else None


def check_same_arch(path: str | os.PathLike[str], saved: ArchSpec, arch: ArchSpec) -> None:
    """Raises unless the checkpoint at ``path`` (holding ``saved``) is for ``arch``."""
    if saved != arch:
        raise CheckpointError(
            f"checkpoint {str(path)!r} is for {saved.describe()}, not {arch.describe()}; "
            f"resume with the same model or use another {option('out_dir')}"
        )


RESUMED_SETTINGS = ("lr", "lr_decay", "reconstruction_weight", "augment")
"""Training settings a resumed run keeps: each shapes what the epochs left learn (a
changed lr would be silently overridden by the checkpoint's optimizer and scheduler
state). Where it trains (device, fused lanes, CUDA graphs, evaluation batch) may
change."""

RESUMED_DATA = (
    "dataset",
    "val_fraction",
    "train_limit",
    "val_limit",
    "refit",
    "image_size",
    "dataset_sha256",
    "split_seed",
)
"""What a resumed run trains and validates on, as :class:`~nasmlcn.training.TrainJob`
names it, with the seed that draws its split (the test data may change: it is used
once, after the last epoch). A search trial's checkpoint records none of it: its seed
is the trial's training seed, and the search's own seed drew the split."""


def check_same_training(
    path: str | os.PathLike[str],
    saved: Mapping[str, Any],
    config: TrainConfig,
    data: Mapping[str, Any] | None = None,
) -> None:
    """Refuses to resume a checkpoint under other training settings or on other data.

    A checkpoint's scheduler state only means something under its own policy, and a
    planned policy (one-cycle) was laid out for the run's epochs and batch size; the
    rest of :data:`RESUMED_SETTINGS` and, given ``data`` and a checkpoint that records
    its own (``saved["data"]``), :data:`RESUMED_DATA` and the seed must be the
    checkpoint's, or the epochs before and after the resume would be two runs' mixed.
    A setting a checkpoint predates is not checked.

    Raises:
        CheckpointError: A setting or the data differs, in one line that names it.
    """
    _check_same_schedule(path, saved, config)
    now = {name: getattr(config, name) for name in RESUMED_SETTINGS}
    then = {name: saved[name] for name in RESUMED_SETTINGS if name in saved}
    if data is not None and isinstance(saved.get("data"), Mapping):
        now.update({name: data[name] for name in RESUMED_DATA}, seed=config.seed)
        # the seed first: where it seeds the split too, that is the option to name
        then.update({"seed": saved["seed"]} if "seed" in saved else {})
        then.update({name: saved["data"][name] for name in RESUMED_DATA if name in saved["data"]})
    for name, value in then.items():
        if value != now[name]:
            raise CheckpointError(
                f"checkpoint {str(path)!r} was trained {_setting(name, value)}, not "
                f"{_setting(name, now[name])}; resume {_setting(name, value)}, or train "
                f"anew in another {option('out_dir')}"
            )


def check_resumable(
    path: str | os.PathLike[str],
    payload: Mapping[str, Any],
    config: TrainConfig,
    data: Mapping[str, Any] | None = None,
) -> None:
    """Refuses a resume that would not go on as the run would have: under other
    settings or on other data (:func:`check_same_training`), or with epochs left to
    train from a checkpoint without its optimizer and lr schedule state (several
    processes save the model only, and a search keeps a trial that ran all its epochs
    so: :func:`save_final`), which would restart both. One of epoch 0 (a
    model with lanes removed, to fine-tune) starts them afresh, as it should.

    Raises:
        CheckpointError: in one line that names why.
    """
    check_same_training(path, payload.get("train_config") or {}, config, data)
    missing = [name for name in RESUME_STATE if name not in payload]
    epoch = int(payload.get("epoch", 0))
    if missing and 1 <= epoch < config.epochs:
        raise CheckpointError(
            f"checkpoint {str(path)!r} holds the model after epoch {epoch} but not its "
            f"{' and '.join(missing)} state (several processes save the model only, and so "
            "does a search once a trial ran all its epochs), so going on from it would "
            f"restart them; train anew in another {option('out_dir')}"
        )


def _setting(name: str, value: Any) -> str:
    """``with --seed 0``, ``without --train-limit``, ``with refit`` as a message says it."""
    flag = option(name)
    if name == "dataset_sha256":  # a user's data, changed since (or another dataset)
        return f"on data of sha256 {str(value)[:12]}" if value else "on a built-in dataset"
    if value is None:
        return f"without {flag}"
    if isinstance(value, bool):
        return f"with {name.replace('_', ' ')} {'on' if value else 'off'}"
    return f"with {flag} {value}"


def _check_same_schedule(
    path: str | os.PathLike[str], saved: Mapping[str, Any], config: TrainConfig
) -> None:
    """The policy and, for a planned one, its length (see :func:`check_same_training`)."""
    policy = saved.get("lr_policy")
    if policy is not None and policy != config.lr_policy:
        raise CheckpointError(
            f"checkpoint {str(path)!r} was trained with lr policy {policy!r}, not "
            f"{config.lr_policy!r}; resume with {option('lr_policy')} {policy}"
        )
    from nasmlcn.training._schedules import LR_POLICIES

    if not LR_POLICIES.get(config.lr_policy).planned:
        return
    for name in ("epochs", "batch_size"):
        value = saved.get(name)
        if value is not None and value != getattr(config, name):
            raise CheckpointError(
                f"checkpoint {str(path)!r} follows a {config.lr_policy} schedule laid out "
                f"for {name.replace('_', ' ')} {value}, so it cannot go on with "
                f"{getattr(config, name)}; resume with {option(name)} {value}, or train anew "
                f"({option('lr_policy')} exponential runs can be extended)"
            )


def load_model(
    path: str | os.PathLike[str], map_location: str = "cpu"
) -> tuple[nn.Module, ArchSpec]:
    """Rebuilds the model of a checkpoint and loads its selected weights (those of the
    best-validation epoch, :func:`~nasmlcn.training._selection.selected_weights`)."""
    from nasmlcn.models import build_model
    from nasmlcn.training._selection import selected_weights

    payload = load_checkpoint(path, map_location)
    model = build_model(payload["arch"])
    model.load_state_dict(selected_weights(payload)[0])
    return model, payload["arch"]
