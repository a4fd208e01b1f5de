"""Image exports in one process share one Chromium: the first starts it, the next
ones reuse it (2 s saved each here), a missing Chromium is one clear error that
leaves the next export working, and a forked child never uses its parent's."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import plotly.graph_objects as go
import pytest

from nasmlcn.dashboard import ExportError, _chromium, write_images

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _figures(n: int) -> dict[str, go.Figure]:
    return {f"f{n}": go.Figure(go.Scatter(x=[1, 2, 3], y=[n, 1, 2]))}


def _browser_pid() -> int:
    assert _chromium._current is not None
    return int(_chromium._current.kaleido.subprocess.pid)


def test_two_exports_share_one_browser(tmp_path: Path) -> None:
    first = write_images(_figures(1), tmp_path / "a", ["png", "svg"])
    pid = _browser_pid()
    second = write_images(_figures(2), tmp_path / "b", ["png"])
    assert _browser_pid() == pid  # the same Chromium process rendered both
    for path in (*first, *second):
        assert path.stat().st_size > 0
    assert second[0].read_bytes().startswith(PNG_MAGIC)
    assert first[1].read_text().lstrip().startswith("<svg")


def test_a_missing_chromium_is_one_error_and_the_next_export_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _chromium.close()
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chromium"))
    with pytest.raises(ExportError, match="PNG/SVG export needs Chromium"):
        write_images(_figures(1), tmp_path / "a", ["png"])
    assert not _chromium.is_open()
    monkeypatch.delenv("BROWSER_PATH")
    (path,) = write_images(_figures(1), tmp_path / "b", ["png"])  # no hang, a fresh browser
    assert path.read_bytes().startswith(PNG_MAGIC)
    assert _chromium.is_open()


def _child_sees_a_browser(answer: multiprocessing.SimpleQueue[bool]) -> None:
    answer.put(_chromium.is_open())


def test_a_forked_child_does_not_use_its_parents_browser(tmp_path: Path) -> None:
    write_images(_figures(1), tmp_path, ["png"])
    assert _chromium.is_open()
    context = multiprocessing.get_context("fork")
    answer: multiprocessing.SimpleQueue[bool] = context.SimpleQueue()
    child = context.Process(target=_child_sees_a_browser, args=(answer,))
    child.start()
    child.join(timeout=30)
    assert child.exitcode == 0
    assert answer.get() is False
    assert _chromium.is_open()  # and the parent's is still there
