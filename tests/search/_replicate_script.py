"""A measured stand-in for training, for the replicate tests: ``python -m
tests.search._replicate_script URL STUDY TRIALS AFTER`` runs one search worker on the
study with :class:`NoisyProxy` and ``--replicate-after AFTER``, and prints ``done N``:
the replicates it started."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from typing import Any

from nasmlcn.search import (
    EpochCallback,
    EvalRequest,
    Evaluation,
    ProxyEvaluator,
    SearchConfig,
    SearchObserver,
    run_search,
)


class NoisyProxy(ProxyEvaluator):
    """The proxy as if it trained (``measured``): its accuracy moves with the training
    seed by up to +-0.01, as a run's would, so a replicate differs from its run. The
    replicate (told by :class:`Replicating`) sleeps ``replicate_sleep`` seconds, then
    raises ``stop`` (a signal number), or fails where ``fail``."""

    measured = True

    def __init__(
        self, replicate_sleep: float = 0.0, stop: int | None = None, fail: bool = False
    ) -> None:
        self.replicate_sleep = replicate_sleep
        self.stop = stop
        self.fail = fail
        self.replicating = False
        self.requests: list[EvalRequest] = []

    def evaluate(self, request: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        self.requests.append(request)
        replicating, self.replicating = self.replicating, False
        if replicating:
            time.sleep(self.replicate_sleep)
            if self.stop is not None:
                import signal

                signal.raise_signal(self.stop)
            if self.fail:
                raise RuntimeError("CUDA out of memory")
        result = super().evaluate(request, on_epoch)
        shift = (request.training_seed % 201 - 100) / 10_000
        return replace(result, accuracy=round(result.accuracy + shift, 6))


class Replicating(SearchObserver):
    """Tells ``evaluator`` that its next evaluation is the study's replicate."""

    def __init__(self, evaluator: NoisyProxy) -> None:
        self.evaluator = evaluator
        self.started = 0
        self.ended: list[Any] = []

    def on_replicate_start(self, number: int, lanes: str, epochs: int) -> None:
        self.evaluator.replicating = True
        self.started += 1

    def on_replicate_end(self, replicate: Any, noise: Any) -> None:
        self.ended.append((replicate, noise))


def config(url: str, study: str, trials: int, after: int) -> SearchConfig:
    return SearchConfig(
        evaluator="proxy",
        storage=url,
        study=study,
        trials=trials,
        epochs=2,
        devices="4xK80",
        mem="12GB",
        prune=False,
        replicate_after=after,
    )


if __name__ == "__main__":
    url, study, trials, after = sys.argv[1:5]
    evaluator = NoisyProxy(replicate_sleep=2.0)
    watch = Replicating(evaluator)
    run_search(config(url, study, int(trials), int(after)), [watch], evaluator=evaluator)
    print(f"done {watch.started}", flush=True)
