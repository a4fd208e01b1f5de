"""What nasmlcn stores on a study: its ``nasmlcn`` user attribute, writer beside reader.

The attribute is one dictionary:

- ``identity``: the configuration fields that make two runs the same study
  (:data:`nasmlcn.search.IDENTITY_FIELDS`); a run that continues a study must match it;
- ``config``: the whole search configuration (its storage URL never holds a password);
- ``objectives``, ``metric_names``, ``evaluator``, ``accuracy_is_proxy``;
- ``space``: the search space as described when the study was made;
- ``devices``, ``cost_model``, ``time_unit``: the target hardware and its cost model;
- ``versions``, ``created``;
- ``retrained``: the models ``nasmlcn retrain`` trained again
  (:mod:`nasmlcn.study._retrained`).

Studies made by other tools have no such attribute: :func:`study_info` reads them as
empty. Outside :mod:`nasmlcn.study` the attribute is read and written as one typed
record, :class:`~nasmlcn.study.StudyRecord` (:mod:`nasmlcn.study._study_record`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nasmlcn._optuna_compat import storage_of, study_id_of
from nasmlcn._storage_url import redact_url
from nasmlcn.study._lock import hold

if TYPE_CHECKING:
    import optuna

STUDY_ATTR = "nasmlcn"
"""The study user attribute that holds what nasmlcn stores on a study."""


def stored_info(attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The raw ``nasmlcn`` attribute among a study's user attributes (None when the
    study was not made by nasmlcn search)."""
    info = attrs.get(STUDY_ATTR)
    return dict(info) if isinstance(info, Mapping) else None


def frozen_info(frozen: Any) -> dict[str, Any] | None:
    """:func:`stored_info` of a study as ``storage.get_all_studies`` lists it (an
    Optuna ``FrozenStudy``)."""
    return stored_info(frozen.user_attrs)


def study_info(study: optuna.Study) -> dict[str, Any]:
    """What nasmlcn stored on the study (empty for foreign studies); the storage URL
    of its config never shows a password."""
    info = stored_info(study.user_attrs)
    return redacted(info) if info is not None else {}


def redacted(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` with the storage URL of its config shown without a password."""
    config = info.get("config")
    if isinstance(config, dict) and isinstance(config.get("storage"), str):
        # studies made before passwords were hidden stored the storage URL whole
        info = {**info, "config": {**config, "storage": redact_url(config["storage"])}}
    return info


def write_study_info(study: optuna.Study, info: Mapping[str, Any]) -> None:
    """Stores ``info`` as the study's ``nasmlcn`` attribute (when the study is made)."""
    study.set_user_attr(STUDY_ATTR, dict(info))


def update_study_info(study: optuna.Study, key: str, value: Any) -> None:
    """Sets one key of the study's ``nasmlcn`` attribute, read fresh from the storage
    under its lock first so that nothing another process stores is lost."""
    storage = storage_of(study)
    with hold(storage):
        info = stored_info(storage.get_study_user_attrs(study_id_of(study))) or {}
        info[key] = value
        study.set_user_attr(STUDY_ATTR, info)


def redact_stored_url(study: optuna.Study, stored: Mapping[str, Any] | None = None) -> None:
    """Hides the password of a storage URL that a study made before nasmlcn hid
    them kept in its stored config (``stored``: its attribute as stored, read from
    the study when not given); continuing the study cleans it."""
    if stored is None:
        stored = stored_info(study.user_attrs) or {}
    config = stored.get("config")
    url = config.get("storage") if isinstance(config, dict) else None
    if isinstance(config, dict) and isinstance(url, str) and redact_url(url) != url:
        study.set_user_attr(
            STUDY_ATTR, {**stored, "config": {**config, "storage": redact_url(url)}}
        )


def metric_names(study: optuna.Study) -> list[str]:
    """The study's objective names (Optuna's, else nasmlcn's, else ``objective0``...)."""
    names = study.metric_names
    if names is None:
        names = study_info(study).get("metric_names") or [
            f"objective{i}" for i in range(len(study.directions))
        ]
    return list(names)
