"""The cache of trained results: a JSON file keyed by what decides a training's
result, and the evaluator that asks it first."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nasmlcn.search import (
        EpochCallback,
        EpochReport,
        EvalRequest,
        Evaluation,
        Evaluator,
    )

from _search_quality.settings import CACHE_SCHEMA_VERSION


class ResultCache:
    """Trained results in a JSON file (``path`` None: in memory only)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        if path is not None and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:
                raise SystemExit(f"--cache {str(path)!r} is not readable JSON: {err}") from None
            if not isinstance(data, dict) or data.get("schema_version") != CACHE_SCHEMA_VERSION:
                raise SystemExit(
                    f"--cache {str(path)!r} is not a search-quality cache of schema "
                    f"{CACHE_SCHEMA_VERSION}; delete it or give another path"
                )
            self.entries = dict(data["entries"])

    @staticmethod
    def key(job: EvalRequest, training: Mapping[str, Any]) -> str:
        """The job's model, seed, trial and training settings, hashed."""
        data = {
            "arch": job.spec.to_dict(),
            "assignment": list(job.assignment),
            "seed": job.seed,
            # with the rest, the trial decides the result (its training seed follows
            # from its model, search/_run/repeats.py); the proxy's dry run has the same
            # trial numbers, so the estimate knows what is cached
            "trial": job.trial,
            "epochs": job.epochs,
            "batch_size": job.batch_size,
            "lr": job.lr,
            **training,
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:32]

    def detached(self) -> ResultCache:
        """A copy in memory only (what a worker process gets)."""
        copy = ResultCache(None)
        copy.entries = dict(self.entries)
        return copy

    def put(self, key: str, entry: dict[str, Any]) -> None:
        self.update({key: entry})

    def update(self, entries: Mapping[str, dict[str, Any]]) -> None:
        """Adds ``entries`` and rewrites the file, atomically: an interrupted run keeps
        what it trained, and a reader never sees half a file."""
        self.entries.update(entries)
        if self.path is None or not entries:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        data = {"schema_version": CACHE_SCHEMA_VERSION, "entries": self.entries}
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, self.path)


class CachedEvaluator:
    """An evaluator that asks the cache first and stores what ``inner`` trains."""

    def __init__(
        self,
        inner: Evaluator,
        cache: ResultCache,
        training: Mapping[str, Any],
        meta: Mapping[str, Any],
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.measured = inner.measured
        self.checkpoints = inner.checkpoints
        self.cache = cache
        self.training = dict(training)
        self.meta = dict(meta)
        self.last_hit: bool | None = None
        self.last_compute = 0.0
        self.trained: list[str] = []

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        """The cached result, else ``inner``'s. ``last_compute``: the CPU seconds the
        job took, or (from the cache) would have taken for the epochs it ran: a
        pruner may stop it after any epoch. A training the pruner stopped is cached
        too, with the epochs it ran (served again only to a trial stopped there)."""
        from nasmlcn.search import EpochDecision

        key = ResultCache.key(job, self.training)
        entry = self.cache.entries.get(key)
        self.last_hit = entry is not None
        replayed = 0
        if entry is not None:
            served = self._replay(key, entry, on_epoch)
            if served is not None:
                return served
            # a stopped training this trial goes past: train it, reporting only the
            # epochs after those replayed (training is seeded: they are the same)
            self.last_hit = False
            replayed = len(entry["stopped"])
        seen: list[float] = []
        decision = EpochDecision()

        def recording(report: EpochReport) -> EpochDecision:
            nonlocal decision
            seen.append(report.val_accuracy)
            if report.epoch > replayed:
                decision = on_epoch(report)
            return decision

        tick, cpu = time.perf_counter(), time.process_time()
        meta = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **self.meta}
        evaluation = self.inner.evaluate(job, recording)
        self.last_compute = time.process_time() - cpu
        if not decision.goes_on:  # the pruner stopped it: cached with the epochs it ran
            self._store(key, {"stopped": seen, "cpu_seconds": self.last_compute, **meta})
            return evaluation
        self._store(
            key,
            {
                "evaluation": evaluation.to_dict(),
                "evaluate_seconds": time.perf_counter() - tick,
                "cpu_seconds": self.last_compute,
                **meta,
            },
        )
        return evaluation

    def _store(self, key: str, entry: dict[str, Any]) -> None:
        old = self.cache.entries.get(key)
        if old is not None and "evaluation" in old:  # never replace a full training
            return
        self.trained.append(key)
        self.cache.put(key, entry)

    def _replay(
        self, key: str, entry: Mapping[str, Any], on_epoch: EpochCallback
    ) -> Evaluation | None:
        """Serves ``entry``; None when it is a stopped training this trial goes past."""
        from nasmlcn.search import EpochReport, Evaluation

        stopped = "evaluation" not in entry  # stopped by the pruner after these epochs
        data = {} if stopped else dict(entry["evaluation"])
        curve = list(entry["stopped"]) if stopped else data["val_accuracy_per_epoch"]
        spent = float(entry.get("cpu_seconds", entry.get("evaluate_seconds", 0.0)))
        for epoch, accuracy in enumerate(curve, start=1):
            self.last_compute = spent * epoch / len(curve)
            if not on_epoch(EpochReport(epoch, accuracy, 0.0)).goes_on:
                # the trial ends here, as it decided: what it saw is its evaluation
                return Evaluation(accuracy, tuple(curve[:epoch]), 0.0)
        if stopped:
            return None  # this trial goes past the epochs the cached one ran
        self.last_compute = spent
        data["val_accuracy_per_epoch"] = tuple(curve)
        data["extra"] = {**data["extra"], "served_by_cache": key}
        return Evaluation(**data)
