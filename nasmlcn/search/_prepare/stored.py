"""Continuing a study by name: the configuration it was made with, read back, as the
base of a run that names it (``nasmlcn search --study NAME --trials 12``). What the
run gives again overrides it; an identity field given otherwise is then refused by the
study's identity check, which names the fields that differ."""

from __future__ import annotations

from dataclasses import fields

from nasmlcn.errors import NasmlcnError, option
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

    from nasmlcn.study import StudyRecord, open_storage

    try:
        opened = open_storage(storage, create=False, heartbeat=False, read_only=True)
        if study not in {s.study_name for s in opened.get_all_studies()}:
            return None
        record = StudyRecord.read(optuna.load_study(study_name=study, storage=opened))
    except NasmlcnError:  # no storage yet, or one the run itself will name the trouble of
        return None
    config = record.config
    if not config:
        return None
    # a key an older nasmlcn stored and this one no longer has is left out: the
    # study's identity check compares what matters
    known = {f.name for f in fields(SearchConfig)} | {"schema_version"}
    kept = {k: v for k, v in config.items() if k in known and k not in NOT_CARRIED}
    return SearchConfig.from_dict({**kept, "storage": storage, "study": study})


RUN_CONTROL = frozenset(
    {
        "storage",
        "study",
        "trials",
        "count_repeats",
        "timeout",
        "trial_timeout",
        "grace",
        "max_retries",
        "artifacts",
        "keep_weights",
        "run_on",
        "mlflow",
        "calibration",
        "replicate_after",
    }
)
"""Fields that say how a search runs, not what it searches: given alone with a study
name no study has (``search --study tex22 --trials 8``), they define nothing, and
the name is taken for a typo (:func:`refuse_undefined_study`)."""

NAMED_DEFAULTS = ("dataset", "devices", "epochs")
"""What a new study started on defaults names before anything else
(:func:`defaults_taken`): what it trains on, the devices it designs for, how long."""


def refuse_undefined_study(study: str, storage: str, given: set[str]) -> None:
    """Refuses a search that names a study the storage does not hold while giving
    only :data:`RUN_CONTROL` options: a mistyped name would otherwise start a default
    search (Fashion-MNIST for 8 K80s, 10 epochs). Nothing is refused where the study
    exists, or where ``given`` holds an option that defines a search.

    Raises:
        StorageError: The name is unknown ("did you mean", with the studies there).
    """
    if given - RUN_CONTROL:
        return
    from nasmlcn.errors import StorageError
    from nasmlcn.study import load_existing_study

    try:
        load_existing_study(study, storage)
    except StorageError as error:
        text = str(error)
        joint = " To" if text.endswith("?") else "; to"
        raise StorageError(
            f"{text}{joint} start a new study, give what it searches ({option('dataset')}, "
            f"{option('devices')}, {option('epochs')}, ... or {option('config')})"
        ) from error


def defaults_taken(config: SearchConfig, given: set[str]) -> list[tuple[str, str]]:
    """The :data:`NAMED_DEFAULTS` a new study takes from nasmlcn's defaults (not
    given, not in a recipe: ``config`` equals the default there), as (field, value)."""
    default = SearchConfig()
    taken = []
    for name in NAMED_DEFAULTS:
        value = getattr(config, name)
        if name not in given and value == getattr(default, name):
            taken.append((name, str(value)))
    return taken
