"""A search's description: :class:`SearchConfig`, everything one ``nasmlcn search``
needs, as a frozen dataclass; its fields' settings; and the limits of a run.

A config comes from command-line options, from a recipe file
(``--config studies/NAME.toml``) with the same keys, or both: options given on
the command line override the file. The fields that change what a trial's
numbers mean (devices, space, dataset, epochs, cost model, objectives, ...) form
the config's *identity*: a study keeps the identity it was created with, and a
study name reused with another identity is refused.

Each field is declared once, with :func:`~nasmlcn._setting.setting` (the neutral
:mod:`nasmlcn._setting`, shared with ``TrainConfig``): its default, the help of its
option and, for a number, its range. ``nasmlcn search`` makes its options from them
(``nasmlcn.cli._config_options``: flag, help text, stated range and default), and
``__post_init__`` checks every range, whichever way the value came (option, recipe or
Python), with :func:`check_ranges`: an error that names the option, a
:class:`~nasmlcn.errors.SearchError` here.

The limits of a run (:data:`REPEATS_IN_A_ROW`, :data:`FALLBACK_AFTER`,
:data:`FAILURES_IN_A_ROW`): when it stops asking, and when it gives a random proposal
a chance (the config quotes them in ``--trials``' help; the loop keeps them).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from nasmlcn._setting import SEED_RANGE, Range, parse_durations, setting
from nasmlcn._setting import check_ranges as check_any_ranges
from nasmlcn._storage_url import STORAGE_HELP, redact_url
from nasmlcn.errors import SearchError, option
from nasmlcn.registry import names_of
from nasmlcn.training import MAX_EPOCHS

REPEATS_IN_A_ROW = 25
"""Proposals in a row that were all repeats, after which a run stops: the sampler has
nothing new to propose (a converged search, or a space with few models)."""

FALLBACK_AFTER = 2
"""Repeats in a row after which a run's next proposal comes from a random sampler
(seeded as the trial's own), not the study's: a GP or TPE sampler that proposed a
model already trained twice in a row is likely to do so again."""

FAILURES_IN_A_ROW = 10
"""A worker stops after this many trials in a row failed (failures do not count
toward the trial target, so a space where every candidate fails would never end)."""


def check_ranges(config: Any) -> None:
    """Refuses any field of ``config`` outside its :class:`Range` with a
    :class:`~nasmlcn.errors.SearchError` (a None is taken where the field may be
    None: its default is)."""
    check_any_ranges(config, SearchError)


CONFIG_SCHEMA_VERSION = 1

IDENTITY_FIELDS = (
    "devices",
    "mem",
    "flops",
    "space",
    "objectives",
    "evaluator",
    "dataset",
    "image_size",
    "epochs",
    "train_limit",
    "val_limit",
    "batch_size",
    "cost_model",
    "latency_budget",
)
"""Fields that must match to continue a study (the rest may change between runs).
``image_size`` is part of it only when given (studies made before it keep their
names). A user's dataset is compared by its content too (the study's stored
dataset record), so that a worker may find it at another path."""


MAX_TRIALS = 1_000_000
"""The most trials a study may be asked to reach: more is no run's target but a typo."""


def _cost_models() -> list[str]:
    """The cost model names (read when ``--help`` is made)."""
    from nasmlcn.costs import COST_MODELS

    return list(COST_MODELS)


@dataclass(frozen=True)
class SearchConfig:
    """One search: every option of ``nasmlcn search``, frozen.

    Each field's default, help and range are written once, in its ``setting(...)``
    below: ``nasmlcn search --help`` prints them, and the CLI's options are made
    from them. What one line of help cannot say:

    - ``storage`` is required by :func:`run_search` (the library creates no file the
      caller did not name); ``nasmlcn search`` gives :data:`DEFAULT_STORAGE` when
      neither ``--storage`` nor ``$NASMLCN_STORAGE`` names one. ``to_dict`` hides
      its password.
    - The fields of :data:`IDENTITY_FIELDS` name the study; the others (pruning,
      time limits, warm start, tracking, where training runs) may change between
      runs of one study.
    - ``timeout`` stops the running trial within a batch, as Ctrl-C does (FAIL,
      queued again, resumed by a re-run; never PRUNED); ``trial_timeout`` stops a
      trial at an epoch boundary, PRUNED with its epochs kept.
    - ``mlflow`` asks for a tracker among :func:`run_search`'s observers
      (:mod:`nasmlcn.tracking`).
    """

    devices: str = setting("8xK80", "Target devices, e.g. 8xK80 or 1xK80,1xV100")
    mem: str | None = setting(None, "Memory of every device, e.g. 12GB")
    flops: str = setting(
        "1x",
        "Per-device load limit: a multiple of the thesis baseline (1x, 4x) or FLOPs per "
        "image (2.4G)",
    )
    space: str = setting("mlcn-buckets", "Search space name or .toml path")
    # the samplers' names, read when --help is made (SAMPLERS sits on a floor above)
    sampler: str = setting("tpe", "{choices}", choices=names_of("sampler"))
    objectives: tuple[str, ...] = setting(
        ("accuracy",),
        "accuracy[,latency,inference,memory,params,energy]; several make a Pareto study. "
        "latency: predicted training step time of the lanes (the placement makespan; the "
        "head is left out); inference: predicted per-image inference latency (batch 1); energy: per inference on CapsAcc (--devices capsacc)",
    )
    evaluator: str = setting("train", "train (real training) or proxy (analytic stand-in)")
    dataset: str = setting(
        "fashion-mnist",
        "A built-in dataset (nasmlcn data list), or your own images: a folder of class folders "
        "(PNG, JPEG, BMP; optionally in train/ and test/) or an .npz with x_train, y_train "
        "[, x_test, y_test]; a value with a '/' or ending in .npz is a path",
        metavar="NAME|PATH",
    )
    data_dir: str | None = setting(
        None,
        "Data directory: the built-ins' files and the cache of decoded user datasets",
        path=True,
        shown_default="$NASMLCN_DATA_DIR or ~/.cache/nasmlcn/data",
    )
    image_size: str | int | None = setting(
        None,
        "Resize your own images to N or HxW pixels (bilinear, stretched: the aspect ratio is "
        "not kept); needed when their sizes differ",
        shown_default="as they are",
        metavar="N|HxW",
    )
    epochs: int = setting(
        10,
        "Epochs per trial",
        range=Range(1, MAX_EPOCHS, integer=True, why="the thesis trains 10 to 100"),
    )
    train_limit: int | None = setting(
        None, "Training images per epoch", range=Range(1, integer=True), shown_default="all"
    )
    val_limit: int | None = setting(
        None, "Validation images", range=Range(1, integer=True), shown_default="all held out"
    )
    batch_size: int = setting(100, "Batch size", range=Range(1, integer=True))
    trials: int = setting(
        20,
        "Models the study should look at (trained, or pruned); re-running continues. A "
        "proposal of a model already trained or pruned takes its result (a repeat: no "
        "training, recorded for the sampler) and the run asks again; repeats count here only "
        f"with --count-repeats, and a run stops after {REPEATS_IN_A_ROW} repeats in a row",
        range=Range(1, MAX_TRIALS, integer=True, why="a million 1-second trials take 12 days"),
    )
    count_repeats: bool = setting(
        False,
        "Whether repeats count toward --trials. By default --trials counts models: every "
        "counted trial trains (or prunes) a model the study had not; --count-repeats counts "
        "every proposal (each trial then trains a new model or takes a result)",
        shown_default="they do not",
    )
    timeout: float | None = setting(
        None,
        "Stop the search after this many seconds: no new trial, and the running one stops "
        "within a batch, as Ctrl-C stops it (FAIL, queued again; a re-run resumes it)",
        range=Range(0.0, low_open=True, finite=True),
    )
    trial_timeout: float | None = setting(
        None,
        "Stop a trial at the first epoch boundary after this many seconds: PRUNED, with the "
        "reason; its epochs are kept",
        range=Range(0.0, low_open=True, finite=True),
    )
    grace: float = setting(
        120.0,
        "Seconds without a heartbeat after which a running trial's worker counts as dead: "
        "its trial is failed and queued again",
        range=Range(1.0, finite=True),
    )
    max_retries: int = setting(
        3,
        "Times a trial whose worker died (or that Ctrl-C stopped) is queued again",
        range=Range(0, integer=True),
    )
    replicate_after: int = setting(
        8,
        "Measure the noise of one training run: once the study has this many completed "
        "models, the best so far trains once more with another seed (a replicate: not a "
        "trial, never counted, never replacing the trial's figure; once per study, workers "
        "included); reports then mark the models within noise of the best. 0: off. Only "
        "real training (the proxy has no noise)",
        range=Range(0, integer=True),
    )
    artifacts: str | None = setting(
        None,
        "Folder for trial checkpoints and weights (Optuna artifacts)",
        shown_default="artifacts/ beside a SQLite study file, else studies/artifacts",
        path=True,
    )
    keep_weights: str = setting(
        "best:5",
        "Which finished trials keep their weights: best:K (the Pareto front, or the best "
        "K of one objective: the trials nasmlcn best can still export), pareto (the front, "
        "or the best one) or all; a running trial keeps its resume checkpoint",
    )
    prune: bool = setting(True, "Correlation-gated pruning of weak trials", shown_default="on")
    prune_threshold: float = setting(
        0.9,
        "Prune at an epoch only once its Spearman rho with the last epoch reaches this",
        range=Range(-1.0, 1.0),
    )
    prune_percentile: float = setting(
        50.0,
        "Prune trials below this percentile of the finished ones",
        range=Range(0.0, 100.0, low_open=True, high_open=True),
    )
    prune_min_trials: int = setting(
        5, "Finished trials needed before pruning starts", range=Range(1, integer=True)
    )
    pruner: str = setting(
        "correlation",
        "The pruning rule: correlation (stops trials expected to be dominated) or halving "
        "(successive halving over epochs: multi-fidelity, tries more candidates for the same "
        "compute)",
    )
    halving_rate: int = setting(
        3,
        "With --pruner halving: rungs at epochs 1, R, R^2, ... keep the best 1/R",
        range=Range(2, integer=True),
    )
    warm_start: str | None = setting(
        None,
        "Start a new study from an earlier one (other devices or --mem welcome): its best "
        "architectures are the first trials, refit to these devices, and where the parameters "
        "and training match, its trials are data for the sampler",
        metavar="STUDY",
    )
    warm_start_storage: str | None = setting(
        None, "Storage URL of the --warm-start study", shown_default="--storage"
    )
    warm_start_top: int = setting(
        5, "How many of the earlier study's best trials to queue", range=Range(1, integer=True)
    )
    storage: str = setting("", STORAGE_HELP)
    study: str | None = setting(None, "Study name", shown_default="derived from the configuration")
    run_on: str = setting("auto", "Where training runs: auto, cpu or cuda:0,...")
    seed: int = setting(0, "Seed", range=SEED_RANGE)
    cost_model: str = setting("analytic", "{choices}", choices=_cost_models)
    latency_budget: float | None = setting(
        None,
        "Constraint: predicted step time at most this, with its unit: 5ms, 0.005s",
        range=Range(0.0, low_open=True, finite=True),
        duration=True,
        metavar="TIME",
    )
    device_file: str | None = setting(None, "Extra device catalog (TOML)", path=True)
    calibration: str | None = setting(
        None, "Calibration file of the calibrated cost model", path=True
    )
    mlflow: str | None = setting(
        None,
        "Log every trial to MLflow at this tracking URI (a folder, sqlite:///mlflow.db, "
        "http://host:5000): one run per trial under one parent run per study. Needs "
        "pip install 'nasmlcn[tracking]'",
    )
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        objectives = self.objectives
        if isinstance(objectives, str):
            given = objectives
            objectives = tuple(o.strip() for o in objectives.split(","))
            if given.strip() and not all(objectives):  # "accuracy," as "--devices 8xK80,"
                raise SearchError(
                    f"{option('objectives')}: an empty name in {given!r}; give names "
                    "separated by commas, e.g. accuracy or accuracy,latency"
                )
            objectives = tuple(o for o in objectives if o)
        object.__setattr__(self, "objectives", tuple(objectives))
        parse_durations(self, SearchError)  # --latency-budget 5ms: seconds from here on
        check_ranges(self)  # every number within the range its field declares
        _canonical_data(self)
        if self.mlflow is not None:  # a URI MLflow cannot open is refused here, not mid-run
            from nasmlcn._tracking_uri import check_tracking_uri

            object.__setattr__(self, "mlflow", check_tracking_uri(self.mlflow))
        if self.warm_start is not None and not str(self.warm_start).strip():
            raise SearchError(
                f"{option('warm_start')}: give the name of an earlier study, got an empty name"
            )
        _check_pruning_options(self)
        from nasmlcn.study import parse_keep

        parse_keep(self.keep_weights)
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
        if self.study is not None and not str(self.study).isprintable():
            raise SearchError(
                f"study name {self.study!r} holds a control character (a tab or a line "
                "break): give a name of printable characters"
            )

    @property
    def poll_seconds(self) -> float:
        """The longest a waiting worker goes without looking at the study again: an
        eighth of ``grace``, between 0.2 and 5 seconds (see
        :func:`nasmlcn.search._run.repeats.waits`)."""
        return min(5.0, max(0.2, self.grace / 8))

    def identity(self) -> dict[str, Any]:
        """The fields a study's trials depend on (see :data:`IDENTITY_FIELDS`)."""
        data = self.to_dict()
        identity = {name: data[name] for name in IDENTITY_FIELDS}
        if identity["image_size"] is None:  # as before image sizes, so the names stay
            del identity["image_size"]
        return identity

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

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchConfig:
        """The config :meth:`to_dict` wrote (as a study stores it; its storage
        password stays hidden).

        Raises:
            SearchError: A newer schema, or a key that is not a field.
        """
        given = dict(data)
        check_schema_version(given.pop("schema_version", CONFIG_SCHEMA_VERSION), "SearchConfig")
        unknown = sorted(set(given) - ({f.name for f in fields(cls)} - {"extra"}))
        if unknown:
            raise SearchError(f"unknown SearchConfig keys: {', '.join(unknown)}")
        return cls(**given)

    def with_overrides(self, **overrides: Any) -> SearchConfig:
        """A copy with the non-None ``overrides`` applied."""
        given = {k: v for k, v in overrides.items() if v is not None}
        return replace(self, **given)


def _canonical_data(config: SearchConfig) -> None:
    """A dataset path made absolute (the study records where its data was read; a
    relative path would mean another folder from another one) and the image size
    spelled ``HxW``, as :meth:`DatasetInfo.spell <nasmlcn.data.DatasetInfo.spell>`
    works them out: once per value, not again for each copy of the config (every
    ``replace`` makes one) nor when the search opens the data.

    Raises:
        SearchError: An image size that is no size, or one for a built-in dataset.
    """
    from nasmlcn.data import DatasetInfo
    from nasmlcn.errors import DatasetError, nested

    if not isinstance(config.dataset, str):
        return
    try:
        spelled = DatasetInfo.spell(config.dataset, config.image_size)
    except DatasetError as err:
        raise SearchError(nested(err)) from None
    if spelled.image_size is not None and not spelled.path:
        raise SearchError(
            f"{option('image_size')} resizes your own images (a folder or .npz given as "
            f"{option('dataset')} PATH); {config.dataset!r} is a built-in dataset"
        )
    object.__setattr__(config, "dataset", spelled.dataset)
    object.__setattr__(config, "image_size", spelled.image_size)


def check_schema_version(value: Any, origin: str) -> None:
    """A config or recipe written for a newer nasmlcn is refused: its keys may mean
    more than this one reads."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SearchError(f"{origin}: schema_version must be an integer >= 1, got {value!r}")
    if value > CONFIG_SCHEMA_VERSION:
        raise SearchError(
            f"{origin}: schema_version {value} is newer than this nasmlcn reads "
            f"({CONFIG_SCHEMA_VERSION}); upgrade nasmlcn"
        )


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
            f"{option('pruner')} halving stops trials at its rungs, but {option('prune')} is "
            "off; drop one of the two"
        )
    if config.epochs < 2:
        raise SearchError(
            f"{option('pruner')} halving needs {option('epochs')} >= 2: its rungs are at "
            f"epochs 1, {rate}, {rate * rate}, ... and a trial stops only at a rung before "
            f"its last epoch; with {config.epochs} epoch there is none"
        )


_DEFAULT_HALVING_RATE = next(f.default for f in fields(SearchConfig) if f.name == "halving_rate")


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
