"""``nasmlcn best``: a study's best trials (or Pareto front), read back."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import typer

from nasmlcn._storage_url import redact_url, resolve_storage
from nasmlcn._text import counted
from nasmlcn.cli._command_options import option, takes
from nasmlcn.cli._console import out
from nasmlcn.cli._options import JSON, STORAGE, STUDY, local_file, replace_option
from nasmlcn.cli._trials_table import PROXY_NOTE, print_measured, why_none_feasible
from nasmlcn.study import TIE_MARGIN

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from nasmlcn.study import LeanPick, Limit, RetrainedModel, SeededAnswer, StudyRecord


@dataclass(frozen=True, kw_only=True)
class BestOptions:
    """What ``nasmlcn best`` was given: one field per option, in ``--help``'s order."""

    study: str | None = option(STUDY)
    storage: str | None = option(STORAGE)
    top: int = option(
        typer.Option(5, "--top", min=1, help="Best trials to list (single objective).")
    )
    most: str | None = option(
        typer.Option(
            None,
            "--max",
            help="Keep the trials at most these: latency=5ms,memory=2GiB. Any figure of the "
            "table, an objective or not: accuracy, latency (predicted lanes' step), step (predicted whole training step), "
            "inference (predicted, one image), memory (predicted), params, energy, lanes, "
            "imbalance (in %), measured_inference (measured where trained). A time or a size "
            "needs its unit (5ms, 2GiB). The answer is then made of the trials left, by the "
            "study's objectives.",
        )
    )
    least: str | None = option(
        typer.Option(
            None,
            "--min",
            help="Keep the trials at least these: accuracy=0.9 or 90% (the names of --max).",
        )
    )
    how: str = option(
        typer.Option(
            "best",
            "--pick",
            help="The trial --export and --export-arch write: best (the first objective's "
            "best), knee (the front's point nearest the ideal, each objective scaled to "
            "[0, 1]) or lean (of the models tied with the best over retrained seeds, else "
            "within the search's noise of it, the cheapest by --prefer).",
        )
    )
    prefer: str | None = option(
        typer.Option(
            None,
            "--prefer",
            help="With --pick lean: the figure the cheapest is chosen by, any figure of the "
            "table: step (predicted whole training step: lanes and head), inference, memory, "
            "params, energy, latency (the lanes' step alone), measured_inference [default: "
            "the study's first cost objective (a latency objective: step), else step].",
        )
    )
    tie_margin: float = option(
        typer.Option(
            TIE_MARGIN,
            "--tie-margin",
            min=0.0,
            max=1.0,
            help="Models retrained over seeds are tied with the best when the 95 % interval "
            "of their paired difference to it lies within +-this accuracy; wider ones that "
            "hold 0 are undecided (more seeds needed), never picked.",
        )
    )
    export_arch: Path | None = option(  # noqa: RUF009
        typer.Option(
            None,
            "--export-arch",
            parser=local_file,
            help="Write the picked trial's architecture (--pick: the best by default) as JSON.",
        )
    )
    replace: bool = option(replace_option("--export-arch's file"))
    export: Path | None = option(  # noqa: RUF009
        typer.Option(
            None,
            "--export",
            parser=local_file,
            help="Write the picked trial's (or --trial's) arch.json and trained weights "
            "(checkpoint.pt) into this folder.",
        )
    )
    trial_number: int | None = option(
        typer.Option(
            None, "--trial", min=0, help="The trial --export writes [default: the picked one]."
        )
    )
    artifacts: Path | None = option(  # noqa: RUF009
        typer.Option(
            None,
            "--artifacts",
            parser=local_file,
            help="The search's artifact folder [default: artifacts/ beside a SQLite study "
            "file, else studies/artifacts].",
        )
    )
    as_json: bool = option(JSON)


@takes(BestOptions)
def best(options: BestOptions) -> None:
    """The best trials of a study (single objective) or its Pareto front."""
    if options.trial_number is not None and options.export is None:
        from nasmlcn.errors import SearchError

        raise SearchError(
            f"--trial {options.trial_number} picks the trial --export writes; give --export DIR"
        )
    if options.replace and options.export_arch is None:
        from nasmlcn.errors import SearchError

        raise SearchError("--replace writes over --export-arch's file; give --export-arch FILE")
    if options.prefer is not None and options.how != "lean":
        from nasmlcn.errors import SearchError

        raise SearchError(
            f"--prefer {options.prefer} chooses among the models tied with the best, for "
            "--pick lean; add --pick lean"
        )
    choice = Choice(options.most, options.least, options.how, options.prefer, options.tie_margin)
    found = _read(options.study, resolve_storage(options.storage), options.top, choice)
    if options.export_arch is not None:
        _export_arch(found, options.export_arch, replace=options.replace)
    exported = _export(found, options) if options.export is not None else None
    if options.as_json:
        print(json.dumps(_as_json(found, options.export_arch, exported)))
        return
    _print_found(found)
    if options.export_arch is not None:
        arch = options.export_arch
        out.print(f"wrote {arch} (train it: nasmlcn train --arch {arch})")
    if exported is not None:
        folder = shlex.quote(str(options.export))
        out.print(
            f"wrote trial {exported['trial']}'s {exported['arch']} and {exported['weights']}; "
            f"test it: nasmlcn evaluate --run {folder}; export it: nasmlcn export-model --run "
            f"{folder}; {_GOES_ON[exported['command_does']]}: {exported['command']}",
            markup=False,
            soft_wrap=True,
        )


def _export(found: _Found, options: BestOptions) -> dict[str, Any]:
    """``--export``: the picked trial's (or ``--trial``'s) files, as ``--json`` gives them."""
    from nasmlcn.search import export_best

    assert options.export is not None
    number = options.trial_number
    return export_best(
        found.study,
        options.export,
        storage=found.storage,
        artifacts=str(options.artifacts) if options.artifacts else None,
        trial=number if number is not None else _picked_number(found),
    ).to_dict()


_GOES_ON = {
    "resume": "train it on (the epochs it had left)",
    "longer": "train a fresh one for twice its epochs",
}
"""What ``best --export``'s printed ``train`` command does, by ``command_does``."""


class Choice(NamedTuple):
    """``--max``, ``--min``, ``--pick``, ``--prefer`` and ``--tie-margin``: limits on
    the answer, its trial to write, and how ties are told."""

    most: str | None
    least: str | None
    how: str
    prefer: str | None = None
    margin: float = TIE_MARGIN


def _limits_text(found: _Found) -> str:
    """The limits as given, each with what its figure is: ``--max latency=5ms
    (predicted lanes' step) and --min accuracy=0.9 (validation)``."""
    return " and ".join(
        f"{'--max' if x.upper else '--min'} {x.text}" + (f" ({x.what})" if x.what else "")
        for x in found.limits
    )


def _picked_number(found: _Found) -> int:
    """The trial ``--export`` writes: the picked one."""
    if found.picked is None:
        raise _nothing_to_export(found)
    return found.picked.number


def _nothing_to_export(found: _Found) -> Exception:
    """Why ``--export`` and ``--export-arch`` have no trial to write, in the words
    the table says it with (:func:`_why_no_rows`)."""
    from nasmlcn.errors import SearchError

    return SearchError(
        f"study {found.study.study_name!r} has no trial to export: {_why_no_rows(found)}"
    )


def _why_no_rows(found: _Found) -> str:
    """Why the study's answer lists no trial: no trial completed yet, none learned,
    the latency budget, or the limits."""
    from optuna.trial import TrialState

    completed = len(found.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    if found.limits and completed:
        return f"no completed feasible trial meets {_limits_text(found)}; loosen the limits"
    return why_none_feasible(completed, found.record.config.get("latency_budget"), len(found.idle))


class _Found(NamedTuple):
    """A study's best trials, read back."""

    study: optuna.Study
    storage: str
    names: list[str]
    trials: list[FrozenTrial]
    rows: list[dict[str, Any]]
    retrained: dict[int, RetrainedModel]
    record: StudyRecord  # what the search stored on the study
    idle: list[dict[str, Any]]  # the completed trials that did not learn
    limits: list[Limit]  # --max and --min
    how: str  # --pick
    picked: FrozenTrial | None  # the trial --export and --export-arch write
    seeded: SeededAnswer | None = None  # the models retrained over seeds, against the best
    lean: LeanPick | None = None  # what --pick lean chose, and why


def _read(study: str | None, storage: str, top: int, choice: Choice) -> _Found:
    """The ``top`` best trials (or the Pareto front) of ``study`` in ``storage``, as
    table rows, with their retrained models and the search's configuration; with
    limits, the answer of the trials that meet them; and the trial ``choice`` picks."""
    from nasmlcn.search import not_learning, proposals, summarize
    from nasmlcn.study import (
        StudyRecord,
        answer_within,
        lean_pick,
        load_existing_study,
        metric_names,
        noise_estimate,
        parse_limits,
        pick,
        retrained_by_trial,
        seeded_answer,
    )

    loaded = load_existing_study(study, storage)
    record = StudyRecord.read(loaded)
    names = metric_names(loaded)
    unit = record.time_unit or "s"  # a thesis study's times: w2d
    limits = [
        *parse_limits(choice.most, names, upper=True, time_unit=unit),
        *parse_limits(choice.least, names, upper=False, time_unit=unit),
    ]
    trials = answer_within(loaded.get_trials(deepcopy=False), loaded.directions, names, limits, top)
    seeded = seeded_answer(record, choice.margin)
    lean = None
    if choice.how == "lean":
        lean = lean_pick(
            loaded, names, seeded, noise_estimate(record), prefer=choice.prefer, limits=limits
        )
        picked: FrozenTrial | None = loaded.trials[lean.number]
    else:
        picked = pick(trials, loaded.directions, choice.how)
    retrained = retrained_by_trial(record)
    proposed = proposals(loaded)  # a model's repeats are shown with it, not as rows
    # the pick is marked where the user asked to choose (--pick knee, or limits); else
    # the first row is the pick, as it always was
    asked = choice.how != "best" or bool(limits)
    rows = []
    for t in trials:
        row = summarize(t, names, retrained.get(t.number), proposed.get(t.number, 1)).to_dict()
        standing = seeded.of(t.number) if seeded is not None else None
        seeds = standing.to_dict() if standing is not None else None
        chosen = picked is not None and t.number == picked.number
        rows.append({**row, "seeded": seeds, "picked": chosen and asked})
    idle = not_learning(loaded)
    return _Found(
        loaded, storage, names, trials, rows, retrained, record, idle, limits, choice.how, picked,
        seeded, lean,
    )  # fmt: skip


def _export_arch(found: _Found, path: Path, *, replace: bool) -> None:
    """Writes the best trial's architecture to ``path`` (none: refused); a file already
    there only with ``replace`` (another pick's, another study's, or the user's own)."""
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
    if path.exists() and not replace:
        raise SearchError(
            f"--export-arch {str(path)!r} already exists; give another file, or --replace to "
            "write over it"
        )
    if found.picked is None:
        raise _nothing_to_export(found)
    arch = TrialRecord.of(found.picked).arch
    if not arch:  # a trial written before architectures were stored
        raise SearchError(f"trial {found.picked.number} stored no architecture to export")
    save_arch(arch_from_dict(arch), path)


def _as_json(
    found: _Found, export_arch: Path | None, exported: dict[str, Any] | None
) -> dict[str, Any]:
    """``best --json``'s object."""
    from nasmlcn.study import retrained_models

    loaded, record = found.study, found.record
    return {
        "study": loaded.study_name,
        "storage": redact_url(found.storage),
        "metric_names": found.names,
        "directions": [d.name.lower() for d in loaded.directions],
        "n_trials": len(loaded.trials),
        "evaluator": record.evaluator,
        "accuracy_is_proxy": record.evaluator == "proxy",
        "best": found.rows,
        "limits": [x.to_dict() for x in found.limits],
        "pick": found.how,
        "picked": found.picked.number if found.picked is not None else None,
        "not_learning": found.idle,
        "exported_arch": str(export_arch) if export_arch else None,
        "exported": exported,
        "retrained": [m.to_dict() for m in retrained_models(record)],
        "seeded": found.seeded.to_dict() if found.seeded is not None else None,
        "lean": found.lean.to_dict() if found.lean is not None else None,
    }


def _print_found(found: _Found) -> None:
    """The tables, or why there are none, and the retrained trials not listed."""
    loaded, rows, record, retrained = found.study, found.rows, found.record, found.retrained
    if rows:  # no empty table before the line that says why
        _print_best(
            loaded.study_name,
            found.names,
            rows,
            len(loaded.directions) > 1,
            record.config.get("devices"),
        )
    if record.evaluator == "proxy":
        out.print(PROXY_NOTE, highlight=False)
    if not rows:
        out.print(_why_no_rows(found), highlight=False, soft_wrap=True)
    if found.seeded is not None:
        _print_seeded(found.seeded, {r["number"] for r in rows})
    if found.picked is not None and (found.how != "best" or found.limits):
        out.print(_picked_line(found), highlight=False, markup=False, soft_wrap=True)
    _print_answer_rule(found)
    seeded = {s.number for s in found.seeded.standings} if found.seeded else set()
    others = sorted(set(retrained) - {r["number"] for r in rows} - seeded)
    if others:
        from nasmlcn.cli._trials_table import retrained_text

        out.print(
            "also retrained (not listed above): "
            + ", ".join(f"#{n} test acc {retrained_text(retrained[n])}" for n in others)
        )


def _print_seeded(seeded: SeededAnswer, listed: set[int]) -> None:
    """The groups of the models retrained over seeds, and those the table leaves out."""
    from nasmlcn.cli._trials_table import STANDING_WORDS, seeded_text, standing_lines

    out.print(
        f"retrained over seeds ({seeded.recipe}), paired with the best:",
        highlight=False,
        markup=False,
    )
    for line in standing_lines(seeded.standings, seeded.margin):
        out.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    unlisted = [s for s in seeded.standings if s.number not in listed]
    if unlisted:
        out.print(
            "  not listed above: "
            + "; ".join(
                f"#{s.number} {seeded_text(s.figures)}, {STANDING_WORDS[s.mark]}" for s in unlisted
            ),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def _picked_line(found: _Found) -> str:
    """``picked: trial N (why)``, with the limits it met."""
    assert found.picked is not None
    kept = _limits_text(found)
    lean = found.lean
    if lean is not None:
        ratio = "" if lean.ratio is None else f", {lean.ratio:.2f}x the best's (#{lean.best})"
        if lean.number == lean.best:
            ratio = ": the best itself"
        why = (
            f" (lean: the cheapest by {lean.what}{ratio}, of "
            + ", ".join(f"#{n}" for n in lean.among)
            + f": {lean.evidence})"
        )
    elif found.how == "knee":
        why = " (the knee: nearest the ideal point, each objective scaled to [0, 1] over the front)"
    else:
        why = " (the best by the first objective)"
    return f"picked: trial {found.picked.number}{why}" + (
        f", among the trials that meet {kept}" if kept else ""
    )


def _print_answer_rule(found: _Found) -> None:
    """Which retraining answers for a trial retrained several times, and how many
    others are stored: a quick check never silently stands in for a full one."""
    from nasmlcn.study import ANSWER_RULE, retrained_models

    every = retrained_models(found.record)
    # (a row over seeds shows their mean: no one retraining answers for it)
    shown = {r["number"] for r in found.rows if r.get("retrained") and not r.get("seeded")}
    others = [m for m in every if m.number in shown and found.retrained.get(m.number) != m]
    if others:
        out.print(
            f"retrained test acc: {ANSWER_RULE}; {counted(len(others), 'other retraining')} "
            "of these trials stored beside ('best --json' lists each under 'retrained')",
            highlight=False,
            markup=False,
            soft_wrap=True,
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
