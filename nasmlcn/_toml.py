"""Reading the project's TOML files (device catalogs, search spaces, recipes) with
one-line errors that name the file."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from nasmlcn._io import read_text_file
from nasmlcn.errors import NasmlcnError

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
