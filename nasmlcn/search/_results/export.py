"""``nasmlcn best --export``: a trial's architecture and weights, and the
``nasmlcn train`` command that goes on from them: a trial stopped before its epochs
(pruned, or stopped by a time limit) resumes to its end; a trial that ran them all
has nothing left to resume (its schedule is laid out for them), so a fresh model
trains for twice its epochs in a folder beside it."""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import optuna

from nasmlcn.errors import SearchError
from nasmlcn.search._results.summary import best_trials
from nasmlcn.study import StudyRecord, artifacts_dir, export_trial, open_store


@dataclass(frozen=True)
class ExportedTrial:
    """What :func:`export_best` wrote, and the command that continues it."""

    trial: int
    arch: str
    weights: str
    command: str
    command_does: str  # "resume": the epochs the trial had left; "longer": a fresh model

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def export_best(
    study: optuna.Study,
    out_dir: str | Path,
    *,
    storage: str,
    artifacts: str | None = None,
    trial: int | None = None,
) -> ExportedTrial:
    """Writes trial ``trial`` (default: the best) of ``study`` into ``out_dir``:
    ``arch.json`` and ``checkpoint.pt``, from the search's artifact folder
    (``artifacts``, default beside the study as the search put it).

    ``out_dir`` must be new or empty (or hold no model's files): an export
    into the folder of another run would leave that run's ``result.json`` beside
    this trial's weights.

    Raises:
        SearchError: No such trial, no completed feasible trial, no artifact
            folder, or the trial kept no weights.
        CheckpointError: ``out_dir`` is a file, cannot be written or already
            holds a model.
    """
    from nasmlcn.training import check_free_run_folder

    out_dir = Path(out_dir)  # a str too, as every other path parameter takes
    chosen = _chosen(study, trial)
    check_free_run_folder(out_dir, "--export")  # a file, or another model's folder
    folder = artifacts_dir(storage, artifacts)
    if not folder.is_dir():
        raise SearchError(f"no artifact folder {str(folder)!r}; give the search's with ‹artifacts›")
    paths = export_trial(chosen, open_store(folder), out_dir, dataset=StudyRecord.read(study).data)
    command, does = _train_command(study, chosen, paths["arch"], out_dir)
    return ExportedTrial(
        trial=chosen.number,
        arch=str(paths["arch"]),
        weights=str(paths["weights"]),
        command=shlex.join(command),
        command_does=does,
    )


def _chosen(study: optuna.Study, number: int | None) -> optuna.trial.FrozenTrial:
    if number is None:
        best = best_trials(study, top=1)
        if not best:
            raise SearchError(f"study {study.study_name!r} has no completed feasible trial")
        return best[0]
    trials = study.get_trials(deepcopy=False)
    if not 0 <= number < len(trials):
        raise SearchError(
            f"‹trial› {number}: study {study.study_name!r} has trials 0-{len(trials) - 1}"
        )
    return trials[number]


def _train_command(
    study: optuna.Study, trial: optuna.trial.FrozenTrial, arch: Path, out_dir: Path
) -> tuple[list[str], str]:
    """The ``nasmlcn train`` command that goes on from the exported trial, and what
    it does (``resume`` or ``longer``: see the module's docstring)."""
    from nasmlcn.study import TrialRecord

    config = StudyRecord.read(study).config
    epochs = int(config.get("epochs", 10))
    trained = len(TrialRecord.of(trial).accuracy_per_epoch)
    if 0 < trained < epochs:  # the schedule the trial was laid out for, to its end
        does, where = "resume", ["--out", str(out_dir), "--resume", "--epochs", str(epochs)]
    else:
        longer = out_dir.with_name(f"{out_dir.name}-{2 * epochs}-epochs")
        does, where = "longer", ["--out", str(longer), "--epochs", str(2 * epochs)]
    command = [
        "nasmlcn",
        "train",
        "--arch",
        str(arch),
        *where,
        "--batch-size",
        str(int(trial.params.get("batch_size", config.get("batch_size", 100)))),
        "--dataset",
        str(config.get("dataset", "fashion-mnist")),
    ]
    if config.get("image_size") is not None:  # a user's images, resized as in the search
        command += ["--image-size", str(config["image_size"])]
    if config.get("seed") is not None:  # the seed that drew the search's split
        command += ["--seed", str(int(config["seed"]))]
    for key in ("train_limit", "val_limit"):  # the images the search trained on
        if config.get(key) is not None:
            command += [f"--{key.replace('_', '-')}", str(int(config[key]))]
    if "lr" in trial.params:
        command += ["--lr", repr(float(trial.params["lr"]))]
    for key in ("lr_policy", "batch_policy"):  # where the space searched them
        if key in trial.params:
            command += [f"--{key.replace('_', '-')}", str(trial.params[key])]
    return command, does
