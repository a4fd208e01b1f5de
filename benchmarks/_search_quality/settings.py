"""What every run of the search-quality benchmark shares: its settings, the runs it
compares (samplers on spaces), and a trial as the figures read it."""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    pass


DEFAULT_OUT = Path("dashboards/exports/search-quality")
DEFAULT_CACHE = Path.home() / ".cache" / "nasmlcn" / "search-quality" / "cache.json"
CACHE_SCHEMA_VERSION = 2  # 2: training seeds follow the model (search/_run/repeats.py)
CHECKPOINTS = (5, 10, 15, 20, 30)
QUICK_CHECKPOINTS = (2, 4, 6)
LATENCY_MARGIN = 0.1
"""The reference latency lies this fraction above the largest step time the load
limit allows (a model at the limit still adds volume)."""

SECONDS_PER_TRAINING_IMAGE = {"mlcn-thesis": 5.2e-3, "mlcn-buckets": 2.3e-3}
"""Seconds of one trial per training image and epoch (validation and the inference
timing included), mean of 12 random proposals each, measured with this script at
the defaults (2xK80 12GB 0.25x, 3 epochs, 2,000/500 images; 2 workers of 1 torch
thread: 32 s and 14.5 s per trial) on the project's 2-core machine, otherwise
nearly idle. Only for the estimate, until the cache holds >= 5 trainings of a space
at the same settings and threads."""
SECONDS_PER_TRIAL_OVERHEAD = 1.0
"""Per trained trial on top of that: building the model, timing its inference."""
SECONDS_FIXED = 15.0
"""Starting the workers, loading each seed's data split, writing the plots."""
TWO_THREAD_SPEEDUP = 1.6
"""One process, 2 torch threads vs 1 (measured: 322 vs 202 images/s for a 9-lane
thesis model). Two processes of 1 thread each train 405 images/s together: the
default (``--workers 2``) gets 1.25x the throughput of one 2-thread process."""


class Run(NamedTuple):
    """One search setting, run once per seed.

    ``reuses``: the run whose proposals this one's first trials repeat with the same
    seed (so the cache serves them), which is therefore scheduled before it. Only a
    scheduling hint: a wrong one costs trainings, never correctness. ``long``: at the
    multi-fidelity comparison's length (``Settings.long_epochs``) instead of the
    search fidelity; ``pruner``: ``halving`` for successive halving over those epochs
    (with ``HALVING_TRIALS`` x the trials: it spends less per trial).
    """

    objectives: tuple[str, ...]
    sampler: str
    space: str
    reuses: str | None = None
    long: bool = False
    pruner: str | None = None

    @property
    def key(self) -> str:
        key = f"{'+'.join(self.objectives)}/{self.sampler}/{self.space}"
        return key + ("/long" if self.long else "") + (f"+{self.pruner}" if self.pruner else "")

    @property
    def label(self) -> str:
        baseline = " (baseline)" if (self.sampler, self.space) == BASELINE and not self.long else ""
        halving = " + successive halving" if self.pruner == "halving" else ""
        return f"{self.sampler} on {self.space}{halving}{baseline}"

    def trials(self, settings: Settings) -> int:
        return settings.trials * (HALVING_TRIALS if self.pruner == "halving" else 1)

    def epochs(self, settings: Settings) -> int:
        return settings.long_epochs if self.long else settings.epochs


BASELINE = ("random", "mlcn-thesis")
ACCURACY = ("accuracy",)
PARETO = ("accuracy", "latency")
GUIDED = ("tpe", "gp", "nsga2")
HALVING_TRIALS = 2
"""The halving run gets this many times the trials: with about two in three trials
stopped after one of 3 epochs it spends about what the full-length run spends."""
_THESIS = "accuracy/random/mlcn-thesis"
_BUCKETS = "accuracy/random/mlcn-buckets"
_PARETO_BUCKETS = "accuracy+latency/random/mlcn-buckets"
_LONG_TPE = "accuracy/tpe/mlcn-buckets/long"
RUNS = (
    Run(ACCURACY, "random", "mlcn-thesis"),
    Run(ACCURACY, "random", "mlcn-buckets"),
    # With a latency objective the buckets space also searches how full the buckets
    # are (accuracy alone fills them), so it proposes other models than _BUCKETS.
    Run(PARETO, "random", "mlcn-buckets"),
    # The multi-fidelity pair: TPE at the long length, without and with halving.
    Run(ACCURACY, "tpe", "mlcn-buckets", long=True),
    # TPE's and GP's startup trials and NSGA-II's first generation are Optuna's random
    # sampler with the same seed, and random sampling ignores the objectives (not the
    # space).
    *(Run(ACCURACY, s, "mlcn-buckets", reuses=_BUCKETS) for s in GUIDED),
    Run(PARETO, "random", "mlcn-thesis", reuses=_THESIS),
    *(Run(PARETO, s, "mlcn-buckets", reuses=_PARETO_BUCKETS) for s in GUIDED),
    Run(ACCURACY, "tpe", "mlcn-buckets", reuses=_LONG_TPE, long=True, pruner="halving"),
)


def _default_lr_policy() -> str:
    """The trainer's default lr policy (a cache key part: it decides the results)."""
    from nasmlcn.training import TrainConfig

    return TrainConfig().lr_policy


@dataclass(frozen=True)
class Settings:
    """What every run of one invocation shares."""

    devices: str
    mem: str
    flops: str
    epochs: int
    train_limit: int
    val_limit: int
    seeds: tuple[int, ...]
    trials: int
    checkpoints: tuple[int, ...]
    long_epochs: int = 3
    run_on: str = "cpu"
    dataset: str = "fashion-mnist"

    @property
    def goal_trials(self) -> int:
        """The goal's budget: a third of the trials (10 of 30)."""
        return max(self.trials // 3, 1)

    def search_config(self, seed: int) -> Any:
        """The settings every search and trainer of this benchmark shares, for ``seed``."""
        from nasmlcn.search import SearchConfig

        return SearchConfig(
            devices=self.devices,
            mem=self.mem,
            dataset=self.dataset,
            train_limit=self.train_limit,
            val_limit=self.val_limit,
            seed=seed,
            run_on=self.run_on,
            prune=False,  # every trial's accuracy is a full-length figure (but halving's)
        )

    def training(self) -> dict[str, Any]:
        """Everything besides the job that decides a trained result (the cache key)."""
        return {
            "dataset": self.dataset,
            "train_limit": self.train_limit,
            "val_limit": self.val_limit,
            "run_on": self.run_on,
            # The trainer's defaults decide the result too (the lr policy changed once).
            "lr_policy": _default_lr_policy(),
            "nasmlcn": importlib.metadata.version("nasmlcn"),
            "torch": importlib.metadata.version("torch"),
        }

    def scale(self, epochs: int) -> dict[str, Any]:
        """The settings a training's duration depends on (for the estimate)."""
        return {
            "devices": self.devices,
            "mem": self.mem,
            "flops": self.flops,
            "epochs": epochs,
            "train_limit": self.train_limit,
            "val_limit": self.val_limit,
        }


class TrialRecord(NamedTuple):
    """One finished trial as the figures need it."""

    number: int
    state: str
    accuracy: float | None
    latency: float | None
    cached: bool
    seconds: float
    lanes: str
    compute: float = 0.0
    """CPU seconds its training took (from the cache: the cached training's, for the
    epochs this trial ran); 0 for a repeat."""
    repeat_of: int | None = None
    """A repeat took this trial's result (its model trained already): no training."""
