"""Field checks shared by the spec dataclasses and the configs of the packages that
build on them (costs, training); each names the field and the value.

``owner`` is the word a user knows the object by (``lane``, ``MLCN``), not a class name:
the messages reach the command line as they are.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nasmlcn.errors import SpecError


def check_int(owner: str, field: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    """Returns ``value`` if it is an int >= ``minimum`` (and <= ``maximum``); raises
    SpecError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SpecError(f"{owner} {field} must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise SpecError(f"{owner} {field} must be {minimum}..{maximum}, got {value!r}")
    return value


def check_fraction(owner: str, field: str, value: Any, *, inclusive_high: bool = False) -> float:
    """Returns ``value`` as float if it lies in [0, 1) (or [0, 1])."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    high_ok = ok and (value <= 1 if inclusive_high else value < 1)
    if not ok or value < 0 or not high_ok:
        bound = "1]" if inclusive_high else "1)"
        raise SpecError(f"{owner} {field} must be a number in [0, {bound}, got {value!r}")
    return float(value)


def check_choice(owner: str, field: str, value: Any, choices: Iterable[str]) -> str:
    """Returns ``value`` if it is one of ``choices``."""
    options = list(choices)
    if value not in options:
        raise SpecError(f"{owner} {field} must be one of {', '.join(options)}; got {value!r}")
    return str(value)
