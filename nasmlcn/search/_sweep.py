"""A recipe's sweep: one search configuration per value of one option (thesis
Fig. 6.2: average and best accuracy per setting)."""

from __future__ import annotations

from typing import Any

from nasmlcn.errors import SearchError
from nasmlcn.search._config import SearchConfig
from nasmlcn.search._setup import setup_search


def expand_sweep(
    base: SearchConfig, sweep: dict[str, list[Any]], *, check: bool = True
) -> list[SearchConfig]:
    """One config per value of the sweep's single option (no sweep: just ``base``).

    Each config's study is ``<study>-<option>-<value>`` when ``base`` names one.
    With ``check``, every config is set up once, so a bad value is refused before
    the first study is made.

    Raises:
        SearchError: The sweep names more than one option, or a value is invalid.
    """
    if not sweep:
        return [base]
    if len(sweep) > 1:
        raise SearchError(f"a recipe may sweep one option, got {', '.join(sweep)}")
    ((name, values),) = sweep.items()
    configs = [
        base.with_overrides(
            **{name: value, "study": f"{base.study}-{name}-{value}" if base.study else None}
        )
        for value in values
    ]
    if check and len(configs) > 1:
        for config in configs:
            setup_search(config)
    return configs
