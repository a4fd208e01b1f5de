"""Opening an existing study for reading (``best``, ``correlate``, ``export``)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from nasmlcn.search._storage import open_storage, study_names, unknown_study

if TYPE_CHECKING:
    import optuna


def load_existing_study(name: str | None, url: str) -> optuna.Study:
    """The study ``name`` in ``url`` (the only study there when ``name`` is None).

    Raises:
        StorageError: Bad URL, missing database file, or no such study (with the
            names that are there).
    """
    import optuna

    from nasmlcn.errors import StorageError

    storage = open_storage(url, create=False, heartbeat=False)
    names = study_names(storage)
    if name is None:
        if len(names) != 1:
            listing = ", ".join(names) if names else "none"
            raise StorageError(f"give --study; the studies in {url} are: {listing}")
        name = names[0]
    if name not in names:
        raise unknown_study(name, storage, url)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return optuna.load_study(study_name=name, storage=storage)


def study_info(study: optuna.Study) -> dict[str, Any]:
    """What nasmlcn stored on the study (empty for foreign studies)."""
    info = study.user_attrs.get("nasmlcn")
    return info if isinstance(info, dict) else {}


def metric_names(study: optuna.Study) -> list[str]:
    names = study.metric_names
    if names is None:
        names = study_info(study).get("metric_names") or [
            f"objective{i}" for i in range(len(study.directions))
        ]
    return list(names)
