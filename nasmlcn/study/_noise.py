"""The search's own noise: the best model trained once more with another seed.

One training run of a model is one sample of a noisy figure: on the default space at
small fidelities the models' means lie within a point or two, while one run varies
by several. So a training search, once it has ``--replicate-after`` completed models,
trains the best of them so far once more with another training seed (the same data
split, other initial weights and batch order) and stores the pair here: a
*replicate*. It is not a trial: it counts toward nothing, never enters the front,
and the original's figure stays as the search measured it.

Where it lives: in the study's ``nasmlcn`` user attribute
(:mod:`nasmlcn.study._identity`), under ``replicates``::

    {"version": 1,
     "claim": {"worker": "host:pid", "number": 7, "claimed_at": 1.7e9,
               "stale_after_s": 300.0} | null,
     "models": [Replicate.to_dict(), ...]}

``claim`` is the worker training the replicate now (one per study, workers
included); ``models`` the finished replicates. Both are written
(:func:`claim_replicate`, :func:`store_replicate`, :func:`release_replicate`) and
read (:func:`replicates`, :func:`noise_estimate`) here only, each write under the
storage's lock after a fresh read of the attribute, so nothing another process
stores is lost and two workers never both claim.

A claim whose worker died (killed, its machine lost) would block the study for
ever: once it is older than its ``stale_after_s`` (the search gives ``--grace``
plus four times the original trial's training time: the replicate trains the same
model for as long), another worker may take it over. Times are wall-clock seconds
(``time.time()``), compared across processes and machines.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from nasmlcn._optuna_compat import storage_of, study_id_of
from nasmlcn.study._identity import stored_info, update_study_info
from nasmlcn.study._lock import hold
from nasmlcn.study._study_record import StudyRecord, record_info

if TYPE_CHECKING:
    import optuna

REPLICATES_KEY = "replicates"
"""The key of the replicates inside the study's ``nasmlcn`` user attribute."""
REPLICATES_VERSION = 1
Z95 = 1.96
"""The two-sided 95 % quantile of the normal distribution."""


@dataclass(frozen=True)
class Replicate:
    """A model of the study trained once more with another seed.

    Attributes:
        number: The trial whose model it trained again (its record is untouched).
        accuracy: That trial's accuracy as the search measured it (validation
            accuracy after the last epoch).
        replicate_accuracy: The same, of the replicate's training.
        seed: The training seed of the trial's own run (weights and batch order).
        replicate_seed: The replicate's training seed.
        epochs: Epochs the replicate trained (the study's).
        evaluator: The evaluator that trained it (``train``).
        seconds: Wall time of its training.
        worker: ``host:pid`` of the process that trained it.
        made_at: When it was stored (ISO 8601, local time).
        version: Schema version of this record.
    """

    number: int
    accuracy: float
    replicate_accuracy: float
    seed: int
    replicate_seed: int
    epochs: int
    evaluator: str
    seconds: float
    worker: str
    made_at: str = ""
    version: int = REPLICATES_VERSION

    @property
    def difference(self) -> float:
        """The search's run less the replicate's (positive: the search's was luckier)."""
        return self.accuracy - self.replicate_accuracy

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Replicate | None:
        """The record in ``data``, or None when it is not one (a newer schema, or
        required keys missing); keys it does not know are ignored."""
        return _typed(cls, data)


@dataclass(frozen=True)
class _Claim:
    """The worker training the study's replicate now."""

    worker: str
    number: int
    claimed_at: float  # time.time() when claimed
    stale_after_s: float  # after this many seconds another worker may take it over

    def stale(self, now: float) -> bool:
        return now - self.claimed_at > self.stale_after_s

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> _Claim | None:
        return _typed(cls, data)


def _typed(cls: Any, data: Mapping[str, Any]) -> Any:
    """``cls(**data)`` for the fields ``cls`` has (None: a newer version, a missing
    or mistyped field)."""
    version = data.get("version", REPLICATES_VERSION)
    if not isinstance(version, int) or version > REPLICATES_VERSION:
        return None
    names = {f.name for f in fields(cls)}
    try:
        return cls(**{k: v for k, v in data.items() if k in names})
    except TypeError:
        return None


@dataclass(frozen=True)
class Noise:
    """The noise of one training run's accuracy, estimated from replicate pairs.

    A pair is one model's accuracy from two runs that differ only in the training
    seed; the difference of two single runs has variance ``2 sd^2``, so the pooled
    estimate over ``n`` pairs is ``sd^2 = sum(d^2) / (2 n)`` (one pair: ``|a - b| /
    sqrt(2)``). One pair gives a rough estimate (one degree of freedom: the true
    ``sd`` may be several times larger or smaller); reports say how many pairs.

    Attributes:
        sd: The standard deviation of one run's accuracy (a fraction, as accuracies).
        pairs: The replicate pairs it is estimated from.
    """

    sd: float
    pairs: int

    @property
    def margin(self) -> float:
        """``1.96 * sqrt(2) * sd``: the 95 % band of the difference of two single runs."""
        return Z95 * math.sqrt(2.0) * self.sd

    def within(self, best: float, value: float) -> bool:
        """Whether a model with accuracy ``value`` is within noise of the ``best``
        accuracy: ``best - value <= margin`` (its single run and the best's could
        differ that much by the seed alone; not a proof that they are as good)."""
        return best - value <= self.margin

    def to_dict(self) -> dict[str, Any]:
        return {"sd": self.sd, "pairs": self.pairs, "margin": self.margin}


def replicates(info: StudyRecord | Mapping[str, Any]) -> list[Replicate]:
    """The finished replicates stored on a study (its :class:`StudyRecord`, or its
    ``nasmlcn`` attribute ``info``), in the order they were stored."""
    stored = record_info(info).get(REPLICATES_KEY)
    entries = stored.get("models") if isinstance(stored, Mapping) else None
    found = (Replicate.from_dict(e) for e in entries or () if isinstance(e, Mapping))
    return [r for r in found if r is not None]


def noise_estimate(info: StudyRecord | Mapping[str, Any]) -> Noise | None:
    """The noise of one run, pooled over the replicate pairs stored on a study (its
    :class:`StudyRecord`, or its ``nasmlcn`` attribute ``info``; see
    :class:`Noise`); None where the study has none (``--replicate-after 0``, the
    proxy evaluator, fewer completed models, or a study made before replicates)."""
    pairs = [r.difference for r in replicates(info)]
    if not pairs:
        return None
    return Noise(math.sqrt(sum(d * d for d in pairs) / (2 * len(pairs))), len(pairs))


def _claim_in(info: StudyRecord | Mapping[str, Any]) -> _Claim | None:
    """The claim stored on a study (None: none)."""
    stored = record_info(info).get(REPLICATES_KEY)
    raw = stored.get("claim") if isinstance(stored, Mapping) else None
    return _Claim.from_dict(raw) if isinstance(raw, Mapping) else None


def _stored(study: optuna.Study) -> tuple[_Claim | None, list[Replicate]]:
    """The claim and the finished replicates, read fresh from the storage (call
    under its lock)."""
    storage = storage_of(study)
    info = stored_info(storage.get_study_user_attrs(study_id_of(study))) or {}
    return _claim_in(info), replicates(info)


def _write(study: optuna.Study, claim: _Claim | None, models: list[Replicate]) -> None:
    update_study_info(
        study,
        REPLICATES_KEY,
        {
            "version": REPLICATES_VERSION,
            "claim": claim.to_dict() if claim is not None else None,
            "models": [m.to_dict() for m in models],
        },
    )


def replicate_taken(info: StudyRecord | Mapping[str, Any], now: float | None = None) -> bool:
    """Whether a study's replicate is made, or claimed by a worker that is not
    stale (``info``: its ``nasmlcn`` attribute; a look without the lock, before
    :func:`claim_replicate` looks again under it)."""
    if replicates(info):
        return True
    claim = _claim_in(info)
    return claim is not None and not claim.stale(time.time() if now is None else now)


def claim_replicate(study: optuna.Study, number: int, worker: str, stale_after_s: float) -> bool:
    """Claims the study's replicate of trial ``number`` for ``worker``; False where
    one is made already, or claimed by another worker whose claim is not older than
    its own ``stale_after_s`` (a stale one is taken over)."""
    with hold(storage_of(study)):
        claim, made = _stored(study)
        now = time.time()
        if made or (claim is not None and not claim.stale(now)):
            return False
        _write(study, _Claim(worker, number, now, stale_after_s), made)
        return True


def release_replicate(study: optuna.Study, worker: str) -> None:
    """Drops ``worker``'s claim (its replicate was stopped or failed): another worker,
    or a later run, may make the replicate."""
    with hold(storage_of(study)):
        claim, made = _stored(study)
        if claim is not None and claim.worker == worker:
            _write(study, None, made)


def store_replicate(study: optuna.Study, replicate: Replicate) -> bool:
    """Stores ``replicate`` and drops its worker's claim; False (nothing stored) where
    the same replicate is stored already: a claim taken over from a worker thought
    dead, which finished after all, trained the same model with the same seed."""
    with hold(storage_of(study)):
        claim, made = _stored(study)
        twin = any(
            (m.number, m.replicate_seed) == (replicate.number, replicate.replicate_seed)
            for m in made
        )
        if claim is not None and claim.worker == replicate.worker:
            claim = None
        _write(study, claim, made if twin else [*made, replicate])
        return not twin
