"""Small helpers for the words of messages and tables."""

from __future__ import annotations


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and its noun in number: ``1 epoch``, ``3 epochs``, ``2 queries``
    (``plural`` where it is not ``singular + "s"``)."""
    return f"{n:,} {singular if n == 1 else plural or singular + 's'}"
