"""What nasmlcn stores on a study, as one typed record: reader and writer side by side.

:class:`StudyRecord` is the study's ``nasmlcn`` user attribute
(:mod:`nasmlcn.study._identity` lists its keys) read once into typed fields, the way
:class:`~nasmlcn.study.TrialRecord` reads a trial: the configuration, the data it was
made on, the devices and cost model, the evaluator, the seed, the search space. Code
outside :mod:`nasmlcn.study` reads a study through :meth:`StudyRecord.read` (never
``study.user_attrs`` or the raw dictionary); a search writes it once, when the study is
made, through :meth:`StudyRecord.write`. What later runs add beside it (retrained
models, replicates, a warm start's summary) is written by their own functions under the
study's lock and read by the functions that take a record (:func:`retrained_models`,
:func:`noise_estimate`...), or :attr:`StudyRecord.warm_start`.

The data identity is kept in two forms, both read here and nowhere else: the
``dataset`` record (:class:`~nasmlcn.data.DataIdentity`, since user datasets: it
holds the content hash) and the name the configuration gave (``config["dataset"]``,
the only form older studies have). :attr:`StudyRecord.data` answers from the record,
else from the name; :meth:`StudyRecord.same_data` only from the record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from nasmlcn.study._identity import redacted, stored_info, write_study_info

if TYPE_CHECKING:
    import optuna

    from nasmlcn.data import DataIdentity

DEFAULT_DATASET = "fashion-mnist"
"""What a study made before nasmlcn recorded its dataset was searched on."""


class _Attributed(Protocol):
    """A study, or one as ``storage.get_all_studies`` lists it (a ``FrozenStudy``)."""

    @property
    def user_attrs(self) -> dict[str, Any]: ...


def _dict(value: Any) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, Mapping) else None


def _text(value: Any) -> str | None:
    return str(value) if value is not None else None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class StudyRecord:
    """A study as nasmlcn stored it (empty for a study nasmlcn did not make).

    Attributes:
        made_by_nasmlcn: Whether the study holds nasmlcn's attribute at all.
        identity: The configuration fields that make two runs the same study
            (None: none stored).
        config: The whole search configuration (its storage URL never holds a
            password); empty when not stored.
        data_record: The stored dataset record (:meth:`DataIdentity.to_dict`); None
            for a study made before datasets were recorded.
        objectives: The objectives' names in the configuration's spelling.
        metric_names: The objectives' metric names (None: not stored).
        accuracy_is_proxy: Whether the accuracy objective is a proxy, not measured.
        space: The search space as described when the study was made.
        devices: The target devices (:meth:`DeviceSpec.to_dict` each; None: not
            stored).
        cost_model: The cost model's name.
        time_unit: The unit of its times (None: seconds).
        versions: The package versions that made it.
        created: When it was made (``%Y-%m-%dT%H:%M:%S%z``).
        info: The raw attribute, for the readers of what later runs add to it.
    """

    WARM_START: ClassVar[str] = "warm_start"
    """The key of a warm start's summary (written by :mod:`nasmlcn.search`)."""

    made_by_nasmlcn: bool = False
    identity: dict[str, Any] | None = None
    config: dict[str, Any] = field(default_factory=dict)
    data_record: dict[str, Any] | None = None
    objectives: tuple[str, ...] = ()
    metric_names: tuple[str, ...] | None = None
    accuracy_is_proxy: bool = False
    space: dict[str, Any] | None = None
    devices: tuple[dict[str, Any], ...] | None = None
    cost_model: str | None = None
    time_unit: str | None = None
    versions: dict[str, Any] = field(default_factory=dict)
    created: str | None = None
    info: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def read(cls, source: _Attributed | Mapping[str, Any]) -> StudyRecord:
        """The record of a study, of one as ``storage.get_all_studies`` lists it, or of
        its raw attribute (:func:`~nasmlcn.study.study_info`)."""
        if isinstance(source, Mapping):
            return cls._of(source, made=bool(source))
        info = stored_info(source.user_attrs)
        return cls._of(redacted(info) if info is not None else {}, made=info is not None)

    @classmethod
    def _of(cls, info: Mapping[str, Any], made: bool) -> StudyRecord:
        names = info.get("metric_names")
        devices = info.get("devices")
        return cls(
            made_by_nasmlcn=made,
            identity=_dict(info.get("identity")),
            config=_dict(info.get("config")) or {},
            data_record=_dict(info.get("dataset")),
            objectives=tuple(str(o) for o in info.get("objectives") or ()),
            metric_names=tuple(str(n) for n in names) if isinstance(names, list) else None,
            accuracy_is_proxy=bool(info.get("accuracy_is_proxy")),
            space=_dict(info.get("space")),
            devices=tuple(dict(d) for d in devices) if isinstance(devices, list) else None,
            cost_model=_text(info.get("cost_model")),
            time_unit=_text(info.get("time_unit")),
            versions=_dict(info.get("versions")) or {},
            created=_text(info.get("created")),
            info=info,
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored attribute: the keys a search writes, in the order it always
        wrote them, then what later runs added (kept as read)."""
        made = {
            "identity": self.identity,
            "config": self.config,
            "dataset": self.data_record,
            "objectives": list(self.objectives),
            "metric_names": list(self.metric_names) if self.metric_names is not None else None,
            "evaluator": self.evaluator,
            "accuracy_is_proxy": self.accuracy_is_proxy,
            "space": self.space,
            "devices": list(self.devices) if self.devices is not None else None,
            "cost_model": self.cost_model,
            "time_unit": self.time_unit,
            "versions": self.versions,
            "created": self.created,
        }
        return {**made, **{k: v for k, v in self.info.items() if k not in made}}

    def write(self, study: optuna.Study) -> None:
        """Stores the record as the study's ``nasmlcn`` attribute (when it is made)."""
        write_study_info(study, self.to_dict())

    @property
    def evaluator(self) -> str | None:
        """The evaluator that measured the accuracy (the configuration's)."""
        return _text(self.config.get("evaluator"))

    @property
    def seed(self) -> int | None:
        """The seed the search ran with (None: not recorded)."""
        return _int(self.config.get("seed"))

    @property
    def search_seed(self) -> int:
        """:attr:`seed`, or 0 where it was not recorded (the default then)."""
        return self.seed or 0

    @property
    def dataset(self) -> str | None:
        """The dataset the configuration named (None: not recorded)."""
        return _text(self.config.get("dataset"))

    @property
    def data(self) -> DataIdentity:
        """What the search trained on: the stored dataset record (since user
        datasets), else the registered dataset the configuration names.

        Raises:
            DatasetError: A damaged record, or an old study's dataset that this
                nasmlcn does not know.
        """
        from nasmlcn.data import DataIdentity, open_dataset

        if self.data_record is not None:
            return DataIdentity.from_dict(self.data_record)
        return open_dataset(self.dataset or DEFAULT_DATASET).identity

    def same_data(self, now: DataIdentity) -> bool:
        """Whether the stored dataset record is ``now``'s data (the same content, for
        a user's own data); never for a study made before the records, nor for a
        record this nasmlcn cannot read."""
        from nasmlcn.data import DataIdentity
        from nasmlcn.errors import NasmlcnError

        if self.data_record is None:
            return False
        try:
            return DataIdentity.from_dict(self.data_record).same_data(now)
        except NasmlcnError:
            return False

    @property
    def warm_start(self) -> dict[str, Any] | None:
        """What a warm start added to the study (None: it was not warm-started)."""
        return _dict(self.info.get(self.WARM_START))


def record_info(source: StudyRecord | Mapping[str, Any]) -> Mapping[str, Any]:
    """The raw attribute of a record, or the attribute itself: what the readers of
    later runs' additions (retrained models, replicates) take."""
    return source.info if isinstance(source, StudyRecord) else source


def search_dataset(info: StudyRecord | Mapping[str, Any]) -> str | None:
    """:attr:`StudyRecord.dataset` of a record or raw attribute."""
    return _as_record(info).dataset


def search_data(info: StudyRecord | Mapping[str, Any]) -> DataIdentity:
    """:attr:`StudyRecord.data` of a record or raw attribute."""
    return _as_record(info).data


def search_seed(info: StudyRecord | Mapping[str, Any]) -> int:
    """:attr:`StudyRecord.search_seed` of a record or raw attribute."""
    return _as_record(info).search_seed


def _as_record(source: StudyRecord | Mapping[str, Any]) -> StudyRecord:
    return source if isinstance(source, StudyRecord) else StudyRecord.read(source)
