"""Old spellings of renamed options and commands, still accepted for one release.

An old spelling is not declared as an option (so ``--help`` never shows it): the
command's parser reads it as the new one, after one warning line on stderr, e.g.
``warning: --timeout is now --rank-timeout (the old spelling goes in the next
release)``. The renames (one word per concept across commands): ``train
--timeout`` -> ``--rank-timeout`` (``search --timeout`` is the search's budget);
``--device`` -> ``--run-on`` in ``train``, ``retrain``, ``evaluate``,
``remove-lanes`` and ``calibrate`` (where the work runs, as ``search --run-on``);
the command ``prune`` -> ``remove-lanes`` (``search --prune`` stops trials).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from typer.core import TyperCommand

from nasmlcn.cli._console import print_warning

GOES = "the old spelling goes in the next release"


def warn_renamed(old: str, new: str) -> None:
    """The one line that says ``old`` is now ``new``."""
    print_warning(f"{old} is now {new} ({GOES})")


def respell(args: Sequence[str], renamed: Mapping[str, str]) -> list[str]:
    """``args`` with each old option (``--old`` or ``--old=value``) spelled as its
    new one, and a warning per old option used; nothing after ``--`` changes."""
    result: list[str] = []
    warned: set[str] = set()
    for index, arg in enumerate(args):
        if arg == "--":
            result.extend(args[index:])
            break
        name, equals, value = arg.partition("=")
        new = renamed.get(name)
        if new is None:
            result.append(arg)
            continue
        if name not in warned:
            warned.add(name)
            warn_renamed(name, new)
        result.append(new + equals + value)
    return result


def renamed_command(
    options: Mapping[str, str] | None = None, *, old_name: str | None = None, new_name: str = ""
) -> type[TyperCommand]:
    """A command class (Typer's ``cls``) that reads the old ``options`` (old ->
    new) as the new ones; with ``old_name``, it is the hidden old name of command
    ``new_name`` and says so first."""
    renamed = dict(options or {})

    class Renamed(TyperCommand):
        # ctx: Typer's own (vendored) click Context, which it does not export
        def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
            if old_name is not None:
                warn_renamed(f"nasmlcn {old_name}", f"nasmlcn {new_name}")
            return super().parse_args(ctx, respell(args, renamed))

    return Renamed
