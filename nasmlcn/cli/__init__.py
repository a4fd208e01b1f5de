"""The ``nasmlcn`` command line: a thin Typer layer over the library API.

:func:`main` runs the app and turns every user error into one red line on stderr
and a non-zero exit code (``--debug`` shows the traceback instead, with any
database password masked like everything else the command prints).
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

import typer

from nasmlcn._exit import before_exit
from nasmlcn._signals import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated, sigterm_raised
from nasmlcn.cli._app import app
from nasmlcn.cli._console import interruption_told, print_error
from nasmlcn.errors import NasmlcnError

__all__ = ["app", "main", "run"]

EXIT_USER_ERROR = 2
EXIT_FAILURE = 1
# The library's word for what an option of another name sets: where the work runs
# (``TrainConfig.device``, ``train(device=...)``, ``CalibrationRequest.device``).
_LIBRARY_WORDS = {"device": "--run-on"}


def main(argv: list[str] | None = None) -> int:
    """Runs the command line on ``argv`` (None: ``sys.argv``); returns the exit code:
    130 after Ctrl-C and 143 after SIGTERM, at whatever moment they come, each said in
    one line unless the command said what it kept."""
    args = list(sys.argv[1:] if argv is None else argv)
    interruption_told(reset=True)
    with sigterm_raised() as terminated:
        code = _run(args)
    if code == EXIT_INTERRUPTED and terminated():  # Typer turns Terminated into a bare 130
        code = EXIT_TERMINATED
    if code in _STOPPED and not interruption_told():
        print_error(_STOPPED[code])
    return code


_STOPPED = {EXIT_INTERRUPTED: "interrupted", EXIT_TERMINATED: "terminated by SIGTERM"}
"""The line of a command stopped by Ctrl-C or SIGTERM, by its exit status."""


def _run(args: list[str]) -> int:
    """The command of ``args``, its user errors and failures said in one line; the
    exit code (a stop's is left to :func:`main` to say)."""
    debug = "--debug" in args
    command = typer.main.get_command(app)
    try:
        result = command.main(args=args, prog_name="nasmlcn", standalone_mode=False)
    except typer.TyperException as exc:  # usage errors: bad option values, unknown commands
        print_error(_usage_message(exc))
        return int(getattr(exc, "exit_code", EXIT_USER_ERROR)) or EXIT_USER_ERROR
    except NasmlcnError as exc:
        if debug:
            return _print_traceback(exc, EXIT_USER_ERROR)
        print_error(exc.for_cli(_option_names(command)))  # fields named as their options
        return EXIT_USER_ERROR
    except (KeyboardInterrupt, typer.Abort) as stop:
        return EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED
    except Exception as exc:
        if debug:
            return _print_traceback(exc, EXIT_FAILURE)
        print_error(f"{type(exc).__name__}: {exc} (run with --debug for the traceback)")
        return EXIT_FAILURE
    return result if isinstance(result, int) else 0


def _option_names(command: Any) -> dict[str, str]:
    """Each option of the command line by the parameter it sets (``out_dir`` ->
    ``--out``), and by the library's word for it where that differs
    (:data:`_LIBRARY_WORDS`): how an error's configuration fields are shown."""
    names: dict[str, str] = {}
    commands = [command]
    while commands:
        current = commands.pop()
        commands.extend(getattr(current, "commands", {}).values())
        for param in current.params:
            spellings = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
            if spellings and param.name and not getattr(param, "hidden", False):
                names.setdefault(param.name, spellings[0])
    return names | _LIBRARY_WORDS


def run() -> int:
    """The ``nasmlcn`` console script and ``python -m nasmlcn``: :func:`main` on
    ``sys.argv``, then a quick exit (:mod:`nasmlcn._exit`; measured by
    ``benchmarks/process_costs.py``)."""
    code = main()
    before_exit()
    return code


def _usage_message(exc: typer.TyperException) -> str:
    """Typer's message, with the value given where its range check leaves it out
    (``Input should be less than or equal to 8``, got 'nan')."""
    message = exc.format_message()
    errors = getattr(exc.__cause__, "errors", None)  # a pydantic range check's
    try:
        given = errors()[0]["input"] if callable(errors) else None
    except (LookupError, TypeError):
        given = None
    if isinstance(given, str) and repr(given) not in message:
        message += f", got {given!r}"
    option = getattr(exc, "option_name", None)
    if type(exc).__name__ == "NoSuchOption" and option in _BEFORE_THE_COMMAND:  # Typer's click
        command = getattr(getattr(exc, "ctx", None), "info_name", None) or "COMMAND"
        message += (
            f"; {option} is nasmlcn's own option: give it before the command, as in "
            f"nasmlcn {option} {command} ..."
        )
    return message


_BEFORE_THE_COMMAND = ("-v", "--verbose", "--debug", "--version")
"""Options of ``nasmlcn`` itself, which a user may put after the command."""


def _print_traceback(exc: BaseException, code: int) -> int:
    """Writes ``exc``'s traceback to stderr, passwords masked; returns ``code``."""
    from nasmlcn._storage_url import scrub

    sys.stderr.write(scrub("".join(traceback.format_exception(exc))))
    return code
