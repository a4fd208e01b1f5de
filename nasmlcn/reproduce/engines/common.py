"""What the engines and the benchmark scripts (``benchmarks/``) share: progress
lines, medians, running-best curves, paired intervals and their verdicts, the number
formats of their tables, and the fast exit."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn


def say(*parts: object) -> None:
    """A progress line on stderr (stdout holds the table or the JSON)."""
    print(*parts, file=sys.stderr, flush=True)


def median(values: Iterable[float]) -> float:
    """The median of one or more values."""
    return float(statistics.median(list(values)))


def median_or_none(values: Iterable[float]) -> float | None:
    """The median, or None for no values."""
    values = list(values)
    return median(values) if values else None


def running_best(values: Iterable[float | None]) -> list[float | None]:
    """After each value (None: a trial without one), the largest so far."""
    out: list[float | None] = []
    best: float | None = None
    for value in values:
        if value is not None:
            best = value if best is None else max(best, value)
        out.append(best)
    return out


def paired(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """``a - b`` paired by position (by seed): the mean and its 95 % t interval."""
    from nasmlcn.stats import paired_interval

    return paired_interval(a, b).to_dict()


def verdict(interval: Mapping[str, Any]) -> str:
    """``tie`` when the interval holds 0, else ``ahead`` or ``behind``."""
    low, high = interval["low"], interval["high"]
    return "tie" if low <= 0 <= high else ("ahead" if low > 0 else "behind")


def percent(value: float | None) -> str:
    """An accuracy in percent with two decimals (``-`` for none)."""
    return "-" if value is None else f"{100 * value:.2f}"


def fraction(value: float | None) -> str:
    """An accuracy as a fraction with four decimals (``-`` for none)."""
    return "-" if value is None else f"{value:.4f}"


def exit_with(code: int) -> NoReturn:
    """Ends the script with exit ``code``, skipping the interpreter's exit collection
    (``nasmlcn._exit``: 0.7 s of a process that built a torch model)."""
    from nasmlcn._exit import before_exit

    before_exit()
    raise SystemExit(code)
