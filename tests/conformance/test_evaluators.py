"""Conformance of every registered evaluator (``nasmlcn.search.EVALUATORS``).

The contract (``nasmlcn/search/evaluators/_base.py`` and the runner that calls it):
``evaluate(job, on_epoch)`` calls ``on_epoch`` once after every epoch, in order;
the evaluation's curve has one accuracy per epoch and ends with ``accuracy``; an
evaluator that trains for real (``measured``) reports what it measured, one that
does not leaves the measured figures None; a decision from ``on_epoch`` that does
not go on (:class:`EpochDecision`) stops the evaluation after that epoch (the trial,
which decided, marks itself PRUNED); a job is seeded by its ``seed`` and ``trial``, so the same job gives the
same curve (a retried trial "trains identically"); an evaluator that writes
checkpoints resumes from one to the curve it would have reached uninterrupted.

The ``train`` evaluator trains on the generated ``synthetic`` dataset (no files):
100 training and 50 validation images, batch 50, on the CPU.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from nasmlcn.costs import INFERENCE_BATCH_SIZE
from nasmlcn.search import (
    EVALUATORS,
    EpochDecision,
    EpochReport,
    EvalRequest,
    Evaluation,
    Evaluator,
    FinishedTrial,
    HalvingPruner,
    SearchConfig,
    setup_search,
)
from nasmlcn.specs import MLCNSpec

NAMES = list(EVALUATORS)
CHECKPOINTING = [n for n in NAMES if EVALUATORS.get(n).checkpoints]
EPOCHS = 2
SPEC = MLCNSpec.from_lanes("mlcn1:1x1,mlcn2:1x1")
MODES = ("single-device", "lane-parallel", "proxy")


def _job(**kw: Any) -> EvalRequest:
    return EvalRequest(
        **{"spec": SPEC, "trial": 3, "seed": 1, "epochs": EPOCHS, "batch_size": 50, **kw}
    )


class _Run:
    """One evaluator, and its uninterrupted evaluation of ``_job()``."""

    def __init__(self, name: str, folder: Path) -> None:
        config = SearchConfig(
            evaluator=name,
            dataset="synthetic",
            epochs=EPOCHS,
            train_limit=100,
            val_limit=50,
            batch_size=50,
            run_on="cpu",
            devices="2xK80",
            mem="12GB",
            storage=f"sqlite:///{folder / 's.db'}",
        )
        self.folder = folder
        self.evaluator: Evaluator = EVALUATORS.get(name)(
            config=config, dataset=setup_search(config).dataset
        )
        self.reports: list[EpochReport] = []
        self.evaluation = self.evaluator.evaluate(_job(), self.record)

    def record(self, report: EpochReport) -> EpochDecision:
        self.reports.append(report)
        return EpochDecision()


@pytest.fixture(scope="module", params=NAMES)
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> _Run:
    """One evaluator per registered name, for the whole module."""
    return _Run(request.param, tmp_path_factory.mktemp(request.param))


def test_entry_is_an_evaluator_named_as_registered(run: _Run) -> None:
    assert run.evaluator.name in EVALUATORS
    assert EVALUATORS.get(run.evaluator.name) is type(run.evaluator)
    assert isinstance(run.evaluator.measured, bool)


def test_on_epoch_is_called_once_per_epoch_in_order(run: _Run) -> None:
    assert [r.epoch for r in run.reports] == list(range(1, EPOCHS + 1))
    seconds = [r.seconds for r in run.reports]
    assert seconds == sorted(seconds)
    assert seconds[0] >= 0
    assert all(0.0 <= r.val_accuracy <= 1.0 for r in run.reports)


def test_the_evaluation_holds_the_reported_curve(run: _Run) -> None:
    e = run.evaluation
    assert isinstance(e, Evaluation)
    assert len(e.val_accuracy_per_epoch) == EPOCHS
    assert e.val_accuracy_per_epoch == tuple(r.val_accuracy for r in run.reports)
    assert e.accuracy == e.val_accuracy_per_epoch[-1]
    assert math.isfinite(e.seconds)
    assert e.seconds >= run.reports[-1].seconds
    assert e.mode in MODES
    assert e.device
    json.dumps(e.to_dict())  # stored on the trial as a user attribute


def test_measured_figures_are_present_exactly_when_measured(run: _Run) -> None:
    e = run.evaluation
    figures = (
        e.step_seconds,
        e.images_per_second,
        e.peak_memory_bytes,
        e.measured_inference_latency_s,
    )
    if run.evaluator.measured:
        assert e.mode != "proxy"
        assert all(v is not None and math.isfinite(v) for v in figures), figures
        assert e.step_seconds is not None
        assert e.step_seconds > 0
        assert e.images_per_second is not None
        assert e.images_per_second > 0
        assert e.measured_inference_latency_s is not None
        assert e.measured_inference_latency_s > 0
        assert e.peak_memory_bytes is not None
        assert e.peak_memory_bytes >= 0
        assert e.measured_inference_device
        assert e.measured_inference_batch_size == INFERENCE_BATCH_SIZE
    else:
        assert e.mode == "proxy"
        assert figures == (None, None, None, None)
        assert e.measured_inference_device is e.measured_inference_batch_size is None


@pytest.mark.parametrize("action", ["prune", "stop"])
def test_a_decision_not_to_go_on_stops_the_evaluation_after_that_epoch(
    run: _Run, action: str
) -> None:
    seen: list[int] = []

    def on_epoch(report: EpochReport) -> EpochDecision:
        seen.append(report.epoch)
        return EpochDecision(action, "decided by the test")

    stopped = run.evaluator.evaluate(_job(), on_epoch)
    assert seen == [1]  # no epoch after the one that decided
    assert len(stopped.val_accuracy_per_epoch) == 1


def test_the_same_job_gives_the_same_curve(run: _Run) -> None:
    again = run.evaluator.evaluate(_job(), lambda _: EpochDecision())
    assert again.val_accuracy_per_epoch == run.evaluation.val_accuracy_per_epoch
    assert again.accuracy == run.evaluation.accuracy


@pytest.mark.parametrize("run", CHECKPOINTING, indirect=True)
def test_a_resumed_job_reaches_the_uninterrupted_curve(run: _Run, tmp_path: Path) -> None:
    checkpoint = tmp_path / "trial.ckpt"

    def prune_after_first(report: EpochReport) -> EpochDecision:
        return EpochDecision("prune", "stopped after epoch 1")

    run.evaluator.evaluate(_job(checkpoint_path=str(checkpoint)), prune_after_first)
    assert checkpoint.is_file()
    reports: list[EpochReport] = []

    def record(report: EpochReport) -> EpochDecision:
        reports.append(report)
        return EpochDecision()

    resumed = run.evaluator.evaluate(_job(checkpoint_path=str(checkpoint), resume=True), record)
    # it goes on after the checkpointed epoch, not from the start
    assert [r.epoch for r in reports] == list(range(2, EPOCHS + 1))
    assert resumed.val_accuracy_per_epoch == run.evaluation.val_accuracy_per_epoch


@pytest.mark.parametrize("name", NAMES)
def test_successive_halving_stops_trials_at_the_rung_only(name: str, tmp_path: Path) -> None:
    """Multi-fidelity through each evaluator: a trial ends at a rung (epoch 1 of 3)
    or trains in full, and a pruned one keeps the epoch it reached."""
    from optuna.trial import TrialState

    from nasmlcn.search import run_search
    from nasmlcn.study import TrialRecord, load_existing_study

    config = SearchConfig(
        evaluator=name,
        dataset="synthetic",
        epochs=3,
        train_limit=100,
        val_limit=50,
        batch_size=50,
        run_on="cpu",
        devices="2xK80",
        mem="12GB",
        flops="0.05x",
        sampler="random",
        trials=8,
        pruner="halving",
        prune_min_trials=2,
        storage=f"sqlite:///{tmp_path / 's.db'}",
        # at this scale most models stay at chance after one epoch, and a model that
        # did not learn is nobody's rival: seed 3 draws some that learn (0.22, 0.28)
        seed=3,
    )
    run_search(config)
    trials = load_existing_study(config.study_name(), config.storage).get_trials(deepcopy=False)
    assert len(trials) == 8
    pruner = HalvingPruner(3, 3, 2)
    earlier: list[FinishedTrial] = []
    for t in trials:
        curve = t.user_attrs["training"]["val_accuracy_per_epoch"]
        # the rule, replayed on the trials before it (one worker: they had ended)
        expected = pruner.decide(1, curve[0], earlier)
        if t.state == TrialState.PRUNED:
            assert expected is not None, t.number
            assert len(curve) == 1, t.number
            assert t.user_attrs["prune_reason"] == expected
        else:
            assert t.state == TrialState.COMPLETE, t.user_attrs.get("fail_reason")
            assert expected is None, t.number
            assert len(curve) == 3
        # a completed trial that did not learn is infeasible: nobody's rival
        earlier.append(FinishedTrial(tuple(curve), feasible=TrialRecord.of(t).feasible))
    states = {t.state for t in trials}
    assert states == {TrialState.PRUNED, TrialState.COMPLETE}  # the rung stopped some only


@pytest.mark.parametrize("name", NAMES)
def test_every_evaluator_class_declares_what_the_search_reads(name: str) -> None:
    """``measured`` and ``checkpoints`` are read from the registered class before an
    evaluator is made (the study's label, whether to keep trials' files): both are
    declared, as bools, and the class's ``name`` is its registry name."""
    factory = EVALUATORS.get(name)
    assert factory.name == name
    assert isinstance(factory.measured, bool)
    assert isinstance(factory.checkpoints, bool)
    assert factory.checkpoints <= factory.measured  # only real training has files to keep
