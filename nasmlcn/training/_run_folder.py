"""A run folder's files, and whether they belong together.

A run folder holds ``checkpoint.pt`` (architecture, weights and a ``run_id``),
``arch.json`` (the architecture, for people and ``train --arch``) and, once
``nasmlcn train`` finished, ``result.json`` (its report, with the checkpoint's
``run_id``). Several commands write them, at different times: ``train --out``
(``arch.json`` first, a checkpoint after every epoch, ``result.json`` at the
end), ``best --export`` and ``prune --keep`` (a checkpoint and ``arch.json``).
A folder written into twice can mix two models: ``evaluate`` would then report
one model's test accuracy under another's result. So

- every reader (``evaluate``, ``export-model``, ``prune``, ``train --resume``,
  ``retrain --resume``) calls :func:`check_run_files`, which compares the
  checkpoint's ``run_id`` with ``result.json``'s and its architecture with
  ``arch.json``'s and ``result.json``'s (files written before run ids, whose id
  is None, are compared by architecture only);
- every writer of a whole model (``best --export``, ``prune --keep``) goes
  through :func:`write_run_folder`, which refuses a folder that already holds a
  run's files and puts the new files in place at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn._io import probe_folder, write_text_atomic
from nasmlcn.errors import CheckpointError, NasmlcnError, RunError, SpecError, nested, option

if TYPE_CHECKING:
    from nasmlcn.specs import ArchSpec

CHECKPOINT_NAME = "checkpoint.pt"
RESULT_NAME = "result.json"
ARCH_NAME = "arch.json"
RUN_FILES = (CHECKPOINT_NAME, ARCH_NAME, RESULT_NAME)
"""The files that make a folder a run folder, in the order a writer puts them in place."""


def read_result(folder: Path) -> dict[str, Any] | None:
    """The ``result.json`` of ``folder`` (None: there is none).

    Raises:
        RunError: It is unreadable, not JSON or not a JSON object.
    """
    from nasmlcn._io import parse_json, read_text_file

    path = folder / RESULT_NAME
    if not path.exists():
        return None
    text = read_text_file(path, "result file", RunError)
    try:
        value = parse_json(text, RunError)
    except NasmlcnError as err:
        raise RunError(f"result file {str(path)!r} is {nested(err)}") from None
    if not isinstance(value, dict):
        raise RunError(f"result file {str(path)!r} is not a JSON object")
    return value


def check_run_files(folder: Path, checkpoint: Mapping[str, Any]) -> dict[str, Any] | None:
    """Checks that ``folder``'s ``arch.json`` and ``result.json`` belong to its
    checkpoint (``checkpoint`` is the payload
    :func:`~nasmlcn.training._checkpoint.load_checkpoint` read); returns the
    parsed ``result.json`` (None: there is none).

    Raises:
        RunError: A file is unreadable, or describes another model or run; the
            message names the folder, the file and the fix.
    """
    from nasmlcn._io import read_text_file
    from nasmlcn.specs import arch_from_dict, arch_from_json

    arch = checkpoint["arch"]
    arch_path = folder / ARCH_NAME
    if arch_path.exists():
        text = read_text_file(arch_path, "architecture file", RunError, expected="a JSON file")
        try:
            written = arch_from_json(text)
        except SpecError as err:
            raise RunError(f"architecture file {str(arch_path)!r}: {nested(err)}") from None
        if written != arch:
            raise _mixed(
                folder,
                f"{ARCH_NAME} describes {written.describe()} but {CHECKPOINT_NAME} holds "
                f"{arch.describe()}",
                ARCH_NAME,
            )
    result = read_result(folder)
    if result is None:
        return None
    theirs, ours = result.get("run_id"), checkpoint.get("run_id")
    if isinstance(theirs, str) and isinstance(ours, str) and theirs != ours:
        raise _mixed(
            folder,
            f"{RESULT_NAME} reports run {theirs[:8]} but {CHECKPOINT_NAME} is of run {ours[:8]}",
            RESULT_NAME,
        )
    if isinstance(result.get("arch"), dict):
        try:
            reported = arch_from_dict(result["arch"])
        except (SpecError, TypeError, KeyError, ValueError):
            raise RunError(
                f"result file {str(folder / RESULT_NAME)!r} holds no valid architecture; "
                f"remove it (it is rewritten when the run is trained again)"
            ) from None
        if reported != arch:
            raise _mixed(
                folder,
                f"{RESULT_NAME} reports {reported.describe()} but {CHECKPOINT_NAME} holds "
                f"{arch.describe()}",
                RESULT_NAME,
            )
    return result


def _mixed(folder: Path, what: str, stale: str) -> RunError:
    return RunError(
        f"run folder {str(folder)!r} mixes two models: {what}; remove the stale {stale}, "
        "or export or train into a new folder"
    )


def check_new_run(folder: Path, arch: ArchSpec) -> None:
    """A run that starts anew in ``folder`` (no checkpoint there) replaces nothing
    kept: no ``result.json`` (a run's report whose checkpoint was removed) and no
    ``arch.json`` of another model than ``arch`` (one written to train, by
    ``best --export-arch`` or by hand). Input shape and classes are not compared:
    a job's architecture is fitted to its dataset later.

    Raises:
        CheckpointError: Naming the file, what it holds and the fix.
    """
    from nasmlcn._io import read_text_file
    from nasmlcn.specs import arch_from_json

    fix = f"choose another {option('out_dir')}"
    if (folder / RESULT_NAME).exists():
        raise CheckpointError(
            f"{str(folder)!r} already holds a run's {RESULT_NAME} (its {CHECKPOINT_NAME} is "
            f"gone); a new run there would replace it: {fix}"
        )
    path = folder / ARCH_NAME
    if not path.exists():
        return
    text = read_text_file(path, "architecture file", CheckpointError, expected="a JSON file")
    try:
        written = arch_from_json(text)
    except SpecError:
        raise CheckpointError(
            f"{str(path)!r} is no architecture file; a new run there would replace it: {fix}"
        ) from None
    fitted = type(written) is type(arch) and (
        replace(written, num_classes=arch.num_classes, input_shape=arch.input_shape) == arch
    )
    if not fitted:
        raise CheckpointError(
            f"{str(path)!r} describes {written.describe()}, not {arch.describe()}; a new run "
            f"there would replace it: train it with {option('arch')} {str(path)!r}, or {fix}"
        )


def held_run_files(folder: Path) -> list[str]:
    """The run files (:data:`RUN_FILES`) already in ``folder``."""
    return [name for name in RUN_FILES if (folder / name).exists()]


def check_free_run_folder(folder: Path, option: str) -> None:
    """``folder`` (given as ``option``) can take a new model: a folder that can be
    made and written (:func:`check_out_dir`), holding no
    run's files yet.

    Raises:
        CheckpointError: Naming what is in the way.
    """

    check_out_dir(folder, option)
    held = held_run_files(folder)
    if held:
        raise CheckpointError(
            f"{option} {str(folder)!r} already holds a model ({', '.join(held)}); "
            f"choose a new or empty folder for {option}"
        )


def write_run_folder(folder: Path, write: Callable[[Path], None], *, option: str) -> Path:
    """Writes a whole model into ``folder`` at once: ``write`` fills a fresh
    temporary folder beside it, whose files then take their places. A missing or
    empty ``folder`` is replaced by the temporary folder in one rename; into a
    folder holding other files (a prune's figures), the run files are renamed
    one by one, checkpoint first, so a reader never finds a file of the new model
    beside one of another. A failure or crash leaves ``folder`` as it was.

    Raises:
        CheckpointError: ``folder`` cannot be written or already holds a run's
            files (:func:`check_free_run_folder`).
    """
    from nasmlcn._io import umask

    check_free_run_folder(folder, option)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        write(tmp)
        os.chmod(tmp, 0o777 & ~umask())
        try:
            os.replace(tmp, folder)  # rename(2) replaces a missing or empty folder
            return folder
        except OSError:
            if not folder.is_dir():
                raise
        for name in RUN_FILES:
            if (tmp / name).exists():
                os.replace(tmp / name, folder / name)
        return folder
    finally:
        with contextlib.suppress(OSError):
            if tmp.exists():
                shutil.rmtree(tmp)


def result_with_run_id(folder: Path, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with the ``run_id`` of ``folder``'s checkpoint (None where the
    checkpoint predates run ids or is missing), as ``result.json`` records it."""
    from nasmlcn.training._checkpoint import checkpoint_run_id

    checkpoint = folder / CHECKPOINT_NAME
    run_id = checkpoint_run_id(checkpoint) if checkpoint.is_file() else None
    return {**result, "run_id": run_id}


def dumps_result(result: dict[str, Any]) -> str:
    """``result.json``'s text."""
    return json.dumps(result, indent=2) + "\n"


def check_out_dir(out: Path, option: str = "--out") -> None:
    """``out`` (given as ``option``) is a folder, or one that can be made: its
    nearest existing ancestor is a writable folder, and a probe file can really be
    written there (the folders the probe made are removed again).

    Raises:
        CheckpointError: Naming the option, what is in the way and the fix.
    """
    for attempt in range(CHECKS):
        try:
            _check_out_dir_once(out, option)
            return
        except CheckpointError:
            if attempt == CHECKS - 1:
                raise


CHECKS = 5
"""Checks of ``--out`` before it counts as refused: processes checking the same new
folder at once (the ranks of one job) remove what their probes made, and a folder
seen as it vanished or came back looked like a file or unwritable (3 % of checks
from 8 threads). What is really in the way is there every time."""


def _check_out_dir_once(out: Path, option: str) -> None:
    existing = out
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    fix = f"choose another {option}"
    if not existing.is_dir():
        what = "is a file" if existing == out else f"is inside the file {str(existing)!r}"
        raise CheckpointError(f"{option} {str(out)!r} {what}, not a folder; {fix}")
    if existing != out and not os.access(existing, os.W_OK | os.X_OK):
        raise CheckpointError(
            f"{option} {str(out)!r} cannot be made: {str(existing)!r} is not writable; {fix}"
        )
    error = probe_folder(out)
    if error is not None:
        raise CheckpointError(
            f"{option} {str(out)!r} cannot be written ({error.strerror or error}); {fix}"
        )


def write_result(out_dir: Path | None, result: dict[str, Any]) -> None:
    """Writes ``result.json`` (what ``--json`` prints, and the ``run_id`` of the
    checkpoint beside it: see this module) into
    ``out_dir``, if there is one."""
    if out_dir is not None:
        write_text_atomic(out_dir / RESULT_NAME, dumps_result(result_with_run_id(out_dir, result)))
