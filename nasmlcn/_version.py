"""The package's version, for the packages to record and print without importing
``nasmlcn`` itself (which imports them: an arrow back up).

:data:`SOURCE_VERSION` is the one place the version is written (``pyproject.toml``
reads it); :func:`version` is the installed distribution's (``importlib.metadata``),
else, where nasmlcn runs from a checkout that was never installed (``PYTHONPATH``),
the source's.
"""

from __future__ import annotations

import functools
import platform

SOURCE_VERSION = "0.1.0"


@functools.lru_cache(maxsize=1)
def version() -> str:
    """The installed nasmlcn's version (the source's when it is not installed)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("nasmlcn")
    except importlib.metadata.PackageNotFoundError:
        return SOURCE_VERSION


@functools.lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    """Versions worth keeping with every result."""
    import optuna

    out = {
        "nasmlcn": version(),
        "optuna": optuna.__version__,
        "python": platform.python_version(),
    }
    try:
        import importlib.metadata

        out["torch"] = importlib.metadata.version("torch")
    except Exception:  # pragma: no cover - torch missing
        pass
    return out
