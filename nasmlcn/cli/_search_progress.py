"""``nasmlcn search``'s live display: two bars (trials with ETA; the running trial's
epochs) and a line per trial, on the one :class:`~nasmlcn.cli._progress.ProgressDisplay`.

Retries are shown as such: a trial failed and queued again (Ctrl-C, SIGTERM, the
search's ``--timeout``) says ``queued again as #M``, its copy says ``retry of
#N`` when it starts and ends, and a run that continues a study names the copies
it will take first. The trials bar counts what ``--trials`` counts, complete and
pruned trials: a failed trial, retried or not, does not move it. A replicate (the
best model so far trained once more with another seed, to measure the noise) gets a
line as it starts and one as it ends, with the noise it measured.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console

from nasmlcn._text import counted
from nasmlcn.cli._progress import ProgressDisplay
from nasmlcn.errors import cli_text
from nasmlcn.planning import Plan
from nasmlcn.search import EpochReport, SearchObserver, SearchStart, TrialOutcome

if TYPE_CHECKING:
    import optuna

    from nasmlcn.study import Noise, Replicate

COUNTED = ("COMPLETE", "PRUNED")
"""The states that count toward ``--trials`` (and move the trials bar)."""


def print_notices(console: Console, notices: Sequence[str]) -> None:
    """What the search says before its first trial (``SearchStart.notices``), one
    warning a line."""
    for line in notices:
        console.print(f"warning: {cli_text(line)}", style="yellow", markup=False, soft_wrap=True)


def print_first(console: Console, first: str) -> None:
    """The line a run says first (the defaults a new study takes), once its
    configuration, storage and tracker are checked and its study is made, before its
    trials are forecast: a refused run says only why."""
    if first:
        console.print(first, style="yellow", highlight=False, markup=False, soft_wrap=True)


class NoticePrinter(SearchObserver):
    """``search -q``: no display, but the notices still show."""

    def __init__(self, console: Console, first: str = "") -> None:
        self.console = console
        self._first = first

    def on_study(self, study: optuna.Study) -> None:
        print_first(self.console, self._first)

    def on_start(self, start: SearchStart) -> None:
        print_notices(self.console, start.notices)


class SearchProgress(ProgressDisplay, SearchObserver):
    """Two bars (trials with ETA; the running trial's epochs) and a line per trial."""

    def __init__(self, console: Console, first: str = "") -> None:
        super().__init__(console)
        self._first = first
        self._start: SearchStart | None = None
        self._best: float | None = None
        self._trial_started = 0.0
        # each running trial's seconds at its last epoch (with --workers, several run)
        self._last_epoch_at: dict[int, float] = {}
        self._study: optuna.Study | None = None

    def on_study(self, study: optuna.Study) -> None:
        print_first(self.console, self._first)
        self._study = study

    def on_start(self, start: SearchStart) -> None:
        self._start = start
        # first: whether the name was found, so that a mistyped one shows at once
        what = (
            f"continuing study {start.study!r} ({start.done} of {start.target} trials done)"
            if start.resumed
            else f"new study {start.study!r} ({counted(start.target, 'trial')})"
        )
        self.console.print(
            f"{what} in {start.storage}; sampler {start.sampler}, evaluator "
            f"{start.evaluator}, objectives {', '.join(start.metric_names)}",
            highlight=False,
            soft_wrap=True,
        )
        if start.data:
            self.console.print(f"data: {start.data}", highlight=False, markup=False, soft_wrap=True)
        print_notices(self.console, start.notices)
        if start.forecast:
            self.console.print(start.forecast, highlight=False, markup=False, soft_wrap=True)
        if start.resumed and start.done >= start.target:
            self.console.print(
                f"[yellow]nothing to run: the study has {start.done} results and --trials "
                f"{start.target} asks for {start.target} in all; give --trials "
                f"{start.done + start.target} for {start.target} more[/]",
                highlight=False,
            )
        if start.evaluator == "proxy":
            self.console.print(
                "[yellow]evaluator 'proxy': accuracies are an analytic stand-in, not trained[/]"
            )
        queued = self._queued_retries()
        if queued:
            shown = ", ".join(f"#{n} (retry of #{of})" for n, of in queued)
            self.console.print(
                f"queued again by an earlier run, taken first: {shown}",
                highlight=False,
                soft_wrap=True,
            )
        self._best = self._best_so_far(start)
        self.bar(
            "trials",
            total=start.target,
            completed=start.done,
            stats=self._best_stats(),
        )

    def on_trial_start(self, number: int, index: int, lanes: str, plan: Plan) -> None:
        assert self._start is not None
        self._trial_started = time.perf_counter()
        self.remove("epochs")
        of = self._retry_of(number)
        self.bar(
            "epochs",
            f"trial {number}{f' (retry of #{of})' if of is not None else ''}: "
            f"{plan.spec.num_lanes} lanes",
            total=self._start.epochs,
            stats=f"imbalance {plan.imbalance:.1%}",
        )

    def on_epoch(self, number: int, report: EpochReport, epochs: int) -> None:
        if "epochs" in self._bars:
            self.bar("epochs", completed=report.epoch, stats=f"val acc {report.val_accuracy:.4f}")
        seconds = report.seconds - self._last_epoch_at.get(number, 0.0)
        self._last_epoch_at[number] = report.seconds
        if not self.console.is_interactive and report.images_per_second is not None:
            # no bars in a log (nohup, SLURM, a pipe): a line per trained epoch, as train
            # prints (the proxy trains nothing: its trial line is enough)
            self.console.print(
                f"trial {number} epoch {report.epoch}/{epochs}: val acc "
                f"{report.val_accuracy:.4f}, {seconds:.1f} s, "
                f"{report.images_per_second:.0f} img/s",
                highlight=False,
            )

    def on_replicate_start(self, number: int, lanes: str, epochs: int) -> None:
        self.remove("epochs")  # the last trial's; a replicate reports no epochs
        self.console.print(
            f"replicate: trial {number} ({lanes}) trains again with another seed, "
            f"{counted(epochs, 'epoch')}, to measure the noise of one run (not a trial)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )

    def on_replicate_end(self, replicate: Replicate, noise: Noise) -> None:
        self.console.print(
            f"replicate: trial {replicate.number} trained again with another seed: "
            f"{replicate.replicate_accuracy:.4f} (its search run {replicate.accuracy:.4f}); "
            f"noise: sd {noise.sd:.3f} from {counted(noise.pairs, 'pair')}",
            highlight=False,
            soft_wrap=True,
        )

    def on_wait(self, running: tuple[int, ...], grace: float) -> None:
        if not running:
            return
        trials = ", ".join(f"#{n}" for n in running)
        self.console.print(
            f"waiting: the trials left are claimed by {trials}, running elsewhere; "
            f"{'each' if len(running) > 1 else 'it'} is failed, queued again and taken "
            f"here if silent for --grace {grace:g} s (a worker that died)",
            highlight=False,
            soft_wrap=True,
        )

    def on_trial_end(self, outcome: TrialOutcome) -> None:
        assert self._start is not None
        self._last_epoch_at.pop(outcome.number, None)
        # the outcome's own time: with --workers, trials start in other processes
        seconds = (
            outcome.seconds if outcome.seconds > 0 else time.perf_counter() - self._trial_started
        )
        name = f"trial {outcome.number}"
        if outcome.retry_of is not None:
            name += f" (retry of #{outcome.retry_of})"
        if outcome.state == "COMPLETE" and outcome.values is not None:
            shown = ", ".join(
                f"{metric} {value:.4g}"
                for metric, value in zip(self._start.metric_names, outcome.values, strict=False)
            )
            first = outcome.values[0]
            # the study's best before it, other processes' trials included
            rival = (
                self._best_so_far(self._start, excluding=outcome.number)
                if self._study is not None
                else self._best
            )
            better = rival is None or (
                first > rival if self._start.directions[0] == "maximize" else first < rival
            )
            self._best = first if better else rival
            if len(self._start.directions) > 1:
                # several objectives: the news is a trial on the front, not a best first
                # objective (a cheaper trial may join it at a lower accuracy)
                mark = "  joins the Pareto front" if self._on_front(outcome.number) else ""
            else:
                mark = "  best so far" if better else ""
            line = f"{name}: {shown} ({seconds:.1f} s){mark}"
        elif outcome.state == "FAIL":
            after = (
                f"queued again as #{outcome.queued_again_as}"
                if outcome.queued_again_as is not None
                else "not retried"
            )
            line = f"{name}: FAIL — {outcome.reason}; {after} (not counted toward --trials)"
        else:  # PRUNED, and why (a repeat: its original's curve replayed, or it does not fit)
            line = f"{name}: {outcome.state} — {outcome.reason}"
        if outcome.repeat_of is not None:  # its original's result: nothing trained
            counted = "counted" if self._start.count_repeats else "not counted"
            line += f"  (a repeat of #{outcome.repeat_of}: nothing trained, {counted})"
        self.console.print(line, highlight=False, soft_wrap=True)
        # only complete and pruned trials count toward --trials, repeats only if asked
        counts = outcome.state in COUNTED and (
            self._start.count_repeats or outcome.repeat_of is None
        )
        self.bar("trials", advance=1 if counts else 0, stats=self._best_stats())

    def _on_front(self, number: int) -> bool:
        """Whether trial ``number`` is on the study's feasible Pareto front now."""
        if self._study is None:
            return False
        from nasmlcn.search import best_trials

        try:
            return any(t.number == number for t in best_trials(self._study))
        except Exception:  # a display never stops a search
            return False

    def _best_stats(self) -> str:
        assert self._start is not None
        if self._best is None:
            return ""
        return f"best {self._start.metric_names[0]} {self._best:.4g}"

    def _best_so_far(self, start: SearchStart, excluding: int | None = None) -> float | None:
        """The first objective's best over the study's complete trials (a continued
        study's earlier runs and other processes' trials included), so "best so far"
        means the study's; ``excluding`` a trial."""
        if self._study is None:
            return None
        try:
            values = [
                t.values[0]
                for t in self._study.get_trials(deepcopy=False)
                if t.state.name == "COMPLETE" and t.values and t.number != excluding
            ]
        except Exception:  # a display never stops a search
            return None
        if not values:
            return None
        return max(values) if start.directions[0] == "maximize" else min(values)

    def _retry_of(self, number: int) -> int | None:
        """The failed trial that trial ``number`` runs again (None: a new trial, or
        no study to ask)."""
        if self._study is None:
            return None
        from nasmlcn.study import TrialRecord, storage_of, study_id_of

        storage = storage_of(self._study)
        try:
            trial_id = storage.get_trial_id_from_study_id_trial_number(
                study_id_of(self._study), number
            )
            history = TrialRecord.of(storage.get_trial(trial_id)).retry_history
        except Exception:  # a display never stops a search
            return None
        return history[-1] if history else None

    def _queued_retries(self) -> list[tuple[int, int]]:
        """The WAITING copies of failed trials: (number, the failed trial's number)."""
        if self._study is None:
            return []
        from optuna.trial import TrialState

        from nasmlcn.study import TrialRecord

        waiting = self._study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        records = [TrialRecord.of(t) for t in waiting]
        return [(r.number, r.retry_history[-1]) for r in records if r.retry_history]
