"""Continuing a study by name: the configuration it was made with, read back, as the
base of a run that names it (``nasmlcn search --study NAME --trials 12``). What the
run gives again overrides it; an identity field given otherwise is then refused by the
study's identity check, which names the fields that differ."""

from __future__ import annotations

from dataclasses import fields

from nasmlcn.errors import NasmlcnError
from nasmlcn.search._config.config import SearchConfig

NOT_CARRIED = ("storage", "study", "mlflow", "warm_start", "warm_start_storage")
"""Stored fields a continuing run does not take from the study: where it is (given by
the run), the tracker and the warm start's source (stored with their passwords
hidden; a warm start acts only when a study is made)."""


def stored_config(study: str, storage: str) -> SearchConfig | None:
    """The configuration study ``study`` in ``storage`` was made with (its stored
    ``config``), less :data:`NOT_CARRIED`, with ``storage`` and ``study`` as given;
    None where there is no such study made by nasmlcn (a new study, or a storage that
    does not exist yet: nothing is created here).

    Raises:
        SearchError: The stored configuration is one this version cannot read (a newer
            schema, or a value no longer valid).
    """
    import optuna

    from nasmlcn.study import open_storage, study_info

    try:
        opened = open_storage(storage, create=False, heartbeat=False, read_only=True)
        if study not in {s.study_name for s in opened.get_all_studies()}:
            return None
        config = study_info(optuna.load_study(study_name=study, storage=opened)).get("config")
    except NasmlcnError:  # no storage yet, or one the run itself will name the trouble of
        return None
    if not isinstance(config, dict):
        return None
    # a key an older nasmlcn stored and this one no longer has is left out: the
    # study's identity check compares what matters
    known = {f.name for f in fields(SearchConfig)} | {"schema_version"}
    kept = {k: v for k, v in config.items() if k in known and k not in NOT_CARRIED}
    return SearchConfig.from_dict({**kept, "storage": storage, "study": study})
