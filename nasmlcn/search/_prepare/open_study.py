"""Opening a search's study: tell the observers the configuration is good, open the
storage, and create the study (warm-started) or load it after checking that it was
made with the same identity (the configuration fields of
:data:`~nasmlcn.search.IDENTITY_FIELDS` and the search space's content).

What a call of :func:`run_search` or :func:`run_workers` checks and quiets before
the search starts:

- The study storage must be named: the library creates no file or folder the
  caller did not ask for (``nasmlcn search`` names ``sqlite:///studies/nasmlcn.db``
  when the user names none) (:func:`require_storage`).
- ``SearchConfig.mlflow`` asks for an experiment tracker: the caller makes it
  (``nasmlcn.tracking.MlflowObserver``, as ``nasmlcn search --mlflow`` does) and
  passes it among the observers; the search imports nothing of the tracking, and
  refuses a config whose tracker is missing (:func:`require_tracker`).
- Optuna's own log lines ("A new study created in RDB ...") stay quiet for the
  call; the caller's Optuna verbosity is restored after it (:func:`quiet_optuna`).
"""

from __future__ import annotations

import json
import re
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn._storage_url import redact_url
from nasmlcn._version import versions
from nasmlcn.errors import NasmlcnError, SearchError, option
from nasmlcn.search._config import SearchConfig
from nasmlcn.search._prepare.setup import SearchSetup
from nasmlcn.search._prepare.warm import WarmStart, load_source, warm_start
from nasmlcn.search._run.observer import SearchObserver
from nasmlcn.search.evaluators._base import EVALUATORS
from nasmlcn.search.samplers._base import SAMPLERS
from nasmlcn.search.spaces import space_changes
from nasmlcn.study import StudyRecord, hold, open_storage, redact_stored_url

if TYPE_CHECKING:
    import optuna


def open_study(
    setup: SearchSetup, storage: optuna.storages.BaseStorage, sampler: Any
) -> tuple[optuna.Study, bool]:
    """Creates the study, or loads it after checking it was made with this identity.

    Raises:
        SearchError: The name exists with another configuration (naming the
            fields that differ) or was not made by nasmlcn.
    """
    import optuna
    from optuna.study import StudyDirection

    config = setup.config
    name = config.study_name()
    existing = {s.study_name: s for s in storage.get_all_studies()}
    if name not in existing and config.study is None:
        name = _spelled_otherwise(setup, existing) or name
    if name in existing:
        stored = StudyRecord.read(existing[name])
        if stored.identity is None:
            raise SearchError(
                f"study {name!r} exists but was not made by nasmlcn search; choose another ‹study›"
            )
        _check_same_data(name, stored, setup)  # before the fields: it says more
        differing = _differences(stored, setup)
        if differing:
            raise SearchError(
                f"study {name!r} was made with another configuration: "
                + "; ".join(differing)
                + ". Leave those options out to continue it with its own settings, or give "
                "another ‹study›"
            )
        _check_same_devices_and_seed(name, stored, setup)
        # The space file's content is part of the identity: an edited range would
        # mix two spaces in one study (or break the sampler on a changed choice).
        changed = space_changes(stored.space, setup.space.describe())
        if changed:
            raise SearchError(
                f"study {name!r} was made with another search space: "
                + ", ".join(changed)
                + f". Restore {setup.space.source!r} to continue it, or use another ‹study›"
            )
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
        redact_stored_url(study)
        return study, True
    study = optuna.create_study(
        study_name=name,
        storage=storage,
        sampler=sampler,
        directions=[
            StudyDirection.MAXIMIZE if d == "maximize" else StudyDirection.MINIMIZE
            for d in setup.directions
        ],
    )
    study.set_metric_names(setup.metric_names)
    _record(setup).write(study)
    return study, False


def _record(setup: SearchSetup) -> StudyRecord:
    """What a new study of ``setup`` stores (:class:`StudyRecord`)."""
    config = setup.config
    return StudyRecord(
        made_by_nasmlcn=True,
        identity=config.identity(),
        config=config.to_dict(),
        data_record=setup.dataset.identity.to_dict(),
        objectives=tuple(config.objectives),
        metric_names=tuple(setup.metric_names),
        accuracy_is_proxy=not EVALUATORS.get(config.evaluator).measured,
        space=setup.space.describe(),
        devices=tuple(d.to_dict() for d in setup.devices),
        cost_model=setup.cost_model.name,
        time_unit=setup.cost_model.time_unit,
        versions=versions(),
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )


def _differences(stored: StudyRecord, setup: SearchSetup) -> list[str]:
    """The identity fields a stored study was made with otherwise, as ``key 'then'
    (now 'now')``. The fields several texts spell alike are compared by what they
    mean: ``8xk80`` is ``8xK80``, ``2xK80`` is ``1xK80,1xK80`` and ``12GB`` is
    ``12000MB`` (the same devices, one by one), ``1.0x`` is ``1x``, ``./my.toml`` is
    ``my.toml`` (the same file name and content)."""
    then = stored.identity or {}
    now = json.loads(json.dumps(setup.config.identity()))
    alike = _alike(stored, setup)
    return [
        f"{key} {then.get(key)!r} (now {value!r})"
        for key, value in now.items()
        if then.get(key) != value and key not in alike
    ]


def _alike(stored: StudyRecord, setup: SearchSetup) -> set[str]:
    """Which of the spelled fields (devices, mem, flops, space) mean for ``stored``
    what they mean now."""
    from nasmlcn.planning import parse_flops

    then = stored.identity or {}
    alike = set()
    if stored.devices == tuple(d.to_dict() for d in setup.devices):
        alike |= {"devices", "mem"}
    flops = then.get("flops")
    try:
        if flops is not None and replace(parse_flops(flops), text="") == replace(
            setup.flops, text=""
        ):
            alike.add("flops")
    except NasmlcnError:
        pass
    if (
        stored.same_data(setup.dataset.identity)
        and then.get("image_size") == setup.config.image_size
    ):
        alike.add("dataset")  # a user's data found at another path (another machine)
    space = str(then.get("space"))
    if Path(space).name == Path(setup.config.space).name and not space_changes(
        stored.space, setup.space.describe()
    ):
        alike.add("space")
    return alike


def _spelled_otherwise(setup: SearchSetup, existing: dict[str, Any]) -> str | None:
    """The study a derived name would have found had the options been spelled as
    when it was made (see :func:`_differences`): without it, ``--devices 8xk80``
    would start a second study beside the ``8xK80`` one.

    Raises:
        SearchError: Several studies are this one spelled otherwise.
    """
    found = []
    for name, frozen in existing.items():
        stored = StudyRecord.read(frozen)
        if stored.identity is not None and not _differences(stored, setup):
            found.append(name)
    if len(found) > 1:
        raise SearchError(
            f"studies {', '.join(map(repr, sorted(found)))} were all made with these options, "
            "spelled otherwise; choose one with ‹study›"
        )
    return found[0] if found else None


def _check_same_devices_and_seed(name: str, stored: StudyRecord, setup: SearchSetup) -> None:
    """A study goes on with the devices it was made for (a device file edited since
    would change every prediction, and the space's choices) and with its seed (it
    draws the train/validation split and each model's training seed).

    Raises:
        SearchError: A device's figures or the seed differ, naming them.
    """
    then = stored.devices
    now = [d.to_dict() for d in setup.devices]
    if then is not None and len(then) == len(now):
        differing = [
            f"{b['name']} {key} {a[key]!r} (now {b[key]!r})"
            for a, b in zip(then, now, strict=True)
            for key in b
            if key in a and a[key] != b[key]
        ]
        if differing:
            source = f"the device file {str(setup.config.device_file)!r}"
            raise SearchError(
                f"study {name!r} was made with other devices: {'; '.join(differing[:4])}. "
                f"Restore {source if setup.config.device_file else 'the catalog'} to "
                "continue it, or use another ‹study›"
            )
    seed = stored.seed
    if seed is not None and seed != setup.config.seed:
        raise SearchError(
            f"study {name!r} was made with ‹seed› {seed} (now {setup.config.seed}): the seed "
            f"draws the train/validation split and each model's training seed. Continue "
            f"with ‹seed› {seed}, or use another ‹study›"
        )


def _check_same_data(name: str, stored: StudyRecord, setup: SearchSetup) -> None:
    """A study goes on with the data it was made on: a user's folder or ``.npz``
    changed since (images added, relabelled, resized) would mix two datasets' results.

    Raises:
        SearchError: The stored record's content hash differs from this data's.
    """
    now = setup.dataset.identity
    if stored.data_record is None or stored.same_data(now):
        return
    raise SearchError(
        f"study {name!r} was made on other data: {stored.data.describe()} (now "
        f"{now.describe()}); continue it on that data (a worker may give its path with "
        f"{option('dataset')}), or use another {option('study')}"
    )


@dataclass(frozen=True)
class OpenedSearch:
    """A search ready to run: its checked setup (with the devices' own cost model),
    its study, whether the study existed, and the warm start that filled a new one."""

    setup: SearchSetup
    study: optuna.Study
    resumed: bool
    warmed: WarmStart | None = None


def open_search(setup: SearchSetup, observer: SearchObserver) -> OpenedSearch:
    """Opens the search of a checked ``setup``, in one straight line: the warm-start
    source is checked, the observers are told the configuration is good (the one
    hook whose error stops the search, before anything is written), the storage is
    opened, and the study is created or loaded (taking turns with workers started
    at the same moment); a study this call created is warm-started before any
    worker may take a trial, and deleted again should that fail: nothing is left
    half-made.

    Raises:
        NasmlcnError: A bad warm-start source or storage, or an observer that
            cannot start (before the study is written).
    """
    config = setup.config
    if config.warm_start is not None:  # refused before the storage is written
        load_source(setup, config.warm_start, config.warm_start_storage)
    observer.on_checked(setup)
    storage = open_storage(config.storage, grace=config.grace)
    storage.hide_dashboard = True  # the samplers need no notes or figures
    sampler = SAMPLERS.get(config.sampler).make(config.seed, config.trials)
    warmed = None
    with hold(storage):  # workers started together create the study once
        study, resumed = open_study(setup, storage, sampler)
        if config.warm_start is not None and not resumed:
            try:
                warmed = warm_start(
                    setup, study, config.warm_start, config.warm_start_storage,
                    config.warm_start_top,
                )  # fmt: skip
            except BaseException:
                import optuna

                optuna.delete_study(study_name=study.study_name, storage=storage)
                raise
    observer.on_study(study)
    return OpenedSearch(setup, study, resumed, warmed)


def require_storage(config: SearchConfig) -> None:
    """Refuses a config that names no storage (before anything is written).

    Raises:
        SearchError: ``config.storage`` is empty, or an in-memory SQLite database (the
            study would be gone when the search ends, and each worker would keep its
            own).
    """
    if not config.storage.strip():
        raise SearchError(
            "SearchConfig.storage is not set: name the study's storage, e.g. "
            "storage='sqlite:///studies/nasmlcn.db' (what nasmlcn search uses by default)"
        )
    if _IN_MEMORY.match(config.storage.strip()):
        raise SearchError(
            f"{option('storage')} {config.storage!r} is an in-memory SQLite database: the "
            "study would be gone when the search ends (and each worker would keep its own); "
            "give a file, e.g. sqlite:///studies/nasmlcn.db"
        )


_IN_MEMORY = re.compile(r"sqlite(\+\w+)?://(/(:memory:)?)?(\?.*)?$")
"""An SQLite URL with no file (``sqlite://``, ``sqlite:///``, ``sqlite:///:memory:``)."""


def require_tracker(config: SearchConfig, observers: Sequence[SearchObserver]) -> None:
    """Refuses a config whose ``mlflow`` names a tracking URI that no observer logs
    to (before anything is written): the search makes no tracker of its own.

    Raises:
        SearchError: ``config.mlflow`` is set and no observer's ``tracking_uri`` is it.
    """
    if config.mlflow and not any(o.tracking_uri == config.mlflow for o in observers):
        raise SearchError(
            f"{option('mlflow')} {redact_url(config.mlflow)!r} asks for MLflow tracking, but "
            "no tracker watches this search: pass observers=[MlflowObserver(config.mlflow)] "
            "(nasmlcn.tracking)"
        )


@contextmanager
def quiet_optuna() -> Iterator[None]:
    """Optuna logs warnings only, for the block (a library call prints nothing of
    its own), and says nothing of the features a search is built on; the caller's
    verbosity and warning filters come back after it (a decorator too)."""
    import optuna

    before = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(max(before, optuna.logging.WARNING))
    try:
        with warnings.catch_warnings():
            # Heartbeats with ask-and-tell and metric names are "experimental" in
            # Optuna; they are what the runner is built on, so the warnings say nothing
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            warnings.filterwarnings("ignore", message="Heartbeat of storage")
            yield
    finally:
        optuna.logging.set_verbosity(before)
