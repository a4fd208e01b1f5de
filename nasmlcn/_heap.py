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
only what the loop made since (a trial's model, optimizer and garbage), 0.04 s
here. On leaving, the objects go back to the oldest generation
(:func:`gc.unfreeze`), so a library caller's process collects as before. Where
something else has frozen objects already (a caller of its own, or
:func:`nasmlcn._exit.before_exit`), it leaves the heap as it finds it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Inside: the objects alive on entry are left out of every collection."""
    if gc.get_freeze_count() or not gc.isenabled():
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
