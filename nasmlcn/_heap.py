"""A long loop's full collections skip the objects that were alive before it.

CPython's full collection walks every tracked object. With torch, Optuna and
SQLAlchemy imported that is about 400,000 objects: 0.26 s here for each
``gc.collect()``, and the interpreter runs such collections on its own as a
trial allocates. A search's trials are short (a one-epoch trial on a GPU takes
about 2 s), and each one measures its peak memory from a collected heap
(:mod:`nasmlcn.measure`): a quarter of a second a trial spent walking modules,
classes and the study that live as long as the process.

:func:`frozen_heap` collects once, then moves every object alive to the
permanent generation (:func:`gc.freeze`) for the loop: a collection inside walks
only what the loop made since (a trial's model, optimizer and garbage). Between
trials :func:`settle` collects what the trial left and freezes what survived it (the
modules a first trial imports, the data it loads), so each trial's collections walk
that trial's objects only. (An object frozen so that later falls into a reference
cycle is collected only when the loop ends; a trial's own garbage is collected before
each freeze.) On leaving, the objects go back to the oldest generation
(:func:`gc.unfreeze`), so a library caller's process collects as before. Where
something else has frozen objects already (a caller of its own, or
:func:`nasmlcn._exit.before_exit`), it leaves the heap as it finds it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_held = False  # a frozen_heap of ours is open: settle() may freeze more


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Inside: the objects alive on entry are left out of every collection."""
    global _held
    if gc.get_freeze_count() or not gc.isenabled():
        yield
        return
    gc.collect()
    gc.freeze()
    _held = True
    try:
        yield
    finally:
        _held = False
        gc.unfreeze()


def settle() -> None:
    """Between two trials inside :func:`frozen_heap`: collects what the trial left
    (a walk of the objects made since the last freeze only), then freezes the rest.
    What survives a trial lives on (the modules a first trial imports, the data it
    loads, the study's cache), so later collections skip it too. Outside, nothing."""
    if _held:
        gc.collect()
        gc.freeze()
