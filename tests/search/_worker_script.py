"""A search worker for the tests: ``python -m tests.search._worker_script URL STUDY
TRIALS GRACE SLEEP`` runs the proxy evaluator with ``SLEEP`` seconds per epoch and
prints ``trial N epoch E`` after each epoch (so a test knows when to kill it)."""

from __future__ import annotations

import sys
import time

from nasmlcn.search import (
    EpochCallback,
    EpochDecision,
    EpochReport,
    EvalRequest,
    Evaluation,
    ProxyEvaluator,
    SearchConfig,
    run_search,
)


class SlowProxy(ProxyEvaluator):
    def __init__(self, sleep: float) -> None:
        self.sleep = sleep

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        def slow(report: EpochReport) -> EpochDecision:
            time.sleep(self.sleep)
            print(f"trial {job.trial} epoch {report.epoch}", flush=True)
            return on_epoch(report)

        return super().evaluate(job, slow)


def config(url: str, study: str, trials: int, grace: float) -> SearchConfig:
    return SearchConfig(
        evaluator="proxy",
        storage=url,
        study=study,
        trials=trials,
        epochs=3,
        devices="4xK80",
        mem="12GB",
        grace=grace,
        prune=False,
    )


if __name__ == "__main__":
    url, study, trials, grace, sleep = sys.argv[1:6]
    result = run_search(
        config(url, study, int(trials), float(grace)), evaluator=SlowProxy(float(sleep))
    )
    print(f"done {len(result.run_trials)}", flush=True)
