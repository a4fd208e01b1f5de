"""A search's trials run with the heap alive before them frozen (full collections
walk only what the trials made), and the caller's process gets its heap back."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nasmlcn._heap import frozen_heap, settle
from nasmlcn.search import SearchConfig, SearchObserver, run_search
from tests._cli import heap_frozen


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    """The heap as a command's process has it: nothing frozen (the suite freezes each
    test's, ``tests/conftest.py``)."""
    with heap_frozen(False):
        yield


def test_objects_alive_on_entry_are_frozen_inside_and_thawed_after() -> None:
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        frozen = gc.get_freeze_count()
        made: list[list[int]] = [[] for _ in range(10_000)]  # made inside: collected as usual
        assert frozen > 10_000  # the modules, classes and functions alive on entry
        assert gc.get_freeze_count() <= frozen  # the loop's own objects stay out
        del made
    assert gc.get_freeze_count() == 0


def test_settle_collects_a_trial_s_garbage_and_freezes_what_survived() -> None:
    import weakref

    class Cycle:
        pass

    settle()  # outside a frozen heap: nothing
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        kept: list[list[int]] = [[] for _ in range(10_000)]  # what outlives a trial (data, imports)
        garbage = Cycle()
        garbage.me = garbage  # type: ignore[attr-defined]
        gone = weakref.ref(garbage)
        del garbage
        before = gc.get_freeze_count()
        settle()
        assert gone() is None  # collected before the freeze, never frozen
        assert gc.get_freeze_count() >= before + len(kept)
        del kept
    assert gc.get_freeze_count() == 0


def test_a_heap_frozen_by_someone_else_is_left_as_it_is() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()  # it shrinks as frozen objects are freed
        made: list[list[int]] = [
            [] for _ in range(10_000)
        ]  # tracked, made after the caller's freeze
        with frozen_heap():
            assert gc.get_freeze_count() < frozen + len(made)  # not frozen again
        assert gc.get_freeze_count() > frozen // 2  # not thawed by us
    finally:
        gc.unfreeze()


def test_a_search_runs_its_trials_frozen_and_thaws_when_it_returns(tmp_path: Path) -> None:
    seen: list[int] = []

    class Frozen(SearchObserver):
        def on_trial_start(self, number: int, index: int, lanes: str, plan: Any) -> None:
            seen.append(gc.get_freeze_count())

    config = SearchConfig(
        devices="2xK80",
        mem="12GB",
        evaluator="proxy",
        sampler="random",
        trials=2,
        storage=f"sqlite:///{tmp_path / 's.db'}",
        study="s",
        seed=1,
    )
    result = run_search(config, observers=[Frozen()])
    assert result.n_trials == 2
    assert len(seen) == 2
    assert all(n > 10_000 for n in seen)  # the modules, classes and study of the process
    assert gc.get_freeze_count() == 0
