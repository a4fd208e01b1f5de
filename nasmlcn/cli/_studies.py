"""``nasmlcn studies``: the studies of a storage (name, trials, size on disk, last
change), and ``nasmlcn studies delete NAME`` to clean one up, its trials' files too."""

from __future__ import annotations

import json
import sys

import typer

from nasmlcn._storage_url import redact_url, resolve_storage
from nasmlcn._text import counted
from nasmlcn.cli._console import err, out
from nasmlcn.cli._options import JSON, STORAGE

studies_app = typer.Typer(
    help="List a storage's studies (trials, size on disk, last change), or delete one.",
    invoke_without_command=True,
)


@studies_app.callback()
def studies(ctx: typer.Context, storage: str | None = STORAGE, as_json: bool = JSON) -> None:
    """The studies of a storage: name, trials by state, their files' size on disk, and
    the last change."""
    if ctx.invoked_subcommand is not None:
        # the group's options reach the subcommand (`studies --storage X delete s1`
        # deleted s1 from the default storage when they did not)
        ctx.obj = {"storage": storage, "json": as_json}
        return
    from rich.table import Table

    from nasmlcn.hardware import format_bytes
    from nasmlcn.study import list_studies

    url = resolve_storage(storage)
    listed = list_studies(url)
    if as_json:
        print(json.dumps({"storage": redact_url(url), "studies": [s.to_dict() for s in listed]}))
        return
    if not listed:
        out.print(f"no studies in {redact_url(url)}", highlight=False, markup=False)
        return
    table = Table("study", "trials", "complete", "pruned", "failed", "on disk", "last change")
    for s in listed:
        by = s.trials
        table.add_row(
            s.name,
            str(s.total),
            str(by.get("COMPLETE", 0)),
            str(by.get("PRUNED", 0)),
            str(by.get("FAIL", 0)),
            format_bytes(s.artifact_bytes),
            (s.last_change or "-").replace("T", " "),
        )
    out.print(
        f"{counted(len(listed), 'study', 'studies')} in {redact_url(url)}",
        highlight=False,
        markup=False,
    )
    out.print(table)
    out.print(
        "on disk: the trials' checkpoints and weights in their artifact folder "
        f"({listed[0].artifacts})",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


@studies_app.command("delete")
def delete(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The study to delete."),
    storage: str | None = STORAGE,
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
    as_json: bool = JSON,
) -> None:
    """Delete a study and its trials' files (checkpoints, weights); refused while a
    trial of it has a fresh heartbeat (a worker is training it)."""
    from nasmlcn.errors import StorageError
    from nasmlcn.hardware import format_bytes
    from nasmlcn.study import delete_study, find_study

    storage, as_json = _with_group_options(ctx, storage, as_json)
    url = resolve_storage(storage)
    found = find_study(url, name)
    what = (
        f"study {name!r} in {redact_url(url)}: {counted(found.total, 'trial')}, "
        f"{format_bytes(found.artifact_bytes)} of files in {found.artifacts}"
    )
    if not yes:
        if not sys.stdin.isatty():
            raise StorageError(f"deleting {what} needs --yes (no terminal to ask on)")
        if not typer.confirm(f"delete {what}?", default=False, err=True):
            err.print("nothing deleted", highlight=False)
            raise typer.Exit(1)
    deleted = delete_study(url, name)
    if as_json:
        print(json.dumps(deleted.to_dict()))
        return
    out.print(
        f"deleted study {name!r}: {counted(deleted.trials, 'trial')}, "
        f"{counted(deleted.files, 'file')} ({format_bytes(deleted.freed_bytes)} freed)",
        highlight=False,
        markup=False,
    )


def _with_group_options(
    ctx: typer.Context, storage: str | None, as_json: bool
) -> tuple[str | None, bool]:
    """The subcommand's ``--storage`` and ``--json``, merged with the group's
    (``nasmlcn studies --storage X delete NAME``); two different storages are refused
    rather than one of them silently chosen."""
    from nasmlcn.errors import StorageError

    group = ctx.obj if isinstance(ctx.obj, dict) else {}
    above = group.get("storage")
    if above is not None and storage is not None and above != storage:
        raise StorageError(
            f"two storages given: --storage {redact_url(above)} before the subcommand and "
            f"--storage {redact_url(storage)} after it; give one"
        )
    return (storage if storage is not None else above), (as_json or bool(group.get("json")))
