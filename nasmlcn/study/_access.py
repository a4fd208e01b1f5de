"""Opening an existing study for reading (``best``, ``correlate``, ``export``)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from nasmlcn._storage_url import redact_url
from nasmlcn.study._storage import open_storage, study_names, unknown_study

if TYPE_CHECKING:
    import optuna


def load_existing_study(name: str | None, url: str, *, read_only: bool = True) -> optuna.Study:
    """The study ``name`` in ``url`` (the only study there when ``name`` is None).

    Args:
        name: Study name, or None for the only study.
        url: Storage URL.
        read_only: Never write to the storage (``open_storage(read_only=True)``), as
            ``best``, ``correlate`` and ``export`` need; False lets the caller add
            notes or attributes to the study.

    Raises:
        StorageError: Bad URL, missing database file, a database that holds no
            Optuna schema, or no such study (with the names that are there).
    """
    import optuna

    from nasmlcn.errors import StorageError

    storage = open_storage(url, create=False, heartbeat=False, read_only=read_only)
    names = study_names(storage)
    if name is None:
        if len(names) != 1:
            listing = ", ".join(names) if names else "none"
            raise StorageError(f"give ‹study›; the studies in {redact_url(url)} are: {listing}")
        name = names[0]
    if name not in names:
        raise unknown_study(name, storage, url)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return optuna.load_study(study_name=name, storage=storage)
