"""Checked and atomic file IO: one-line errors that name the file, and writes that
a crash cannot leave half done.

Every file nasmlcn reads (architectures, calibrations, TOML catalogs and configs)
goes through :func:`read_text_file`, so a missing, unreadable or non-UTF-8 file
reads the same whatever it is; every file it writes whole goes through
:func:`atomic_path`.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nasmlcn.errors import NasmlcnError


def read_text_file(
    path: Path,
    what: str,
    error: type[NasmlcnError],
    *,
    expected: str = "",
    missing_hint: str = "",
) -> str:
    """The UTF-8 text of ``path``.

    Args:
        path: The file.
        what: What the file is, for messages ("architecture file").
        error: The exception raised on failure.
        expected: What a directory should have been ("a JSON file"), if said.
        missing_hint: Appended to the message of a missing file ("run ...").

    Raises:
        error: Missing, a directory, unreadable or not UTF-8; the message names it.
    """
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        hint = f"; {missing_hint}" if missing_hint else ""
        raise error(f"{what} {str(path)!r} does not exist{hint}") from None
    except IsADirectoryError:
        instead = f", expected {expected}" if expected else ""
        raise error(f"{what} {str(path)!r} is a directory{instead}") from None
    except UnicodeDecodeError:
        raise error(f"{what} {str(path)!r} is not UTF-8 text") from None
    except OSError as err:
        raise error(f"cannot read {what} {str(path)!r}: {err.strerror or err}") from None


def parse_json(text: str, error: type[NasmlcnError]) -> Any:
    """The JSON value of ``text``.

    Raises:
        error: Not valid JSON (with the line and column).
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise error(f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None


def write_text_atomic(path: Path, text: str) -> None:
    """Writes ``text`` to a temporary file beside ``path``, then renames it over."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def probe_folder(folder: Path) -> OSError | None:
    """Whether a file can really be written in ``folder``: makes the folder (and its
    missing parents), writes and removes a probe file, then removes the folders it
    made. Permission bits alone do not say (root passes them; ``/proc`` refuses
    root). Returns the error that stopped it, None when the probe was written.
    """
    made: list[Path] = []
    missing = folder
    while not missing.exists() and missing.parent != missing:
        made.append(missing)
        missing = missing.parent
    try:
        for attempt in range(5):
            try:
                folder.mkdir(parents=True, exist_ok=True)
                fd, name = tempfile.mkstemp(prefix=".nasmlcn-probe-", dir=folder)
            except (FileNotFoundError, FileExistsError):
                # another process probing the same new folder (the ranks of one
                # job) removed it around our mkdir or our probe: make it again
                if attempt == 4:
                    raise
                continue
            os.close(fd)
            os.unlink(name)
            break
    except OSError as err:
        return err
    finally:
        for path in made:  # deepest first
            with contextlib.suppress(OSError):
                path.rmdir()
    return None


def check_output_file(path: Path, option: str, error: type[NasmlcnError]) -> None:
    """``path`` (given as ``option``) can be written as a file: it is no folder, no
    folder on its way is a file, and a probe file can really be written beside it
    (:func:`probe_folder`). Checked before the work whose result it is written
    after, so a long run does not end in an unwritable path.

    Raises:
        error: Naming the option, what is in the way and the fix.
    """
    fix = f"choose another {option}"
    if path.is_dir():
        raise error(f"{option} {str(path)!r} is a folder; give the file to write")
    existing = path.parent
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise error(f"{option} {str(path)!r} is inside the file {str(existing)!r}; {fix}")
    problem = probe_folder(path.parent)
    if problem is not None:
        raise error(
            f"{option} {str(path)!r} cannot be written ({problem.strerror or problem}); {fix}"
        )


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
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def umask() -> int:
    """The process's umask (read by setting it, then set back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
