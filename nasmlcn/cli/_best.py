"""``nasmlcn best``: a study's best trials (or Pareto front), read back."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import typer

from nasmlcn._storage_url import redact_url, resolve_storage
from nasmlcn.cli._console import out
from nasmlcn.cli._options import JSON, STORAGE, STUDY, local_file
from nasmlcn.cli._trials_table import PROXY_NOTE, print_measured, why_none_feasible

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn.study import RetrainedModel


def best(
    study: str | None = STUDY,
    storage: str | None = STORAGE,
    top: int = typer.Option(5, "--top", min=1, help="Best trials to list (single objective)."),
    export_arch: Path | None = typer.Option(
        None,
        "--export-arch",
        parser=local_file,
        help="Write the best architecture (highest first objective) as JSON.",
    ),
    export: Path | None = typer.Option(
        None,
        "--export",
        parser=local_file,
        help="Write the best trial's (or --trial's) arch.json and trained weights "
        "(checkpoint.pt) into this folder.",
    ),
    trial_number: int | None = typer.Option(
        None, "--trial", min=0, help="The trial --export writes [default: the best]."
    ),
    artifacts: Path | None = typer.Option(
        None,
        "--artifacts",
        parser=local_file,
        help="The search's artifact folder [default: artifacts/ beside a SQLite study "
        "file, else studies/artifacts].",
    ),
    as_json: bool = JSON,
) -> None:
    """The best trials of a study (single objective) or its Pareto front."""
    if trial_number is not None and export is None:
        from nasmlcn.errors import SearchError

        raise SearchError(
            f"--trial {trial_number} picks the trial --export writes; give --export DIR"
        )
    found = _read(study, resolve_storage(storage), top)
    if export_arch is not None:
        _export_arch(found, export_arch)
    exported = None
    if export is not None:
        from nasmlcn.search import export_best

        exported = export_best(
            found.study,
            export,
            storage=found.storage,
            artifacts=str(artifacts) if artifacts else None,
            trial=trial_number,
        ).to_dict()
    if as_json:
        print(json.dumps(_as_json(found, export_arch, exported)))
        return
    _print_found(found)
    if export_arch is not None:
        out.print(f"wrote {export_arch} (train it: nasmlcn train --arch {export_arch})")
    if exported is not None:
        out.print(
            f"wrote trial {exported['trial']}'s {exported['arch']} and {exported['weights']}; "
            f"test it: nasmlcn evaluate --run {shlex.quote(str(export))}; export it: nasmlcn "
            f"export-model --run {shlex.quote(str(export))}; {_GOES_ON[exported['command_does']]}: "
            f"{exported['command']}",
            markup=False,
            soft_wrap=True,
        )


_GOES_ON = {
    "resume": "train it on (the epochs it had left)",
    "longer": "train a fresh one for twice its epochs",
}
"""What ``best --export``'s printed ``train`` command does, by ``command_does``."""


class _Found(NamedTuple):
    """A study's best trials, read back."""

    study: optuna.Study
    storage: str
    names: list[str]
    trials: list[FrozenTrial]
    rows: list[dict[str, Any]]
    retrained: dict[int, RetrainedModel]
    config: dict[str, Any]
    idle: list[dict[str, Any]]  # the completed trials that did not learn


def _read(study: str | None, storage: str, top: int) -> _Found:
    """The ``top`` best trials (or the Pareto front) of ``study`` in ``storage``, as
    table rows, with their retrained models and the search's configuration."""
    from nasmlcn.search import best_trials, not_learning, proposals, summarize
    from nasmlcn.study import load_existing_study, metric_names, retrained_by_trial, study_info

    loaded = load_existing_study(study, storage)
    names = metric_names(loaded)
    trials = best_trials(loaded, top=top)
    retrained = retrained_by_trial(study_info(loaded))
    proposed = proposals(loaded)  # a model's repeats are shown with it, not as rows
    rows = [
        summarize(t, names, retrained.get(t.number), proposed.get(t.number, 1)).to_dict()
        for t in trials
    ]
    config = study_info(loaded).get("config") or {}
    return _Found(loaded, storage, names, trials, rows, retrained, config, not_learning(loaded))


def _export_arch(found: _Found, path: Path) -> None:
    """Writes the best trial's architecture to ``path`` (none: refused)."""
    from nasmlcn.errors import SearchError
    from nasmlcn.specs import arch_from_dict, save_arch
    from nasmlcn.study import TrialRecord
    from nasmlcn.training import CHECKPOINT_NAME, RESULT_NAME

    if path.is_dir():
        raise SearchError(f"--export-arch {str(path)!r} is a folder; give the JSON file to write")
    run_files = [n for n in (CHECKPOINT_NAME, RESULT_NAME) if (path.parent / n).exists()]
    if path.exists() and run_files:  # a run's arch.json: the run would then mix two models
        raise SearchError(
            f"--export-arch {str(path)!r} would replace a file of the run in "
            f"{str(path.parent)!r} (beside its {run_files[0]}); give another file, or "
            "--export FOLDER for a run folder of the best trial"
        )
    best_arch = TrialRecord.of(found.trials[0]).arch if found.trials else {}
    if not best_arch:
        raise SearchError(
            f"study {found.study.study_name!r} has no completed feasible trial to export"
        )
    save_arch(arch_from_dict(best_arch), path)


def _as_json(
    found: _Found, export_arch: Path | None, exported: dict[str, Any] | None
) -> dict[str, Any]:
    """``best --json``'s object."""
    from nasmlcn.study import retrained_models, study_info

    loaded, config = found.study, found.config
    return {
        "study": loaded.study_name,
        "storage": redact_url(found.storage),
        "metric_names": found.names,
        "directions": [d.name.lower() for d in loaded.directions],
        "n_trials": len(loaded.trials),
        "evaluator": config.get("evaluator"),
        "accuracy_is_proxy": config.get("evaluator") == "proxy",
        "best": found.rows,
        "not_learning": found.idle,
        "exported_arch": str(export_arch) if export_arch else None,
        "exported": exported,
        "retrained": [m.to_dict() for m in retrained_models(study_info(loaded))],
    }


def _print_found(found: _Found) -> None:
    """The tables, or why there are none, and the retrained trials not listed."""
    loaded, rows, config, retrained = found.study, found.rows, found.config, found.retrained
    if rows:  # no empty table before the line that says why
        _print_best(
            loaded.study_name, found.names, rows, len(loaded.directions) > 1, config.get("devices")
        )
    if config.get("evaluator") == "proxy":
        out.print(PROXY_NOTE, highlight=False)
    if not rows:
        from optuna.trial import TrialState

        completed = len(loaded.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
        why = why_none_feasible(completed, config.get("latency_budget"), len(found.idle))
        out.print(why, highlight=False)
    others = sorted(set(retrained) - {r["number"] for r in rows})
    if others:
        from nasmlcn.cli._trials_table import retrained_text

        out.print(
            "also retrained (not listed above): "
            + ", ".join(f"#{n} test acc {retrained_text(retrained[n])}" for n in others)
        )


def _print_best(
    study: str,
    names: list[str],
    rows: list[dict[str, Any]],
    multi: bool,
    devices: str | None = None,
) -> None:
    """The best trials in two tables: what was predicted for the target
    ``devices`` (the headings name them), then what was measured where each trial
    trained (its device named, with the spread over the timed passes), so that
    figures for different devices never share a table."""
    from nasmlcn.cli._trials_table import devices_line, retrained_notes, trials_table

    table = trials_table(
        f"{'Pareto front' if multi else 'best trials'} of {study}",
        rows,
        names,
        # NASCaps' second stage: the test accuracy of trials `nasmlcn retrain` trained again
        retrained=any(r.get("retrained") for r in rows),
        inference=True,
        width=out.width,
    )
    if not rows:
        out.print(table)
        return
    out.print(devices_line(devices), highlight=False)
    out.print(table)
    for line in retrained_notes(rows):
        out.print(line, highlight=False, markup=False)
    print_measured(rows, devices)
