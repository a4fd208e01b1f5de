"""The exception hierarchy.

Every error a user can cause derives from :class:`NasmlcnError`; the CLI prints
those as one line and exits non-zero. Each subclass also inherits the built-in
exception it refines, so ``except ValueError`` keeps working for library users.

An error names the configuration field at fault with :func:`option`: a library
user reads the field (``trial_timeout``), the CLI the option that sets it
(``--trial-timeout``, :meth:`NasmlcnError.for_cli`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_OPTION = re.compile("\u2039([a-z_]+)\u203a")


def option(field: str) -> str:
    """``field`` (a configuration field, e.g. ``keep_weights``) inside an error
    message: ``str(error)`` shows the field, the CLI its option (``--keep-weights``)."""
    return f"\u2039{field}\u203a"


def cli_option(field: str, options: Mapping[str, str] | None = None) -> str:
    """The command-line option of configuration field ``field``: ``options``'s, else
    ``--`` and the field with dashes (``run_on`` -> ``--run-on``)."""
    return (options or {}).get(field) or "--" + field.replace("_", "-")


def field_text(text: str) -> str:
    """A message with fields named by :func:`option`, as a library shows it: the
    fields (``train_limit``)."""
    return _OPTION.sub(lambda m: m[1], text)


def cli_text(text: str, options: Mapping[str, str] | None = None) -> str:
    """A message with fields named by :func:`option`, as the CLI shows it: their
    options (``--train-limit``; ``options`` as in :func:`cli_option`)."""
    return _OPTION.sub(lambda m: cli_option(m[1], options), text)


class NasmlcnError(Exception):
    """Base class of every error nasmlcn raises on purpose."""

    def __str__(self) -> str:
        return field_text(super().__str__())

    def for_cli(self, options: Mapping[str, str] | None = None) -> str:
        """The message as the CLI prints it: each field named by :func:`option`
        becomes its command-line option (``options`` maps the fields whose option
        is not ``--`` plus the field with dashes)."""
        return cli_text(super().__str__(), options)


def nested(err: BaseException) -> str:
    """``err``'s message to put inside another nasmlcn error's: the fields a
    :class:`NasmlcnError` names stay fields, so that the CLI shows the outer error
    with their options too (``str(err)`` spells them as fields already)."""
    return Exception.__str__(err) if isinstance(err, NasmlcnError) else str(err)


class SpecError(NasmlcnError, ValueError):
    """A specification (lane, model, config) has an invalid field or value."""


class UnknownNameError(NasmlcnError, ValueError):
    """A name was looked up in a registry that does not hold it."""


class ArchFileError(NasmlcnError, OSError):
    """An architecture file is missing, unreadable or not a valid architecture."""


class DatasetError(NasmlcnError, OSError):
    """A dataset is missing or cannot be read from where it was looked for."""


class CheckpointError(NasmlcnError, OSError):
    """A checkpoint is missing, unreadable or belongs to another model."""


class TrainingError(NasmlcnError, RuntimeError):
    """Training cannot go on (for example, the loss became NaN)."""


class DivergedError(TrainingError):
    """The training loss became NaN or infinite."""


class DeviceError(NasmlcnError, ValueError):
    """A device specification, memory size or device catalog is invalid."""


class PlacementError(NasmlcnError, ValueError):
    """Lanes cannot be placed on the devices (one does not fit anywhere)."""


class CalibrationError(NasmlcnError, OSError):
    """A calibration file is missing, unreadable or from another machine or version."""


class SearchError(NasmlcnError, ValueError):
    """A search cannot start or continue (bad configuration, study mismatch)."""


class StorageError(NasmlcnError, OSError):
    """The study storage cannot be opened, or the study does not exist there."""


class DistributedError(TrainingError):
    """A rank of a multi-process job failed, exited early or stopped answering.

    Raised on the surviving ranks when a collective fails (a peer closed its
    connection, or the process group's timeout passed) and by the launcher when a
    worker process exits without a result.
    """


class ExportError(NasmlcnError, RuntimeError):
    """An export cannot be written (bad format, unwritable folder, no Chromium)."""


class DashboardError(NasmlcnError, OSError):
    """The dashboard cannot start (the port is taken, the host cannot be bound)."""


class RunError(NasmlcnError, OSError):
    """A run folder is missing, unreadable or not one that nasmlcn wrote."""


class ReproduceError(NasmlcnError, ValueError):
    """A reproduction recipe is invalid, or a result cannot be run or reported."""


class TrackingError(NasmlcnError, RuntimeError):
    """Experiment tracking cannot start (MLflow not installed, a tracking URI it
    cannot open)."""
