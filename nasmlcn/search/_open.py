"""Opening a search's study: check the configuration, open the storage, and create
the study or load it after checking that it was made with the same identity (the
configuration fields of :data:`~nasmlcn.search.IDENTITY_FIELDS` and the search space's
content)."""

from __future__ import annotations

import functools
import platform
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nasmlcn._version import version
from nasmlcn.errors import SearchError
from nasmlcn.search._config import SearchConfig
from nasmlcn.search._evaluator import EVALUATORS
from nasmlcn.search._samplers import SAMPLERS
from nasmlcn.search._setup import SearchSetup, setup_search
from nasmlcn.search.spaces import space_changes
from nasmlcn.study import frozen_info, hold, open_storage, redact_stored_url, write_study_info

if TYPE_CHECKING:
    import optuna


@functools.lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    """Versions worth keeping with every result."""
    import optuna

    out = {
        "nasmlcn": version(),
        "optuna": optuna.__version__,
        "python": platform.python_version(),
    }
    try:
        import importlib.metadata

        out["torch"] = importlib.metadata.version("torch")
    except Exception:  # pragma: no cover - torch missing
        pass
    return out


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
    if name in existing:
        stored = frozen_info(existing[name])
        if stored is None or "identity" not in stored:
            raise SearchError(
                f"study {name!r} exists but was not made by nasmlcn search; choose another ‹study›"
            )
        differing = [
            f"{key} {stored['identity'].get(key)!r} (now {value!r})"
            for key, value in config.identity().items()
            if stored["identity"].get(key) != value
        ]
        if differing:
            raise SearchError(
                f"study {name!r} was made with another configuration: "
                + "; ".join(differing)
                + ". Use the same options to continue it, or another ‹study›"
            )
        # The space file's content is part of the identity: an edited range would
        # mix two spaces in one study (or break the sampler on a changed choice).
        changed = space_changes(stored.get("space"), setup.space.describe())
        if changed:
            raise SearchError(
                f"study {name!r} was made with another search space: "
                + ", ".join(changed)
                + f". Restore {setup.space.source!r} to continue it, or use another ‹study›"
            )
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
        redact_stored_url(study, stored)
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
    write_study_info(
        study,
        {
            "identity": config.identity(),
            "config": config.to_dict(),
            "objectives": list(config.objectives),
            "metric_names": setup.metric_names,
            "evaluator": config.evaluator,
            "accuracy_is_proxy": not getattr(EVALUATORS.get(config.evaluator), "measured", True),
            "space": setup.space.describe(),
            "devices": [d.to_dict() for d in setup.devices],
            "cost_model": setup.cost_model.name,
            "time_unit": setup.cost_model.time_unit,
            "versions": versions(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    )
    return study, False


def open_search(
    config: SearchConfig,
    checked: Callable[[SearchSetup], None] | None = None,
    created: Callable[[SearchSetup, optuna.Study], None] | None = None,
) -> tuple[SearchSetup, optuna.Study, bool]:
    """Checks ``config``, opens its storage and creates or loads its study (taking
    turns with workers started at the same moment); also whether it existed.
    ``checked`` is called with the setup once the configuration is checked, before
    the storage is opened (the caller checks what else it needs and opens its
    experiment tracker there); ``created`` with the new study when this call made
    it, before other workers may take a trial (the warm start). Should ``created``
    raise, the study it made is deleted again: nothing is left half-made.

    Raises:
        NasmlcnError: Invalid configuration or storage (before anything is written).
    """
    setup = setup_search(config)
    if checked is not None:
        checked(setup)
    storage = open_storage(config.storage, grace=config.grace)
    storage.hide_dashboard = True  # the samplers need no notes or figures
    with hold(storage):  # workers started together create the study once
        study, resumed = open_study(
            setup, storage, SAMPLERS.get(config.sampler).make(config.seed, config.trials)
        )
        if created is not None and not resumed:
            try:
                created(setup, study)
            except BaseException:
                import optuna

                optuna.delete_study(study_name=study.study_name, storage=storage)
                raise
    return setup, study, resumed
