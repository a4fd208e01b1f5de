"""SearchConfig: everything one ``nasmlcn search`` needs, as a frozen dataclass.

A config comes from command-line options, from a recipe file
(``--config studies/NAME.toml``) with the same keys, or both: options given on
the command line override the file. The fields that change what a trial's
numbers mean (devices, space, dataset, epochs, cost model, objectives, ...) form
the config's *identity*: a study keeps the identity it was created with, and a
study name reused with another identity is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from nasmlcn._storage_url import redact_url
from nasmlcn._toml import check_keys, read_toml
from nasmlcn.errors import SearchError, option
from nasmlcn.training import MAX_EPOCHS

CONFIG_SCHEMA_VERSION = 1

IDENTITY_FIELDS = (
    "devices",
    "mem",
    "flops",
    "space",
    "objectives",
    "evaluator",
    "dataset",
    "epochs",
    "train_limit",
    "val_limit",
    "batch_size",
    "cost_model",
    "latency_budget",
)
"""Fields that must match to continue a study (the rest may change between runs)."""


@dataclass(frozen=True)
class SearchConfig:
    """One search.

    Attributes:
        devices: Target devices (``8xK80``, ``1xK80,1xV100``).
        mem: Memory of every device (``12GB``), or None for the catalog's.
        flops: Per-device load limit of the buckets (``1x`` = the thesis baseline).
        space: Search space name (``mlcn-buckets``) or path to a space file.
        sampler: ``random``, ``tpe``, ``nsga2`` or ``gp`` (see ``SAMPLERS``).
        objectives: ``accuracy`` and optionally any of ``latency`` (predicted
            training step time), ``inference`` (predicted per-image inference
            latency, batch 1), ``memory`` (predicted training memory of the fullest
            device), ``params`` and ``energy`` (per inference on CapsAcc; needs the
            ``capsacc`` cost model, e.g. ``devices="capsacc"``); several make a
            Pareto study (see ``OBJECTIVES``).
        evaluator: ``train`` (real training) or ``proxy`` (analytic stand-in).
        dataset: Dataset name.
        data_dir: Dataset directory (None: the default).
        epochs: Training epochs per trial.
        train_limit: Training images per epoch (None: all).
        val_limit: Validation images (None: all).
        batch_size: Training batch size (the space may search it instead).
        trials: Total trials the study should reach (re-running continues to it).
        count_repeats: Whether a repeat (a trial that takes the result of a model
            already trained, :mod:`nasmlcn.search._repeats`) counts toward
            ``trials``. False: ``trials`` is a budget of trainings; a run that gets
            only repeats for a while stops and says so.
        timeout: Stop the search after this many seconds (None: no limit): no trial
            starts after it, and the running one stops within a batch as Ctrl-C
            stops it (FAIL, queued again and resumed from its last epoch's
            checkpoint by a re-run; never PRUNED).
        trial_timeout: Stop a trial at the first epoch boundary after this many
            seconds (recorded PRUNED with the reason, its epochs kept).
        grace: Seconds without a heartbeat after which a running trial's worker is
            taken for dead: the trial is failed and retried.
        max_retries: Times a trial whose worker died (or that Ctrl-C stopped) is
            queued again.
        artifacts: Folder of the artifact store for checkpoints and weights (None:
            ``artifacts/`` beside a SQLite study file, else ``studies/artifacts``).
        keep_weights: Which finished trials keep their weights: ``all``, ``pareto``
            or ``best:K``.
        prune: Correlation-gated pruning of weak trials (on unless ``--no-prune``). Not
            part of the identity: a study made with it off continues with it on (its
            first trials, run in full, measure the correlation the pruner needs).
        prune_threshold: Spearman rho an epoch must reach before it may prune.
        prune_percentile: Prune trials below this percentile of the others.
        prune_min_trials: Completed trials needed before pruning starts (with
            ``halving``: trials a rung needs before it halves).
        pruner: The pruning rule, a ``PRUNERS`` name: ``correlation`` (the default)
            or ``halving`` (successive halving over epochs: multi-fidelity). Not part
            of the identity, as ``prune``.
        halving_rate: With ``pruner="halving"``: rungs at epochs 1, rate, rate^2, ...
            and the best 1/rate of a rung go on (>= 2).
        warm_start: An earlier study to start from (:mod:`nasmlcn.search._warm`): its
            best architectures are queued as the first trials, refit to these
            devices, and where the parameters and training match its trials are
            added as data for the sampler. Only when the study is made. Not part of
            the identity.
        warm_start_storage: The earlier study's storage URL (None: ``storage``).
        warm_start_top: How many of its best trials to queue (>= 1).
        storage: SQLAlchemy URL of the study storage (``to_dict`` hides its
            password). Required by :func:`run_search` (the library creates no file
            the caller did not name); ``nasmlcn search`` gives
            ``sqlite:///studies/nasmlcn.db`` (:data:`DEFAULT_STORAGE`) when neither
            ``--storage`` nor ``$NASMLCN_STORAGE`` names one.
        study: Study name (None: derived from the identity).
        run_on: ``auto``, ``cpu`` or ``cuda:0,...`` (where training runs).
        seed: Seeds the sampler, the data split and training.
        cost_model: Cost model of buckets and predictions.
        latency_budget: Optional constraint on predicted step time (seconds).
        device_file: Extra device catalog.
        calibration: Calibration file of the calibrated cost model.
        mlflow: MLflow tracking URI (a folder, ``sqlite:///mlflow.db``, a tracking
            server's ``http(s)://`` address) that :func:`run_search` logs every
            trial to (:mod:`nasmlcn.tracking`; needs ``pip install
            'nasmlcn[tracking]'``), or None. Not part of the identity.
    """

    devices: str = "8xK80"
    mem: str | None = None
    flops: str = "1x"
    space: str = "mlcn-buckets"
    sampler: str = "tpe"
    objectives: tuple[str, ...] = ("accuracy",)
    evaluator: str = "train"
    dataset: str = "fashion-mnist"
    data_dir: str | None = None
    epochs: int = 10
    train_limit: int | None = None
    val_limit: int | None = None
    batch_size: int = 100
    trials: int = 20
    count_repeats: bool = True
    timeout: float | None = None
    trial_timeout: float | None = None
    grace: float = 120.0
    max_retries: int = 3
    artifacts: str | None = None
    keep_weights: str = "all"
    prune: bool = True
    prune_threshold: float = 0.9
    prune_percentile: float = 50.0
    prune_min_trials: int = 5
    pruner: str = "correlation"
    halving_rate: int = 3
    warm_start: str | None = None
    warm_start_storage: str | None = None
    warm_start_top: int = 5
    storage: str = ""
    study: str | None = None
    run_on: str = "auto"
    seed: int = 0
    cost_model: str = "analytic"
    latency_budget: float | None = None
    device_file: str | None = None
    calibration: str | None = None
    mlflow: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        objectives = self.objectives
        if isinstance(objectives, str):
            objectives = tuple(o.strip() for o in objectives.split(",") if o.strip())
        object.__setattr__(self, "objectives", tuple(objectives))
        _check_positive_int("epochs", self.epochs)
        _check_positive_int("trials", self.trials)
        _check_at_most("trials", self.trials, MAX_TRIALS, "a million 1-second trials take 12 days")
        _check_at_most("epochs", self.epochs, MAX_EPOCHS, "the thesis trains 10 to 100")
        if self.mlflow is not None:  # a URI MLflow cannot open is refused here, not mid-run
            from nasmlcn._tracking_uri import check_tracking_uri

            object.__setattr__(self, "mlflow", check_tracking_uri(self.mlflow))
        _check_positive_int("batch_size", self.batch_size)
        _check_positive_int("prune_min_trials", self.prune_min_trials)
        _check_positive_int("warm_start_top", self.warm_start_top)
        if self.warm_start is not None and not str(self.warm_start).strip():
            raise SearchError(
                f"{option('warm_start')}: give the name of an earlier study, got an empty name"
            )
        if (
            isinstance(self.halving_rate, bool)
            or not isinstance(self.halving_rate, int)
            or (self.halving_rate < 2)
        ):
            raise SearchError(
                f"{option('halving_rate')} must be an integer >= 2, got {self.halving_rate!r}"
            )
        _check_pruning_options(self)
        for name in ("train_limit", "val_limit"):
            if getattr(self, name) is not None:
                _check_positive_int(name, getattr(self, name))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise SearchError(f"{option('seed')} must be an integer >= 0, got {self.seed!r}")
        if (
            isinstance(self.max_retries, bool)
            or not isinstance(self.max_retries, int)
            or (self.max_retries < 0)
        ):
            raise SearchError(
                f"{option('max_retries')} must be an integer >= 0, got {self.max_retries!r}"
            )
        from nasmlcn.study import parse_keep

        parse_keep(self.keep_weights)
        for name in ("timeout", "trial_timeout", "grace", "latency_budget"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and value > 0):
                raise SearchError(f"{option(name)} must be a number > 0, got {value!r}")
        if not -1.0 <= self.prune_threshold <= 1.0:
            raise SearchError(
                f"{option('prune_threshold')} must be in [-1, 1], got {self.prune_threshold!r}"
            )
        if not 0.0 < self.prune_percentile < 100.0:
            raise SearchError(
                f"{option('prune_percentile')} must be in (0, 100), got {self.prune_percentile!r}"
            )
        if not self.objectives:
            raise SearchError(
                f"{option('objectives')}: give at least one, e.g. accuracy or accuracy,latency"
            )
        if len(set(self.objectives)) != len(self.objectives):
            raise SearchError(
                f"{option('objectives')}: each may appear once, got {','.join(self.objectives)}"
            )
        if self.study is not None and not str(self.study).strip():
            raise SearchError(
                f"study name {self.study!r} is empty; give a name, or leave it out for one "
                "derived from the configuration"
            )

    @property
    def poll_seconds(self) -> float:
        """How often a waiting worker looks at the study again: an eighth of
        ``grace``, between 0.2 and 5 seconds."""
        return min(5.0, max(0.2, self.grace / 8))

    def identity(self) -> dict[str, Any]:
        """The fields a study's trials depend on (see :data:`IDENTITY_FIELDS`)."""
        data = self.to_dict()
        return {name: data[name] for name in IDENTITY_FIELDS}

    def identity_hash(self) -> str:
        text = json.dumps(self.identity(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    def study_name(self) -> str:
        """``--study``, or a readable name derived from the identity."""
        if self.study:
            return self.study
        space = Path(self.space).stem if self.space.endswith(".toml") else self.space
        objectives = "-".join(self.objectives)
        return f"{space}-{self.devices.replace(',', '+')}-{self.flops}-{objectives}-{self.evaluator}-{self.identity_hash()}"

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON data (stored on the study), its storage password hidden."""
        data = asdict(self)
        data.pop("extra")
        data["storage"] = redact_url(self.storage)
        data["mlflow"] = redact_url(self.mlflow) if self.mlflow else None
        if self.warm_start_storage:
            data["warm_start_storage"] = redact_url(self.warm_start_storage)
        data["objectives"] = list(self.objectives)
        data["schema_version"] = CONFIG_SCHEMA_VERSION
        return data

    def with_overrides(self, **overrides: Any) -> SearchConfig:
        """A copy with the non-None ``overrides`` applied."""
        given = {k: v for k, v in overrides.items() if v is not None}
        return replace(self, **given)


MAX_TRIALS = 1_000_000
"""The most trials a study may be asked to reach: more is no run's target but a typo."""


def _check_at_most(name: str, value: int, most: int, why: str) -> None:
    if value > most:
        raise SearchError(f"{option(name)} must be at most {most:,} ({why}), got {value:,}")


def _check_pruning_options(config: SearchConfig) -> None:
    """Pruning options that would do nothing, refused rather than silently dropped."""
    rate = config.halving_rate
    if config.pruner != "halving":
        if rate != _DEFAULT_HALVING_RATE:
            raise SearchError(
                f"{option('halving_rate')} {rate} sets the rungs of {option('pruner')} "
                f"halving, but the pruner is {config.pruner!r}; add {option('pruner')} "
                f"halving or drop {option('halving_rate')}"
            )
        return
    if not config.prune:
        raise SearchError(
            f"{option('pruner')} halving stops trials at its rungs, but --no-prune turns "
            f"pruning off; drop one of the two"
        )
    if config.epochs < 2:
        raise SearchError(
            f"{option('pruner')} halving needs {option('epochs')} >= 2: its rungs are at "
            f"epochs 1, {rate}, {rate * rate}, ... and a trial stops only at a rung before "
            f"its last epoch; with {config.epochs} epoch there is none"
        )


def _check_positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SearchError(f"{option(name)} must be an integer >= 1, got {value!r}")


_FIELD_NAMES = {f.name for f in fields(SearchConfig) if f.name != "extra"}
_DEFAULT_HALVING_RATE = next(f.default for f in fields(SearchConfig) if f.name == "halving_rate")
_FLOAT_FIELDS = {
    "timeout",
    "trial_timeout",
    "grace",
    "latency_budget",
    "prune_threshold",
    "prune_percentile",
}


WORKERS_PER_GPU_ENV = "NASMLCN_WORKERS_PER_GPU"
"""The environment variable that tells a worker how many workers share its GPU
(``run_workers`` sets it in each worker it puts on a GPU; set it by hand for workers
started by hand on one GPU). Unset: the worker has its GPU to itself."""


def workers_per_gpu() -> int:
    """The workers sharing this process's GPU (``$NASMLCN_WORKERS_PER_GPU``, 1 if unset).

    Raises:
        SearchError: The variable is set to anything but an integer >= 1.
    """
    given = os.environ.get(WORKERS_PER_GPU_ENV, "").strip()
    if not given:
        return 1
    if not given.isdigit() or int(given) < 1:
        raise SearchError(f"{WORKERS_PER_GPU_ENV} must be an integer >= 1, got {given!r}")
    return int(given)


def _option_name(key: str) -> str:
    """A recipe key's option name (``train-limit`` is ``train_limit``)."""
    return key.replace("-", "_")


_RECIPE_KEYS = (*sorted(_FIELD_NAMES), "description", "schema_version", "sweep", "reproduce")
"""The top-level keys of a recipe: the options, its description, ``[sweep]`` (whose
keys are options) and ``[reproduce]`` (read by ``nasmlcn reproduce``, not here)."""


def config_from_mapping(
    data: Mapping[str, Any], origin: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Search options and the recipe's ``[sweep]`` table from a parsed recipe.

    Keys are the option names with ``-`` or ``_`` (``train-limit``).

    Raises:
        SearchError: Unknown key ("did you mean", with the known ones), at the top
            level or in ``[sweep]``, or a value of the wrong kind.
    """
    options: dict[str, Any] = {}
    sweep: dict[str, Any] = {}
    check_keys(data, _RECIPE_KEYS, origin, SearchError, fold=_option_name)
    for key, value in data.items():
        name = _option_name(key)
        if name == "sweep":
            if not isinstance(value, Mapping):
                raise SearchError(f"{origin}: [sweep] must be a table of option = [values]")
            check_keys(
                value,
                sorted(_FIELD_NAMES),
                origin,
                SearchError,
                inside="[sweep]",
                fold=_option_name,
            )
            for skey, values in value.items():
                if not isinstance(values, list) or not values:
                    raise SearchError(f"{origin}: sweep.{skey} must list the values to sweep")
                sweep[_option_name(skey)] = values
            continue
        if name in ("description", "schema_version", "reproduce"):
            continue
        if name in _FLOAT_FIELDS and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if name == "objectives" and isinstance(value, list):
            value = tuple(value)
        options[name] = value
    return options, sweep


def load_recipe(path: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Reads a study recipe (TOML): its options, its sweep, and its description.

    Raises:
        SearchError: Missing, unreadable or invalid file (the message names it).
    """
    data = read_toml(path, "recipe", SearchError)
    reproduce = data.get("reproduce")
    engine = reproduce.get("engine") if isinstance(reproduce, Mapping) else "search"
    if engine != "search":
        name = Path(path).stem
        raise SearchError(
            f"recipe {str(path)!r} is not a search: it reproduces a seed result with"
            f" benchmarks/{engine}.py; run it with 'nasmlcn reproduce {name}'"
        )
    options, sweep = config_from_mapping(data, f"recipe {str(path)!r}")
    return options, sweep, str(data.get("description", ""))
