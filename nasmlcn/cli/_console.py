"""The CLI's consoles, logging and one-line errors.

Results go to stdout; progress (:mod:`nasmlcn.cli._progress`), logs and errors go
to stderr.
"""

from __future__ import annotations

import logging

from rich.console import Console
from rich.logging import RichHandler

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


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


class _ScrubPasswords(logging.Filter):
    """Log records without any database password (see :func:`print_error`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from nasmlcn._storage_url import scrub

        record.msg, record.args = scrub(record.getMessage()), None
        return True


def setup_logging(verbose: bool) -> None:
    handler = RichHandler(console=err, show_path=False, show_time=False, markup=False)
    handler.addFilter(_ScrubPasswords())
    logging.basicConfig(level=logging.WARNING, handlers=[handler], format="%(message)s", force=True)
    logging.getLogger("nasmlcn").setLevel(logging.INFO if verbose else logging.WARNING)
