"""Small helpers for the words of messages and tables."""

from __future__ import annotations


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and its noun in number: ``1 epoch``, ``3 epochs``, ``2 queries``
    (``plural`` where it is not ``singular + "s"``)."""
    return f"{n:,} {singular if n == 1 else plural or singular + 's'}"


def percent(fraction: object) -> float | None:
    """A fraction (``0.0075``) as the percent every table, report and ``--json`` gives
    it, to one decimal (``0.8``); None for no number. A lane imbalance, for one, is
    written so wherever it is shown, so that two views never disagree on a trial."""
    if isinstance(fraction, bool) or not isinstance(fraction, int | float):
        return None
    return round(fraction * 100, 1) if fraction == fraction else None
