"""The data directory: where the built-ins' files and the cache of user datasets live."""

from __future__ import annotations

from pathlib import Path

from nasmlcn._paths import cache_path
from nasmlcn.errors import DatasetError

DATA_DIR_ENV = "NASMLCN_DATA_DIR"


def default_data_dir() -> Path:
    """``$NASMLCN_DATA_DIR``, else ``~/.cache/nasmlcn/data``."""
    return cache_path(DATA_DIR_ENV, "data")


def resolve_data_dir(data_dir: str | Path | None, *, create: bool = False) -> Path:
    """An explicit directory must exist (a typo must not start a second copy of the
    data), unless ``create``; the default one is created."""
    if data_dir is None:
        path = default_data_dir()
        path.mkdir(parents=True, exist_ok=True)
        return path
    path = Path(data_dir).expanduser()
    if create and not path.exists():
        try:
            path.mkdir(parents=True)
        except OSError as err:
            raise DatasetError(f"cannot create {str(path)!r}: {err.strerror or err}") from None
    if not path.exists():
        raise DatasetError(f"data directory {str(path)!r} does not exist")
    if not path.is_dir():
        raise DatasetError(f"data directory {str(path)!r} is not a directory")
    return path
