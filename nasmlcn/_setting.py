"""A configuration field written once: its default, its help and its range, as
dataclass field metadata.

``SearchConfig`` (:mod:`nasmlcn.search`) and ``TrainConfig``
(:mod:`nasmlcn.training`) declare their fields with :func:`setting`; the same
metadata checks a value in the library (:func:`check_ranges`, an error that names
the field, which the CLI shows as its option) and makes the command's option
(``nasmlcn.cli._config_options``: flag, help text, stated range and default).
Here, below both packages, so that neither imports the other for it.
"""

from __future__ import annotations

import functools
import math
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import PurePath
from typing import Any

from nasmlcn.errors import option


@dataclass(frozen=True)
class Range:
    """The values a numeric field takes.

    Attributes:
        low: The least value (None: unbounded below).
        high: The greatest value (None: unbounded above).
        low_open: ``low`` itself is refused (``> 0`` rather than ``>= 0``).
        high_open: ``high`` itself is refused.
        integer: Only integers (not booleans) are taken; else any number.
        why: Why ``high`` is where it is, said when a value passes it (a sanity
            bound rather than a limit of the method).
        finite: Infinity and NaN are refused too (a learning rate).
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    why: str = ""
    finite: bool = False

    def holds(self, value: Any) -> bool:
        return self._is_kind(value) and self._above_low(value) and self._below_high(value)

    def _is_kind(self, value: Any) -> bool:
        kinds = (int,) if self.integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            return False
        return not self.finite or math.isfinite(value)

    def _above_low(self, value: float) -> bool:
        if self.low is None:
            return True
        return value > self.low if self.low_open else value >= self.low

    def _below_high(self, value: float) -> bool:
        if self.high is None:
            return True
        return value < self.high if self.high_open else value <= self.high

    def refusal(self, name: str, value: Any) -> str:
        """The error for ``value`` of field ``name``, which :meth:`holds` refused."""
        if self.why and self._is_kind(value) and self._above_low(value):
            return (
                f"{option(name)} must be at most {_number(self.high)} ({self.why}), got {value:,}"
            )
        kind = "an integer" if self.integer else "a number"
        if self.finite and isinstance(value, float) and not math.isfinite(value):
            kind = "a finite number"
        return f"{option(name)} must be {kind} {self._bounds()}, got {value!r}"

    def _bounds(self) -> str:
        """``>= 1``, ``> 0`` or ``in [-1, 1]`` (``why`` bounds are said apart)."""
        high = None if self.why else self.high
        if self.low is not None and high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"in {left}{_number(self.low)}, {_number(high)}{right}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {_number(self.low)}"
        return f"{'<' if self.high_open else '<='} {_number(high)}"

    def stated(self) -> str:
        """The range as a help text states it: ``>= 1``, ``> 0, < 100``, ``-1 to 1``."""
        low, high = self.low, self.high
        if low is not None and high is not None:
            if not self.low_open and not self.high_open:
                return f"{_number(low)} to {_number(high)}"
            return (
                f"{'>' if self.low_open else '>='} {_number(low)}, "
                f"{'<' if self.high_open else '<='} {_number(high)}"
            )
        return self._bounds()


def _number(value: float | None) -> str:
    assert value is not None
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


MAX_SEED = 2**32 - 1
"""The largest seed any command takes: numpy's and Optuna's samplers take no more."""

SEED_RANGE = Range(0, MAX_SEED, integer=True, why="the samplers' seeds stop at 2**32 - 1")
"""The seeds of a search and of a training."""


def setting(
    default: Any,
    help: str,
    *,
    range: Range | None = None,
    shown_default: str | None = None,
    choices: Callable[[], Iterable[str] | Mapping[str, str]] | None = None,
    path: bool = False,
    metavar: str | None = None,
    duration: bool = False,
) -> Any:
    """A dataclass field with its option's metadata.

    Args:
        default: The field's default.
        help: What the option does, for ``--help``. ``{choices}`` in it becomes the
            names ``choices`` gives (``a, b or c``), ``{described}`` each name with
            its description (``a: ...; b: ...``, where ``choices`` gives a mapping);
            the range and the default are added after it.
        range: The values a number takes (checked by :func:`check_ranges`).
        shown_default: The default as ``--help`` says it, where the value itself
            says little (``all`` for a None limit); else the default's value.
        choices: The registry's names, or its names and their descriptions (called
            when the help is made, so that the field does not import the registry).
        path: The option takes a file or folder.
        metavar: The option's value as ``--help`` names it.
        duration: A time in seconds; as text it needs a unit (``5ms``, ``0.005s``:
            :func:`parse_durations` turns it into seconds).
    """
    metadata = {
        "help": help,
        "range": range,
        "shown_default": shown_default,
        "choices": choices,
        "path": path,
        "metavar": metavar,
        "duration": duration,
    }
    return field(default=default, metadata=metadata)


TIME_UNITS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
"""Seconds in each unit a time is written in (``5ms``): a duration setting's, and a
limit's on a time (``nasmlcn best --max latency=5ms``)."""

GIVE_A_TIME_UNIT = "give a unit: 5ms or 5s (us, ms, s, min)"
"""What a time typed without a unit is told, by ``--latency-budget`` and ``best
--max`` alike: a bare ``5`` is refused, never read as seconds (nor milliseconds)."""

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(ms|s|us|µs|min)?\s*$")


def parse_durations(config: Any, error: Callable[[str], Exception]) -> None:
    """Turns each duration field of ``config`` (:func:`setting`'s ``duration``)
    given as text (``5ms``, ``0.005 s``, ``2min``) into seconds, in place (a frozen
    dataclass too); ``error(message)`` for text that is no time or has no unit
    (:data:`GIVE_A_TIME_UNIT`). A number, not text, is seconds already: what a study
    stores, a recipe's ``latency_budget = 0.0017`` and the Python API's."""
    for item in fields(config):
        value = getattr(config, item.name)
        if not item.metadata.get("duration") or not isinstance(value, str):
            continue
        match = _DURATION.match(value)
        if match is None:
            raise error(f"{option(item.name)} {value!r} is not a time; {GIVE_A_TIME_UNIT}")
        if match[2] is None:  # `--latency-budget 5`: 5 s or 5 ms? as `best --max`, ask
            raise error(f"{option(item.name)} {value!r} has no unit; {GIVE_A_TIME_UNIT}")
        object.__setattr__(config, item.name, float(match[1]) * TIME_UNITS[match[2]])


def check_ranges(config: Any, error: Callable[[str], Exception]) -> None:
    """Refuses any field of ``config`` outside its :class:`Range`, and any switch (a
    field whose default is True or False) that is not a bool, with ``error(message)``
    (a None is taken where the field may be None: its default is). A recipe's
    ``prune = "false"`` would otherwise switch pruning on. A file or folder field
    refuses an empty path, which would be the current folder, and a text field
    anything but text."""
    for item in fields(config):
        bound = item.metadata.get("range")
        value = getattr(config, item.name)
        if isinstance(item.default, bool) and not isinstance(value, bool):
            raise error(f"{option(item.name)} must be true or false, got {value!r}")
        if item.metadata.get("path") and isinstance(value, str) and not value.strip():
            raise error(f"{option(item.name)} {value!r} is an empty path; give a file or folder")
        text = item.name in _text_fields(type(config))  # type: ignore[arg-type]
        if text and value is not None and not isinstance(value, str | PurePath):
            # a recipe's flops = 0.5 is not "0.5" (absolute FLOPs), nor space = 5 a name
            example = f" (e.g. {item.default!r})" if isinstance(item.default, str) else ""
            raise error(f"{option(item.name)} must be text{example}, got {value!r}")
        if bound is None or (value is None and item.default is None):
            continue
        if not bound.holds(value):
            raise error(bound.refusal(item.name, value))


@functools.cache
def _text_fields(cls: type) -> frozenset[str]:
    """The fields of ``cls`` typed ``str`` or ``str | None``."""
    hints = typing.get_type_hints(cls)
    return frozenset(name for name, hint in hints.items() if hint is str or hint == (str | None))
