"""Reading and writing architecture files (JSON)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from nasmlcn._io import parse_json, read_text_file, write_text_atomic
from nasmlcn.errors import ArchFileError, SpecError, nested
from nasmlcn.specs._arch import ArchSpec, arch_from_dict


def arch_to_json(spec: ArchSpec, *, indent: int | None = 2) -> str:
    """The JSON text of ``spec`` (with its schema version)."""
    return json.dumps(spec.to_dict(), indent=indent)


def arch_from_json(text: str) -> ArchSpec:
    """Parses JSON text into an architecture spec.

    Raises:
        SpecError: The text is not JSON or not a valid architecture.
    """
    return arch_from_dict(parse_json(text, SpecError))


def load_arch(path: str | os.PathLike[str]) -> ArchSpec:
    """Reads an architecture file.

    Raises:
        ArchFileError: The file is missing, unreadable, not JSON or not a valid
            architecture; the message starts with the path.
    """
    p = Path(path)
    text = read_text_file(p, "architecture file", ArchFileError, expected="a JSON file")
    try:
        return arch_from_json(text)
    except SpecError as err:
        raise ArchFileError(f"architecture file {str(p)!r}: {nested(err)}") from None


def save_arch(spec: ArchSpec, path: str | os.PathLike[str]) -> Path:
    """Writes ``spec`` to ``path`` atomically (a crash leaves the old file intact)."""
    p = Path(path)
    write_text_atomic(p, arch_to_json(spec) + "\n")
    return p
