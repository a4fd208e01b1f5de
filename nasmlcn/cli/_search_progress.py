"""``nasmlcn search``'s live display: two bars (trials with ETA; the running trial's
epochs) and a line per trial, on the one :class:`~nasmlcn.cli._progress.ProgressDisplay`."""

from __future__ import annotations

import time

from rich.console import Console

from nasmlcn.cli._progress import ProgressDisplay
from nasmlcn.planning import Plan
from nasmlcn.search import EpochReport, SearchObserver, SearchStart, TrialOutcome


class SearchProgress(ProgressDisplay, SearchObserver):
    """Two bars (trials with ETA; the running trial's epochs) and a line per trial."""

    def __init__(self, console: Console) -> None:
        super().__init__(console)
        self._start: SearchStart | None = None
        self._best: float | None = None
        self._trial_started = 0.0

    def on_start(self, start: SearchStart) -> None:
        self._start = start
        verb = "continuing" if start.resumed else "created"
        self.console.print(
            f"study {start.study!r} ({verb}, {start.done}/{start.target} trials done) in "
            f"{start.storage}; sampler {start.sampler}, evaluator {start.evaluator}, "
            f"objectives {', '.join(start.metric_names)}",
            highlight=False,
            soft_wrap=True,
        )
        if start.evaluator == "proxy":
            self.console.print(
                "[yellow]evaluator 'proxy': accuracies are an analytic stand-in, not trained[/]"
            )
        self.bar("trials", total=start.target, completed=start.done)

    def on_trial_start(self, number: int, index: int, lanes: str, plan: Plan) -> None:
        assert self._start is not None
        self._trial_started = time.perf_counter()
        self.remove("epochs")
        self.bar(
            "epochs",
            f"trial {number}: {plan.spec.num_lanes} lanes",
            total=self._start.epochs,
            stats=f"imbalance {plan.imbalance:.1%}",
        )

    def on_epoch(self, number: int, report: EpochReport, epochs: int) -> None:
        if "epochs" in self._bars:
            self.bar("epochs", completed=report.epoch, stats=f"val acc {report.val_accuracy:.4f}")

    def on_trial_end(self, outcome: TrialOutcome) -> None:
        assert self._start is not None
        # the outcome's own time: with --workers, trials start in other processes
        seconds = (
            outcome.seconds if outcome.seconds > 0 else time.perf_counter() - self._trial_started
        )
        if outcome.state == "COMPLETE" and outcome.values is not None:
            shown = ", ".join(
                f"{name} {value:.4g}"
                for name, value in zip(self._start.metric_names, outcome.values, strict=False)
            )
            first = outcome.values[0]
            better = self._best is None or (
                first > self._best
                if self._start.directions[0] == "maximize"
                else first < self._best
            )
            if better:
                self._best = first
            line = f"trial {outcome.number}: {shown} ({seconds:.1f} s){'  best so far' if better else ''}"
        else:
            line = f"trial {outcome.number}: {outcome.state} — {outcome.reason}"
        self.console.print(line, highlight=False, soft_wrap=True)
        best = (
            f"best {self._start.metric_names[0]} {self._best:.4g}" if self._best is not None else ""
        )
        self.bar("trials", advance=1, stats=best)
