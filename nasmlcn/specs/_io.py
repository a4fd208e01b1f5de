"""Reading and writing architecture files (JSON)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nasmlcn.errors import ArchFileError, SpecError
from nasmlcn.specs._arch import ArchSpec, arch_from_dict


def arch_to_json(spec: ArchSpec, *, indent: int | None = 2) -> str:
    """The JSON text of ``spec`` (with its schema version)."""
    return json.dumps(spec.to_dict(), indent=indent)


def arch_from_json(text: str) -> ArchSpec:
    """Parses JSON text into an architecture spec.

    Raises:
        SpecError: The text is not JSON or not a valid architecture.
    """
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(
            f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno})"
        ) from None
    return arch_from_dict(data)


def load_arch(path: str | os.PathLike[str]) -> ArchSpec:
    """Reads an architecture file.

    Raises:
        ArchFileError: The file is missing, unreadable, not JSON or not a valid
            architecture; the message starts with the path.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ArchFileError(f"architecture file {str(p)!r} does not exist") from None
    except IsADirectoryError:
        raise ArchFileError(
            f"architecture file {str(p)!r} is a directory, expected a JSON file"
        ) from None
    except UnicodeDecodeError:
        raise ArchFileError(f"architecture file {str(p)!r} is not UTF-8 text") from None
    except OSError as err:
        raise ArchFileError(f"cannot read architecture file {str(p)!r}: {err.strerror}") from None
    try:
        return arch_from_json(text)
    except SpecError as err:
        raise ArchFileError(f"architecture file {str(p)!r}: {err}") from None


def save_arch(spec: ArchSpec, path: str | os.PathLike[str]) -> Path:
    """Writes ``spec`` to ``path`` atomically (a crash leaves the old file intact)."""
    p = Path(path)
    write_text_atomic(p, arch_to_json(spec) + "\n")
    return p


def write_text_atomic(path: Path, text: str) -> None:
    """Writes ``text`` to a temporary file beside ``path``, then renames it over."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` that replaces it when the block succeeds.

    A crash or an exception leaves ``path`` as it was. The new file gets the
    usual permissions (0666 minus the umask), not mkstemp's 0600.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
