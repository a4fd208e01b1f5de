"""The study's home: everything a study and its trials store, and the storage itself.

:mod:`nasmlcn.search` writes studies, :mod:`nasmlcn.dashboard` and the CLI's
reports read them, and all of them do it through the names here:

- what a trial stores: the ``write_*`` functions and :class:`TrialRecord`, writer
  beside reader (:mod:`nasmlcn.study._trial`);
- what a study stores: its identity, configuration and data, read as one typed
  record (:class:`StudyRecord`, beside its writer; :func:`study_info` is the raw
  attribute), and the retrained models (:class:`RetrainedModel`);
- the storage: :func:`open_storage` (SQLite or PostgreSQL, batched writes,
  read-only opening), :func:`load_existing_study`, the lock that workers take
  turns with (:func:`hold`), the claim of the next trial (:func:`claim`),
  heartbeats and the recovery of dead workers' trials;
- the trials' files: checkpoints and weights as Optuna artifacts
  (:class:`TrialFiles`, :func:`export_trial`);
- Optuna's internals, used only through :mod:`nasmlcn._optuna_compat`.

Importing it loads neither torch nor Optuna; the batching storage (which
subclasses Optuna's) is imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn._lazy import face
from nasmlcn._optuna_compat import (
    frozen_study_id,
    set_study_system_attrs,
    storage_of,
    study_id_of,
    trial_id_of,
    unbuffered,
)
from nasmlcn.study._access import load_existing_study
from nasmlcn.study._artifacts import (
    TrialFiles,
    artifacts_dir,
    discard_weights,
    export_trial,
    open_store,
    parse_keep,
)
from nasmlcn.study._claim import (
    claim,
    count,
    counts,
    finished,
    worker_name,
)
from nasmlcn.study._front import best_of, best_trials, candidates, pareto_mask
from nasmlcn.study._heartbeat import heartbeat
from nasmlcn.study._identity import (
    frozen_info,
    metric_names,
    redact_stored_url,
    study_info,
    update_study_info,
    write_study_info,
)
from nasmlcn.study._lean import LeanPick, lean_pick
from nasmlcn.study._lock import hold
from nasmlcn.study._lookup import trials_by_attr
from nasmlcn.study._noise import (
    Noise,
    Replicate,
    claim_replicate,
    noise_estimate,
    release_replicate,
    replicate_taken,
    replicates,
    store_replicate,
)
from nasmlcn.study._pick import Limit, answer_within, knee, parse_limits, pick, within
from nasmlcn.study._recovery import fail_stale_trials, retry
from nasmlcn.study._retrained import (
    ANSWER_RULE,
    RetrainedModel,
    Stored,
    retrained_by_trial,
    retrained_models,
    store_retrained,
)
from nasmlcn.study._storage import (
    open_storage,
    sqlite_path,
)
from nasmlcn.study._studies import (
    delete_study,
    find_study,
    list_studies,
)
from nasmlcn.study._study_record import StudyRecord, search_data
from nasmlcn.study._ties import (
    TIE_MARGIN,
    SeededAnswer,
    SeedFigures,
    Standing,
    cheapest,
    seed_figures,
    seeded_answer,
    standings,
)
from nasmlcn.study._trial import (
    CONSTRAINT_PREFIX,
    LEARNING_CONSTRAINT,
    TrialRecord,
    set_constraint,
    write_ended_early,
    write_failed,
    write_model,
    write_model_key,
    write_plan,
    write_proposed_by,
    write_pruning_costs,
    write_repeat,
    write_resumed,
    write_traceback,
    write_training,
    write_transferred,
)
from nasmlcn.study._values import number, objective_signs

if TYPE_CHECKING:
    from nasmlcn.study._buffered_storage import BufferedStorage

__getattr__, __all__ = face(__name__)
