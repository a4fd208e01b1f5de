"""A small named registry with wildcard listing and "did you mean" errors.

Every pluggable family (lane types, named architectures, datasets, learning-rate
policies; later samplers, cost models and placers) is a :class:`Registry`.
Built-ins register themselves on import; unknown names fail with the closest
matches.
"""

from __future__ import annotations

import difflib
import fnmatch
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar, overload

from nasmlcn.errors import UnknownNameError

T = TypeVar("T")


_NEAR_BEST = 0.35
"""How far below the best match another may score and still be suggested."""


def did_you_mean(
    name: str,
    choices: Iterable[str],
    *,
    otherwise: str,
    cutoff: float = 0.5,
    fold: Callable[[str], str] = str,
    most: int = 3,
) -> str:
    """The hint after an unknown ``name``: ``did you mean 'a' or 'b'?`` naming the
    closest ``choices`` (compared after ``fold``, e.g. ``str.lower``), else
    ``otherwise`` (typically the list of known names)."""
    by_folded = {fold(c): c for c in choices}
    folded = fold(name)
    close = difflib.get_close_matches(folded, list(by_folded), n=most, cutoff=cutoff)
    # a typo mostly keeps a word's start: a shared start (up to 3 characters) adds to
    # difflib's similarity, so 'lanse' means 'lane_types' before 'balance'
    score = {
        c: difflib.SequenceMatcher(None, folded, c).ratio()
        + 0.05 * min(_shared_start(c, folded), 3)
        for c in close
    }
    close.sort(key=lambda c: -score[c])
    # only the near-best: 'epoch' means 'epochs', not also 'reproduce'
    close = [c for c in close if score[c] >= score[close[0]] - _NEAR_BEST]
    if close:
        return "did you mean " + " or ".join(repr(by_folded[c]) for c in close) + "?"
    return otherwise


def _shared_start(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    return sum(
        1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], zip(a, b, strict=False))
    )


_BY_KIND: dict[str, Registry[Any]] = {}
"""Every registry by the kind it holds (the first one made of each kind)."""


def names_of(kind: str) -> Callable[[], list[str]]:
    """The names of the registry of ``kind``, asked for when called: what a field's
    help lists without its module importing the registry (a configuration sits
    below the registries that name its choices).

    Raises (when called):
        UnknownNameError: No registry of ``kind`` was made.
    """

    def names() -> list[str]:
        registry = _BY_KIND.get(kind)
        if registry is None:
            raise UnknownNameError(f"no registry holds {kind!r} entries")
        return registry.names()

    return names


class Registry(Generic[T]):
    """Maps names to objects of one kind.

    Args:
        kind: What the registry holds, used in error messages ("dataset").
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        _BY_KIND.setdefault(kind, self)

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, obj: T) -> T: ...

    def register(self, name: str, obj: T | None = None) -> T | Callable[[T], T]:
        """Registers ``obj`` under ``name``; without ``obj``, acts as a decorator."""

        def add(value: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._entries[name] = value
            return value

        if obj is None:
            return add
        return add(obj)

    def unregister(self, name: str) -> T:
        """Removes the entry called ``name`` and returns it (a plug-in a test added,
        taken back).

        Raises:
            UnknownNameError: ``name`` is not registered.
        """
        value = self.get(name)
        del self._entries[name]
        return value

    def get(self, name: str) -> T:
        """Returns the entry called ``name``.

        Raises:
            UnknownNameError: ``name`` is not registered; the message lists the
                closest names, or all of them.
        """
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(self.unknown_message(name)) from None

    def unknown_message(self, name: str) -> str:
        """The one-line message for an unknown ``name``."""
        hint = did_you_mean(name, self._entries, otherwise="choose one of: " + ", ".join(self))
        return f"unknown {self.kind} {name!r}; {hint}"

    def names(self, pattern: str = "*") -> list[str]:
        """Sorted names matching a shell-style wildcard ``pattern``."""
        return sorted(n for n in self._entries if fnmatch.fnmatchcase(n, pattern))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)
