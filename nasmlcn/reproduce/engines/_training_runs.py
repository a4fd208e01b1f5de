"""What ``lane_variants.py`` and ``thesis_table.py`` share: training overrides written
as ``key=value``, the results file that makes them resumable, and their progress lines.

Overrides name a training option (a :class:`~nasmlcn.training.TrainConfig` field:
``augment``, ``batch_size``, ``eval_batch_size``, ``lr``, ``lr_decay``, ``lr_policy``,
``reconstruction_weight``) or a model option (a field of the architecture spec:
``decoder``, ``lane_dropout``, ``routing``, ``routing_iterations``, ``vote_init``). Values are
converted to the field's type and checked by the config and spec themselves, so a
bad one fails before any training, with the library's message.

The results file is one JSON object: finished runs under ``runs`` (keyed by what
decides their numbers: the model, every training and model setting as used
(defaults included, however they were asked for), the data settings, the epochs and
the seed, and the model's parameter count, so that a changed lane definition or
default is trained anew) and the last epoch reached by unfinished ones under
``progress``. It is rewritten atomically after every change, so a killed benchmark
loses at most the epoch in flight (its checkpoint holds the others); invocations
may share it (saves merge under a lock), each training other runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import platform
import statistics
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from nasmlcn.errors import NasmlcnError
from nasmlcn.reproduce.engines.common import say
from nasmlcn.specs import MLCNSpec, write_text_atomic
from nasmlcn.training import Callback, EpochResult, TrainConfig, TrainStart

RESULTS_SCHEMA_VERSION = 1

TRAIN_KEYS = (
    "augment",
    "batch_size",
    "eval_batch_size",
    "lr",
    "lr_decay",
    "lr_policy",
    "reconstruction_weight",
)
"""Overridable TrainConfig fields (epochs, seed and device are the script's options)."""

ARCH_KEYS = ("decoder", "lane_dropout", "routing", "routing_iterations", "vote_init")
"""Overridable spec fields; a spec without one (CapsNet has no ``routing``) ignores it."""


def _defaults() -> dict[str, Any]:
    config = TrainConfig()
    values = {key: getattr(config, key) for key in TRAIN_KEYS}
    spec_defaults = {f.name: f.default for f in fields(MLCNSpec)}
    values.update({key: spec_defaults[key] for key in ARCH_KEYS})
    return values


def settle_args(args: Any, quick: Mapping[str, Any], positive: Iterable[str]) -> None:
    """Applies ``--quick``'s values to ``args`` and refuses a value below 1 of any
    option in ``positive`` (one line, naming the option)."""
    if args.quick:
        for name, value in quick.items():
            setattr(args, name, value)
    for name in positive:
        value = getattr(args, name)
        if value is not None and value < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be >= 1, got {value}")


def parse_overrides(tokens: Iterable[str], origin: str) -> dict[str, Any]:
    """``["augment=shift", "lr=2e-3"]`` -> ``{"augment": "shift", "lr": 0.002}``, sorted.

    Raises:
        SystemExit: Not ``key=value``, an unknown or repeated key, or a value that is
            not of the key's type; the message names ``origin``.
    """
    defaults = _defaults()
    overrides: dict[str, Any] = {}
    for token in tokens:
        key, sep, text = token.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key or not text.strip():
            raise SystemExit(f"{origin}: {token!r} is not key=value (e.g. augment=shift)")
        if key not in defaults:
            raise SystemExit(
                f"{origin}: unknown option {key!r}; known: {', '.join(sorted(defaults))}"
            )
        if key in overrides:
            raise SystemExit(f"{origin}: {key} is given twice")
        kind = type(defaults[key])
        try:
            overrides[key] = kind(text.strip())
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise SystemExit(f"{origin}: {key}={text!r} is not {what}") from None
    return dict(sorted(overrides.items()))


def format_overrides(overrides: Mapping[str, Any]) -> str:
    return " ".join(f"{key}={value}" for key, value in overrides.items())


def apply_overrides(
    arch: Any, config: TrainConfig, overrides: Mapping[str, Any], origin: str
) -> tuple[Any, TrainConfig, dict[str, Any]]:
    """``arch`` and ``config`` with ``overrides`` applied, and the overrides that applied.

    Raises:
        SystemExit: The config or the spec refuses a value (the library's message).
    """
    names = {f.name for f in fields(arch) if f.init}
    train = {k: v for k, v in overrides.items() if k in TRAIN_KEYS}
    model = {k: v for k, v in overrides.items() if k in ARCH_KEYS and k in names}
    try:
        return replace(arch, **model), replace(config, **train), {**train, **model}
    except NasmlcnError as err:
        raise SystemExit(f"{origin}: {err}") from None


def effective_settings(arch: Any, config: TrainConfig) -> dict[str, Any]:
    """Every overridable setting as the run uses it, defaults included.

    Part of every run's key: when a library default changes (the lr policy, say),
    runs that relied on the old one are trained anew instead of served."""
    values = {key: getattr(config, key) for key in TRAIN_KEYS}
    values.update({key: getattr(arch, key) for key in ARCH_KEYS if hasattr(arch, key)})
    return values


def run_key(data: Mapping[str, Any]) -> str:
    """The canonical text of what decides a run's numbers (the results file's key)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def model_params(arch: Any) -> int:
    """Parameters of ``arch``'s model, built on the meta device (no memory, no weights).

    Part of every run's key: a lane type whose layers change between library
    versions makes new runs instead of serving the old ones' results."""
    import torch

    from nasmlcn.models import build_model, count_parameters

    with torch.device("meta"):
        return count_parameters(build_model(arch))


def short_hash(key: str) -> str:
    """A folder name for the run of ``key`` (its checkpoint)."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value)."""
    mean = statistics.fmean(values)
    return mean, statistics.stdev(values) if len(values) > 1 else 0.0


def paired_by_seed(
    baseline: Iterable[Mapping[str, Any]], other: Iterable[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """``(baseline run, other run)`` for every seed both have, by seed.

    Compare seed by seed, not mean against mean: the seed picks the validation split,
    the initial weights and the batch order, so the spread between seeds (which can
    exceed the effect measured) drops out of each pair's difference.
    """
    others = {run["seed"]: run for run in other}
    return sorted(
        ((run, others[run["seed"]]) for run in baseline if run["seed"] in others),
        key=lambda pair: pair[0]["seed"],
    )


COMPARED = ("best_val_accuracy", "test_accuracy")
"""What a variant is compared on against its baseline: the selection figure
(validation) first, then the test accuracy of the selected epoch."""


def versus_baseline(
    baseline: Iterable[Mapping[str, Any]], variant: Iterable[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """``variant - baseline`` paired by seed, per :data:`COMPARED` figure: the mean
    difference, its 95 % t interval and the verdict (a tie where the interval holds
    0); None with fewer than 2 seeds in common (no interval)."""
    from nasmlcn.stats import paired_interval

    pairs = paired_by_seed(baseline, variant)
    if len(pairs) < 2:
        return None
    out: dict[str, Any] = {"seeds": [b["seed"] for b, _ in pairs]}
    for name in COMPARED:
        interval = paired_interval([v[name] for _, v in pairs], [b[name] for b, _ in pairs])
        out[name] = interval.to_dict()
    return out


def versus_lines(compared: Mapping[str, Any] | None) -> list[str]:
    """:func:`versus_baseline`'s figures as text: points, the interval, the verdict."""
    if compared is None:
        return ["vs no overrides: fewer than 2 seeds of both in the results file"]
    lines = [f"vs no overrides, seeds {compared['seeds']} (paired 95 % t):"]
    for name in COMPARED:
        i = compared[name]
        lines.append(
            f"  {name} {100 * i['mean']:+.2f} points "
            f"[{100 * i['low']:+.2f}, {100 * i['high']:+.2f}]: {i['verdict']}"
        )
    return lines


def run_facts(device: str) -> dict[str, Any]:
    """Where and when a run trained (stored with its result; timings depend on it)."""
    import torch

    return {
        "device": device,
        "threads": torch.get_num_threads(),
        "host": platform.node(),
        "torch": torch.__version__,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def history_figures(history: list[EpochResult]) -> dict[str, Any]:
    """Per-epoch validation accuracy, final and best of it, and the training speed.

    The speed is the median over epochs: an epoch that shared the cores with other
    work (or spanned a stop and resume) would pull a mean up, not a median.
    """
    accuracies = [h.val_accuracy for h in history]
    best = max(range(len(accuracies)), key=accuracies.__getitem__)
    return {
        "epochs": len(history),
        "val_accuracy_per_epoch": accuracies,
        "final_val_accuracy": accuracies[-1],
        "best_val_accuracy": accuracies[best],
        "best_epoch": best + 1,
        "seconds_per_epoch": statistics.median(h.seconds for h in history),
        "seconds_per_epoch_each": [h.seconds for h in history],
        "images_per_second": statistics.median(h.images_per_second for h in history),
    }


class ResultsFile:
    """Finished runs and the progress of unfinished ones, in one JSON file.

    Several invocations may share the file (a slow row in the background beside
    the others): every save re-reads it under a lock and merges, so no process
    drops what another recorded, and :meth:`finished` sees runs other processes
    finished since this one started.
    """

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind
        self.runs: dict[str, dict[str, Any]] = {}
        self.progress: dict[str, dict[str, Any]] = {}
        self._merge_disk()

    def _merge_disk(self) -> None:
        """Adds what the file holds (this process's own entries win)."""
        if not self.path.is_file():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise SystemExit(f"--results {str(self.path)!r} is not readable JSON: {err}") from None
        if (
            not isinstance(data, dict)
            or data.get("kind") != self.kind
            or data.get("schema_version") != RESULTS_SCHEMA_VERSION
        ):
            raise SystemExit(
                f"--results {str(self.path)!r} is not a {self.kind} results file of schema "
                f"{RESULTS_SCHEMA_VERSION}; give another path"
            )
        self.runs = {**data.get("runs", {}), **self.runs}
        progress = {**data.get("progress", {}), **self.progress}
        self.progress = {k: v for k, v in progress.items() if k not in self.runs}

    def finished(self, key: str) -> dict[str, Any] | None:
        if key not in self.runs:
            with self._lock():
                self._merge_disk()
        return self.runs.get(key)

    def record(self, key: str, entry: dict[str, Any]) -> None:
        self.runs[key] = entry
        self.progress.pop(key, None)
        self._save()

    def record_progress(self, key: str, data: dict[str, Any]) -> None:
        self.progress[key] = data
        self._save()

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _save(self) -> None:
        with self._lock():
            self._merge_disk()
            data = {
                "schema_version": RESULTS_SCHEMA_VERSION,
                "kind": self.kind,
                "runs": self.runs,
                "progress": self.progress,
            }
            write_text_atomic(self.path, json.dumps(data, indent=1) + "\n")


class EpochLog(Callback):
    """A progress line per epoch on stderr, and the epoch reached in the results file.

    Validation only: no test figure per epoch, which would invite picking an epoch
    on the test set (a run reports its test accuracy once, at the end).
    """

    def __init__(self, label: str, results: ResultsFile, key: str) -> None:
        self.label = label
        self.results = results
        self.key = key
        self.epochs = 0

    def on_train_start(self, start: TrainStart) -> None:
        self.epochs = start.epochs
        if start.first_epoch > 1:
            done = start.first_epoch - 1
            say(f"[{self.label}] resuming from its checkpoint after epoch {done}")

    def on_epoch_end(self, result: EpochResult) -> None:
        data: dict[str, Any] = {
            "label": self.label,
            "epochs_done": result.epoch,
            "epochs": self.epochs,
            "val_accuracy": result.val_accuracy,
            "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        # Recorded before the line is printed: whoever sees the line finds the file
        # (and the checkpoint, written before callbacks run) up to date.
        self.results.record_progress(self.key, data)
        say(
            f"[{self.label}] epoch {result.epoch}/{self.epochs}: val accuracy "
            f"{result.val_accuracy:.4f}, {result.seconds:.1f} s, "
            f"{result.images_per_second:.0f} images/s"
        )
