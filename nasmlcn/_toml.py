"""Reading the project's TOML files (device catalogs, search spaces, recipes) with
one-line errors that name the file."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

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
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{what} {str(p)!r} does not exist") from None
    except IsADirectoryError:
        raise error(f"{what} {str(p)!r} is a directory, expected a TOML file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise error(f"cannot read {what} {str(p)!r}: {err}") from None
    except tomllib.TOMLDecodeError as err:
        raise error(f"{what} {str(p)!r} is not valid TOML: {err}") from None
