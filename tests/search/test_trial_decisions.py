"""The trial's decisions, in this process (tests/search/_harness.py): what a failure,
Ctrl-C, the pruner, the trial's and the search's time limits and a repeated model do to
a trial and to the study, on scripted training, with no worker process, no real
training and no sleeping. What needs real processes (a killed worker, signals, a pool)
stays in test_workers.py and test_pool_signals.py."""

from __future__ import annotations

import os
import signal
import time

import pytest
from optuna.trial import TrialState

from nasmlcn.errors import DivergedError
from nasmlcn.search import SearchObserver, TrialOutcome
from tests.search._harness import Harness, Scripted
from tests.search._harness import harness as harness  # the fixture

RISING = [0.5, 0.6, 0.7]


def _rising(k: int) -> Scripted:
    """Curves that rank trials alike at every epoch (rho 1): the k-th is better."""
    return Scripted(curve=[v + 0.05 * k for v in RISING])


def test_a_failure_fails_its_trial_once_with_the_reason_and_the_search_goes_on(
    harness: Harness,
) -> None:
    result = harness.run({1: Scripted(raises=DivergedError("loss became nan"), at_epoch=1)})
    states = [t.state for t in harness.trials()]
    # a failure does not count toward --trials, and a training failure is not retried
    complete, fail = TrialState.COMPLETE, TrialState.FAIL
    assert states == [complete, fail, complete, complete]
    assert [r.trial for r in harness.evaluator.requests] == [0, 1, 2, 3]
    (failed,) = result.failures
    assert failed.number == 1
    assert failed.reason is not None
    assert failed.reason.startswith("diverged: loss became nan")
    assert harness.trials()[1].user_attrs["fail_reason"] == failed.reason


def test_ctrl_c_mid_trial_fails_it_queues_it_again_and_the_next_run_trains_it_first(
    harness: Harness,
) -> None:
    first = harness.run({1: Scripted(raises=KeyboardInterrupt(), at_epoch=1)})
    assert first.stopped == "interrupted"
    trials = harness.trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.WAITING]
    assert trials[1].user_attrs["failure"] == "interrupted"
    assert trials[2].params == trials[1].params
    harness.run({})
    assert [t.state for t in harness.trials()] == [
        TrialState.COMPLETE,
        TrialState.FAIL,
        TrialState.COMPLETE,
        TrialState.COMPLETE,
    ]
    # the queued trial trained its model again, in full: the same spec, the same seed
    requests = harness.evaluator.requests
    assert requests[-2].spec == requests[1].spec
    assert requests[-2].training_seed == requests[1].training_seed


def test_the_pruner_stops_a_weak_trial_at_the_first_epoch_and_never_a_strong_one(
    harness: Harness,
) -> None:
    script = {k: _rising(k) for k in range(5)}
    script[5] = Scripted(curve=[0.1, 0.2, 0.3])  # below every finished trial
    script[6] = Scripted(curve=[0.9, 0.95, 0.99])  # above them
    result = harness.run(script, trials=7, prune=True)
    trials = harness.trials()
    assert [t.state for t in trials[:5]] == [TrialState.COMPLETE] * 5  # prune_min_trials
    assert trials[5].state == TrialState.PRUNED
    assert trials[5].user_attrs["training"]["val_accuracy_per_epoch"] == [0.1]
    assert trials[6].state == TrialState.COMPLETE
    assert trials[6].values == [0.99]
    assert [r["prunes"] for r in result.correlation] == [True, True, False]


def test_no_prune_lets_the_weak_trial_train_in_full(harness: Harness) -> None:
    script = {k: _rising(k) for k in range(5)}
    script[5] = Scripted(curve=[0.1, 0.2, 0.3])
    harness.run(script, trials=6, prune=False)
    assert harness.trials()[5].state == TrialState.COMPLETE
    assert harness.trials()[5].values == [0.3]


def test_the_trial_timeout_prunes_at_an_epoch_boundary_keeping_its_epochs(
    harness: Harness,
) -> None:
    # 60 s epochs: epoch 1 ends at 60 s (under the limit of 100 s), epoch 2 at 120 s
    harness.run(lambda request: Scripted(seconds=60), trials=2, trial_timeout=100)
    for trial in harness.trials():
        assert trial.state == TrialState.PRUNED
        assert trial.user_attrs["prune_reason"].startswith(
            "--trial-timeout 100 s: stopped after epoch 2 of 3"
        )
        assert len(trial.user_attrs["training"]["val_accuracy_per_epoch"]) == 2


def test_the_search_timeout_stops_the_running_trial_and_queues_it(harness: Harness) -> None:
    # the set-up takes real time only (well under 1000 s), each epoch 100 s: the limit
    # falls at the end of the first trial's 10th epoch
    result = harness.run(lambda request: Scripted(seconds=100), epochs=40, timeout=1000.0)
    assert result.stopped == "timeout"
    assert [t.state for t in result.run_trials] == ["FAIL"]
    assert (
        result.run_trials[0].reason == "stopped by the search's --timeout 1000 s (after epoch 10)"
    )
    trials = harness.trials()
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.WAITING]
    assert trials[0].user_attrs["failure"] == "interrupted"


@pytest.mark.parametrize("count_repeats", [True, False])
def test_a_model_proposed_again_is_trained_once(harness: Harness, count_repeats: bool) -> None:
    # the thesis's table: a handful of fixed models, so twelve random draws repeat some
    harness.run(
        trials=12,
        epochs=2,
        devices="1xK80",
        sampler="random",
        space="mlcn-table",
        count_repeats=count_repeats,
    )
    records = harness.records()
    trained = [r for r in records if r.repeat_of is None]
    specs = [request.spec for request in harness.evaluator.requests]
    assert len(specs) == len(set(specs)) == len(trained)  # each model trained once
    for repeat in records:
        if repeat.repeat_of is not None:
            assert repeat.values == records[repeat.repeat_of].values


def test_a_stop_a_library_turns_into_its_error_inside_an_observer_stops_the_run(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """A SIGTERM inside an observer's commit came out as SQLAlchemy's AssertionError:
    the observer's guard logged it as a failing observer, with its traceback, before
    the stop was raised again."""

    class Committing(SearchObserver):
        def on_trial_end(self, outcome: TrialOutcome) -> None:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # the handler raises here
            except BaseException as stop:
                raise AssertionError("the library's own error") from stop

    result = harness.run(observers=[Committing()], trials=3)
    assert result.stopped == "terminated"
    assert [t.state for t in harness.trials()] == [TrialState.COMPLETE]
    assert not [r for r in caplog.records if "failed in" in r.getMessage()]
