"""A search worker that logs to MLflow, for the tests: ``python -m
tests.tracking._mlflow_worker URL STUDY TRIALS GRACE SLEEP MLFLOW_URI`` is
:mod:`tests.search._worker_script` with ``--mlflow`` (it prints ``trial N epoch
E`` after each epoch, so a test knows when to kill it). It prints once the epoch
is logged (the observers have run), so a kill lands in the next epoch's sleep,
not in the middle of MLflow writing the epoch's metric."""

from __future__ import annotations

import sys
import time
from dataclasses import replace

from nasmlcn.search import (
    EpochCallback,
    EpochDecision,
    EpochReport,
    EvalRequest,
    Evaluation,
    ProxyEvaluator,
)
from tests.search._worker_script import config
from tests.tracking._tracked import tracked_search


class LoggedSlowProxy(ProxyEvaluator):
    """The proxy, ``sleep`` seconds an epoch, printing each epoch after it is logged."""

    def __init__(self, sleep: float) -> None:
        self.sleep = sleep

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        def slow(report: EpochReport) -> EpochDecision:
            time.sleep(self.sleep)
            decision = on_epoch(report)
            print(f"trial {job.trial} epoch {report.epoch}", flush=True)
            return decision

        return super().evaluate(job, slow)


if __name__ == "__main__":
    url, study, trials, grace, sleep, uri = sys.argv[1:7]
    searched = replace(config(url, study, int(trials), float(grace)), mlflow=uri)
    result = tracked_search(searched, evaluator=LoggedSlowProxy(float(sleep)))
    print(f"done {len(result.run_trials)}", flush=True)
