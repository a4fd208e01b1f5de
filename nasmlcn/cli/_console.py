"""The CLI's consoles, logging, one-line errors and warnings, and phase spinners.

Results go to stdout; progress (:mod:`nasmlcn.cli._progress`), logs and errors go
to stderr.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from typing import TextIO

from rich.console import Console
from rich.logging import RichHandler

UNWRAPPED_WIDTH = 10_000
"""The width of a console that is not a terminal: wide enough that no table or line
wraps, so a pipe, a log or CI gets whole rows (rich's default there is 80 columns,
which broke lane mixes mid-word)."""


def _width(stream: TextIO) -> int | None:
    """None where rich should decide: a terminal (its width), or ``$COLUMNS`` set."""
    if os.environ.get("COLUMNS", "").strip().isdigit():
        return None  # rich reads COLUMNS itself
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        terminal = False
    return None if terminal else UNWRAPPED_WIDTH


out = Console(highlight=False, width=_width(sys.stdout))
err = Console(stderr=True, highlight=False, width=_width(sys.stderr))

_told = [False]  # whether this command said what its interruption kept


def tell_interrupted(console: Console, line: str, **options: object) -> None:
    """Prints a command's own line on being interrupted (what it kept, how to go on);
    the CLI's bare ``error: interrupted`` is then left out."""
    _told[0] = True
    console.print(line, **options)  # type: ignore[arg-type]


def interruption_told(*, reset: bool = False) -> bool:
    """Whether :func:`tell_interrupted` spoke since the last reset (``reset``: start
    a command afresh)."""
    told = _told[0]
    if reset:
        _told[0] = False
    return told


def print_error(message: str) -> None:
    """One red line on stderr, without any database password (the last safety net:
    the library already hides them, see :func:`nasmlcn._storage_url.scrub`)."""
    from rich.markup import escape

    from nasmlcn._storage_url import scrub

    err.print(
        f"[bold red]error:[/] {escape(scrub(message))}",
        markup=True,
        highlight=False,
        soft_wrap=True,
    )


def print_warning(message: str) -> None:
    """One yellow ``warning:`` line on stderr (the command goes on)."""
    from rich.markup import escape

    err.print(f"[yellow]warning:[/] {escape(message)}", markup=True, soft_wrap=True)


@contextlib.contextmanager
def phase_status(quiet: bool, what: str) -> Iterator[Callable[[str], None]]:
    """A spinner on stderr naming the phase it is told (none when ``quiet``)."""
    if quiet:
        yield lambda _: None
        return
    with err.status(what, spinner="dots") as status:
        yield lambda phase: status.update(f"{phase}: {what}")


class _ScrubPasswords(logging.Filter):
    """Log records without any database password (see :func:`print_error`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from nasmlcn._storage_url import scrub

        record.msg, record.args = scrub(record.getMessage()), None
        return True


def setup_logging(verbose: bool) -> None:
    """Warnings (and with ``verbose`` info) from nasmlcn on stderr: rich's columns on a
    terminal, plain ``LEVEL  message`` lines elsewhere (rich pads each record to the
    console's width, which off a terminal is :data:`UNWRAPPED_WIDTH` columns)."""
    handler: logging.Handler
    if err.is_terminal:
        handler = RichHandler(console=err, show_path=False, show_time=False, markup=False)
    else:
        handler = logging.StreamHandler(err.file)
        handler.setFormatter(logging.Formatter("%(levelname)-8s %(message)s"))
    handler.addFilter(_ScrubPasswords())
    logging.basicConfig(level=logging.WARNING, handlers=[handler], format="%(message)s", force=True)
    logging.getLogger("nasmlcn").setLevel(logging.INFO if verbose else logging.WARNING)
