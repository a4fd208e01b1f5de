"""The study runner with the proxy evaluator and real SQLite storage."""

from __future__ import annotations

import math
import re
import signal
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import optuna
import pytest
from optuna.trial import TrialState

from nasmlcn.errors import DivergedError, SearchError
from nasmlcn.search import (
    CorrelationPruner,
    EpochCallback,
    EpochDecision,
    EpochReport,
    EvalRequest,
    Evaluation,
    FinishedTrial,
    ProxyEvaluator,
    SearchConfig,
    epoch_correlations,
    first_epoch_reaching,
    run_search,
)
from nasmlcn.search._run import loop as runner
from nasmlcn.search._run import trial as run_trial
from nasmlcn.study import load_existing_study, open_storage


def _config(tmp_path: Path, **kw: object) -> SearchConfig:
    base: dict[str, object] = {
        "evaluator": "proxy",
        "storage": f"sqlite:///{tmp_path / 'studies.db'}",
        "trials": 6,
        "epochs": 3,
        "devices": "4xK80",
        "mem": "12GB",
    }
    base.update(kw)
    return SearchConfig(**base)  # type: ignore[arg-type]


def test_sqlite_round_trip_attributes_and_resume(tmp_path: Path) -> None:
    config = _config(tmp_path, objectives=("accuracy", "latency", "memory"), sampler="nsga2")
    first = run_search(config)
    assert first.n_trials == 6
    assert len(first.run_trials) == 6
    assert first.best
    study = load_existing_study(first.study, config.storage)
    assert study.metric_names == ["accuracy", "latency_s", "memory_MiB"]
    info = study.user_attrs["nasmlcn"]
    assert info["evaluator"] == "proxy"
    assert info["accuracy_is_proxy"] is True
    assert info["config"]["devices"] == "4xK80"
    assert info["cost_model"] == "analytic"
    trial = study.trials[0]
    for key in ("lanes", "arch", "plan", "predicted", "training"):
        assert key in trial.user_attrs, key
    assert trial.user_attrs["plan"]["devices"][0]["name"] == "K80:0"
    assert "imbalance" in trial.user_attrs["predicted"]
    assert len(trial.user_attrs["training"]["val_accuracy_per_epoch"]) == 3
    assert trial.system_attrs["constraints:memory"] <= 0
    # re-running with a higher target continues the same study
    second = run_search(config.with_overrides(trials=9))
    assert second.study == first.study
    assert second.n_trials == 9
    assert len(second.run_trials) == 3
    params = [
        tuple(sorted(t.params.items()))
        for t in load_existing_study(first.study, config.storage).trials
    ]
    assert len(set(params)) == len(params)  # the reseeded sampler does not replay trials
    # re-running with the reached target does nothing more
    assert run_search(config.with_overrides(trials=9)).run_trials == []


def test_same_name_with_another_configuration_is_refused(tmp_path: Path) -> None:
    config = _config(tmp_path, study="mine", trials=2)
    run_search(config)
    with pytest.raises(
        SearchError, match=r"another configuration: devices '4xK80' \(now '8xK80'\)"
    ):
        run_search(config.with_overrides(devices="8xK80"))
    with pytest.raises(SearchError, match=r"epochs 3 \(now 5\)"):
        run_search(config.with_overrides(epochs=5))
    # options outside the identity may change
    assert run_search(config.with_overrides(sampler="random", trials=3)).n_trials == 3


def test_the_same_options_spelled_otherwise_continue_the_study(tmp_path: Path) -> None:
    first = run_search(_config(tmp_path, trials=2, flops="1x"))
    # devices by kind and memory one by one, sizes by bytes, multiples by value
    spelled = _config(tmp_path, trials=3, devices="2xk80,1xK80,1XK80", mem="12000MB", flops="1.0x")
    second = run_search(spelled)
    assert second.study == first.study
    assert second.n_trials == 3
    assert [s.study_name for s in optuna.get_all_study_summaries(spelled.storage)] == [first.study]
    # another meaning is another study
    third = run_search(_config(tmp_path, trials=1, devices="4xK80", mem="11GB"))
    assert third.study != first.study
    with pytest.raises(SearchError, match=r"devices '4xK80' \(now '2xK80,2xK80'\); mem"):
        run_search(
            _config(tmp_path, trials=4, study=first.study, devices="2xK80,2xK80", mem="11GB")
        )
    # a named study goes on under another spelling too
    assert run_search(_config(tmp_path, trials=4, study=first.study, devices="4xk80")).n_trials == 4
    # two studies of these options: the derived name cannot choose
    run_search(_config(tmp_path, trials=1, study="copy"))
    with pytest.raises(SearchError, match=r"'copy', 'mlcn-buckets-4xK80.* were all made with"):
        run_search(_config(tmp_path, trials=5, devices="4xk80"))


def test_an_edited_device_file_or_another_seed_is_refused(tmp_path: Path) -> None:
    devices = tmp_path / "devices.toml"
    entry = '[MYGPU]\nmemory = "12GiB"\npeak_flops = 4e12\nbandwidth = 2e11\nspeed = {}\n'
    devices.write_text(entry.format(1.0))
    config = _config(
        tmp_path, devices="2xMYGPU", device_file=str(devices), study="d", trials=2
    ).with_overrides(objectives=("accuracy", "latency"))
    run_search(config)
    devices.write_text(entry.format(50.0))  # every latency would be 50x smaller
    with pytest.raises(SearchError) as info:
        run_search(config.with_overrides(trials=4))
    assert str(info.value) == (
        "study 'd' was made with other devices: MYGPU:0 speed 1.0 (now 50.0); MYGPU:1 "
        f"speed 1.0 (now 50.0). Restore the device file {str(devices)!r} to continue it, "
        "or use another study"
    )
    devices.write_text(entry.format(1.0))
    with pytest.raises(SearchError, match=r"made with seed 0 \(now 7\): the seed draws"):
        run_search(config.with_overrides(trials=4, seed=7))
    assert len(load_existing_study("d", config.storage).trials) == 2  # nothing added
    assert run_search(config.with_overrides(trials=3)).n_trials == 3  # as it was: goes on


class _Flaky:
    """Fails in the ways training can, by trial number."""

    name = "flaky"
    measured = False
    checkpoints = False

    def __init__(self) -> None:
        self.proxy = ProxyEvaluator()

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        if job.trial == 1:
            raise DivergedError("loss became nan at epoch 1, batch 3")
        if job.trial == 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        if job.trial == 3:
            raise ValueError("something else broke")
        return self.proxy.evaluate(job, on_epoch)


def test_failures_are_recorded_and_the_search_goes_on(tmp_path: Path) -> None:
    config = _config(tmp_path, trials=6)
    result = run_search(config, evaluator=_Flaky())
    states = [t.state for t in result.run_trials]
    # failures do not count toward --trials: the study still reaches 6 finished
    # (COMPLETE or PRUNED: the default pruner may stop a weak one)
    assert states.count("FAIL") == 3
    assert states.count("COMPLETE") + states.count("PRUNED") == 6
    reasons: dict[int, str] = {}
    for t in result.failures:
        assert t.reason is not None, f"failed trial {t.number} has no reason"
        reasons[t.number] = t.reason
    assert reasons[1].startswith("diverged: loss became nan")
    assert reasons[2].startswith("out of memory")  # "CUDA out of memory" in a RuntimeError
    assert reasons[3] == "ValueError: something else broke"
    study = load_existing_study(result.study, config.storage)
    assert study.trials[1].user_attrs["fail_reason"] == reasons[1]
    assert "traceback" in study.trials[3].user_attrs


class _Interrupting(ProxyEvaluator):
    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        if job.trial == 2:
            on_epoch(EpochReport(1, 0.5, 0.1))
            raise KeyboardInterrupt
        return super().evaluate(job, on_epoch)


def test_ctrl_c_fails_the_running_trial_and_leaves_the_study_usable(tmp_path: Path) -> None:
    config = _config(tmp_path, trials=5)
    result = run_search(config, evaluator=_Interrupting())
    assert result.stopped == "interrupted"
    study = load_existing_study(result.study, config.storage)
    states = [t.state for t in study.trials]
    assert states == [TrialState.COMPLETE] * 2 + [TrialState.FAIL, TrialState.WAITING]
    assert "Ctrl-C" in study.trials[2].user_attrs["fail_reason"]
    assert study.trials[2].user_attrs["failure"] == "interrupted"
    queued = study.trials[3]  # the interrupted trial, queued again as it was
    assert queued.params == study.trials[2].params
    assert "fail_reason" not in queued.user_attrs
    resumed = run_search(config)  # continues to 5 finished trials, the queued one first
    assert [t.number for t in resumed.run_trials] == [3, 4, 5]
    assert all(t.state == "COMPLETE" for t in resumed.run_trials)
    assert resumed.n_trials == 6
    assert resumed.completed == 5


def test_ctrl_c_after_a_trial_was_told_stops_the_run_and_keeps_the_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C between Optuna's tell and the end of the trial's bookkeeping tried to
    fail the finished trial: UpdateFinishedTrialError, exit 1."""

    told = runner.retry_of

    def interrupted(*args: object) -> object:
        told(*args)  # type: ignore[arg-type]
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "retry_of", interrupted)
    config = _config(tmp_path, trials=3)
    result = run_search(config)
    assert result.stopped == "interrupted"
    study = load_existing_study(result.study, config.storage)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE]


class _SwallowedStop(ProxyEvaluator):
    """A SIGTERM whose handler runs inside a finalizer, as when the garbage collector
    runs SQLAlchemy's weakref callbacks: Python prints "Exception ignored" and the
    exception is lost."""

    raised: ClassVar[list[BaseException]] = []

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        if job.trial == 1:
            handler: Any = signal.getsignal(signal.SIGTERM)
            assert callable(handler)

            class Finalized:
                def __del__(self) -> None:
                    try:
                        handler(signal.SIGTERM, None)
                    except BaseException as stop:
                        _SwallowedStop.raised.append(stop)
                        raise

            Finalized()  # collected at once: its __del__ raises, and Python swallows it
        return super().evaluate(job, on_epoch)


def test_a_stop_a_finalizer_swallowed_still_stops_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker whose SIGTERM landed in a finalizer ran its study to the end, and
    Python's report of the lost exception ("Exception ignored in ...", a traceback)
    came under the run's one line."""
    swallowed: list[object] = []

    def hook(raised: Any) -> None:
        swallowed.append(raised.exc_type)

    monkeypatch.setattr(sys, "unraisablehook", hook)
    monkeypatch.setattr(_SwallowedStop, "raised", [])
    config = _config(tmp_path, trials=6)
    result = run_search(config, evaluator=_SwallowedStop())
    [stop] = _SwallowedStop.raised  # raised in the finalizer, and lost: SIGTERM's stop
    assert isinstance(stop, KeyboardInterrupt)
    assert str(stop) == "stopped by SIGTERM"
    assert swallowed == []  # not reported: the loop raised it again
    assert sys.unraisablehook is hook  # the caller's, back
    assert result.stopped == "terminated"
    study = load_existing_study(result.study, config.storage)
    # the trial it came in stops after its first epoch, queued again as a stop's is
    states = [t.state for t in study.trials]
    assert states == [TrialState.COMPLETE, TrialState.FAIL, TrialState.WAITING]
    assert study.trials[1].user_attrs["fail_reason"] == "stopped by SIGTERM"
    assert list(study.trials[1].intermediate_values) == [1]  # its first epoch, kept


def _sigterm_turned_into(error: Exception) -> None:
    """SIGTERM's handler runs, and a library turns its exception into ``error`` (as
    SQLAlchemy and Optuna did when it landed inside a commit: StorageInternalError)."""
    handler: Any = signal.getsignal(signal.SIGTERM)
    try:
        handler(signal.SIGTERM, None)
    except KeyboardInterrupt as stop:
        raise error from stop


@pytest.mark.parametrize("where", ["epoch report", "candidate record"])
def test_a_stop_a_library_turned_into_its_own_error_stops_and_queues_the_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A SIGTERM inside the commit of an epoch's report failed the trial as an error
    of its own (no retry queued) and the search ended; inside the commit of its
    record the search crashed. Either way it is the stop it was."""
    from nasmlcn.study import BufferedStorage

    converted = optuna.exceptions.StorageInternalError("An exception is raised during the commit")
    if where == "epoch report":
        report = BufferedStorage.set_trial_intermediate_value

        def reported(self: BufferedStorage, trial_id: int, step: int, value: float) -> None:
            report(self, trial_id, step, value)
            if self.get_trial(trial_id).number == 1:
                _sigterm_turned_into(converted)

        monkeypatch.setattr(BufferedStorage, "set_trial_intermediate_value", reported)
    else:
        write = run_trial.write_candidate

        def written(trial: optuna.Trial, *args: Any) -> None:
            write(trial, *args)
            if trial.number == 1:
                _sigterm_turned_into(converted)

        monkeypatch.setattr(run_trial, "write_candidate", written)
    config = _config(tmp_path, trials=4)
    result = run_search(config)
    assert result.stopped == "terminated"
    study = load_existing_study(result.study, config.storage)
    states = [t.state for t in study.trials]
    assert states == [TrialState.COMPLETE, TrialState.FAIL, TrialState.WAITING]
    stopped = study.trials[1]
    assert stopped.user_attrs["fail_reason"] == "stopped by SIGTERM"
    assert stopped.user_attrs["failure"] == "interrupted"
    assert "traceback" not in stopped.user_attrs
    assert study.trials[2].params == stopped.params  # queued again


def test_ctrl_c_inside_a_query_while_another_worker_commits_still_queues_the_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite, a Ctrl-C inside a query pinned its connection's snapshot; with
    another worker's commit meanwhile, writing the stopped trial down failed ("database
    is locked") and the trial stayed RUNNING."""
    from sqlalchemy.orm import context

    config = _config(tmp_path, trials=4)
    of = run_trial.Pruning.of
    query = context.QueryContext.__init__

    def interrupted(self: object, *args: object, **kwargs: object) -> None:
        monkeypatch.setattr(context.QueryContext, "__init__", query)
        other = optuna.load_study(study_name=study_name, storage=config.storage)
        other.tell(other.ask(), 0.5)  # another worker commits
        raise KeyboardInterrupt

    calls: list[object] = []

    def pruning_of(setup: Any, pruner: Any, study: Any, plan: Any) -> Any:
        calls.append(plan)
        if len(calls) == 2:  # trial 1: the query the pruner makes is cut short
            monkeypatch.setattr(context.QueryContext, "__init__", interrupted)
        return of(setup, pruner, study, plan)

    study_name = "cut"
    monkeypatch.setattr(run_trial.Pruning, "of", pruning_of)
    result = run_search(replace(config, study=study_name))
    assert result.stopped == "interrupted"
    study = load_existing_study(result.study, config.storage)
    assert not [t for t in study.trials if t.state == TrialState.RUNNING]
    assert study.trials[1].state == TrialState.FAIL
    assert study.trials[1].user_attrs["failure"] == "interrupted"


def test_a_retried_trial_does_not_shift_a_seeded_random_search(tmp_path: Path) -> None:
    """Stopped once and resumed, a seeded random search (the thesis's Algorithm 6)
    draws the models an uninterrupted run draws: the retried copy takes a number,
    not a draw (by the number, trial 4 got the draw of #4 instead of #3's, and the
    thesis Fig. 6.3 study that was stopped once held a model the others lacked)."""
    whole = _config(tmp_path, trials=5, sampler="random", space="mlcn-thesis", study="whole")
    run_search(whole)
    stopped = _config(tmp_path, trials=5, sampler="random", space="mlcn-thesis", study="stopped")
    run_search(stopped, evaluator=_Interrupting())
    run_search(stopped)

    def draws(name: str) -> list[object]:
        study = load_existing_study(name, whole.storage)
        return [t.params["seed"] for t in study.trials if t.state == TrialState.COMPLETE]

    assert len(draws("stopped")) == 5
    assert draws("stopped") == draws("whole")
    study = load_existing_study("stopped", whole.storage)
    assert [t.state for t in study.trials].count(TrialState.FAIL) == 1  # it was stopped


def test_correlation_gated_pruning_in_a_multi_objective_study(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        trials=16,
        epochs=4,
        objectives=("accuracy", "latency"),
        sampler="random",
        prune=True,
        prune_min_trials=4,
        prune_threshold=0.5,
    )
    result = run_search(config)
    assert result.pruned, "weak trials should be pruned once enough trials have finished"
    study = load_existing_study(result.study, config.storage)
    for outcome in result.pruned:
        trial = study.trials[outcome.number]
        assert trial.state == TrialState.PRUNED
        assert "percentile" in trial.user_attrs["prune_reason"]
        assert trial.user_attrs["seconds_saved"] >= 0
        assert len(trial.user_attrs["training"]["val_accuracy_per_epoch"]) < 4
    first_pruned = min(t.number for t in result.pruned)
    finished_before = [t for t in study.trials[:first_pruned] if t.state == TrialState.COMPLETE]
    assert len(finished_before) >= 4


def test_pruner_rules_on_known_curves() -> None:
    curves = [FinishedTrial((0.5 + 0.01 * i, 0.6 + 0.01 * i, 0.7 + 0.01 * i)) for i in range(6)]
    pruner = CorrelationPruner(threshold=0.9, percentile=50, min_trials=5)
    assert pruner.decide(1, 0.50, curves[:4]) is None  # not enough finished trials
    assert pruner.decide(1, 0.50, curves) is not None  # below the median of 0.5..0.55
    assert pruner.decide(1, 0.54, curves) is None  # above it
    assert pruner.decide(3, 0.0, curves) is None  # the last epoch is never pruned
    shuffled = [FinishedTrial((0.5 + 0.01 * ((i * 5) % 6), 0.6, 0.7 + 0.01 * i)) for i in range(6)]
    assert pruner.decide(1, 0.0, shuffled) is None  # epoch 1 does not rank like the last


def test_the_pruning_gate_per_epoch() -> None:
    curves = [[0.5 + 0.01 * i, 0.6 + 0.01 * i, 0.7 + 0.01 * i] for i in range(6)]
    pruner = CorrelationPruner(threshold=0.9, percentile=50, min_trials=5)
    rows = epoch_correlations(curves)
    assert [pruner.allows(e, rows) for e in (1, 2, 3)] == [True, True, False]  # not the last
    assert not pruner.allows(1, epoch_correlations(curves[:4]))  # too few trials
    shuffled = [[0.5 + 0.01 * ((i * 5) % 6), 0.6, 0.7 + 0.01 * i] for i in range(6)]
    assert not pruner.allows(1, epoch_correlations(shuffled))  # rho below the threshold


def test_epoch_correlations_on_known_data() -> None:
    curves = [[0.1, 0.3, 0.5], [0.2, 0.2, 0.6], [0.3, 0.1, 0.7], [0.4, 0.4, 0.8]]
    rows = epoch_correlations(curves)
    assert [r.epoch for r in rows] == [1, 2, 3]
    assert rows[0].trials == 4
    assert rows[0].pearson == pytest.approx(1.0)
    assert rows[0].spearman == pytest.approx(1.0)
    assert rows[1].spearman == pytest.approx(0.2)  # ranks 3,2,1,4 vs 1,2,3,4
    assert rows[2].pearson == pytest.approx(1.0)
    assert first_epoch_reaching(rows, 0.9) == 1
    assert math.isnan(epoch_correlations([[0.5, 0.5], [0.5, 0.5]])[0].pearson)


def _best_after(sampler: str, seed: int, tmp_path: Path, trials: int) -> float:
    config = _config(
        tmp_path, sampler=sampler, seed=seed, trials=trials, epochs=1, study=f"{sampler}-{seed}"
    )
    run_search(config)
    study = load_existing_study(f"{sampler}-{seed}", config.storage)
    return max(t.value for t in study.trials if t.value is not None)


BEAT_TRIALS = 60
BEAT_SEEDS = range(5)
# NSGA-II is not in this test: on the fill-level buckets space it does not beat
# random search on the proxy (mean best-of-60 0.5968 vs 0.5994 over 5 seeds; the
# accuracy+latency hypervolume after 150 trials 0.01673 vs 0.01688). Its first
# generation (20 trials) is random and its uniform crossover ignores order;
# benchmarks/search_quality.py measures it on real training.


@pytest.fixture(scope="module")
def random_best(tmp_path_factory: pytest.TempPathFactory) -> float:
    """Random search's mean best-of-60 over the seeds (run once for every sampler)."""
    folder = tmp_path_factory.mktemp("random")
    return statistics.fmean(_best_after("random", s, folder, BEAT_TRIALS) for s in BEAT_SEEDS)


@pytest.mark.slow  # 68 s with its fixture; benchmarks/search_quality.py measures the same at scale
@pytest.mark.parametrize("sampler", ["tpe"])
def test_model_based_samplers_beat_random_on_the_proxy(
    sampler: str, tmp_path: Path, random_best: float
) -> None:
    learned = statistics.fmean(_best_after(sampler, s, tmp_path, BEAT_TRIALS) for s in BEAT_SEEDS)
    assert learned > random_best


def test_only_predicted_objectives_need_no_training(tmp_path: Path) -> None:
    class _Never:
        name = "never"
        measured = False
        checkpoints = False

        def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
            raise AssertionError("no objective needs training")

    config = _config(tmp_path, objectives=("latency", "params"), trials=3)
    result = run_search(config, evaluator=_Never())
    assert all(t.state == "COMPLETE" for t in result.run_trials)
    assert (
        optuna.study.StudyDirection.MINIMIZE
        in load_existing_study(result.study, config.storage).directions
    )


def test_samplers_do_not_read_the_dashboards_notes(tmp_path: Path) -> None:
    from nasmlcn.dashboard import DashboardObserver
    from nasmlcn.study import open_storage

    config = _config(tmp_path, sampler="nsga2", trials=4, study="notes")
    run_search(config, observers=[DashboardObserver()])  # as the CLI does
    storage = open_storage(config.storage)
    study_id = storage.get_study_id_from_name("notes")
    everything = storage.get_study_system_attrs(study_id)
    assert any(k.startswith("dashboard:") for k in everything)  # the notes are there
    storage.hide_dashboard = True  # as the runner's samplers see the study
    seen = storage.get_study_system_attrs(study_id)
    assert seen
    assert not any(k.startswith("dashboard:") for k in seen)
    assert seen == {k: v for k, v in everything.items() if not k.startswith("dashboard:")}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"data_dir": "/no/such/dir", "evaluator": "train"}, "'/no/such/dir' does not exist"),
        ({"data_dir": "/no/such/dir"}, "'/no/such/dir' does not exist"),  # proxy: still wrong
        ({"run_on": "bogus"}, "run_on 'bogus': unknown device 'bogus'"),
        ({"run_on": "cuda:99"}, "run_on 'cuda:99': device 'cuda:99'"),
        ({"run_on": "auto,cuda:0"}, "'auto' cannot be combined with device names"),
        ({"run_on": " , "}, "expected auto, cpu, cuda or cuda:0,cuda:1"),
    ],
)
def test_bad_input_is_refused_before_the_study_exists(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    from nasmlcn.errors import NasmlcnError

    config = _config(tmp_path, dataset="synthetic", trials=1, **options)
    with pytest.raises(NasmlcnError, match=re.escape(message)):
        run_search(config)
    assert not (tmp_path / "studies.db").exists()
    # a storage that exists gains no study either
    run_search(_config(tmp_path, trials=1, study="kept"))
    with pytest.raises(NasmlcnError, match=re.escape(message)):
        run_search(config.with_overrides(study="refused"))
    assert optuna.get_all_study_names(config.storage) == ["kept"]


def test_a_failing_sampler_fails_its_trial_instead_of_leaving_it_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(tmp_path, sampler="random", trials=4, study="s")
    run_search(config.with_overrides(trials=2))

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("the sampler broke")

    monkeypatch.setattr(optuna.samplers.RandomSampler, "sample_independent", broken)
    with pytest.raises(SearchError, match=r"trial 2 of study 's': sampling failed: RuntimeError"):
        run_search(config)
    study = load_existing_study("s", config.storage)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2 + [TrialState.FAIL]
    assert study.trials[2].user_attrs["fail_reason"].startswith("sampling failed: RuntimeError")


def _space_file(tmp_path: Path, **ranges: str) -> Path:
    from nasmlcn.search.spaces import load_space

    text = Path(load_space("mlcn-homogeneous").source).read_text()
    for key, value in ranges.items():
        text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
    path = tmp_path / "space.toml"
    path.write_text(text)
    return path


def test_an_edited_space_file_is_refused_naming_what_changed(tmp_path: Path) -> None:
    space = _space_file(tmp_path)
    config = _config(tmp_path, space=str(space), trials=2, study="x")
    run_search(config)
    _space_file(tmp_path, width="[1, 8]", depth="[2, 5]", lane_types='["mlcn1"]')
    with pytest.raises(SearchError) as info:
        run_search(config.with_overrides(trials=4))
    assert str(info.value).startswith(
        "study 'x' was made with another search space: depth min 1 (now 2), "
        "lane_types ['mlcn1', 'mlcn2'] (now ['mlcn1']), width max 5 (now 8)."
    )
    study = load_existing_study("x", config.storage)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    _space_file(tmp_path)  # the file as it was: the study continues
    assert run_search(config.with_overrides(trials=3)).n_trials == 3


def test_a_study_made_before_the_space_content_was_stored_compares_its_params(
    tmp_path: Path,
) -> None:
    space = _space_file(tmp_path)
    config = _config(tmp_path, space=str(space), trials=2, study="old")
    run_search(config)
    study = optuna.load_study(study_name="old", storage=config.storage)
    info = study.user_attrs["nasmlcn"]
    del info["space"]["content"]  # as a study made by an earlier nasmlcn
    study.set_user_attr("nasmlcn", info)
    assert run_search(config.with_overrides(trials=3)).n_trials == 3  # same space: continues
    _space_file(tmp_path, width="[1, 8]")
    with pytest.raises(SearchError) as info:
        run_search(config.with_overrides(trials=4))
    assert str(info.value).startswith(
        "study 'old' was made with another search space: params.width "
        "IntDistribution(high=5, log=False, low=1, step=1) "
        "(now IntDistribution(high=8, log=False, low=1, step=1))."
    )


def test_pruning_is_on_by_default_and_outside_the_study_name() -> None:
    assert SearchConfig().prune is True
    # a study made before pruning was the default keeps its derived name
    assert SearchConfig(prune=False).study_name() == SearchConfig().study_name()


def _states(result_study: str, config: SearchConfig) -> list[TrialState]:
    return [t.state for t in load_existing_study(result_study, config.storage).trials]


def test_the_default_search_prunes_after_its_first_trials_run_in_full(tmp_path: Path) -> None:
    config = _config(tmp_path, trials=12, epochs=4, sampler="random")
    result = run_search(config)
    states = _states(result.study, config)
    assert len(states) == 12, states
    assert TrialState.PRUNED in states, states
    # trial k starts with at most k completed trials: the first prune_min_trials
    # trials always run in full, so the correlation is measured before any prune
    assert states[: config.prune_min_trials] == [TrialState.COMPLETE] * config.prune_min_trials
    for k, state in enumerate(states):
        if state == TrialState.PRUNED:
            assert states[:k].count(TrialState.COMPLETE) >= config.prune_min_trials, states
    study = load_existing_study(result.study, config.storage)
    complete = [t for t in study.trials if t.state == TrialState.COMPLETE]
    curves = [t.user_attrs["training"]["val_accuracy_per_epoch"] for t in complete]
    expected = epoch_correlations(curves)
    assert [(r["epoch"], r["trials"]) for r in result.correlation] == [
        (c.epoch, c.trials) for c in expected
    ]
    assert [r["spearman"] for r in result.correlation] == [c.spearman for c in expected]
    # an epoch prunes where the gate is open: rho >= threshold, never the last epoch
    assert [r["prunes"] for r in result.correlation] == [
        c.epoch < 4 and c.spearman >= config.prune_threshold for c in expected
    ]
    data = result.to_dict()
    assert data["correlation"] == result.correlation
    assert data["seconds_saved_by_pruning"] == pytest.approx(
        sum(t.user_attrs["seconds_saved"] for t in study.trials if t.state == TrialState.PRUNED)
    )


def test_no_prune_runs_every_trial_in_full_and_the_study_continues_pruned(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, trials=12, epochs=4, sampler="random", prune=False)
    result = run_search(config)
    study = load_existing_study(result.study, config.storage)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 12
    assert all(len(t.user_attrs["training"]["val_accuracy_per_epoch"]) == 4 for t in study.trials)
    assert result.correlation
    assert not any(r["prunes"] for r in result.correlation)
    assert result.to_dict()["seconds_saved_by_pruning"] == 0
    # the same search under the default (pruning) continues that study, not a new one
    continued = run_search(_config(tmp_path, trials=20, epochs=4, sampler="random"))
    assert continued.study == result.study
    counts = continued.trial_counts  # 20 models; a repeat of one comes on top
    assert counts["results"] - counts["repeats"] == 20
    assert continued.n_trials == 20 + counts["repeats"]
    assert any(r["prunes"] for r in continued.correlation)


def test_continuing_an_old_study_hides_the_password_it_stored(tmp_path: Path) -> None:
    config = _config(tmp_path, study="old", trials=1)
    run_search(config)
    # A study made before passwords were hidden kept the URL as given.
    study = optuna.load_study(study_name="old", storage=config.storage)
    info = study.user_attrs["nasmlcn"]
    raw = "postgresql://nas:pw-old-study-77@db.example/nas"
    study.set_user_attr("nasmlcn", {**info, "config": {**info["config"], "storage": raw}})
    run_search(config.with_overrides(trials=2))
    stored = load_existing_study("old", config.storage).user_attrs["nasmlcn"]
    assert stored["config"]["storage"] == "postgresql://nas:***@db.example/nas"
    assert stored["identity"] == info["identity"]
    assert stored["space"] == info["space"]


def test_the_search_package_never_imports_the_dashboard(tmp_path: Path) -> None:
    """The dashboard observes a search (the CLI attaches it); nasmlcn.search itself,
    running a whole search, imports nothing of nasmlcn.dashboard."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from nasmlcn.search import SearchConfig, run_search\n"
        f"run_search(SearchConfig(evaluator='proxy', trials=2, epochs=1, "
        f"storage='sqlite:///{tmp_path / 'alone.db'}'))\n"
        "assert 'nasmlcn.dashboard' not in sys.modules, sorted(sys.modules)\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "ok", result.stderr[-2000:]


def test_a_failing_observer_never_stops_the_search(tmp_path: Path) -> None:
    from nasmlcn.search import SearchObserver

    class Broken(SearchObserver):
        def on_trial_end(self, outcome: object) -> None:
            raise RuntimeError("the display broke")

    result = run_search(_config(tmp_path, trials=3), observers=[Broken()])
    assert [t.state for t in result.run_trials] == ["COMPLETE"] * 3


def test_without_plotly_the_dashboard_figures_are_one_warning_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # what a hand-made environment (the GPU machine's, say) without plotly does
    import importlib.util

    from nasmlcn.dashboard import DashboardObserver

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "plotly" else find_spec(name, *a),
    )
    config = _config(tmp_path, trials=2, study="no-plotly")
    with caplog.at_level("WARNING"):
        result = run_search(config, observers=[DashboardObserver()])
    assert result.completed == 2
    warned = [r for r in caplog.records if r.levelname == "WARNING"]
    assert [r.getMessage() for r in warned] == [
        "plotly is not installed: the study's dashboard figures were not written"
    ]
    assert all(r.exc_info is None for r in warned)


class _Deaf(ProxyEvaluator):
    """Relays every epoch but drops the trial's decision (a callback of the older
    shape, which returns None): it trains every epoch whatever was decided."""

    def __init__(self) -> None:
        super().__init__()
        self.epochs_run = 0

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        def relay(report: EpochReport) -> EpochDecision:
            self.epochs_run += 1
            on_epoch(report)
            return EpochDecision()

        return super().evaluate(job, relay)


def test_a_trial_ends_as_decided_even_where_the_evaluator_trains_on(tmp_path: Path) -> None:
    """The trial keeps the decision it made after an epoch: an evaluator that goes on
    training regardless does not turn a pruned trial into a completed one."""
    deaf = _Deaf()
    result = run_search(_config(tmp_path, trials=2, trial_timeout=1e-9), evaluator=deaf)
    assert [t.state for t in result.run_trials] == ["PRUNED", "PRUNED"]
    assert all("--trial-timeout" in (t.reason or "") for t in result.run_trials)
    assert deaf.epochs_run == 2 * 3  # it trained on; the trial still ended after epoch 1
    study = load_existing_study(result.study, _config(tmp_path).storage)
    assert [len(t.intermediate_values) for t in study.trials] == [1, 1]


def test_the_search_time_budget_is_not_taken_for_ctrl_c() -> None:

    assert not issubclass(run_trial.SearchTimeout, KeyboardInterrupt)


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:"])
def test_an_in_memory_sqlite_storage_is_refused(tmp_path: Path, url: str) -> None:
    # its study would be gone when the run ends, and each worker would keep its own
    for workers in (1, 2):
        with pytest.raises(SearchError, match="is an in-memory SQLite database"):
            run_search(_config(tmp_path, storage=url, trials=1), workers=workers)
    assert list(tmp_path.iterdir()) == []


def test_a_stop_asked_for_requeues_the_trial_however_often_it_comes() -> None:
    """--timeout, Ctrl-C and SIGTERM are no crashes: a trial stopped by each of five
    scheduler jobs in turn is queued again every time (it was dropped after
    --max-retries 3, checkpoint and all)."""

    study = optuna.create_study()
    study.enqueue_trial({"x": 1.0})
    for job in range(5):
        trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 2)})
        outcome = runner._stopped(
            study, trial, job > 0, run_trial.SearchTimeout("the search's --timeout 5 s")
        )
        assert outcome.queued_again_as is not None, job
    states = [t.state for t in study.trials]
    assert states == [TrialState.FAIL] * 5 + [TrialState.WAITING]


def test_another_worker_never_sees_a_stopped_trial_failed_but_not_yet_queued_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's claim reads the study under its lock. Seeing the stopped trial
    FAIL without its WAITING copy, it counted one trial fewer claimed and started
    one more than --trials (the copy ran as well)."""
    import threading
    import time

    url = f"sqlite:///{tmp_path / 's.db'}"
    mine, other = open_storage(url, heartbeat=False), open_storage(url, heartbeat=False)
    study = optuna.create_study(storage=mine, study_name="s")
    trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 2)})
    told = threading.Event()
    queue_again = runner.retry

    def slow_retry(*args: Any) -> int | None:
        told.set()  # the trial is FAIL in the database now
        time.sleep(1.0)
        return queue_again(*args)

    monkeypatch.setattr(runner, "retry", slow_retry)
    stopping = threading.Thread(
        target=runner._stopped, args=(study, trial, False, run_trial.SearchTimeout("--timeout 5 s"))
    )
    stopping.start()
    assert told.wait(30)
    with other.lock.hold():  # as another worker's claim takes it
        seen = [t.state for t in optuna.load_study(study_name="s", storage=other).trials]
    stopping.join(30)
    assert seen == [TrialState.FAIL, TrialState.WAITING]


def test_a_trial_another_worker_failed_meanwhile_is_left_to_its_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another worker took this trial for dead (no heartbeat for --grace: a paused
    machine, a worker with a shorter --grace), failed it and queued it again while
    it trained. This worker tells nothing and goes on, and the retry resumes from
    the checkpoint the trial recorded. The worker died of Optuna's
    UpdateFinishedTrialError, after deleting that checkpoint."""
    from nasmlcn.study import TrialFiles, TrialRecord, open_storage, retry

    url = f"sqlite:///{tmp_path / 's.db'}"
    saved = TrialFiles.saved
    queued: list[int | None] = []

    def saved_then_taken_over(files: TrialFiles, epoch: int) -> None:
        saved(files, epoch)
        if files.trial.number == 0 and epoch == 1 and not queued:  # the other worker
            other = open_storage(url, heartbeat=False)
            study = optuna.load_study(study_name="s", storage=other)
            trial_id = files.trial._trial_id
            reason = "its worker stopped: no heartbeat for over 1 s"
            other.set_trial_user_attr(trial_id, "fail_reason", reason)
            assert other.set_trial_state_values(trial_id, TrialState.FAIL)
            queued.append(retry(study, other.get_trial(trial_id), 3))

    monkeypatch.setattr(TrialFiles, "saved", saved_then_taken_over)
    config = SearchConfig(
        devices="1xK80", mem="12GB", flops="0.05x", dataset="synthetic", epochs=3,
        batch_size=10, train_limit=300, val_limit=50, sampler="random", trials=2,
        storage=url, study="s", run_on="cpu", seed=3, artifacts=str(tmp_path / "art"),
    )  # fmt: skip
    result = run_search(config)
    assert queued == [1]
    taken = result.run_trials[0]
    assert (taken.number, taken.state, taken.queued_again_as) == (0, "FAIL", 1)
    assert taken.reason == (
        "its worker stopped: no heartbeat for over 1 s; "
        "another worker failed it while this one trained it"
    )
    records = [TrialRecord.of(t) for t in load_existing_study("s", url).trials]
    assert [r.state for r in records] == ["FAIL", "COMPLETE", "COMPLETE"]
    assert records[1].last_failed == 0
    assert records[1].resumed_from_epoch == 1  # from the checkpoint trial 0 recorded
