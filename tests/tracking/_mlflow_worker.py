"""A search worker that logs to MLflow, for the tests: ``python -m
tests.tracking._mlflow_worker URL STUDY TRIALS GRACE SLEEP MLFLOW_URI`` is
:mod:`tests.search._worker_script` with ``--mlflow`` (it prints ``trial N epoch
E`` after each epoch, so a test knows when to kill it)."""

from __future__ import annotations

import sys
from dataclasses import replace

from nasmlcn.search import run_search
from tests.search._worker_script import SlowProxy, config

if __name__ == "__main__":
    url, study, trials, grace, sleep, uri = sys.argv[1:7]
    searched = replace(config(url, study, int(trials), float(grace)), mlflow=uri)
    result = run_search(searched, evaluator=SlowProxy(float(sleep)))
    print(f"done {len(result.run_trials)}", flush=True)
