"""Cached files: ``$<env>`` when set, else under ``~/.cache/nasmlcn``."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasmlcn.costs import default_calibration_path
from nasmlcn.data import default_data_dir


def test_defaults_live_under_the_home_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("NASMLCN_DATA_DIR", raising=False)
    monkeypatch.setenv("NASMLCN_CALIBRATION", "")  # empty counts as unset
    assert default_data_dir() == tmp_path / ".cache" / "nasmlcn" / "data"
    assert default_calibration_path() == tmp_path / ".cache" / "nasmlcn" / "calibration.json"


def test_the_environment_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NASMLCN_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("NASMLCN_CALIBRATION", str(tmp_path / "c.json"))
    assert default_data_dir() == tmp_path / "d"
    assert default_calibration_path() == tmp_path / "c.json"


def test_checks_of_one_new_folder_from_many_processes_all_pass(tmp_path: Path) -> None:
    """The ranks of one job check the same new --out at once; one's clean-up (it
    removes the folder its probe made) must not fail another's check: it said "is a
    file, not a folder" or "is not writable" in about 3 % of such checks."""
    import concurrent.futures

    from nasmlcn.training import check_out_dir

    for round_ in range(50):
        folder = tmp_path / f"run{round_}" / "out"
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            assert list(pool.map(check_out_dir, [folder] * 8)) == [None] * 8
