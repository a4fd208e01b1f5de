"""Retries in the live display and the summary's counts.

A search stopped mid-trial (Ctrl-C from inside the evaluator, as
tests/search/test_trial_files.py does) leaves a FAIL and its WAITING copy; a
re-run takes the copy. The live display (a rich console off a terminal prints
its lines) must say which trial was queued again as which, must not move the
trials bar for a failed trial, and the summary must count results, not trials.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from nasmlcn.cli._search_progress import SearchProgress
from nasmlcn.search import (
    EpochCallback,
    EvalRequest,
    Evaluation,
    ProxyEvaluator,
    SearchConfig,
    run_search,
)
from tests.conftest import run_cli


class _StopOn(ProxyEvaluator):
    """The proxy, with Ctrl-C during the trial numbered ``number``."""

    def __init__(self, number: int) -> None:
        super().__init__()
        self.number = number

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        if job.trial == self.number:
            raise KeyboardInterrupt
        return super().evaluate(job, on_epoch)


class _TimeoutOn(_StopOn):
    """The proxy, with the search's --timeout stopping the trial ``number`` mid-epoch."""

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        from nasmlcn.training import TrainingStopped

        if job.trial == self.number:
            raise TrainingStopped("stopped by the search's --timeout 60 s (in epoch 1, batch 3)")
        return super().evaluate(job, on_epoch)


class _FailOn(ProxyEvaluator):
    """The proxy, failing (an error in training, not retried) on trial ``number``."""

    def __init__(self, number: int) -> None:
        super().__init__()
        self.number = number

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        if job.trial == self.number:
            raise RuntimeError("CUDA out of memory (simulated)")
        return super().evaluate(job, on_epoch)


def _config(tmp_path: Path, trials: int = 4) -> SearchConfig:
    return SearchConfig(
        evaluator="proxy",
        devices="2xK80",
        mem="12GB",
        trials=trials,
        epochs=2,
        storage=f"sqlite:///{tmp_path / 's.db'}",
        study="s",
        seed=3,
    )


def _display(config: SearchConfig, evaluator: ProxyEvaluator | None = None) -> tuple[str, int]:
    """Runs the search under the CLI's live display: its text, and where the
    trials bar ended."""
    text = io.StringIO()
    console = Console(file=text, force_terminal=False, width=200)
    with SearchProgress(console) as progress:
        run_search(config, [progress], evaluator=evaluator)
        bar = progress.progress.tasks[0]
        assert bar.description == "trials"
        return text.getvalue(), int(bar.completed)


def test_an_interrupted_trial_is_shown_queued_again_and_its_retry_as_such(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    first, bar = _display(config, _StopOn(1))
    # trial 0 completed; trial 1 was stopped and queued again as trial 2
    assert "trial 1: FAIL — interrupted by the user (Ctrl-C); queued again as #2" in first
    assert "not counted toward --trials" in first
    assert bar == 1  # the failed trial did not move the bar

    second, bar = _display(config)
    assert "queued again by an earlier run, taken first: #2 (retry of #1)" in second
    assert "trial 2 (retry of #1): accuracy" in second
    assert bar == config.trials

    # the summary a user reads: results, and the failure named apart
    again = run_cli(
        "search", "--evaluator", "proxy", "--devices", "2xK80", "--mem", "12GB",
        "--trials", str(config.trials), "--epochs", "2", "--seed", "3",
        "--storage", config.storage, "--study", "s",
        env={"COLUMNS": "250"},
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    title = next(line for line in again.stdout.splitlines() if "best trials of s" in line)
    # 5 trials in the study, of which 4 results: "5 trials" would count the FAIL
    assert "(4 models: 4 complete, 0 pruned; 1 failed and queued again (not counted)" in title
    assert "5 trials" not in title


def test_a_failed_trial_does_not_move_the_bar_and_the_json_counts_it_apart(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, trials=3)
    text, bar = _display(config, _FailOn(1))
    assert "trial 1: FAIL — " in text
    assert "CUDA out of memory (simulated); not retried (not counted toward --trials)" in text
    assert bar == 3  # three results; the failure took no place among them
    result = run_search(config)  # nothing left to do: the counts as the summary reads them
    assert result.to_dict()["trial_counts"] == {
        "results": 3,
        "models": 3,
        "transferred": 0,
        "repeats": 0,
        "pruned_repeats": 0,
        "complete": 3,
        "pruned": 0,
        "failed": 1,
        "retried": 0,
        "waiting": 0,
        "running": 0,
    }
    assert result.n_trials == 4  # unchanged meaning: every trial in the study


def test_best_so_far_counts_the_trials_of_earlier_runs(tmp_path: Path) -> None:
    """A continued study's "best so far" is the study's: a trial below a trial of an
    earlier run is not marked (it was, as the first result of each run)."""
    storage = ["--storage", f"sqlite:///{tmp_path / 's.db'}", "--study", "s"]
    first = run_cli("search", "--evaluator", "proxy", "--trials", "1", *storage)
    assert first.returncode == 0, first.stderr
    again = run_cli("search", "--evaluator", "proxy", "--trials", "5", *storage)
    assert again.returncode == 0, again.stderr

    def results(stdout: str) -> list[tuple[float, bool]]:
        lines = [line for line in stdout.splitlines() if line.startswith("trial ")]
        return [
            (float(line.split("accuracy ")[1].split()[0]), "best so far" in line) for line in lines
        ]

    seen = [value for value, _ in results(first.stderr)]
    later = results(again.stderr)
    assert len(seen) == 1
    assert len(later) == 4
    assert any(value < seen[0] for value, _ in later)  # the case the old display got wrong
    for value, marked in later:
        assert marked == (value > max(seen)), (value, seen, again.stderr)
        seen.append(value)


def test_a_multi_objective_search_marks_the_trials_that_join_the_front(tmp_path: Path) -> None:
    """Several objectives: a trial is news when it joins the Pareto front, not when its
    first objective is the best (a cheaper, less accurate trial may join it)."""
    import json

    storage = ["--storage", f"sqlite:///{tmp_path / 's.db'}", "--study", "m"]
    shown = run_cli(
        *("search", "--evaluator", "proxy", "--objectives", "accuracy,latency"),
        *("--sampler", "nsga2", "--trials", "12", "--seed", "1", *storage),
    )
    assert shown.returncode == 0, shown.stderr
    lines = [line for line in shown.stderr.splitlines() if line.startswith("trial ")]
    assert "best so far" not in shown.stderr
    marked = {
        int(line.split()[1].rstrip(":")) for line in lines if "joins the Pareto front" in line
    }
    best = json.loads(run_cli("best", *storage, "--json").stdout)
    front = {row["number"] for row in best["best"]}
    assert front
    assert front <= marked  # every trial of the final front joined it when it ended
    assert len(marked) < len(lines)  # and not every trial did


def test_a_trial_the_search_timeout_stopped_is_said_queued_again_once(tmp_path: Path) -> None:
    text, _ = _display(_config(tmp_path), _TimeoutOn(1))
    (line,) = (row for row in text.splitlines() if row.startswith("trial 1:"))
    assert line == (
        "trial 1: FAIL — stopped by the search's --timeout 60 s (in epoch 1, batch 3); "
        "queued again as #2 (not counted toward --trials)"
    )


def test_the_summary_names_the_trial_an_interrupt_queued_again(tmp_path: Path) -> None:
    from nasmlcn.cli._console import out
    from nasmlcn.cli._search_report import print_result

    config = _config(tmp_path)
    result = run_search(config, evaluator=_StopOn(1))
    with out.capture() as captured:
        print_result(result, config)
    text = " ".join(captured.get().split())  # unwrapped
    assert (
        "interrupted: trial #1 marked FAIL and queued again; re-run the same command to "
        "continue (it resumes it)"
    ) in text


class _RivalFinishesDuring(ProxyEvaluator):
    """The proxy; while trial ``number`` trains, another process finishes a trial of
    the same study with an accuracy no proxy model reaches."""

    def __init__(self, number: int, storage: str) -> None:
        super().__init__()
        self.number, self.storage = number, storage

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        if job.trial == self.number:
            import optuna

            rival = optuna.load_study(study_name="s", storage=self.storage)
            rival.tell(rival.ask(), 0.999)
        return super().evaluate(job, on_epoch)


def test_best_so_far_counts_the_trials_other_processes_finish_meanwhile(tmp_path: Path) -> None:
    """Workers started by hand on one study: each display said "best so far" of its
    own trials, above a better one another worker had finished meanwhile."""
    config = _config(tmp_path, trials=3)
    text, _ = _display(config, _RivalFinishesDuring(0, config.storage))
    lines = [line for line in text.splitlines() if line.startswith("trial ")]
    assert len(lines) == 2  # the rival's trial counts toward --trials 3
    assert not [line for line in lines if "best so far" in line], text
