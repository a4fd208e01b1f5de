"""``train``: the real trainer as a search evaluator.

The dataset is loaded once per search (a seeded train/validation split; the test
set is never touched during a search). Each candidate is built, trained with the
thesis's settings (Adam, lr x0.9 per epoch) for the configured epochs, and
validated after every epoch. Measured alongside: the step time, images per second
and peak training memory (``torch.cuda.max_memory_allocated`` on a GPU; on a CPU
the peak of the process's resident memory above where the trial started, sampled
every 10 ms).
"""

from __future__ import annotations

import logging
import os
import statistics
import threading
import time
from typing import TYPE_CHECKING, Any

from nasmlcn.data import DatasetInfo
from nasmlcn.errors import SearchError
from nasmlcn.search._evaluator import EVALUATORS, EpochCallback, EpochReport, EvalJob, Evaluation
from nasmlcn.training import Callback, EpochResult

if TYPE_CHECKING:
    from nasmlcn.data import DataSplits
    from nasmlcn.search._config import SearchConfig

logger = logging.getLogger(__name__)


class _RssPeak:
    """Samples this process's resident memory in a thread; ``peak`` is the largest
    value seen above the value at start."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.start = self._rss()
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-peak", daemon=True)

    def _rss(self) -> int:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * self.page

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._rss() - self.start)

    def __enter__(self) -> _RssPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss() - self.start)


class _Relay(Callback):
    def __init__(self, on_epoch: EpochCallback) -> None:
        self.on_epoch = on_epoch
        self.started = time.perf_counter()

    def on_epoch_end(self, result: EpochResult) -> None:
        self.on_epoch(
            EpochReport(result.epoch, result.val_accuracy, time.perf_counter() - self.started)
        )


class TrainEvaluator:
    """Trains every candidate on this machine (see the module docstring)."""

    name = "train"
    measured = True

    def __init__(self, config: SearchConfig, dataset: DatasetInfo, **_: Any) -> None:
        self.config = config
        self.dataset = dataset
        devices = [d.strip() for d in config.run_on.split(",") if d.strip()]
        if not devices:
            raise SearchError(f"--run-on {config.run_on!r}: expected auto, cpu or cuda:0,...")
        self.run_on = devices
        self._splits: DataSplits | None = None

    def splits(self) -> DataSplits:
        if self._splits is None:
            from nasmlcn.data import load_splits

            c = self.config
            self._splits = load_splits(
                self.dataset.name,
                c.data_dir,
                download=True,
                seed=c.seed,
                train_limit=c.train_limit,
                val_limit=c.val_limit,
                test_limit=1,
            )
        return self._splits

    def device(self) -> str:
        from nasmlcn.training import resolve_device

        return str(resolve_device(self.run_on[0]))

    def evaluate(self, job: EvalJob, on_epoch: EpochCallback) -> Evaluation:
        import torch

        from nasmlcn.models import build_model
        from nasmlcn.training import TrainConfig, train

        splits = self.splits()
        device = self.device()
        seed = (job.seed * 1_000_003 + job.trial) % 2**31
        torch.manual_seed(seed)
        model = build_model(job.spec)
        config = TrainConfig(
            epochs=job.epochs, batch_size=job.batch_size, lr=job.lr, seed=seed, device=device
        )
        relay = _Relay(on_epoch)
        cuda = device.startswith("cuda")
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
            before = torch.cuda.memory_allocated(device)
            history = train(model, job.spec, splits, config, callbacks=[relay])
            peak = torch.cuda.max_memory_allocated(device) - before
        else:
            with _RssPeak() as rss:
                history = train(model, job.spec, splits, config, callbacks=[relay])
            peak = rss.peak
        batches = -(-len(splits.train) // job.batch_size)
        epoch_seconds = statistics.median(h.seconds for h in history)
        return Evaluation(
            accuracy=history[-1].val_accuracy,
            val_accuracy_per_epoch=tuple(h.val_accuracy for h in history),
            seconds=time.perf_counter() - relay.started,
            step_seconds=epoch_seconds / batches,
            images_per_second=statistics.fmean(h.images_per_second for h in history),
            peak_memory_bytes=int(peak),
            device=device,
            mode="single-device",
            extra={
                "per_epoch": [h.to_dict() for h in history],
                "train_images": len(splits.train),
                "val_images": len(splits.val),
                "threads": torch.get_num_threads(),
            },
        )


EVALUATORS.register("train", TrainEvaluator)
