"""A search setting written once: ``SearchConfig``'s fields use the neutral
:mod:`nasmlcn._setting` (shared with ``TrainConfig``), whose range errors are
:class:`~nasmlcn.errors.SearchError` here.

``SearchConfig`` declares every field with :func:`setting`; the same metadata
checks a value in the library (:func:`check_ranges`, an error that names the
option) and makes the ``nasmlcn search`` option (``nasmlcn.cli._config_options``:
flag, help text, stated range and default).
"""

from __future__ import annotations

from typing import Any

from nasmlcn._setting import Range, setting
from nasmlcn._setting import check_ranges as check_any_ranges
from nasmlcn.errors import SearchError

__all__ = ["Range", "check_ranges", "setting"]


def check_ranges(config: Any) -> None:
    """Refuses any field of ``config`` outside its :class:`Range` with a
    :class:`~nasmlcn.errors.SearchError` (a None is taken where the field may be
    None: its default is)."""
    check_any_ranges(config, SearchError)
