"""NASCaps' second stage: train the selected trials again, fully, and test them.

A search ranks candidates by the validation accuracy of a short training
(NASCaps sec. 4.2: "the candidate networks that show their accuracy and hardware
efficiency in a Pareto-front are fully-trained to evaluate their actual
validation accuracy"). :func:`retrain_study` does that second stage for a study
nasmlcn wrote:

- which trials: the Pareto front (``pareto``; on a single-objective study the
  front is its best trial) or the ``top`` K feasible completed trials by the first
  objective (accuracy), K different models (a trial with the architecture and
  training settings of a better one would train the same model: skipped);
- how: each trial's stored architecture (the ``arch`` attribute,
  :class:`~nasmlcn.study._trial.TrialRecord`) with the trial's own training
  settings as the ``train`` evaluator used them (its sampled ``batch_size`` and
  ``lr``, else the search's; the search's epochs and dataset; the search's split
  and the trial's training seed), any of them
  overridden by :class:`RetrainOptions`; trained by
  :func:`~nasmlcn.training.train` (the one training path) on the whole
  training split (``train_limit`` None) of the same seeded train/validation split
  as the search, so the search's validation images stay unseen, and tested on the
  test set, which the search never touches: the weights of the epoch with the best
  validation accuracy (select on validation, test once);
- or, with ``refit`` (NASCaps' final training), that run only chooses the epochs
  ``E`` (its selected epoch): a fresh model, with the same seed and settings,
  trains ``E`` epochs on the training and validation images together and is
  tested once (:meth:`~nasmlcn.data.DataSplits.refit`), the first run's test
  accuracy kept beside it;
- measured: test accuracy, parameters, training throughput (training images per
  second of the training passes) and inference throughput (images per second
  classifying test images, forward only, eval mode, no decoder, batch
  ``inference_batch_size``: :func:`nasmlcn.measure.time_inference` on the model
  loaded back from the checkpoint written, on the device it trained on);
- written: one run folder per trial under ``out_dir`` (``trial-0007/``) as
  ``nasmlcn train --out`` writes it (``checkpoint.pt``, ``arch.json``,
  ``result.json`` with a ``retrain`` section), so ``nasmlcn train --arch ...
  --resume`` and :func:`nasmlcn.training.load_model` read it; a refit's beside
  it (``trial-0007-refit/``, which then has the ``retrain`` section).

Where the results live: :mod:`nasmlcn.study._retrained` (the study's ``nasmlcn``
attribute, one :class:`~nasmlcn.study.RetrainedModel` per trial and dataset, stored
as soon as its model is tested). Everything is checked on a read-only view of the
study before anything is trained or written: a bad request leaves the study untouched.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from nasmlcn._text import counted
from nasmlcn.errors import NasmlcnError
from nasmlcn.search._results.retrain_plan import (
    REFIT_SUFFIX,
    RetrainOptions,
    RetrainTarget,
    check_retrainable,
    plan_retrain,
    refit_protocol,
    refit_target,
    retrain_data,
    run_folder,
    selection_notes,
    target_job,
)
from nasmlcn.search.objectives._base import chance_accuracy, learning_threshold
from nasmlcn.study import TIE_MARGIN, RetrainedModel, Standing, Stored, store_retrained

if TYPE_CHECKING:
    import optuna

    from nasmlcn.measure import InferenceTiming
    from nasmlcn.training import Callback, TrainReport

logger = logging.getLogger(__name__)


class RetrainObserver:
    """Hooks of a retrain run (the CLI's progress display, the dashboard's notes);
    all no-ops here. An observer that raises stops the run (models already stored
    stay stored)."""

    def on_start(self, study: optuna.Study, targets: Sequence[RetrainTarget]) -> None:
        pass

    def training_callbacks(self, target: RetrainTarget, index: int) -> Sequence[Callback]:
        """Training callbacks for the ``index``-th model (0-based); asked again for its
        refit (``target.refit``)."""
        return ()

    def on_model_end(self, model: RetrainedModel) -> None:
        pass

    def on_end(self, study: optuna.Study, report: RetrainReport) -> None:
        """After the last model; ``study`` is writable (notes may be added)."""


@dataclass(frozen=True)
class RetrainReport:
    """What :func:`retrain_study` did; ``to_dict`` is what ``--json`` prints."""

    study: str
    selection: str
    dataset: str
    out_dir: str
    models: tuple[RetrainedModel, ...]
    notes: tuple[str, ...] = ()  # what the selection left out (selection_notes)
    seed: int | None = None  # --seed: the run folders are trial-NNNN-seed-S
    refit: bool = False  # the models are refits, in trial-NNNN-refit
    stored: tuple[str, ...] = ()  # what the models sit beside or replaced (stored_lines)
    seeds: tuple[int, ...] = ()  # --seeds: every model once with each
    standings: tuple[Standing, ...] = ()  # with seeds: each model against the best
    tie_margin: float = TIE_MARGIN

    @property
    def run_folders(self) -> str:
        """The name pattern of the run folders with the reported models
        (``trial-NNNN``, ``trial-NNNN-seed-1``, ``trial-NNNN-refit``)."""
        seed = self.seeds[0] if self.seeds else self.seed
        name = run_folder(0, seed).replace("0000", "NNNN")
        if self.seeds:
            name = name.removesuffix(str(seed)) + "S"
        return name + (REFIT_SUFFIX if self.refit else "")

    @property
    def caveats(self) -> tuple[str, ...]:
        """A line per model whose test accuracy needs a caveat (:func:`retrained_caveats`):
        ``trial 1: did not learn (below 0.19; chance 0.10); reduced data: ...``; over
        seeds, a caveat of some seeds only names them (``trial 0 (seeds 1, 3): ...``)."""
        seeds_of: dict[tuple[int, str], list[int | None]] = {}
        for m in self.models:
            for caveat in retrained_caveats(m):
                seeds_of.setdefault((m.number, caveat), []).append(m.seed)
        runs = {n: sum(m.number == n for m in self.models) for n, _ in seeds_of}
        lines: dict[str, list[str]] = {}
        for (number, caveat), seeds in seeds_of.items():
            some = len(seeds) < runs[number]
            where = f"trial {number}" + (f" (seeds {', '.join(map(str, seeds))})" if some else "")
            lines.setdefault(where, []).append(caveat)
        return tuple(f"{where}: {'; '.join(caveats)}" for where, caveats in lines.items())

    def to_dict(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "selection": self.selection,
            "dataset": self.dataset,
            "out_dir": self.out_dir,
            "models": [m.to_dict() for m in self.models],
            "notes": [*self.notes, *self.caveats],  # the lines the table shows under it
            "stored": list(self.stored),
            "seeds": list(self.seeds),
            "tie_margin": self.tie_margin,
            "standings": [s.to_dict() for s in self.standings],
            "seed": self.seed,
            "refit": self.refit,
        }


def retrain_study(
    name: str | None,
    url: str,
    options: RetrainOptions,
    *,
    observer: RetrainObserver | None = None,
) -> RetrainReport:
    """Retrains the selected trials of study ``name`` in storage ``url`` (see the
    module docstring) and stores each result on the study as soon as it is tested.

    Raises:
        StorageError: No such storage or study.
        SearchError, SpecError, CheckpointError, UnknownNameError: see
            :func:`plan_retrain`; raised before anything is trained or written.
        DatasetError, TrainingError: The data cannot be loaded, training diverged.
    """
    from nasmlcn.study import load_existing_study

    watcher = observer or RetrainObserver()
    readable = load_existing_study(name, url)
    # every seed's jobs planned (run folders checked) before anything is trained;
    # seed after seed, so an interrupted run keeps whole seeds of every model
    check_retrainable(readable, options)
    data = retrain_data(readable, options)  # opened once, for every seed's targets
    runs = [(run, plan_retrain(readable, run, data)) for run in options.runs()]
    # a storage that cannot be written is refused now, not after the first model trained
    writable = load_existing_study(readable.study_name, url, read_only=False)
    watcher.on_start(readable, [t for _, targets in runs for t in targets])
    done: list[RetrainedModel] = []
    placed: list[tuple[RetrainedModel, Stored]] = []
    test_images: dict[str, Any] = {}
    for run, target in ((run, t) for run, targets in runs for t in targets):
        callbacks = partial(watcher.training_callbacks, index=len(done))
        model = _retrain_one(target, run, callbacks, test_images)
        placed.append((model, store_retrained(writable, model)))
        done.append(model)
        watcher.on_model_end(model)
    targets = runs[0][1]
    report = RetrainReport(
        readable.study_name,
        options.selection,
        targets[0].dataset,
        options.out_dir,
        tuple(done),
        tuple(selection_notes(readable, options, data)),
        options.seed,
        options.refit,
        tuple(stored_lines(placed)),
        options.seeds,
        _standings(writable, done, options) if options.seeds else (),
        options.tie_margin,
    )
    watcher.on_end(writable, report)
    return report


def _standings(
    study: optuna.Study, done: Sequence[RetrainedModel], options: RetrainOptions
) -> tuple[Standing, ...]:
    """The retrained models against the best, over every seed stored for them under
    this run's protocol (earlier runs' seeds too), paired by seed."""
    from nasmlcn.study import StudyRecord, retrained_models, seed_figures, standings

    protocol = done[0].protocol_key
    numbers = {m.number for m in done}
    stored = [m for m in retrained_models(StudyRecord.read(study)) if m.number in numbers]
    figures = seed_figures(stored).get(protocol, [])
    return tuple(standings(figures, options.tie_margin)) if figures else ()


def stored_lines(placed: Sequence[tuple[RetrainedModel, Stored]]) -> list[str]:
    """What this run's retrainings sit beside or replaced, a line or two per trial
    (nothing where they are the trial's first), and which retraining
    ``nasmlcn best`` shows for it now (:data:`~nasmlcn.study.ANSWER_RULE`)."""
    done = [m for m, _ in placed]
    lines = []
    for number in dict.fromkeys(m.number for m in done):
        mine = [(m, st) for m, st in placed if m.number == number]
        replaced = [(m, st.replaced) for m, st in mine if st.replaced is not None]
        if replaced:
            seeds = ", ".join(str(m.seed) for m, _ in replaced)
            accs = ", ".join(f"{old.test_accuracy:.4f}" for _, old in replaced)
            lines.append(
                f"trial {number}: replaced {counted(len(replaced), 'retraining')} with the same "
                f"settings and seed ({seeds}; test acc {accs}; made {replaced[0][1].retrained_at})"
            )
        gone = [st.replaced for _, st in placed if st.replaced is not None]
        beside: list[RetrainedModel] = []
        for b in (b for _, st in mine for b in st.beside if b not in done and b not in gone):
            beside += [] if b in beside else [b]  # (records hold lists: not hashable)
        if beside:
            lines.append(_beside_line(number, beside, mine[-1][1].answer, done))
    return lines


def _beside_line(
    number: int,
    beside: Sequence[RetrainedModel],
    answer: RetrainedModel | None,
    done: Sequence[RetrainedModel],
) -> str:
    by_protocol: dict[str, list[RetrainedModel]] = {}
    for m in beside:
        by_protocol.setdefault(m.recipe_text, []).append(m)
    shown = "; ".join(
        f"{', '.join(f'{m.test_accuracy:.4f}' for m in ms)} ({protocol}, "
        + (f"seed {ms[0].seed}" if len(ms) == 1 else f"seeds {', '.join(str(m.seed) for m in ms)}")
        + ")"
        for protocol, ms in by_protocol.items()
    )
    if answer in done:
        answers = "'nasmlcn best' shows this run's now"
    elif answer is not None:
        answers = f"'nasmlcn best' shows the one of {answer.settings_text}"
    else:  # retrained on other data than the search's
        answers = "'nasmlcn best' shows retrainings on the search's data only"
    return (
        f"trial {number}: stored beside {counted(len(beside), 'earlier retraining')}, kept: "
        f"{shown}; {answers}"
    )


def _retrain_one(
    target: RetrainTarget,
    options: RetrainOptions,
    callbacks: Callable[[RetrainTarget], Sequence[Callback]],
    test_images: dict[str, Any],
) -> RetrainedModel:
    """Trains (and with ``options.refit`` refits), tests and times one model; writes
    its run folder(s). ``callbacks``: a run's training callbacks."""
    from nasmlcn.measure import INFERENCE_PASSES, INFERENCE_WARMUP, time_inference
    from nasmlcn.training import CHECKPOINT_NAME, load_job_splits, load_model, train

    started = time.perf_counter()
    report = train(target_job(target, options), list(callbacks(target)))
    tested, final = report, target
    if options.refit:  # the epochs chosen on validation, on all the training data
        final = refit_target(target, report.selected_epoch)
        tested = train(target_job(final, options), list(callbacks(final)))
    weights = final.run_dir / CHECKPOINT_NAME
    # timed on the weights as written: what other commands load
    model, _ = load_model(weights)
    model.to(tested.device)
    if target.dataset not in test_images:  # (N, C, H, W), normalised as in training
        test_images[target.dataset] = load_job_splits(
            target_job(target, options)
        ).test.first_inputs(options.inference_batch_size * (INFERENCE_WARMUP + INFERENCE_PASSES))
    inference = time_inference(
        model,
        test_images[target.dataset],
        input_device=tested.device,
        batch_size=options.inference_batch_size,
    )
    retrained = _record(final, report, tested, inference, seconds=time.perf_counter() - started)
    # the most cores others held over the training and the timing: the throughputs'
    # reliability (each run and the timing looked before it began)
    loads = [tested.machine_load, report.machine_load, inference.machine_load]
    retrained = replace(retrained, machine_load=_most_held(loads))
    given = {"train_limit": options.train_limit, "test_limit": options.test_limit}
    limits = {name: int(value) for name, value in given.items() if value is not None}
    if limits:
        retrained = replace(retrained, data_limits=limits)
    _write_result(final, tested, retrained, inference)
    logger.info(
        "trial %d retrained: test accuracy %.4f (%s)",
        target.number,
        retrained.test_accuracy,
        retrained.protocol,
    )
    return retrained


def _most_held(records: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Of the looks recorded around a retraining, the one where others held most."""
    known = [r for r in records if r is not None and r.get("others_busy_cores") is not None]
    return max(known, key=lambda r: r["others_busy_cores"]) if known else None


def _record(
    final: RetrainTarget,
    report: TrainReport,
    tested: TrainReport,
    inference: InferenceTiming,
    *,
    seconds: float,
) -> RetrainedModel:
    """The stored record of ``final`` (a run, or a refit), whose run selected on
    validation gave ``report`` and whose tested model gave ``tested`` (``report``
    itself where it is no refit), timed by ``inference``."""
    from nasmlcn.training import CHECKPOINT_NAME

    history = report.history
    return RetrainedModel(
        number=final.number,
        dataset=final.dataset,
        lanes=final.arch.describe(),
        test_accuracy=tested.test_accuracy,
        test_loss=tested.test_loss,
        test_images=tested.test_images,
        params=tested.params,
        epochs=len(history),
        batch_size=final.config.batch_size,
        lr=final.config.lr,
        train_images=tested.train_images,
        train_images_per_second=float(tested.to_dict()["images_per_second"]),
        inference_images_per_second=1.0 / inference.seconds_per_image,
        inference_batch_size=inference.batch_size,
        device=tested.device,
        seconds=seconds,
        search_accuracy=final.search_accuracy,
        search_epochs=final.search_epochs,
        val_accuracy_per_epoch=[h.val_accuracy for h in history],
        weights=str((final.run_dir / CHECKPOINT_NAME).resolve()),
        run_dir=str(final.run_dir.resolve()),
        retrained_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        # the --seed it ran with; without one the search's (the split's; the weights
        # took the trial's training seed, which the search's seed and the model make)
        seed=final.config.seed if final.split_seed is None else final.split_seed,
        seed_given=final.split_seed is None,
        selected_epoch=report.selected_epoch,
        last_epoch_test_accuracy=report.last_epoch_test_accuracy,
        protocol=refit_protocol(final.config.epochs) if final.refit else report.protocol,
        validation_run_test_accuracy=report.test_accuracy if final.refit else None,
    )


def _write_result(
    final: RetrainTarget,
    tested: TrainReport,
    retrained: RetrainedModel,
    inference: InferenceTiming,
) -> None:
    """``result.json`` of ``final``'s run folder, with a ``retrain`` section."""
    from nasmlcn.training import write_result

    write_result(
        final.run_dir,
        {**tested.to_dict(), "retrain": {**retrained.to_dict(), "inference": inference.to_dict()}},
    )


def retrained_caveats(model: RetrainedModel) -> list[str]:
    """What a reader of ``model``'s test accuracy must know: that the model did not
    learn (below :func:`~nasmlcn.search.objectives._base.learning_threshold`, as a search's
    trials), that it rests on fewer images than the whole splits, and that its
    throughputs were measured while other processes held cores."""
    from nasmlcn.data import known_identity
    from nasmlcn.hardware import crowded_record

    caveats = []
    try:  # a user's dataset: its cached copy says
        known = known_identity(model.dataset)
    except NasmlcnError:  # a data directory not here: no threshold to give
        known = None
    classes = None if known is None else len(known.classes)
    if classes is not None and model.test_accuracy < learning_threshold(classes):
        caveats.append(
            f"did not learn (below {learning_threshold(classes):.2f}; chance "
            f"{chance_accuracy(classes):.2f})"
        )
    if model.data_limits:
        caveats.append(
            f"reduced data: {model.train_images:,} training, {model.test_images:,} test images"
        )
    if crowded_record(model.machine_load) is not None:  # its figure: machine_load
        caveats.append("img/s unreliable: measured beside other processes")
    return caveats
