"""A result's report: the paper's transcribed number beside ours, offline HTML, PNG,
CSV, and the index of every report."""

from __future__ import annotations

import csv
import json
import re
from html import escape
from pathlib import Path

import pytest

from nasmlcn.reproduce import find_recipe, write_index, write_report

ROWS = {"capsnet": 1.0, "mlcn1-2x4": 10.0, "mlcn1-8x4": 2.5, "mlcn2-2x4": 11.0, "mlcn2-8x4": 2.4}
"""Each row's speed over CapsNet's (near the thesis's)."""


def _table_output(accuracy: float) -> dict[str, object]:
    return {
        "rows": [
            {
                "row": r,
                "test_accuracy": accuracy,
                "params": 1_000_000,
                "seconds_per_epoch": 10.0,
                "speed_ratio_to_capsnet": ratio,
            }
            for r, ratio in ROWS.items()
        ]
    }


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "out" / "thesis-table4.1" / "reduced"
    folder.mkdir(parents=True)
    record = {
        "seconds": 90.0,
        "machine": {"cores": 2, "cpu": "Test CPU", "system": "Linux x86_64", "gpus": []},
        "shown": "python thesis_table.py --json",
        "finished": "2026-11-26T06:00:00+00:00",
    }
    (folder / "run.json").write_text(json.dumps(record))
    return folder


def test_the_report_shows_the_papers_number_beside_ours(tmp_path: Path) -> None:
    recipe = find_recipe("thesis-table4.1")
    folder = _folder(tmp_path)
    report = write_report(recipe, "reduced", folder, _table_output(0.8765))
    page = (folder / "report.html").read_text()
    rows = re.findall(r"<tr>(.*?)</tr>", page, flags=re.S)
    capsnet = next(r for r in rows if "CapsNet: test accuracy" in r)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", capsnet, flags=re.S)
    assert cells[2] == "91.30 %"  # the paper's, transcribed from Table 4.1
    assert cells[3] == "87.65 %"  # ours
    assert cells[4] == "-3.65 pt"
    assert "Table 4.1 (p. 57)" in capsnet
    assert "CapsNet - - 8,227,088 220 91.30%" in capsnet  # the quote
    assert report.verdict.kind == "not reproduced"
    assert escape(report.verdict.line) in page
    assert "3 epochs (not 20)" in page  # the scale and how it differs
    assert "2 cores of Test CPU" in page  # the machine
    # Offline and self-contained: no script, nothing fetched, the PNG inlined.
    assert "<script" not in page
    assert not re.search(r"(src|href)=\"https?://", page)
    assert 'src="data:image/png;base64,' in page
    assert (folder / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(folder / "report.csv", newline="") as f:
        table = list(csv.DictReader(f))
    first = next(r for r in table if r["label"] == "CapsNet: test accuracy")
    assert float(first["paper"]) == 91.3
    assert float(first["ours"]) == pytest.approx(87.65)
    assert first["passed"] == "False"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["verdict"] == report.verdict.to_dict()


def test_the_index_links_every_report_with_its_verdict(tmp_path: Path) -> None:
    recipe = find_recipe("thesis-table4.1")
    folder = _folder(tmp_path)
    report = write_report(recipe, "reduced", folder, _table_output(0.9100))
    index = write_index(tmp_path / "out", [recipe, find_recipe("nascaps-table3")])
    page = index.read_text()
    assert 'href="thesis-table4.1/reduced/report.html"' in page
    assert escape(report.verdict.line) in page
    assert report.verdict.kind == "within"  # CapsNet 91.00 % vs 91.30 %, ... 92.63 %
    assert "1 within" in page
    assert "not run here yet: <code>nasmlcn reproduce nascaps-table3</code>" in page


def test_a_report_warns_when_the_engine_found_the_machine_busy(tmp_path: Path) -> None:
    recipe = find_recipe("thesis-table4.1")
    folder = _folder(tmp_path)
    write_report(recipe, "reduced", folder, _table_output(0.91))
    assert "Caution" not in (folder / "report.html").read_text()
    write_report(recipe, "reduced", folder, {**_table_output(0.91), "machine_was_busy": True})
    assert "found the machine busy" in (folder / "report.html").read_text()


def test_a_tie_shows_its_interval_in_the_page_and_the_csv(tmp_path: Path) -> None:
    """thesis Fig. 6.4 with 4 random models a setting: the averages' and the bests'
    differences come with their intervals, and the verdict is a tie."""
    recipe = find_recipe("thesis-fig6.4")
    folder = tmp_path / "out" / "thesis-fig6.4" / "reduced"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text((_folder(tmp_path) / "run.json").read_text())
    values = {
        "4xK80": [0.741, 0.746, 0.731, 0.710],
        "8xK80": [0.754, 0.697, 0.746, 0.735],
        "16xK80": [0.738, 0.735, 0.729, 0.746],
        "32xK80": [0.733, 0.699, 0.726, 0.687],
    }
    output = {
        "studies": {
            f"thesis-fig6.4-devices-{k}": {"values": v, "mean": sum(v) / 4, "best": max(v)}
            for k, v in values.items()
        }
    }
    report = write_report(recipe, "reduced", folder, output)
    assert report.verdict.kind == "tie"
    page = (folder / "report.html").read_text()
    assert '<div class="verdict tie">tie: 0 of 2 figures agree' in page
    assert page.count("≈ tie: at least 0.00 pt") == 2
    assert "95 % interval -5.46 to 1.31 pt" in page  # Welch, the averages
    with (folder / "report.csv").open() as f:
        rows = {r["label"]: r for r in csv.DictReader(f)}
    average = rows["average accuracy at 32xK80 minus at 4xK80"]
    assert float(average["low"]) == pytest.approx(-5.4568, abs=1e-3)
    assert float(average["high"]) == pytest.approx(1.3068, abs=1e-3)
    assert average["tie"] == "True"
    assert rows["average accuracy, 4xK80"]["low"] == ""  # a figure without samples


def test_a_smoke_run_s_figure_colours_no_point_as_failed() -> None:
    """A smoke run gets no verdict, so its figure marks no point red (or green)."""
    from nasmlcn.reproduce import compare
    from nasmlcn.reproduce._report import _figure

    recipe = find_recipe("thesis-table4.1")
    rows = compare(recipe, _table_output(0.5), "smoke")
    assert any(r.passed is False for r in rows)  # judged, these would be red
    judged = _figure(rows, "t").data[-1].marker.color
    smoke = _figure(rows, "t", judged=False).data[-1].marker.color
    assert "#c0392b" in judged
    assert set(smoke) == {"#888888"}
