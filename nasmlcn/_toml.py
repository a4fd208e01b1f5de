"""Reading the files the user writes (device catalogs, search spaces, recipes, and
the calibration file's JSON) with one-line errors that name the file.

:func:`read_toml` parses a file; :func:`check_keys` refuses a table's unknown keys
("did you mean"), so that a misspelled setting is an error, never a silent
default. Each reader declares the keys of every table it reads next to the code
that reads them, and checks each table with :func:`check_keys` (so do the specs'
JSON readers: one check, one message, for every file a user writes).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from nasmlcn._io import read_text_file
from nasmlcn.errors import NasmlcnError
from nasmlcn.registry import did_you_mean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def read_toml(path: str | os.PathLike[str], what: str, error: type[NasmlcnError]) -> dict[str, Any]:
    """The parsed TOML of ``path``.

    Args:
        path: The file.
        what: What the file is, for messages ("device file").
        error: The exception raised on failure.

    Raises:
        error: Missing, unreadable or invalid file; the message names it.
    """
    p = Path(path)
    text = read_text_file(p, what, error, expected="a TOML file")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise error(f"{what} {str(p)!r} is not valid TOML: {err}") from None


def check_keys(
    table: Mapping[str, Any],
    known: Iterable[str],
    where: str,
    error: type[NasmlcnError],
    *,
    inside: str = "",
    fold: Callable[[str], str] = str,
) -> None:
    """Refuses the first key of ``table`` that is not ``known``, in one line::

        search space file 'my.toml': unknown key 'widht'; did you mean 'width'?
        (known keys: lane_types, width, depth, ...)

    Args:
        table: A parsed table (the file's top level, or one of its tables).
        known: The keys its reader reads, in the order the message lists them.
        where: The file, for messages (``search space file 'my.toml'``); empty
            when the caller adds it (the message then starts ``unknown key``).
        error: The exception raised.
        inside: Which table ``table`` is, as the message says it (``[training]``,
            ``[K80]``, ``samples[2]``); empty for the top level.
        fold: Maps a key to its known spelling before comparing (a recipe's
            ``train-limit`` is ``train_limit``).

    Raises:
        error: An unknown key; the message names it, the closest known key(s)
            and every known key.
    """
    names = list(dict.fromkeys(known))
    accepted = set(names)
    for key in table:
        if fold(key) in accepted:
            continue
        within = f" in {inside}" if inside else ""
        listed = f"known keys: {', '.join(names)}" if names else "it takes no keys"
        hint = did_you_mean(key, names, otherwise="", fold=fold)
        advice = f"{hint} ({listed})" if hint else listed
        prefix = f"{where}: " if where else ""
        raise error(f"{prefix}unknown key {key!r}{within}; {advice}")
