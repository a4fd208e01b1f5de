"""The Python API as the documentation gives it (README's "Python API" section, then
``docs/python-api.md``) and ``docs/tracking.md``: every Python block runs as written
(in order, in one empty folder, as a reader would paste them), and the API text names
every public entry point of ``nasmlcn``, ``nasmlcn.search`` and ``nasmlcn.tracking``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import nasmlcn
import nasmlcn.search
import nasmlcn.tracking

ROOT = Path(__file__).resolve().parents[2]
SLOW = 'evaluator="train"'  # the block that trains real models


def _api_text() -> str:
    """README's "Python API" section and its continuation, docs/python-api.md."""
    text = (ROOT / "README.md").read_text()
    start = text.index("\n## Python API\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    return section + "\n" + (ROOT / "docs" / "python-api.md").read_text()


def _blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def _run(blocks: list[str], folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs the blocks; what they added to the plug-in registries is taken back (the
    registries are the process's: the next test would see a reader's plug-ins)."""
    from nasmlcn.registry import Registry
    from nasmlcn.search import EVALUATORS, OBJECTIVES, PRUNERS, SAMPLERS

    registries: tuple[Registry[Any], ...] = (SAMPLERS, EVALUATORS, PRUNERS, OBJECTIVES)
    before = [set(r.names()) for r in registries]
    monkeypatch.chdir(folder)
    try:
        for block in blocks:
            exec(compile(block, "<documented block>", "exec"), {"__name__": "__main__"})
    finally:
        for registry, names in zip(registries, before, strict=True):
            for name in set(registry.names()) - names:
                registry.unregister(name)


def test_the_section_names_every_public_entry_point() -> None:
    section = _api_text()
    public = {*nasmlcn.__all__, *nasmlcn.search.__all__, *nasmlcn.tracking.__all__}
    missing = sorted(
        name
        for name in public
        if f"`{name}`" not in section and f"{name}(" not in section and f".{name}`" not in section
    )
    assert missing == []


def test_the_python_blocks_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = [b for b in _blocks(_api_text()) if SLOW not in b]
    assert len(blocks) >= 5
    _run(blocks, tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert "on the Pareto front" in out
    assert "study hooks target 3" in out
    assert "test at the best-validation epoch" in out  # the training block's report
    assert "(3, 28, 28) ('0', '1', '2') True" in out  # the own-images block
    assert "plugged-in trials on the front" in out  # the plug-ins' block
    # the calls wrote only the storage named (and its SQLite side files), the
    # recipe and the architecture the blocks wrote themselves, and the folder the
    # reproduce block names
    assert {p.name for p in tmp_path.iterdir()} <= {
        "reproduce-results",
        "api.db",
        "api.db-wal",
        "api.db-shm",
        "api.db.lock",
        "recipe.toml",
        "arch.json",
        "mine.npz",  # the own-images block's data, and its cache (data_dir=".")
        "own",
    }


@pytest.mark.slow
def test_the_training_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = [b for b in _blocks(_api_text()) if SLOW in b]
    _run([block], tmp_path, monkeypatch)
    assert (tmp_path / "best" / "arch.json").is_file()
    assert (tmp_path / "retrained" / "trial-0000").is_dir() or any(
        (tmp_path / "retrained").iterdir()
    )


def test_the_tracking_block_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = _blocks((ROOT / "docs" / "tracking.md").read_text())
    _run([block], tmp_path, monkeypatch)
    lines = capsys.readouterr().out.splitlines()
    assert sorted(line.split()[:2] for line in lines) == [["trial", str(n)] for n in range(4)]
    assert all("COMPLETE" in line or "PRUNED" in line for line in lines)
    assert (tmp_path / "mlartifacts").is_dir()
