"""Finding and reading search-space files.

``--space NAME`` looks for ``NAME.toml`` in ``$NASMLCN_SPACES`` and then among the
built-in spaces; ``--space PATH`` reads that file. Copy a file, edit it, and pass
its path.

The built-in spaces are the files of the repository's top-level ``search_spaces/``
folder (the one copy), which pyproject.toml installs as the package
``nasmlcn.search_spaces``: a wheel carries them inside ``nasmlcn/``, an editable
install maps the package to the folder itself. They are found with
``importlib.resources``, never through the repository layout.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from nasmlcn._toml import check_keys, read_toml
from nasmlcn.errors import SearchError
from nasmlcn.registry import did_you_mean
from nasmlcn.search.spaces._base import SPACE_KINDS, SearchSpace
from nasmlcn.search.spaces._values import COMMON_KEYS

SPACES_ENV = "NASMLCN_SPACES"
BUILTIN_SPACES_PACKAGE = "nasmlcn.search_spaces"


def builtin_spaces_dir() -> Path:
    """The folder of the built-in spaces (package ``nasmlcn.search_spaces``)."""
    try:
        root = resources.files(BUILTIN_SPACES_PACKAGE)
    except ModuleNotFoundError:
        # A checkout on PYTHONPATH that was never installed: the folder itself.
        return Path(__file__).resolve().parents[3] / "search_spaces"
    if not isinstance(root, Path):  # e.g. imported from a zip file
        raise SearchError(
            f"the built-in search spaces ({BUILTIN_SPACES_PACKAGE}) are not a folder on disk"
            f" ({root!r}); install nasmlcn with pip, or give ‹space› a path"
        )
    return root


def space_dirs() -> list[Path]:
    """Where named spaces are looked up, in order."""
    dirs = [Path(p) for p in os.environ.get(SPACES_ENV, "").split(os.pathsep) if p]
    return [*dirs, builtin_spaces_dir()]


def available_spaces() -> dict[str, Path]:
    """Named spaces: name -> file (earlier folders win)."""
    found: dict[str, Path] = {}
    for folder in reversed(space_dirs()):
        if folder.is_dir():
            for path in sorted(folder.glob("*.toml")):
                found[path.stem] = path
    return dict(sorted(found.items()))


def load_space(name_or_path: str) -> SearchSpace:
    """The space called ``name_or_path``, or read from that path.

    Raises:
        SearchError: Unknown name ("did you mean"), unreadable or invalid file.
    """
    path = Path(name_or_path)
    if not (name_or_path.endswith(".toml") or os.sep in name_or_path or path.is_file()):
        spaces = available_spaces()
        if name_or_path not in spaces:
            hint = did_you_mean(
                name_or_path, spaces, otherwise="known spaces: " + ", ".join(spaces)
            )
            raise SearchError(
                f"unknown search space {name_or_path!r}; {hint} (or give a path to a .toml file)"
            )
        path = spaces[name_or_path]
    data = read_toml(path, "search space file", SearchError)
    kind = data.pop("kind", None)
    if kind is None:
        # a misspelled kind (``knd``) is named as such, before its absence
        every = (k for name in SPACE_KINDS.names() for k in SPACE_KINDS.get(name).keys)
        check_keys(data, (*COMMON_KEYS, *every), f"search space file {str(path)!r}", SearchError)
        raise SearchError(
            f"search space file {str(path)!r} has no 'kind' ({', '.join(SPACE_KINDS.names())})"
        )
    if kind not in SPACE_KINDS:
        raise SearchError(
            f"search space file {str(path)!r}: {SPACE_KINDS.unknown_message(str(kind))}"
        )
    return SPACE_KINDS.get(kind)(path.stem, data, str(path))
